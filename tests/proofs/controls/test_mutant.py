"""Seeded bugs made from the implementation's own source (`proofs.controls.mutant`).

Every mutant of the controls is a module attribute that pickles by reference, is a
copy of its implementation class (not a subclass), carries its one-line bug, and
shows its edited source in tracebacks; an edit that no longer fits `impl/` fails
loudly, naming the control, the file and the text.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil
import traceback
from typing import Any

import pytest

import evictable.proofs.controls as controls
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.factory import known_policies
from evictable.impl.slots import SlotAllocator
from evictable.proofs.controls.mutant import Edit, MutantError, lines, mutant, mutant_of


def _mutants() -> list[Any]:
    found: dict[int, Any] = {}
    for info in pkgutil.iter_modules(controls.__path__, controls.__name__ + "."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if mutant_of(value) is not None and value.__module__ == module.__name__:
                found[id(value)] = value
    return sorted(found.values(), key=lambda obj: (obj.__module__, obj.__name__))


MUTANTS = [m for m in _mutants() if isinstance(m, type)]
FUNCTIONS = [m for m in _mutants() if not isinstance(m, type)]
"""Mutant classes, and the mutant functions injected into some of them."""


def test_the_controls_have_mutants_of_every_kind() -> None:
    made_from = {mutant_of(cls) for cls in MUTANTS}
    assert len(MUTANTS) >= 30
    assert {
        "evictable.impl.manager:CPUOffloadingManager",
        "evictable.impl.free_queue:FreeKVCacheBlockQueue",
        "evictable.impl.block_pool:BlockPool",
        "evictable.impl.lazy_offload:LazyOffloadScanner",
        "evictable.impl.policies.arc:ARCCachePolicy",
        "evictable.impl.policies.arc_index:IdleIndex",
        "evictable.impl.policies.lru:LRUCachePolicy",
        "evictable.impl.policies.factory:PolicyRegistry",
    } <= made_from


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_a_mutant_function_is_a_documented_module_level_copy(fn: Any) -> None:
    module_name, _, qualname = (mutant_of(fn) or "").partition(":")
    real = getattr(importlib.import_module(module_name), qualname)
    assert inspect.isfunction(fn) and fn is not real
    assert getattr(importlib.import_module(fn.__module__), fn.__qualname__) is fn
    assert fn.__doc__ and fn.__code__.co_filename.startswith("<seeded: ")
    assert "# BUG" in inspect.getsource(fn)


@pytest.mark.parametrize("cls", MUTANTS, ids=lambda cls: cls.__name__)
def test_a_mutant_is_a_documented_module_level_copy_of_its_class(cls: type[Any]) -> None:
    module_name, _, qualname = (mutant_of(cls) or "").partition(":")
    real = getattr(importlib.import_module(module_name), qualname)
    assert cls is not real and not issubclass(cls, real)
    methods = {name for name, value in vars(real).items() if inspect.isfunction(value)}
    assert methods <= set(vars(cls))  # every method (one or two of them edited)
    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls
    assert pickle.loads(pickle.dumps(cls)) is cls
    assert copy.deepcopy(cls) is cls
    assert cls.__doc__ and cls.__doc__.strip() != (real.__doc__ or "").strip()
    edited = [
        f
        for f in vars(cls).values()
        if inspect.isfunction(f) and f.__code__.co_filename.startswith("<seeded: ")
    ]
    assert edited, "no method compiled from the edited source"
    assert all(f.__qualname__.startswith(cls.__name__ + ".") for f in edited)


@pytest.mark.parametrize(
    "name",
    ["MissedMarkEvictableOnLoadEnd", "CopySharesSlots", "NoPolicyRollbackOnFault"],
)
def test_a_mutant_manager_works_copies_and_pickles(name: str) -> None:
    from evictable.proofs.controls import manager

    cls = getattr(manager, name)
    m = cls(3, "lru", True)
    assert not isinstance(m, CPUOffloadingManager)
    m.prepare_store([b"a", b"b"])
    m.complete_store([b"a", b"b"])
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(twin) is cls
        assert twin.snapshot() == m.snapshot()


def test_the_bug_shows_in_the_source_and_in_tracebacks() -> None:
    from evictable.proofs.controls.manager import MissedMarkEvictableOnLoadEnd

    source = inspect.getsource(MissedMarkEvictableOnLoadEnd.complete_load)
    assert "# BUG: the policy is never told" in source
    assert "self._unpin(flipped)" not in source
    m = MissedMarkEvictableOnLoadEnd(2)
    with pytest.raises(Exception) as info:
        m.complete_load([b"absent"])
    text = "".join(traceback.format_tb(info.value.__traceback__))
    assert "<seeded: MissedMarkEvictableOnLoadEnd from impl/manager.py>" in text
    assert "raise refusal(key, block, CpuEvent.LOAD_END)" in text


def test_importing_the_controls_registers_no_policy() -> None:
    assert set(known_policies()) >= {"arc", "lru"}
    assert not [name for name in known_policies() if name.startswith("seeded-")]


def _slots(*edits: Edit, **kwargs: Any) -> type[Any]:
    return mutant(
        "evictable.impl.slots", "SlotAllocator", *edits, name="Broken", doc="d.", **kwargs
    )


def test_an_edit_changes_only_its_class_and_uses_the_real_module() -> None:
    broken = _slots(
        Edit("SlotAllocator.free_count", "return self.capacity", "return 1 + self.capacity")
    )
    assert broken(2).free_count() == 3 and SlotAllocator(2).free_count() == 2
    assert broken.__module__ == __name__ and broken.__name__ == broken.__qualname__ == "Broken"
    assert broken.__doc__ == "d." and mutant_of(broken) == "evictable.impl.slots:SlotAllocator"
    assert broken.free_count.__qualname__ == "Broken.free_count"


def test_an_edit_that_no_longer_fits_fails_loudly() -> None:
    missing = Edit("SlotAllocator.free_count", "return nothing", "return 0")
    with pytest.raises(MutantError) as info:
        _slots(missing)
    message = str(info.value)
    assert "Broken" in message and "impl/slots.py" in message and "return nothing" in message
    assert "does not contain" in message
    twice = Edit("SlotAllocator.take", "self.freed", "self.freed")
    with pytest.raises(MutantError, match=r"contains \d+ times"):
        _slots(twice)
    with pytest.raises(MutantError, match=r"no definition .SlotAllocator\.nothing."):
        _slots(Edit("SlotAllocator.nothing", "a", "b"))
    elsewhere = Edit("SlotAllocator.free_count", "self.freed.extend(released)", "pass")
    with pytest.raises(MutantError, match="does not contain"):  # in `take`, not here
        _slots(elsewhere)
    with pytest.raises(MutantError, match="no edit and no namespace"):
        _slots()


def test_a_namespace_injects_a_collaborator() -> None:
    class Fixed(SlotAllocator):
        __slots__ = ()

        def free_count(self) -> int:
            return 42

    manager = mutant(
        "evictable.impl.manager",
        "CPUOffloadingManager",
        name="WithFixedSlots",
        doc="d.",
        namespace={"SlotAllocator": Fixed},
    )
    assert manager(2)._slots.free_count() == 42
    assert CPUOffloadingManager(2)._slots.free_count() == 2


def test_lines_indents_a_dedented_block() -> None:
    block = lines(
        """
        if x:
            y()

        z()
        """,
        4,
    )
    assert block == "    if x:\n        y()\n\n    z()\n"
