"""The `check` subcommand of `evictable`: a third-party implementation under a contract.

```
evictable check MODULE:FACTORY [--target manager|free-queue|block-pool|lazy]
                [--pool MODULE:FACTORY] [--blocks N] [--preset third-party]
                [--contract exact|safety] [--errors typed|builtin|any] [--black-box]
                [--valid-only] [--all-inputs] [--no-invalid] [--no-duplicates]
                [--no-malformed] [--policy P] [--examples N] [--steps N] [--seed S]
                [--workers W] [--no-explore] [--json PATH] [--html PATH] [--junit PATH]
```

The command turns its arguments into one `check.target.Request` and hands it to
the check pipeline (`check.pipeline.check`: load the subject, resolve the contract,
guide, run the engines, rank), once; it prints the pipeline's report and returns its
fields for `--json`, `--html` and `--junit` (`cli.report`, `cli.html`, `cli.junit`).
Every choice left out comes from the preset (`--preset third-party`: black box,
safety contract, any error type, valid inputs only), else what the factory declares
(`evictable_contract`, `evictable_policy`; `base.contract`), else the defaults: the
exact contract, typed errors, snapshots, every input, policy `lru`. `--target`
takes every registered target (`check.target.register_target`), each with its own
options (`lazy`: `--pool`, `--blocks`).

While it runs, a progress line goes to stderr at least every 10 s (`base.watch`); a
call of the subject that blocks or spins is a finding (`base.guard`), and one that
blocks where Python cannot interrupt it ends the run with that finding (exit 1).
Exit codes: 0 no finding, 1 a finding, 2 could not run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from evictable.model.vllm033 import PROFILES
from evictable.proofs.base import watch
from evictable.proofs.base.compare import Errors
from evictable.proofs.base.contract import PRESETS, Inputs, Mode
from evictable.proofs.base.flight import Flight, bounds_text
from evictable.proofs.check.pipeline import Request, check, targets
from evictable.proofs.check.setup import SetupError
from evictable.proofs.cli.args import CONTRACT_HELP, ERRORS_HELP, add_report_options, count
from evictable.proofs.cli.errors import UsageError

__all__ = ["add_parser", "cmd_check", "request_of"]


def add_parser(subparsers: Any) -> None:
    """Add `check` to the `evictable` parser."""
    p = subparsers.add_parser(
        "check",
        help="check an implementation against the model",
        description="Run the lock-step engines against the implementation made by "
        "MODULE:FACTORY under a contract (docs/conformance.md). A manager you did not "
        "write: --preset third-party. Findings are listed most severe first. Every call "
        f"of the implementation is bounded: {bounds_text()} makes it a finding.",
    )
    known = targets()
    p.add_argument(
        "spec",
        metavar="MODULE:FACTORY",
        help="factory of the implementation ("
        + "; ".join(f"{t.name}: {t.makes}" for t in known)
        + ")",
    )
    p.add_argument(
        "--target",
        choices=[t.name for t in known],
        default=known[0].name,
        help="what the factory makes",
    )
    for t in known:
        if t.arguments is not None:
            t.arguments(p)
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="a named contract: third-party = --black-box --contract safety --errors any "
        "--valid-only, for a manager you did not write; flags given with it win "
        "(default: none)",
    )
    p.add_argument("--contract", choices=[m.value for m in Mode], default=None, help=CONTRACT_HELP)
    p.add_argument("--errors", choices=[e.value for e in Errors], default=None, help=ERRORS_HELP)
    p.add_argument(
        "--black-box",
        action="store_true",
        default=None,
        help="never call snapshot(): observe the subject through its API only (default: "
        "what the factory declares, else off)",
    )
    p.add_argument(
        "--valid-only",
        action="store_true",
        default=None,
        help="valid calls only: = --no-invalid --no-duplicates --no-malformed (default: "
        "what the factory declares, else off)",
    )
    p.add_argument(
        "--profile",
        choices=list(PROFILES),
        default=None,
        help="the model's semantics: seed, vllm-0.33, sglang-0.5 or lmcache-0.5 "
        "(docs/semantics.md) "
        "(default: what "
        "the factory declares, else seed)",
    )
    p.add_argument(
        "--all-inputs",
        action="store_true",
        help="every kind of call, whatever the factory declares (before the --no-* switches)",
    )
    p.add_argument("--no-invalid", action="store_true", help="no calls the model rejects")
    p.add_argument("--no-duplicates", action="store_true", help="no duplicate key batches")
    p.add_argument("--no-malformed", action="store_true", help="no malformed arguments")
    p.add_argument("--examples", type=count(1), default=200, help="conformance examples")
    p.add_argument("--steps", type=count(1), default=40, help="steps per example")
    p.add_argument(
        "--policy",
        default=None,
        help="policy name passed to the factory (default: the factory's evictable_policy, "
        "else lru)",
    )
    p.add_argument(
        "--seed",
        type=count(0),
        default=None,
        help="conformance seed, a non-negative int (default: a fresh one, printed)",
    )
    p.add_argument("--workers", type=count(1), default=2, help="explorer worker processes")
    p.add_argument("--no-explore", action="store_true", help="skip the explorer")
    add_report_options(p)
    p.set_defaults(handler=cmd_check)


_OWN = {
    "command",
    "handler",
    "spec",
    "target",
    "preset",
    "contract",
    "errors",
    "black_box",
    "valid_only",
    "profile",
    "all_inputs",
    "no_invalid",
    "no_duplicates",
    "no_malformed",
    "examples",
    "steps",
    "policy",
    "seed",
    "workers",
    "no_explore",
    "json",
    "html",
    "junit",
}
"""The `check` options every target shares; the others are the targets' own."""


def request_of(args: argparse.Namespace) -> Request:
    """The command line as one request of the check pipeline."""
    choices = {
        "mode": args.contract,
        "errors": args.errors,
        "black_box": args.black_box,
        "inputs": Inputs() if args.all_inputs else None,
        "valid_only": args.valid_only,
        "invalid": False if args.no_invalid else None,
        "duplicates": False if args.no_duplicates else None,
        "malformed": False if args.no_malformed else None,
        "profile": args.profile,
    }
    return Request(
        args.spec,
        args.target,
        args.preset,
        choices,
        args.policy,
        args.examples,
        args.steps,
        args.seed,
        args.workers,
        not args.no_explore,
        {k: v for k, v in vars(args).items() if k not in _OWN},
    )


def _give_up(flight: Flight, seconds: float) -> None:
    """A blocked call that cannot be interrupted: the finding is said, the run ends."""
    what = flight.describe() or "a call of the subject"
    print(
        f"\nverdict: REJECTED -- [blocked] (behaviour): the call {what} did not return: it "
        f"was blocked, using no CPU for {seconds:.0f}s of wall time, and cannot be "
        "interrupted; the check gives up here (its other findings are not reported)",
        flush=True,
    )
    os._exit(1)


def cmd_check(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    request = request_of(args)
    try:
        with watch.show_progress(sys.stderr), watch.give_up_when_stuck(_give_up):
            checked = check(request)
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    print(checked.text())
    return checked.code, checked.fields()
