"""`evictable check --target tiering MODULE:FACTORY`: a tiering orchestrator held to the
model in lock-step (`check.tiering`): its safety invariants, its answers and states,
its liveness.

FACTORY is `(TieringConfig) -> orchestrator` (the tiering adapter protocol); the
orchestrator must also offer `start(snapshot)`, which brings a fresh one to a start
state of the explorer's worlds (`proofs.adapters.vllm`'s factories do:
`example_tiering`, `fs_tiering`, `peer_tiering`, `p2p_tiering`, `harness_tiering`).
What it declares is used: `evictable_tiering_compare` (`state` or `answers`, see
`check.tiering.COMPARE`; `--compare` wins), `evictable_tiering_skip` (families it
never meets, with the reason), `evictable_tiering_profile` (default `vllm-0.33`;
`--profile seed` asks for the model's `spec`). `--level` picks the worlds
(`explore.tiering_bounds.WORLDS`), `--examples` the walks per world (20 when left at
`check`'s default), `--steps` their depth. Exit codes as for `check`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from evictable.model.tiering_types import Profile, TieringSnapshot
from evictable.proofs.base.contract import DEFAULT
from evictable.proofs.base.findings import factory_source, findings_block
from evictable.proofs.check.setup import SetupError, load_factory
from evictable.proofs.check.tiering import COMPARE, check_orchestrator
from evictable.proofs.cli.errors import UsageError

__all__ = ["TIERING_WALKS", "check_tiering_target"]

TIERING_WALKS = 20
"""Walks per world when `--examples` is left at `check`'s default."""


def _build(factory: Any) -> Any:
    def build(snap: TieringSnapshot) -> Any:
        made = factory(snap.config)
        start = getattr(made, "start", None)
        if not callable(start):
            raise UsageError(
                f"evictable check: {type(made).__name__} has no start(snapshot): the "
                "tiering target builds each orchestrator in a start state of the "
                "explorer's worlds (see proofs.adapters.vllm.tiering.VllmTiering.start)"
            )
        start(snap)
        return made

    return build


def check_tiering_target(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """Run the tiering lock-step on `args.spec`; (exit code, report fields)."""
    t0 = time.perf_counter()
    try:
        factory = load_factory(args.spec)
    except SetupError as exc:
        raise UsageError(f"evictable check: {exc}") from None
    import_s = time.perf_counter() - t0
    compare = args.compare or getattr(factory, "evictable_tiering_compare", "state")
    if compare not in COMPARE:
        raise UsageError(f"evictable check: --compare is one of {COMPARE}, not {compare!r}")
    declared = getattr(factory, "evictable_tiering_profile", Profile.VLLM_033.value)
    profile = Profile.SPEC if args.profile == "seed" else Profile(args.profile or declared)
    walks = TIERING_WALKS if args.examples == 200 else args.examples
    print(f"evictable check {args.spec} (target tiering, profile {profile.value!r})")
    print(f"import: {import_s:.1f}s; compare: {compare}; level: {args.level}")
    imp, name = factory_source(factory)
    start = (imp, f"m = {name}(bounds.config)\nm.start(root_snapshot(bounds))")
    run = check_orchestrator(
        _build(factory),
        level=args.level,
        profile=profile,
        walks=walks,
        depth=args.steps,
        seed=args.seed,
        compare=compare,
        skip=getattr(factory, "evictable_tiering_skip", None),
        start=start,
    )
    print(
        f"lock-step ({walks} walks x {args.steps} steps per world, seed {run.seed}): "
        f"{run.walks} walks ({run.diverged} ended by a divergence), {run.calls} calls, "
        f"{run.seconds:.1f}s"
    )
    print(f"worlds: {', '.join(run.worlds) or 'none'}")
    for why in run.skipped:
        print(f"skipped: {why}")
    for lasso in run.lassos:
        print(f"lasso: {lasso}")
    if not run.worlds:
        raise UsageError(
            f"evictable check: no world of level {args.level!r} could be built: "
            + "; ".join(run.skipped)
        )
    print()
    print(findings_block(run.findings))
    code = 0 if run.ok else 1
    contract = DEFAULT.as_dict()
    contract.update(mode="exact" if compare == "state" else "safety", errors="any")
    contract.update(black_box=False, keys="the explorer's keys (k0, k1, ...)")
    contract["inputs"] = {"invalid": False, "duplicates": False, "malformed": False}
    contract["profile"] = "vllm-0.33" if profile is Profile.VLLM_033 else "seed"
    fields: dict[str, Any] = {
        "spec": args.spec,
        "target": "tiering",
        "policy": "none",
        "seed": run.seed,
        "contract": contract,
        "verdict": "conforms" if code == 0 else "rejected",
        "conformance": {
            "status": "passed" if run.ok else "failed",
            "examples": walks,
            "steps": args.steps,
            "examples_run": run.walks,
            "steps_run": run.calls,
            "seconds": round(run.seconds, 4),
            "faults": True,
            "reason": run.findings[0].reason if run.findings else "",
            "trace": run.findings[0].as_dict()["trace"] if run.findings else [],
        },
        "explorer": None,
        "explorations": [],
        "findings": [f.as_dict() for f in run.findings],
        "timings": {"import_s": round(import_s, 4), "check_s": round(run.seconds, 4)},
        "tiering": {
            "level": args.level,
            "compare": compare,
            "worlds": list(run.worlds),
            "skipped": list(run.skipped),
            "lassos": list(run.lassos),
            "diverged": run.diverged,
        },
    }
    return code, fields
