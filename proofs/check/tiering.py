"""A tiering orchestrator held to the model in lock-step: its safety invariants, its
answers and states, and its liveness (`evictable check --target tiering`).

`check_orchestrator(build, level, profile, walks, depth, seed)` takes each world of
the tiering explorer at `level` (`explore.tiering_bounds.WORLDS`: the families `scan`,
`peer`, `faults`, `stale`, `async`) whose tiers the orchestrator can have, and:

* **walks**: `walks` seeded random walks of at most `depth` actions from the world's
  start, each action one of the model's alphabet there (`explore.tiering_moves.moves`:
  the scheduler's calls at their points of a step, poll rounds between holds, the
  tiers' completions, failures and splits, probe answers, peers' lookups and
  give-ups, raising submits, stray reports, resets). The orchestrator under test is
  built in the start state (`build(snapshot)`) and makes every action the model makes;
  after each, its own snapshot is judged by every invariant of
  `model.tiering_invariants` (those of states between steps where no step is open, the
  call's postconditions) -- each violation a finding of that invariant's class -- and
  an exception from it is a `crash`. Its answer, whether it raised and (`compare`
  `state`) its snapshot are then compared with the model's (the `profile`'s
  semantics); the first difference ends the walk, and under `state` it is a
  `divergence` finding (under `answers`, for an orchestrator whose tiers are not the
  model's harness tiers, it only ends the walk, and an event its tiers cannot have is
  not made). Two differences of design are not compared: the order of the primary's
  evictable chunks (vLLM 0.33 ranks them by request) and the outcome the model keeps
  for a job no tier has (REGISTERED).
* **liveness**: the model's fair-cycle search at the world (`explore.tiering.livelock`);
  a lasso it finds -- a scan answering "try later" for ever, a staged promotion never
  submitted, a job never processed -- is replayed on the orchestrator, its cycle three
  times, in lock-step: if the orchestrator follows the model round the cycle, it is a
  `never answers` finding on the orchestrator itself, with the replayed trace.

The walks' findings are ranked as every check's (`base.findings`), one per class,
each with the shortest trace (the actions as calls on the orchestrator `m`); each
lasso confirmed on the orchestrator follows as a finding of its own. The engine imports no
engine of another project; verdicts come from the walks' bounds and the search's, the
seed fixed by the caller.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evictable.model.errors import InvalidArgumentError, UnknownJobError, UnknownTierError
from evictable.model.tiering import ModelTiering
from evictable.model.tiering_invariants import FINDING_CLASS, check_tiering
from evictable.model.tiering_types import JobPhase, Profile, TieringSnapshot
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.findings import Finding, group
from evictable.proofs.base.levels import Level
from evictable.proofs.explore.tiering import livelock, root_world
from evictable.proofs.explore.tiering_bounds import WORLDS
from evictable.proofs.explore.tiering_moves import Act, apply, keys_arg, moves, translate
from evictable.proofs.explore.tiering_world import TieringBounds, World, canonical, client_id

__all__ = [
    "CLASS_KIND",
    "COMPARE",
    "REFUSALS",
    "START",
    "Build",
    "OrchestratorCheck",
    "call_act",
    "check_orchestrator",
    "same",
]

Build = Callable[[TieringSnapshot], Any]
"""`start snapshot -> orchestrator` (the tiering adapter protocol) in that state."""

CLASS_KIND: dict[str, Kind] = {
    "evicted_while_hit": Kind.EVICTED_WHILE_HIT,
    "evicted_while_pinned": Kind.EVICTED_WHILE_PINNED,
    "stale_write": Kind.STALE_WRITE,
    "double_owner": Kind.DOUBLE_OWNER,
    "owner_lost": Kind.OWNER_LOST,
    "pin_leak": Kind.LEAKED_PIN,
    "reset_left_work": Kind.RESET_LEFT_WORK,
    "crash": Kind.CRASH,
    "finalised_twice": Kind.FINALISED_TWICE,
    "pending_hidden": Kind.PENDING_HIDDEN,
    "never_answers": Kind.NEVER_ANSWERS,
    "livelock": Kind.NEVER_ANSWERS,
    "accounting": Kind.ACCOUNTING,
    "divergence": Kind.DIVERGENCE,
}
"""The tiering finding classes (`model.tiering_invariants.FINDING_CLASS`, the explorer's
`crash`, `livelock`, `divergence`) as the check's finding kinds."""

PREAMBLE = (
    "from contextlib import suppress",
    "from evictable.model.tiering_types import JobOutcome, TierSpec",
    "from evictable.proofs.explore.tiering_world import TieringBounds, root_snapshot",
)

START = ("m = ...  # the orchestrator under test, in the start state root_snapshot(bounds)",)
"""The default end of a snippet's head: the caller's `start` says how the orchestrator
is built (its import lines, then the line that makes `m` from `bounds`)."""


