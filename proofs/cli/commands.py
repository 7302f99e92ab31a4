"""The `explore`, `check` and `replay` subcommands of `evictable` (see proofs/cli.py).

* `evictable explore [--slots N --keys K --max-ref R --batch B --policy P --events E
  --workers W --no-canonical --savings --max-states N --factory MODULE:FACTORY]`
  explores every reachable state within the bounds and prints the figures (and a
  shortest failing trace, if any).
* `evictable check MODULE:FACTORY [--examples N] [--steps N] [--policy P]` imports a
  factory `(num_blocks, policy, enable_events) -> manager`, runs the conformance
  engine and the explorer against it and prints a verdict with the shortest
  failing trace.
* `evictable replay TRACE.jsonl [--num-blocks N --policy P --events]` checks a
  recorded trace against the model (format: proofs/replay.py, docs/conformance.md).

Exit codes: 0 pass, 1 the implementation or trace diverges, 2 usage error (bad
spec, import failure, malformed trace).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from dataclasses import replace
from typing import Any

from evictable.model.manager import MODEL_POLICIES
from evictable.proofs.explore.manager import DEFAULT_MAX_STATES, Bounds, Exploration, explore
from evictable.proofs.explore.trace import Factory

__all__ = ["CheckSetupError", "load_factory", "register"]

CHECK_BOUNDS: dict[str, Bounds] = {
    "lru": Bounds(slots=2, keys=3, max_ref=2, batch=2, events=1),
    "arc": Bounds(slots=2, keys=4, max_ref=1, batch=2, policy="arc"),
}
"""The explorer's bounds for `evictable check`, per policy (seconds each)."""


