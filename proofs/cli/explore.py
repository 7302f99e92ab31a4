"""`evictable explore`: every reachable state within small bounds, the
implementation on every edge.

```
evictable explore [--slots N --keys K --max-ref R --batch B --policy P --events E
                  --workers W --no-canonical --savings --max-states N
                  --factory MODULE:FACTORY --contract exact|safety
                  --errors typed|builtin|any --black-box] [--json PATH]
```

Explores under the factory's declared contract with the flags on top, prints the
figures and, if any, a shortest failing trace. Exit codes: 0 every state and edge
holds, 1 a finding, 2 could not run (or stopped at the state limit: no verdict).
"""

from __future__ import annotations

import argparse
from typing import Any

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.contract import ContractError, resolve
from evictable.proofs.base.protocol import Factory
from evictable.proofs.check.guide import probe_manager
from evictable.proofs.check.setup import SetupError, load_factory
from evictable.proofs.cli.args import CONTRACT_HELP, ERRORS_HELP, count, writable_path
from evictable.proofs.cli.errors import UsageError
from evictable.proofs.explore.manager import (
    DEFAULT_MAX_STATES,
    Exploration,
    exploration_fields,
    explore,
)

__all__ = ["add_parser", "cmd_explore"]


def add_parser(subparsers: Any) -> None:
    """Add `explore` to the `evictable` parser."""
    p = subparsers.add_parser(
        "explore",
        help="exhaustively explore the model for small bounds",
        description="Visit every model state reachable within the bounds, check every "
        "invariant in every state and the implementation on every edge.",
    )
    d = Bounds()
    p.add_argument("--slots", type=count(0), default=d.slots, help="CPU slots (num_blocks)")
    p.add_argument("--keys", type=count(1), default=d.keys, help="size of the key universe")
    p.add_argument(
        "--max-ref", type=count(1), default=d.max_ref, help="most loads in flight per block"
    )
    p.add_argument("--batch", type=count(0), default=d.batch, help="longest key batch")
    p.add_argument("--policy", default=d.policy, help="lru or arc")
    p.add_argument(
        "--events",
        type=count(0),
        default=0,
        help="enable events, keeping at most this many pending (0: off)",
    )
    p.add_argument("--workers", type=count(1), default=2, help="worker processes")
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
        type=count(1),
        default=DEFAULT_MAX_STATES,
        help="stop (incomplete: exit code 2) beyond this many distinct states",
    )
    p.add_argument(
        "--factory",
        metavar="MODULE:FACTORY",
        default=None,
        help="explore this implementation instead of evictable.impl.manager",
    )
    p.add_argument("--contract", choices=("exact", "safety"), default=None, help=CONTRACT_HELP)
    p.add_argument("--errors", choices=("typed", "builtin", "any"), default=None, help=ERRORS_HELP)
    p.add_argument("--black-box", action="store_true", default=None, help="never call snapshot()")
    p.add_argument(
        "--json", metavar="PATH", type=writable_path, help="also write the report as JSON"
    )
    p.set_defaults(handler=cmd_explore)


def cmd_explore(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    bounds = Bounds(args.slots, args.keys, args.max_ref, args.batch, args.policy, args.events)
    factory: Factory | None = None
    try:
        bounds.check()
    except ValueError as exc:
        raise UsageError(f"evictable explore: {exc}") from None
    try:
        if args.factory is not None:
            factory = load_factory(args.factory)
            probe = True
        else:
            probe = False
    except SetupError as exc:
        raise UsageError(f"evictable explore: {exc}") from None
    try:
        contract = resolve(
            factory, mode=args.contract, errors=args.errors, black_box=args.black_box
        )
    except ContractError as exc:
        raise UsageError(f"evictable explore: {exc}") from None
    if probe and factory is not None:
        try:
            probe_manager(factory, args.policy, contract)
        except SetupError as exc:
            raise UsageError(f"evictable explore: {exc}") from None
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