@dataclass(frozen=True)
class OrchestratorCheck:
    """What `check_orchestrator` found, and the work done."""

    findings: tuple[Finding, ...]
    walks: int
    diverged: int
    """Walks ended by a divergence from the model."""
    calls: int
    worlds: tuple[str, ...]
    skipped: tuple[str, ...]
    lassos: tuple[str, ...]
    seconds: float
    seed: int

    @property
    def ok(self) -> bool:
        return not self.findings


def call_act(impl: Any, act: Act) -> object:
    """Make the model's action `act` on the orchestrator `impl` (the tiering adapter
    protocol), with the explorer's names for requests and keys."""
    req = client_id(act.client)
    if act.op == "new_request":
        impl.new_request(req)
        return None
    if act.op in ("scan", "store"):
        return getattr(impl, act.op)(req, keys_arg(act))
    if act.op == "complete_load":
        return impl.complete_load(req, keys_arg(act))
    if act.op == "complete_store":
        return impl.complete_store(req, keys_arg(act), bool(act.args[1]))
    if act.op == "finish":
        return impl.finish(req)
    return getattr(impl, act.op)(*act.args)


def _normal(s: TieringSnapshot) -> TieringSnapshot:
    evictable = tuple(sorted(s.primary.evictable or (), key=repr)) if s.primary.evictable else ()
    jobs = tuple(replace(j, outcome=None) if j.phase is JobPhase.REGISTERED else j for j in s.jobs)
    return replace(s, primary=replace(s.primary, evictable=evictable), jobs=jobs)


def same(model: TieringSnapshot, impl: TieringSnapshot) -> list[str]:
    """The fields in which two snapshots differ, beyond the two differences of design
    the check does not compare (module docstring)."""
    a, b = _normal(model), _normal(impl)
    names = [n for n in a.__dataclass_fields__ if n != "log"]
    return [n for n in names if getattr(a, n) != getattr(b, n)]


_CALLS = frozenset(
    {"new_request", "scan", "store", "complete_store", "complete_load", "finish"}
    | {"end_step", "poll", "reset", "reset_flushed", "shutdown"}
)
"""The scheduler's calls (never refused: the orchestrator must take them)."""

COMPARE = ("state", "answers")
"""`state`: answers, exceptions and snapshots equal the model's (divergence a finding);
`answers`: answers and exceptions only (a divergence ends the walk, not a finding: the
orchestrator's tiers need not behave as the model's harness tier), and an event its
tiers cannot have is not made."""


@dataclass
class _Walk:
    bounds: TieringBounds
    name: str
    start: tuple[str, ...]
    lines: list[str] = field(default_factory=list)
    found: list[Finding] = field(default_factory=list)
    diverged: bool = False

    def find(self, cls: str, reason: str) -> None:
        head = [*PREAMBLE, *self.start[:-1], f"bounds = {self.bounds!r}", self.start[-1]]
        body = [*head, *self.lines, f"# {reason}"]
        self.found.append(
            Finding(
                kind=CLASS_KIND.get(cls, Kind.INVARIANT),
                engine=f"tiering lock-step ({self.name})",
                reason=reason,
                trace="\n".join([f"bounds = {self.bounds!r}", *self.lines]),
                snippet="\n".join(body),
                calls=len(self.lines),
            )
        )


REFUSALS = (UnknownTierError, UnknownJobError, InvalidArgumentError)
"""What an adapter raises for an event its tiers cannot have (a job of vLLM's example
tier failing on demand): in `answers` mode the action is not made, on either side."""


def _step(
    walk: _Walk, impl: Any, world: World, act: Act, profile: Profile, compare: str
) -> World | None:
    """One action on both sides: the world after it (`world` itself when the
    orchestrator refused an event it cannot have), or None when the walk ends."""
    mine = apply(ModelTiering, profile, world, act, walk.bounds.stale)
    answer: object = None
    error: BaseException | None = None
    try:
        answer = call_act(impl, act)
    except REFUSALS as exc:
        if compare == "answers" and act.op not in _CALLS:
            return world
        error = exc
    except Exception as exc:
        error = exc
    if error is not None:
        walk.lines.append(f"with suppress(Exception): {act}  # raises {type(error).__name__}")
    else:
        walk.lines.append(f"{act}  # -> {answer!r}")
    if error is not None:
        walk.find("crash", f"{act} raised {type(error).__name__}: {error}")
    snap = impl.snapshot()
    between = not mine.world.step_open
    for name in check_tiering(snap, after=act.op, between_steps=between).violated:
        cls = FINDING_CLASS[name]
        walk.find(cls, f"{act}: the orchestrator's state violates {name} ({cls})")
    state = compare == "state"
    if (error is None) != (mine.error is None) or (error is None and answer != mine.answer):
        if state:
            theirs = f"raised {error!r}" if error is not None else f"answers {answer!r}"
            ours = (
                f"raises {mine.error!r}" if mine.error is not None else f"answers {mine.answer!r}"
            )
            walk.find("divergence", f"{act}: the model {ours}, the orchestrator {theirs}")
        walk.diverged = True
        return None  # the scheduler's next calls follow the answers: the walk ends
    differ = same(mine.snap, snap) if state else []
    if differ:
        walk.find("divergence", f"{act}: its state differs from the model's in {differ}")
        walk.diverged = True
        return None
    if error is not None and act.op != "poll":
        return None  # a crash ends the scheduler; the poll thread logs it and goes on
    return mine.world


