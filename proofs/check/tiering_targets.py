"""The `tier` and `tiering` targets of `evictable check` (stage plug-ins of
`check.pipeline`).

* `tier` -- FACTORY is a vLLM 0.33 `SecondaryTierManager` subclass (built with vLLM's
  arguments) or a callable `(offloading_spec, primary_kv_view) -> tier`
  (`proofs.adapters.vllm.tier_driver`: `example_tier`, `fs_tier` are vLLM's own
  tiers); the tier is held to the tier contract (`check.tier`) through `TierDriver`,
  which needs vLLM: where vLLM is not installed the load stage says which environment
  to use (a setup error, exit 2).
* `tiering` -- FACTORY is `(TieringConfig) -> orchestrator` (the tiering adapter
  protocol, `base.tiering_protocol`); the orchestrator must also offer
  `start(snapshot)`, which brings a fresh one to a start state of the explorer's
  worlds (`proofs.adapters.vllm`'s factories do: `example_tiering`, `fs_tiering`,
  `peer_tiering`, `p2p_tiering`, `harness_tiering`). It is held to the model in
  lock-step (`check.tiering`). What it declares is used:
  `evictable_tiering_compare` (`state` or `answers`; `--compare` wins),
  `evictable_tiering_skip` (families it never meets, with the reason),
  `evictable_tiering_profile` (default `vllm-0.33`; `--profile seed` asks for the
  model's `spec`). `--level` picks the worlds (`explore.tiering_bounds.WORLDS`),
  `--examples` the walks per world (20 when left at `check`'s default), `--steps`
  their depth.

Both report the contract they hold the subject to in place of the manager contract.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from evictable.model.tiering_types import Profile, TieringSnapshot
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.findings import factory_source
from evictable.proofs.check.setup import SetupError, call_user
from evictable.proofs.check.target import EngineRun, Request, Subject, Target, load_subject
from evictable.proofs.check.tier import TIER_BACKSTOP_S, TIER_CLASSES, check_tier
from evictable.proofs.check.tiering import CLASS_KIND, COMPARE, check_orchestrator
from evictable.proofs.explore.tiering_bounds import WORLDS

__all__ = ["NEEDS_VLLM", "TIERING_TARGETS", "TIERING_WALKS", "TIER_EXAMPLES"]

TIER_EXAMPLES = 20
"""Examples of the tier contract when `--examples` is left at `check`'s default."""

TIERING_WALKS = 20
"""Walks per world when `--examples` is left at `check`'s default."""

DEFAULT_EXAMPLES = Request("").examples
"""`check`'s default example count (the manager's conformance examples)."""

NEEDS_VLLM = (
    "--target tier drives vLLM 0.33's tier API and needs vLLM 0.33 and torch ({why}); "
    "run it in the interop environment (`make interop` builds .venv-interop; "
    "docs/interop.md)"
)


# ------------------------------------------------------------------ tier


def _driver_module() -> Any:
    try:
        from evictable.proofs.adapters.vllm import tier_driver
    except ImportError as exc:
        raise SetupError(NEEDS_VLLM.format(why=f"{type(exc).__name__}: {exc}")) from None
    return tier_driver


def _load_tier(request: Request) -> Subject:
    drivers = _driver_module()
    subject = load_subject(request)
    call_user("building the tier", drivers.TierDriver, subject.factory).shutdown()
    return Subject(subject.spec, subject.factory, subject.import_s, None, {"drivers": drivers})


def _guide_tier(subject: Subject, contract: Contract, request: Request) -> Subject:
    return subject


def _conformance(
    run: Any, examples: int, steps: int, faults: bool, examples_run: int
) -> dict[str, Any]:
    return {
        "status": "passed" if run.ok else "failed",
        "examples": examples,
        "steps": steps,
        "examples_run": examples_run,
        "steps_run": run.calls,
        "seconds": round(run.seconds, 4),
        "faults": faults,
        "reason": run.findings[0].reason if run.findings else "",
        "trace": run.findings[0].as_dict()["trace"] if run.findings else [],
    }


def _held(**fields: Any) -> dict[str, Any]:
    """The report's contract of a tiering target: any error type, valid calls only,
    and `fields` (mode, black box, keys, profile)."""
    held = DEFAULT.as_dict()
    held.update(errors="any", inputs={"invalid": False, "duplicates": False, "malformed": False})
    held.update(fields)
    return held


def _engines_tier(subject: Subject, contract: Contract, request: Request) -> EngineRun:
    drivers = subject.parts["drivers"]
    factory = subject.factory
    examples = TIER_EXAMPLES if request.examples == DEFAULT_EXAMPLES else request.examples
    module, _, name = subject.spec.partition(":")
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
        steps=request.steps,
        seed=request.seed,
        backstop_s=TIER_BACKSTOP_S,
    )
    held = _held(mode="safety", black_box=True, keys="vllm OffloadKey")
    held.pop("profile", None)
    line = (
        f"tier contract ({examples} examples x {request.steps} steps, seed {run.seed}): "
        f"{run.examples_run} examples, {run.calls} calls, {run.seconds:.1f}s"
    )
    return EngineRun(
        tuple(run.findings),
        "passed" if run.ok else "failed",
        (line,),
        {
            "seed": run.seed,
            "contract": held,
            "conformance": _conformance(run, examples, request.steps, False, run.examples_run),
            "timings": {"check_s": round(run.seconds, 4)},
        },
        detail=run,
        held="the tier contract (jobs reported exactly once, failures as results, nothing "
        "unreported after drain_jobs, stable lookups, consistent events)",
    )


