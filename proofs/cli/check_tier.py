"""`evictable check --target tier MODULE:FACTORY`: a secondary tier of vLLM 0.33 held to
the tier contract (`check.tier`).

FACTORY is a `vllm.v1.kv_offload.tiering.base.SecondaryTierManager` subclass (built with
vLLM's arguments) or a callable `(offloading_spec, primary_kv_view) -> tier`
(`proofs.adapters.vllm.tier_driver`: `example_tier`, `fs_tier` are vLLM's own tiers).
The tier is driven through `TierDriver`, which needs vLLM: where vLLM is not installed
the command says which environment to use and exits 2. Exit codes as for `check`: 0 the
tier keeps the contract, 1 a finding, 2 could not run.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from evictable.proofs.base.contract import DEFAULT
from evictable.proofs.base.findings import findings_block
from evictable.proofs.check.setup import SetupError, call_user, load_factory
from evictable.proofs.check.tier import TIER_BACKSTOP_S, check_tier
from evictable.proofs.cli.errors import UsageError

__all__ = ["TIER_EXAMPLES", "check_tier_target"]

TIER_EXAMPLES = 20
"""Examples of the tier contract when `--examples` is left at `check`'s default."""

NEEDS_VLLM = (
    "evictable check --target tier drives vLLM 0.33's tier API and needs vLLM 0.33 and "
    "torch ({why}); run it in the interop environment (`make interop` builds "
    ".venv-interop; docs/interop.md)"
)


def _driver_module() -> Any:
    try:
        from evictable.proofs.adapters.vllm import tier_driver
    except ImportError as exc:
        raise UsageError(NEEDS_VLLM.format(why=f"{type(exc).__name__}: {exc}")) from None
    return tier_driver


def check_tier_target(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """Run the tier contract on `args.spec`; (exit code, report fields)."""
    t0 = time.perf_counter()
    drivers = _driver_module()
    try:
        factory = load_factory(args.spec)
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    try:
        call_user("building the tier", drivers.TierDriver, factory).shutdown()
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    import_s = time.perf_counter() - t0
    examples = TIER_EXAMPLES if args.examples == 200 else args.examples
    module, _, name = args.spec.partition(":")
    print(f"evictable check {args.spec} (target tier: the tier contract)")
    print(f"import and construction: {import_s:.1f}s")
    run = check_tier(
        lambda: drivers.TierDriver(factory),
        drivers.K,
        (
            "from evictable.proofs.adapters.vllm import K",
            "from evictable.proofs.adapters.vllm.tier_driver import TierDriver",
            f"from {module} import {name.split('.')[0]}",
        ),
        f"t = TierDriver({name})",
        examples=examples,
        steps=args.steps,
        seed=args.seed,
        backstop_s=TIER_BACKSTOP_S,
    )
    print(
        f"tier contract ({examples} examples x {args.steps} steps, seed {run.seed}): "
        f"{run.examples_run} examples, {run.calls} calls, {run.seconds:.1f}s"
    )
    print()
    print(findings_block(run.findings))
    code = 0 if run.ok else 1
    contract = DEFAULT.as_dict()
    contract.update(mode="safety", errors="any", black_box=True, keys="vllm OffloadKey")
    contract["inputs"] = {"invalid": False, "duplicates": False, "malformed": False}
    contract.pop("profile", None)
    fields: dict[str, Any] = {
        "spec": args.spec,
        "target": "tier",
        "policy": "none",
        "seed": run.seed,
        "contract": contract,
        "verdict": "conforms" if code == 0 else "rejected",
        "conformance": {
            "status": "passed" if run.ok else "failed",
            "examples": examples,
            "steps": args.steps,
            "examples_run": run.examples_run,
            "steps_run": run.calls,
            "seconds": round(run.seconds, 4),
            "faults": False,
            "reason": run.findings[0].reason if run.findings else "",
            "trace": run.findings[0].as_dict()["trace"] if run.findings else [],
        },
        "explorer": None,
        "explorations": [],
        "findings": [f.as_dict() for f in run.findings],
        "timings": {"import_s": round(import_s, 4), "check_s": round(run.seconds, 4)},
    }
    return code, fields