def _lasso(
    build: Build,
    bounds: TieringBounds,
    name: str,
    profile: Profile,
    compare: str,
    rounds: int,
    start: tuple[str, ...],
) -> tuple[list[Finding], str | None]:
    """The model's lasso at `bounds`, replayed on the orchestrator (module docstring)."""
    found = livelock(bounds, profile)
    lasso = found.lasso
    if lasso is None:
        return [], None
    world = root_world(bounds, profile, ModelTiering)
    impl = build(world.snap)
    walk = _Walk(bounds, name, start)
    labels = [*lasso.stem, *(e for _ in range(rounds) for e in lasso.cycle)]
    try:
        for label in labels:
            _, ren = canonical(world, bounds)
            act = translate(label.act, ren.inverse())
            nxt = _step(walk, impl, world, act, profile, compare)
            if nxt is None or nxt is world:
                return [], f"{name}: the lasso of {lasso.token!r} was not followed on replay"
            world = nxt
    finally:
        _shutdown(impl)
    reason = (
        f"never answers: {lasso.token!r} stays pending round a fair cycle of "
        f"{len(lasso.cycle)} action(s), replayed {rounds} times on the orchestrator"
    )
    walk.found = []
    walk.find("never_answers", reason)
    return walk.found, f"{name}: {lasso.token!r}, stem {len(lasso.stem)}, cycle {len(lasso.cycle)}"


def _shutdown(impl: Any) -> None:
    try:
        impl.shutdown()
    except Exception:
        return


def check_orchestrator(
    build: Build,
    level: Level = "quick",
    profile: Profile | str = Profile.VLLM_033,
    walks: int = 20,
    depth: int = 30,
    seed: int | None = None,
    compare: str = "state",
    families: Iterable[str] | None = None,
    liveness: bool = True,
    rounds: int = 3,
    skip: Mapping[str, str] | None = None,
    start: tuple[str, ...] = START,
) -> OrchestratorCheck:
    """Hold the orchestrators `build` makes to the model (module docstring). A world
    whose tiers `build` refuses (it raises building the start) is skipped and named, as
    are the families in `skip` (family -> why the orchestrator never meets it). `start`
    ends each finding's snippet head (import lines, then the line making `m`)."""
    skip = dict(skip or {})
    prof = Profile(profile)
    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    t0 = time.perf_counter()
    found: list[Finding] = []
    livelocks: list[Finding] = []  # one per world: each lasso is its own finding
    done, skipped, lassos = [], [], []
    n_walks = calls = diverged = 0
    chosen = set(families) if families is not None else None
    for fam, worlds in WORLDS[level].items():
        if chosen is not None and fam not in chosen:
            continue
        if fam in skip:
            skipped.append(f"{fam}: {skip[fam]}")
            continue
        for i, bounds in enumerate(worlds):
            name = f"{fam}[{i}]"
            root = root_world(bounds, prof, ModelTiering)
            try:
                _shutdown(build(root.snap))
            except Exception as exc:
                skipped.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            done.append(name)
            for _ in range(walks):
                walk = _Walk(bounds, name, start)
                impl = build(root.snap)
                world: World | None = root
                try:
                    for _ in range(depth):
                        acts = list(moves(world, bounds)) if world is not None else []
                        if world is None or not acts:
                            break
                        world = _step(walk, impl, world, rng.choice(acts), prof, compare)
                finally:
                    _shutdown(impl)
                n_walks += 1
                diverged += walk.diverged
                calls += len(walk.lines)
                found.extend(walk.found)
            if liveness:
                more, note = _lasso(build, bounds, name, prof, compare, rounds, start)
                livelocks.extend(more)
                if note:
                    lassos.append(note)
    return OrchestratorCheck(
        (*group(found), *livelocks),
        n_walks,
        diverged,
        calls,
        tuple(done),
        tuple(skipped),
        tuple(lassos),
        time.perf_counter() - t0,
        seed,
    )
