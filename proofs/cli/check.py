"""The `check` subcommand of `evictable`: a third-party implementation under a contract.

```
evictable check MODULE:FACTORY [--target manager|free-queue|block-pool|lazy]
                [--pool MODULE:FACTORY] [--blocks N] [--preset third-party]
                [--contract exact|safety] [--errors typed|builtin|any] [--black-box]
                [--valid-only] [--all-inputs] [--no-invalid] [--no-duplicates]
                [--no-malformed] [--policy P] [--examples N] [--steps N] [--seed S]
                [--workers W] [--no-explore] [--json PATH] [--html PATH] [--junit PATH]
```

Every choice left out comes from the preset (`--preset third-party`: black box,
safety contract, any error type, valid inputs only), else what the factory declares
(`evictable_contract`, `evictable_policy`; `base.contract`), else the defaults: the
exact contract, typed errors, snapshots, every input, policy `lru`. A subject the
engines cannot drive is refused in one line that says what would work
(`check.guide`: the shipped adapter of a known engine's class, an adapter for a
signature that differs from the protocol, the contract without `snapshot()`).
The `manager` target (the default) runs the conformance engine and the explorer
(`check.manager`); the GPU targets run their lock-step machines and, for the lazy
scanner, the breadth-first search for the scan-completeness property (`check.gpu`,
printed by `cli.check_gpu`). Findings are printed one per class, most severe first
(`base.findings.rank`), each with its shortest trace as a runnable snippet; `--json`,
`--html` and `--junit` write them as reports (`cli.report`, `cli.html`,
`cli.junit`). Exit codes: 0 no finding, 1 a finding, 2 could not run.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from evictable.model.vllm033 import PROFILES
from evictable.proofs.base.compare import Errors
from evictable.proofs.base.contract import PRESETS, Contract, ContractError, Inputs, Mode, resolve
from evictable.proofs.base.findings import findings_block
from evictable.proofs.base.profiles import MissingProfileError, check_bounds, policies_of
from evictable.proofs.check.manager import run_check
from evictable.proofs.check.setup import SetupError, load_factory, probe_gpu, probe_manager
from evictable.proofs.cli.args import CONTRACT_HELP, ERRORS_HELP, add_report_options, count
from evictable.proofs.cli.check_gpu import check_gpu
from evictable.proofs.cli.errors import UsageError
from evictable.proofs.cli.report import exploration_fields

__all__ = ["TARGETS", "add_parser", "cmd_check", "contract_of"]

TARGETS = ("manager", "free-queue", "block-pool", "lazy")


def add_parser(subparsers: Any) -> None:
    """Add `check` to the `evictable` parser."""
    p = subparsers.add_parser(
        "check",
        help="check an implementation against the model",
        description="Run the lock-step engines against the implementation made by "
        "MODULE:FACTORY under a contract (docs/conformance.md). A manager you did not "
        "write: --preset third-party. Findings are listed most severe first.",
    )
    p.add_argument(
        "spec",
        metavar="MODULE:FACTORY",
        help="factory of the implementation (for the manager: (num_blocks, policy, "
        "enable_events) -> manager)",
    )
    p.add_argument("--target", choices=TARGETS, default="manager", help="what the factory makes")
    p.add_argument(
        "--pool",
        metavar="MODULE:FACTORY",
        default=None,
        help="lazy target: the block pool factory (num_blocks) -> pool the scanner walks "
        "(default: the factory's evictable_pool, else this project's BlockPool)",
    )
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
        help="the model's semantics: seed, vllm-0.33 or lmcache-0.5 (docs/semantics.md) "
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
    p.add_argument(
        "--blocks",
        type=count(1),
        default=3,
        help="lazy target: usable GPU blocks of the breadth-first search",
    )
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


def contract_of(factory: object, args: argparse.Namespace) -> Contract:
    """The factory's declared contract with the command line's choices on top."""
    try:
        return resolve(
            factory,
            preset=getattr(args, "preset", None),
            mode=args.contract,
            errors=args.errors,
            black_box=args.black_box,
            inputs=Inputs() if args.all_inputs else None,
            valid_only=args.valid_only,
            invalid=False if args.no_invalid else None,
            duplicates=False if args.no_duplicates else None,
            malformed=False if args.no_malformed else None,
            profile=args.profile,
        )
    except ContractError as exc:
        raise UsageError(f"evictable check: {exc}") from None


def cmd_check(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    t0 = time.perf_counter()
    try:
        factory = load_factory(args.spec)
        pool = load_factory(args.pool) if args.pool is not None else None
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    import_s = time.perf_counter() - t0
    contract = contract_of(factory, args)
    if args.target == "manager":
        return _check_manager(args, factory, contract, import_s)
    try:
        probe_gpu(factory, args.target, contract, args.spec)
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    return check_gpu(args, factory, pool, contract, import_s)


def _check_manager(
    args: argparse.Namespace, factory: Any, contract: Contract, import_s: float
) -> tuple[int, dict[str, Any]]:
    policy = args.policy or getattr(factory, "evictable_policy", "lru")
    known = policies_of(contract.profile)
    if policy not in known:
        raise UsageError(
            f"evictable check: unknown policy {policy!r}; the model knows {sorted(known)}"
        )
    try:
        bounds = check_bounds(policy, contract.profile)
    except MissingProfileError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    try:
        probe_manager(factory, policy, contract, args.spec)
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    print(f"evictable check {args.spec} (target manager, policy {policy!r})")
    print(f"contract: {contract.describe()}")
    print(f"import and construction: {import_s:.1f}s")
    result = run_check(
        factory,
        policy,
        contract,
        args.examples,
        args.steps,
        args.seed,
        None if args.no_explore else bounds,
        args.workers,
    )
    record = result.conformance
    print(
        f"conformance engine ({args.examples} examples x {args.steps} steps, "
        f"{result.conformance_s:.1f}s): "
        + (
            "pass"
            if record.ok
            else f"{len(record.findings)} class(es) of finding"
            if record.findings
            else f"ERROR: {record.reason}"
        )
    )
    print(f"  checked: {record.scope()}")
    for run in result.explorations:
        line = run.summary().splitlines()[0]
        print(f"explorer: {line}")
    if result.explorations:
        print(f"explorer: {len(result.explorations)} round(s), {result.explorer_s:.1f}s")
    print()
    print(findings_block(result.findings))
    code = 0 if result.ok else 1
    if record.status == "error":
        code = 2
    fields: dict[str, Any] = {
        "spec": args.spec,
        "target": "manager",
        "policy": policy,
        "seed": record.seed,
        "contract": contract.as_dict(),
        "verdict": "conforms" if code == 0 else "rejected",
        "conformance": {
            "status": record.status,
            "examples": record.examples,
            "steps": record.steps,
            "examples_run": record.examples_run,
            "steps_run": record.steps_run,
            "seconds": round(record.seconds, 4),
            "faults": record.faults,
            "faults_note": record.faults_note,
            "copies": list(record.copies),
            "copies_note": record.copies_note,
            "reason": record.reason,
            "trace": record.findings[0].as_dict()["trace"] if record.findings else [],
        },
        "explorer": exploration_fields(result.explorations[0]) if result.explorations else None,
        "explorations": [exploration_fields(run) for run in result.explorations],
        "findings": [f.as_dict() for f in result.findings],
        "timings": {
            "import_s": round(import_s, 4),
            "conformance_s": round(result.conformance_s, 4),
            "explorer_s": round(result.explorer_s, 4),
        },
    }
    if code == 2:
        fields["error"] = f"evictable check: the conformance run could not be made: {record.reason}"
    return code, fields