class CheckSetupError(ValueError):
    """`check` cannot start: a bad MODULE:FACTORY spec or an unusable factory."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be non-negative, got {value}")
    return value


def register(subparsers: Any) -> None:
    """Add `explore`, `check` and `replay` to the `evictable` parser."""
    p = subparsers.add_parser(
        "explore", help="exhaustively explore the model for small bounds",
        description="Visit every model state reachable within the bounds, check every "
                    "invariant in every state and the implementation on every edge.")
    d = Bounds()
    p.add_argument("--slots", type=_positive, default=d.slots, help="CPU slots (num_blocks)")
    p.add_argument("--keys", type=_positive, default=d.keys, help="size of the key universe")
    p.add_argument("--max-ref", type=_positive, default=d.max_ref,
                   help="most loads in flight per block")
    p.add_argument("--batch", type=_positive, default=d.batch, help="longest key batch")
    p.add_argument("--policy", default=d.policy, help="lru or arc")
    p.add_argument("--events", type=_positive, default=0,
                   help="enable events, keeping at most this many pending (0: off)")
    p.add_argument("--workers", type=_positive, default=2, help="worker processes")
    p.add_argument("--no-canonical", action="store_true",
                   help="do not quotient states by key renaming")
    p.add_argument("--savings", action="store_true",
                   help="also run without canonicalisation and report the saving")
    p.add_argument("--max-states", type=_positive, default=DEFAULT_MAX_STATES,
                   help="stop (incomplete) beyond this many distinct states")
    p.add_argument("--factory", metavar="MODULE:FACTORY", default=None,
                   help="explore this implementation instead of impl.manager")
    p.set_defaults(handler=cmd_explore)

    p = subparsers.add_parser(
        "check", help="check an implementation against the model",
        description="Run the conformance engine and the explorer against the manager made "
                    "by MODULE:FACTORY (see docs/conformance.md).")
    p.add_argument("spec", metavar="MODULE:FACTORY",
                   help="factory (num_blocks, policy, enable_events) -> manager")
    p.add_argument("--examples", type=_positive, default=200, help="conformance examples")
    p.add_argument("--steps", type=_positive, default=40, help="steps per example")
    p.add_argument("--policy", default="lru", help="policy name passed to the factory")
    p.add_argument("--seed", type=int, default=None, help="conformance seed")
    p.add_argument("--workers", type=_positive, default=2, help="explorer worker processes")
    p.add_argument("--no-explore", action="store_true", help="skip the explorer")
    p.set_defaults(handler=cmd_check)

    p = subparsers.add_parser(
        "replay", help="check a recorded JSONL trace against the model",
        description="Replay recorded manager calls on the model and report the first "
                    "divergence (format: docs/conformance.md).")
    p.add_argument("trace", metavar="TRACE.jsonl")
    p.add_argument("--num-blocks", type=_positive, default=None,
                   help="constructor argument when the trace has no header (overrides it)")
    p.add_argument("--policy", default=None, help="policy (overrides the header)")
    p.add_argument("--events", action="store_true", default=None,
                   help="enable events (overrides the header)")
    p.set_defaults(handler=cmd_replay)


# ------------------------------------------------------------------ explore


def cmd_explore(args: argparse.Namespace) -> int:
    bounds = Bounds(args.slots, args.keys, args.max_ref, args.batch, args.policy, args.events)
    factory: Factory | None = None
    try:
        bounds.check()
        if args.factory is not None:
            factory = load_factory(args.factory)
            _probe(factory, args.policy)
    except ValueError as exc:  # bad bounds, or CheckSetupError
        print(f"evictable explore: {exc}", file=sys.stderr)
        return 2
    workers = max(1, args.workers)
    run = explore(bounds, factory, workers=workers, canonical=not args.no_canonical,
                  max_states=args.max_states)
    print(run.summary())
    if args.savings and not args.no_canonical and run.ok:
        plain = explore(bounds, factory, workers=workers, canonical=False,
                        max_states=args.max_states)
        print(plain.summary())
        print(_savings(run, plain))
    return 0 if run.ok else 1


def _savings(canon: Exploration, plain: Exploration) -> str:
    a, b = canon.figures, plain.figures
    return (f"canonicalisation: {a.states} vs {b.states} states "
            f"({b.states / max(1, a.states):.1f}x fewer), {a.transitions} vs {b.transitions} "
            f"transitions, {a.seconds:.2f}s vs {b.seconds:.2f}s")


# ------------------------------------------------------------------ check


def load_factory(spec: str) -> Factory:
    """Import `MODULE:FACTORY` (the attribute may be dotted); the current directory
    is importable, as with `python -m`. Raises `CheckSetupError` with the reason."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr or ":" in attr or not all(
        part.isidentifier() for part in module_name.split(".") + attr.split(".")
    ):
        raise CheckSetupError(f"expected MODULE:FACTORY (e.g. mypkg.cache:make), got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise CheckSetupError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") \
            from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CheckSetupError(f"{module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise CheckSetupError(f"{spec} is a {type(obj).__name__}, not callable")
    return obj  # type: ignore[no-any-return]


def _probe(factory: Factory, policy: str) -> None:
    """Call the factory once; raise `CheckSetupError` if it fails or lacks the API."""
    try:
        manager = factory(2, policy, False)
    except Exception as exc:
        raise CheckSetupError(f"factory(2, {policy!r}, False) raised "
                              f"{type(exc).__name__}: {exc}") from exc
    from evictable.proofs.lockstep.conformance import ADAPTER_API

    missing = [name for name in ADAPTER_API if not hasattr(manager, name)]
    if missing:
        raise CheckSetupError(f"factory returned a {type(manager).__name__} without the "
                              f"manager API: missing {missing}")


def _conformance(factory: Factory, args: argparse.Namespace) -> tuple[bool, str]:
    from evictable.proofs.lockstep.conformance import run_conformance

    outcome = run_conformance(factory, args.policy, args.examples, args.steps, seed=args.seed)
    return bool(outcome.ok), outcome.text()


def cmd_check(args: argparse.Namespace) -> int:
    try:
        if args.policy not in MODEL_POLICIES:
            raise CheckSetupError(f"unknown policy {args.policy!r}; the model knows "
                                  f"{sorted(MODEL_POLICIES)}")
        factory = load_factory(args.spec)
        _probe(factory, args.policy)
    except CheckSetupError as exc:
        print(f"evictable check: {exc}", file=sys.stderr)
        return 2
    print(f"evictable check {args.spec} (policy {args.policy!r})")
    failures: list[str] = []
    start = time.perf_counter()
    ok, text = _conformance(factory, args)
    print(f"conformance ({args.examples} examples x {args.steps} steps, "
          f"{time.perf_counter() - start:.1f}s): {'pass' if ok else 'FAIL'}")
    if not ok:
        failures.append("conformance engine:\n" + text)
    if not args.no_explore:
        bounds = CHECK_BOUNDS.get(args.policy, replace(CHECK_BOUNDS["lru"], policy=args.policy))
        run = explore(bounds, factory, workers=max(1, args.workers))
        print(f"explorer: {run.figures.line()}: {'pass' if run.ok else 'FAIL'}")
        if not run.ok:
            failures.append("explorer:\n" + run.summary())
    if failures:
        print("\nverdict: REJECTED\n")
        print("\n\n".join(failures))
        return 1
    print("verdict: conforms (no divergence found)")
    return 0


# ------------------------------------------------------------------ replay


def cmd_replay(args: argparse.Namespace) -> int:
    from evictable.proofs.cli.replay import Header, TraceFormatError, parse_trace, replay_file

    try:
        header = None
        if args.num_blocks is not None or args.policy is not None or args.events is not None:
            with open(args.trace, encoding="utf-8") as fh:
                found, _ = parse_trace(fh)
            nb = args.num_blocks if args.num_blocks is not None else (
                found.num_blocks if found else None)
            if nb is None:
                raise TraceFormatError(1, "no header line: give --num-blocks")
            header = Header(
                nb,
                args.policy or (found.policy if found else "lru"),
                args.events if args.events is not None else bool(found and found.enable_events),
            )
        report = replay_file(args.trace, header)
    except TraceFormatError as exc:
        print(f"evictable replay: {args.trace}:{exc.line}: {exc.reason}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"evictable replay: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return 2
    print(report.text())
    return 0 if report.ok else 1
