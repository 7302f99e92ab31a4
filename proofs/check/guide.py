"""What to do with a subject `evictable check` cannot drive: one line that says why.

Before any engine runs, `guide(subject, target, contract, spec)` looks at the factory
(a class, or what a factory returned) and says, in one line, why the engines cannot
drive it and what would work -- so that a mismatch is never reported as a finding:

* **a known engine's class** (vLLM's `CPUOffloadingManager`, `FreeKVCacheBlockQueue`,
  `BlockPool`, `SimpleCPUOffloadScheduler`; `KNOWN`): the shipped adapter's exact
  `MODULE:FACTORY` and flags (`evictable.proofs.adapters.vllm:lru_manager`, ...);
* **a signature that differs from the protocol** (`lookup(key, req_context)` where
  the protocol calls `lookup(key)`): an adapter is needed, and which methods;
* **missing methods**: which ones, and the contract or flags that would work without
  them (a manager without `snapshot()` runs as a black box: `--preset third-party`).

Known classes are recognised by name and module (`vllm.*`), signatures with
`inspect.signature`: nothing is imported and nothing of the subject is called, so
the rules can be tested with stand-in classes.

The check pipeline's guide stage (`check.pipeline`) is `probe_manager(factory,
policy, contract)`: the factory looked at, called once (through
`setup.call_user`), and what it made looked at; `probe_gpu` is the same for the GPU
targets. Both raise `SetupError` with `guide`'s line.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evictable.impl.free_queue import KVCacheBlock
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.protocol import Factory
from evictable.proofs.check.setup import SetupError, call_user

__all__ = [
    "KNOWN",
    "PRESET_HINT",
    "Known",
    "Method",
    "api_of",
    "guide",
    "known_engine",
    "probe_gpu",
    "probe_manager",
    "signature_problems",
]

ADAPTERS = "evictable.proofs.adapters.vllm"

PRESET_HINT = "--preset third-party (= --black-box --contract safety --errors any --valid-only)"
"""The flags that check a third-party manager through its API alone."""


@dataclass(frozen=True)
class Known:
    """A class of another engine that `evictable check` knows, and its adapter."""

    name: str
    """The class name (`__name__` of the class or of one of its bases)."""
    package: str
    """The top-level package it comes from (`vllm`)."""
    what: str
    target: str
    """The `--target` its adapter is checked with."""
    command: str
    """The `evictable check` command that checks it through the shipped adapter."""

    def hint(self) -> str:
        return f"it is {self.what}: check it through the shipped adapter: {self.command}"


KNOWN: tuple[Known, ...] = (
    Known(
        "CPUOffloadingManager",
        "vllm",
        "vLLM's CPU offloading manager",
        "manager",
        f"evictable check {ADAPTERS}:lru_manager (ARC: {ADAPTERS}:arc_manager)",
    ),
    Known(
        "FreeKVCacheBlockQueue",
        "vllm",
        "vLLM's GPU free-block queue",
        "free-queue",
        f"evictable check {ADAPTERS}:free_queue --target free-queue",
    ),
    Known(
        "BlockPool",
        "vllm",
        "vLLM's GPU block pool",
        "block-pool",
        f"evictable check {ADAPTERS}:block_pool --target block-pool",
    ),
    Known(
        "SimpleCPUOffloadScheduler",
        "vllm",
        "vLLM's lazy offload scheduler",
        "lazy",
        f"evictable check {ADAPTERS}:lazy_scanner --target lazy --pool {ADAPTERS}:block_pool",
    ),
)
"""The other engines' classes `guide` recognises (vLLM 0.33's, by class and module
name: `vllm.v1.kv_offload.cpu.manager.CPUOffloadingManager`, ...)."""


@dataclass(frozen=True)
class Method:
    """A member of a protocol: its name and how the engines call it (`args`: the
    positional arguments, `keywords`: the keyword arguments; None: an attribute the
    engines read, never call)."""

    name: str
    args: tuple[str, ...] | None = ()
    keywords: tuple[str, ...] = ()
    snapshot: bool = False
    """Needed only when the contract compares snapshots (not a black box)."""

    def shown(self) -> str:
        if self.args is None:
            return self.name
        return f"{self.name}({', '.join([*self.args, *(f'{k}=...' for k in self.keywords)])})"


def _m(name: str, *args: str, keywords: tuple[str, ...] = (), snapshot: bool = False) -> Method:
    return Method(name, tuple(args), keywords, snapshot)


_APIS: dict[str, tuple[Method, ...]] = {
    "manager": (
        _m("lookup", "key"),
        _m("prepare_store", "keys"),
        _m("complete_store", "keys", keywords=("success",)),
        _m("prepare_load", "keys"),
        _m("complete_load", "keys"),
        _m("touch", "keys"),
        _m("reset_cache"),
        _m("take_events"),
        _m("snapshot", snapshot=True),
        Method("num_evictable", None, snapshot=True),
        Method("num_pending", None, snapshot=True),
    ),
    "free-queue": (
        _m("popleft"),
        _m("popleft_n", "n"),
        _m("remove", "block"),
        _m("append", "block"),
        _m("append_n", "blocks"),
        _m("prepend_n", "blocks"),
        _m("get_all_free_blocks"),
        _m("cursor_for", "block"),
        _m("iter_blocks_after", "cursor"),
        _m("snapshot", snapshot=True),
    ),
    "block-pool": (
        _m("get_new_blocks", "n"),
        _m("touch", "blocks"),
        _m("free_blocks", "blocks"),
        _m("cache_block", "block", "hash"),
        _m("get_cached_block", "hash"),
        _m("reset_prefix_cache"),
        Method("blocks", None),
        Method("free_block_queue", None),
        _m("snapshot", snapshot=True),
    ),
    "lazy": (
        _m("step"),
        _m("complete", "blocks"),
        _m("abort", "blocks"),
        _m("snapshot", snapshot=True),
    ),
}


def api_of(target: str, contract: Contract) -> tuple[Method, ...]:
    """The members the engines use on a subject of `target` under `contract`."""
    return tuple(m for m in _APIS[target] if not (m.snapshot and contract.black_box))


def _bases(obj: object) -> Sequence[type]:
    cls = obj if isinstance(obj, type) else type(obj)
    return cls.__mro__


def known_engine(obj: object) -> Known | None:
    """The known engine class `obj` is (or is an instance or subclass of), if any."""
    for cls in _bases(obj):
        module = str(getattr(cls, "__module__", ""))
        for known in KNOWN:
            if cls.__name__ == known.name and module.split(".")[0] == known.package:
                return known
    return None


def _signature(obj: object, name: str) -> inspect.Signature | None:
    """The signature the engines call `obj.name` with (None: not inspectable)."""
    try:
        member = inspect.getattr_static(obj, name)
    except AttributeError:
        return None
    if isinstance(obj, type) and inspect.isfunction(member):
        try:  # a plain function on a class: its first parameter is the instance
            params = list(inspect.signature(member).parameters.values())[1:]
        except (TypeError, ValueError):
            return None
        return inspect.Signature(params)
    try:
        return inspect.signature(getattr(obj, name))
    except (TypeError, ValueError, AttributeError):
        return None


def signature_problems(obj: object, methods: Sequence[Method]) -> list[str]:
    """The members of `methods` that `obj` has but cannot be called with as the
    protocol calls them, each as `name(its parameters)` (empty: none)."""
    out: list[str] = []
    for method in methods:
        if method.args is None or not _has(obj, method.name):
            continue
        sig = _signature(obj, method.name)
        if sig is None:
            continue
        args = [object()] * len(method.args)
        try:
            sig.bind(*args)
            if method.keywords:
                sig.bind(*args, **dict.fromkeys(method.keywords, True))
        except TypeError:
            out.append(f"{method.name}{_shown(sig)}")
    return out


def _shown(sig: inspect.Signature) -> str:
    names = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            names.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            names.append(f"**{p.name}")
        elif p.default is p.empty:
            names.append(p.name)
        else:
            names.append(f"{p.name}=...")
    return f"({', '.join(names)})"


def _has(obj: object, name: str) -> bool:
    try:
        inspect.getattr_static(obj, name)
    except AttributeError:
        return hasattr(obj, name)
    return True


def _what(obj: object) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def guide(obj: object, target: str, contract: Contract, spec: str) -> str | None:
    """Why the engines cannot drive `obj` (a class, or what the factory returned) as
    a `target` under `contract`, and what would, in one line; None when they can.

    Missing members are looked up on instances only (a class may set attributes in
    its constructor); signatures and known engines on both."""
    methods = api_of(target, contract)
    known = known_engine(obj)
    wrong = signature_problems(obj, methods)
    missing = [] if isinstance(obj, type) else [m for m in methods if not _has(obj, m.name)]
    if known is not None and isinstance(obj, type):  # its methods are the class's
        missing = [m for m in methods if m.args is not None and not _has(obj, m.name)]
    if known is not None and (wrong or missing or known.target != target):
        why = f"{_what(obj)} is not this project's {target} API"
        if wrong or missing:
            shown = [*wrong, *(f"no {m.name}" for m in missing)]
            why += f" ({', '.join(shown[:3])}{', ...' if len(shown) > 3 else ''})"
        return f"{spec}: {why}: {known.hint()} (docs/interop.md)"
    if wrong:
        protocol = ", ".join(
            m.shown() for m in methods if any(w.startswith(m.name + "(") for w in wrong)
        )
        return (
            f"{spec}: adapter needed: {_what(obj)} has {', '.join(wrong)}, but the engines "
            f"call {protocol}; wrap it in an adapter with the protocol's signatures "
            '(docs/conformance.md, "The adapter protocol")'
        )
    if not missing:
        return None
    names = [m.name for m in missing]
    if all(m.snapshot for m in missing):
        return (
            f"{spec}: {_what(obj)} has no {', '.join(names)}, which the {contract.mode.value} "
            f"contract compares: check it through its API alone with {PRESET_HINT}, or "
            "--black-box with the contract you want, or add them "
            '(docs/conformance.md, "Checking a manager you did not write")'
        )
    return (
        f"{spec}: {_what(obj)} lacks {', '.join(names)}, which every contract calls "
        f"({', '.join(m.shown() for m in missing)}): give it these methods or wrap it in an "
        'adapter (docs/conformance.md, "The adapter protocol")'
    )


# ------------------------------------------------------------------ probes


def _name(factory: object, spec: str | None) -> str:
    if spec:
        return spec
    return str(getattr(factory, "__qualname__", None) or type(factory).__name__)


def probe_manager(
    factory: Factory, policy: str, contract: Contract = DEFAULT, spec: str | None = None
) -> None:
    """Call the factory once; raise `SetupError` if it fails or the engines cannot
    drive what it makes under `contract`, with what to do (`check.guide`). A class
    given as the factory is looked at before it is called (a known engine's class,
    or signatures that differ from the protocol)."""
    name = _name(factory, spec)
    if isinstance(factory, type):
        why = guide(factory, "manager", contract, name)
        if why is not None:
            raise SetupError(why)
    manager = call_user(f"factory(2, {policy!r}, False)", factory, 2, policy, False)
    why = guide(manager, "manager", contract, name)
    if why is not None:
        raise SetupError(why)


def probe_gpu(factory: Any, target: str, contract: Contract, spec: str | None = None) -> None:
    """What `probe_manager` does for the GPU targets (`free-queue`, `block-pool`,
    `lazy`): the factory itself, and -- for a queue or a pool -- what it makes from
    small arguments (two blocks, four blocks)."""
    name = _name(factory, spec)
    why = guide(factory, target, contract, name) if isinstance(factory, type) else None
    if why is not None:
        raise SetupError(why)
    if target == "free-queue":
        block = getattr(factory, "evictable_blocks", KVCacheBlock)
        blocks = [call_user(f"evictable_blocks({i})", block, i) for i in range(2)]
        made = call_user("factory(blocks)", factory, blocks)
    elif target == "block-pool":
        made = call_user("factory(4)", factory, 4)
    else:
        return  # a scanner needs a pool: the engines build both
    why = guide(made, target, contract, name)
    if why is not None:
        raise SetupError(why)