# ------------------------------------------------------------------ tiering


def _build(factory: Any) -> Any:
    def build(snap: TieringSnapshot) -> Any:
        made = factory(snap.config)
        start = getattr(made, "start", None)
        if not callable(start):
            raise SetupError(
                f"{type(made).__name__} has no start(snapshot): the tiering target builds "
                "each orchestrator in a start state of the explorer's worlds (see "
                "proofs.adapters.vllm.tiering.VllmTiering.start)"
            )
        start(snap)
        return made

    return build


def _guide_tiering(subject: Subject, contract: Contract, request: Request) -> Subject:
    factory = subject.factory
    compare = request.option("compare") or getattr(factory, "evictable_tiering_compare", "state")
    if compare not in COMPARE:
        raise SetupError(f"--compare is one of {COMPARE}, not {compare!r}")
    declared = getattr(factory, "evictable_tiering_profile", Profile.VLLM_033.value)
    asked = request.choices.get("profile")
    try:
        profile = Profile.SPEC if asked == "seed" else Profile(asked or declared)
    except ValueError:
        raise SetupError(f"unknown tiering profile {asked or declared!r}") from None
    first = next(iter(WORLDS[request.option("level", "quick")].values()))[0]
    made = call_user("building the orchestrator", factory, first.config)
    if not callable(getattr(made, "start", None)):
        raise SetupError(
            f"{type(made).__name__} has no start(snapshot): the tiering target builds "
            "each orchestrator in a start state of the explorer's worlds (see "
            "proofs.adapters.vllm.tiering.VllmTiering.start)"
        )
    stop = getattr(made, "shutdown", None)
    if callable(stop):
        with suppress(Exception):  # a probe: only whether it can start matters here
            stop()
    parts = {"compare": compare, "profile": profile}
    return Subject(subject.spec, factory, subject.import_s, None, parts)


def _engines_tiering(subject: Subject, contract: Contract, request: Request) -> EngineRun:
    compare: str = subject.parts["compare"]
    profile: Profile = subject.parts["profile"]
    level = request.option("level", "quick")
    walks = TIERING_WALKS if request.examples == DEFAULT_EXAMPLES else request.examples
    imp, name = factory_source(subject.factory)
    start = (imp, f"m = {name}(bounds.config)\nm.start(root_snapshot(bounds))")
    run = check_orchestrator(
        _build(subject.factory),
        level=level,
        profile=profile,
        walks=walks,
        depth=request.steps,
        seed=request.seed,
        compare=compare,
        skip=getattr(subject.factory, "evictable_tiering_skip", None),
        start=start,
    )
    if not run.worlds:
        raise SetupError(f"no world of level {level!r} could be built: " + "; ".join(run.skipped))
    lines = [
        f"profile {profile.value!r}; compare: {compare}; level: {level}",
        f"lock-step ({walks} walks x {request.steps} steps per world, seed {run.seed}): "
        f"{run.walks} walks ({run.diverged} ended by a divergence), {run.calls} calls, "
        f"{run.seconds:.1f}s",
        f"worlds: {', '.join(run.worlds)}",
        *(f"skipped: {why}" for why in run.skipped),
        *(f"lasso: {lasso}" for lasso in run.lassos),
    ]
    held = _held(
        mode="exact" if compare == "state" else "safety",
        black_box=False,
        keys="the explorer's keys (k0, k1, ...)",
        profile="vllm-0.33" if profile is Profile.VLLM_033 else "seed",
    )
    return EngineRun(
        tuple(run.findings),
        "passed" if run.ok else "failed",
        tuple(lines),
        {
            "seed": run.seed,
            "contract": held,
            "conformance": _conformance(run, walks, request.steps, True, run.walks),
            "timings": {"check_s": round(run.seconds, 4)},
            "tiering": {
                "level": level,
                "compare": compare,
                "worlds": list(run.worlds),
                "skipped": list(run.skipped),
                "lassos": list(run.lassos),
                "diverged": run.diverged,
            },
        },
        detail=run,
        held=f"the tiering model ({profile.value}) in lock-step, "
        + ("answers and states" if compare == "state" else "answers only"),
    )


def _tiering_options(p: Any) -> None:
    p.add_argument(
        "--level",
        choices=("quick", "default", "thorough"),
        default=None,
        help="tiering target: the explorer's worlds walked in lock-step (default: quick)",
    )
    p.add_argument(
        "--compare",
        choices=COMPARE,
        default=None,
        help="tiering target: compare answers and states with the model, or answers only "
        "(default: what the factory declares, else state)",
    )


TIERING_TARGETS: tuple[Target, ...] = (
    Target(
        "tier",
        "a vLLM SecondaryTierManager, or (offloading_spec, primary_kv_view) -> tier",
        _guide_tier,
        _engines_tier,
        _load_tier,
        TIER_CLASSES,
    ),
    Target(
        "tiering",
        "(TieringConfig) -> orchestrator with start(snapshot)",
        _guide_tiering,
        _engines_tiering,
        kinds=tuple(dict.fromkeys(CLASS_KIND.values())),
        arguments=_tiering_options,
    ),
)
"""The tiering targets, registered by `check.pipeline` after the built-in ones."""
