"""The `explore`, `check` and `replay` subcommands of `evictable` (see `cli.main`).

* `evictable explore [--slots N --keys K --max-ref R --batch B --policy P --events E
  --workers W --no-canonical --savings --max-states N --factory MODULE:FACTORY
  --contract exact|safety --errors typed|builtin|any --black-box]` explores every
  reachable state within the bounds and prints the figures (and a shortest failing
  trace, if any), under the factory's declared contract with the flags on top.
* `evictable check MODULE:FACTORY [...]` (`cli.check`) imports a factory, runs the
  lock-step engines against what it makes under a contract and prints the findings,
  one per class, each with its shortest trace.
* `evictable replay TRACE.jsonl [--num-blocks N --policy P --events]` checks a
  recorded trace against the model (format: `cli.replay`, docs/conformance.md).

Each handler returns (exit code, the JSON report's own fields) and raises
`UsageError` when it cannot run: 0 holds, 1 a finding, 2 could not run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.contract import DEFAULT, Contract, ContractError, resolve
from evictable.proofs.base.protocol import Factory
from evictable.proofs.cli.errors import UsageError
from evictable.proofs.explore.manager import DEFAULT_MAX_STATES, Exploration, explore

__all__ = [
    "CheckSetupError",
    "add_parsers",
    "exploration_fields",
    "load_factory",
    "probe_manager",
]


class CheckSetupError(UsageError, ValueError):
    """`check` cannot start: a bad MODULE:FACTORY spec or an unusable factory."""


def _count(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = "count"
    return parse


def add_parsers(subparsers: Any) -> None:
    """Add `explore`, `check` and `replay` to the `evictable` parser."""
    p = subparsers.add_parser(
        "explore",
        help="exhaustively explore the model for small bounds",
        description="Visit every model state reachable within the bounds, check every "
        "invariant in every state and the implementation on every edge.",
    )
    d = Bounds()
    p.add_argument("--slots", type=_count(0), default=d.slots, help="CPU slots (num_blocks)")
    p.add_argument("--keys", type=_count(1), default=d.keys, help="size of the key universe")
    p.add_argument(
        "--max-ref", type=_count(1), default=d.max_ref, help="most loads in flight per block"
    )
    p.add_argument("--batch", type=_count(0), default=d.batch, help="longest key batch")
    p.add_argument("--policy", default=d.policy, help="lru or arc")
    p.add_argument(
        "--events",
        type=_count(0),
        default=0,
        help="enable events, keeping at most this many pending (0: off)",
    )
    p.add_argument("--workers", type=_count(1), default=2, help="worker processes")
    p.add_argument(
        "--no-canonical", action="store_true", help="do not quotient states by key renaming"
    )
    p.add_argument(
        "--savings",
        action="store_true",
        help="also run without canonicalisation and report the saving",
    )
    p.add_argument(
        "--max-states",
        type=_count(1),
        default=DEFAULT_MAX_STATES,
        help="stop (incomplete: exit code 2) beyond this many distinct states",
    )
    p.add_argument(
        "--factory",
        metavar="MODULE:FACTORY",
        default=None,
        help="explore this implementation instead of evictable.impl.manager",
    )
    p.add_argument("--contract", choices=("exact", "safety"), default=None)
    p.add_argument("--errors", choices=("typed", "builtin", "any"), default=None)
    p.add_argument("--black-box", action="store_true", default=None, help="never call snapshot()")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.set_defaults(handler=cmd_explore)

    from evictable.proofs.cli.check import add_parser as add_check

    add_check(subparsers, _count)

    p = subparsers.add_parser(
        "replay",
        help="check a recorded JSONL trace against the model",
        description="Replay recorded manager calls on the model and report the first "
        "divergence (format: docs/conformance.md).",
    )
    p.add_argument("trace", metavar="TRACE.jsonl")
    p.add_argument(
        "--num-blocks",
        type=_count(0),
        default=None,
        help="constructor argument when the trace has no header (overrides it)",
    )
    p.add_argument("--policy", default=None, help="policy (overrides the header)")
    p.add_argument(
        "--events", action="store_true", default=None, help="enable events (overrides the header)"
    )
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.set_defaults(handler=cmd_replay)


# ------------------------------------------------------------------ explore


def exploration_fields(run: Exploration) -> dict[str, Any]:
    """An exploration as report fields (`#/$defs/exploration` of the schema)."""
    b, f = run.bounds, run.figures
    failure = None
    if run.failure is not None:
        failure = {
            "reason": run.failure.reason,
            "calls": len(run.failure.path) + (run.failure.op is not None),
            "snippet": run.failure.snippet,
        }
    return {
        "bounds": {
            "policy": b.policy,
            "slots": b.slots,
            "keys": b.keys,
            "max_ref": b.max_ref,
            "batch": b.batch,
            "events": b.events,
        },
        "canonical": run.canonical,
        "workers": run.workers,
        "figures": {
            "states": f.states,
            "transitions": f.transitions,
            "depth": f.max_depth,
            "seconds": round(f.seconds, 4),
            "complete": f.complete,
            "pruned": f.pruned,
            "concrete": f.concrete,
        },
        "verdict": "ok" if run.ok else "failed" if run.failure else "incomplete",
        "failure": failure,
    }


def cmd_explore(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    bounds = Bounds(args.slots, args.keys, args.max_ref, args.batch, args.policy, args.events)
    factory: Factory | None = None
    try:
        bounds.check()
    except ValueError as exc:
        raise UsageError(f"evictable explore: {exc}") from None
    if args.factory is not None:
        factory = load_factory(args.factory)
    try:
        contract = resolve(
            factory, mode=args.contract, errors=args.errors, black_box=args.black_box
        )
    except ContractError as exc:
        raise UsageError(f"evictable explore: {exc}") from None
    if factory is not None:
        probe_manager(factory, args.policy, contract)
    run = explore(
        bounds,
        factory,
        workers=args.workers,
        canonical=not args.no_canonical,
        max_states=args.max_states,
        contract=contract,
    )
    print(run.summary())
    if args.savings and not args.no_canonical and run.ok:
        plain = explore(
            bounds,
            factory,
            workers=args.workers,
            canonical=False,
            max_states=args.max_states,
            contract=contract,
        )
        print(plain.summary())
        print(_savings(run, plain))
    if run.failure is None and not run.figures.complete:
        return 2, {
            **exploration_fields(run),
            "error": f"evictable explore: stopped at the state limit "
            f"({args.max_states}): no verdict (raise --max-states or lower "
            "the bounds)",
        }
    return (0 if run.ok else 1), exploration_fields(run)


def _savings(canon: Exploration, plain: Exploration) -> str:
    a, b = canon.figures, plain.figures
    return (
        f"canonicalisation: {a.states} vs {b.states} states "
        f"({b.states / max(1, a.states):.1f}x fewer), {a.transitions} vs {b.transitions} "
        f"transitions, {a.seconds:.2f}s vs {b.seconds:.2f}s"
    )


# ------------------------------------------------------------------ check


def load_factory(spec: str) -> Factory:
    """Import `MODULE:FACTORY` (the attribute may be dotted); the current directory
    is importable, as with `python -m`. Raises `CheckSetupError` with the reason."""
    module_name, sep, attr = spec.partition(":")
    if (
        not sep
        or not module_name
        or not attr
        or ":" in attr
        or not all(part.isidentifier() for part in module_name.split(".") + attr.split("."))
    ):
        raise CheckSetupError(f"expected MODULE:FACTORY (e.g. mypkg.cache:make), got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise CheckSetupError(
            f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CheckSetupError(f"{module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise CheckSetupError(f"{spec} is a {type(obj).__name__}, not callable")
    return obj  # type: ignore[no-any-return]


def probe_manager(factory: Factory, policy: str, contract: Contract = DEFAULT) -> None:
    """Call the factory once; raise `CheckSetupError` if it fails or lacks the API
    (`contract`: a black box needs no `snapshot()` and no counters)."""
    try:
        manager = factory(2, policy, False)
    except Exception as exc:
        raise CheckSetupError(
            f"factory(2, {policy!r}, False) raised {type(exc).__name__}: {exc}"
        ) from exc
    from evictable.proofs.base.protocol import ADAPTER_API, BLACK_BOX_API

    api = BLACK_BOX_API if contract.black_box else ADAPTER_API
    missing = [name for name in api if not hasattr(manager, name)]
    if missing:
        raise CheckSetupError(
            f"factory returned a {type(manager).__name__} without the "
            f"manager API: missing {missing}"
        )


# ------------------------------------------------------------------ replay


def cmd_replay(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    from evictable.proofs.cli.replay import Header, TraceFormatError, parse_trace, replay_file

    where = f"evictable replay: {args.trace}"
    try:
        header = None
        if args.num_blocks is not None or args.policy is not None or args.events is not None:
            with open(args.trace, encoding="utf-8") as fh:
                found, _ = parse_trace(fh)
            nb = (
                args.num_blocks
                if args.num_blocks is not None
                else (found.num_blocks if found else None)
            )
            if nb is None:
                raise TraceFormatError(1, "no header line: give --num-blocks")
            header = Header(
                nb,
                args.policy or (found.policy if found else "lru"),
                args.events if args.events is not None else bool(found and found.enable_events),
            )
        report = replay_file(args.trace, header)
    except TraceFormatError as exc:
        raise UsageError(f"{where}:{exc.line}: {exc.reason}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it: {exc.strerror}") from None
    print(report.text())
    d = report.divergence
    h = report.header
    return (0 if report.ok else 1), {
        "trace": args.trace,
        "header": {
            "num_blocks": h.num_blocks,
            "policy": h.policy,
            "enable_events": h.enable_events,
        },
        "calls": report.calls,
        "verdict": "matches" if report.ok else "diverges",
        "divergence": None
        if d is None
        else {"line": d.line, "call": d.call, "recorded": d.recorded, "model": d.model},
    }
