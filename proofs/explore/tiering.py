"""The tiering orchestrator as a subject of the one breadth-first engine.

A state is a canonical `World` (`explore.tiering_world`): the orchestrator's snapshot and
the scheduler side. Expanding one rebuilds the reference model from the snapshot
(`ModelTiering.restore`, or a broken variant's class for a negative control), makes every
action of the alphabet (`explore.tiering_moves`) and judges each: a call that raises is a
`crash`; every invariant of `model.tiering_invariants` is evaluated on the state after it
(and the call's postconditions: after `reset`, nothing left). A failure is reported with a
shortest trace, as a runnable snippet (`trace_lines`).

Finding classes in `masked` are counted (`Result.notes`) and their edges followed (a
crash is followed only out of a poll round, whose thread logs the exception and goes
on; elsewhere it ends the engine): the liveness search looks past safety findings. With
`record_edges`, each state also carries its liveness properties, and
`explore.liveness.find_lasso` searches the graph for a fair cycle on which a request's
scan answers "try later" for ever, a staged promotion is never submitted, a job never
processed, a request never finalised or a peer's lookup never answered (`livelock`).

**Lock-step hook.** With `partner` (a factory that builds an implementation in the start
state), every edge is also made on the implementation, replayed along the state's path,
and its answer, its exception type and its snapshot must equal the model's: an
implementation of the `spec` profile (issue 34's) plugs in here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from evictable.model.tiering import ModelTiering
from evictable.model.tiering_invariants import (
    BETWEEN_STEPS,
    FINDING_CLASS,
    LOG_INVARIANTS,
    TIERING_INVARIANTS,
    check_tiering,
)
from evictable.model.tiering_types import Profile, TieringSnapshot
from evictable.proofs.base.tiering_protocol import TieringAdapter
from evictable.proofs.explore.engine import Expansion, Found, Result, search
from evictable.proofs.explore.liveness import Lasso, find_lasso
from evictable.proofs.explore.tiering_moves import (
    Act,
    Applied,
    Edge,
    apply,
    edge_props,
    edge_props_of,
    liveness_props,
    moves,
    translate,
)
from evictable.proofs.explore.tiering_world import (
    Client,
    TieringBounds,
    World,
    canonical,
    root_snapshot,
)

__all__ = [
    "Partner",
    "TieringSubject",
    "explore",
    "judge",
    "livelock",
    "root_world",
    "trace_lines",
]

Partner = Callable[[TieringSnapshot], TieringAdapter]
"""Builds the implementation under test in a given start state."""

Payload = tuple[World, tuple[Edge, ...]]


def root_world(bounds: TieringBounds, profile: Profile, model: type[ModelTiering]) -> World:
    """The start world, normalised through the model (its snapshot is the model's)."""
    snap = model.restore(root_snapshot(bounds), profile).snapshot()
    world = World(snap, tuple(Client() for _ in bounds.requests))
    return canonical(world, bounds)[0]


STATE_INVARIANTS: tuple[str, ...] = tuple(n for n in TIERING_INVARIANTS if n not in LOG_INVARIANTS)
BETWEEN_INVARIANTS: tuple[str, ...] = (*STATE_INVARIANTS, *BETWEEN_STEPS)


def judge(
    act: Act, applied: Applied, state_verdict: tuple[str, ...] | None = None
) -> tuple[str, str] | None:
    """The finding an edge makes: (class, reason), or None. `state_verdict` (the state
    invariants the world after it violates, remembered per canonical world) stands in
    for evaluating them on the call's snapshot."""
    if applied.error is not None:
        err = applied.error
        return "crash", f"{act}: raised {type(err).__name__}: {err}"
    if state_verdict is None:
        between = not applied.world.step_open
        violated = check_tiering(applied.snap, after=act.op, between_steps=between).violated
    else:
        violated = check_tiering(applied.snap, after=act.op, names=LOG_INVARIANTS).violated
        violated += state_verdict
    for name in violated:
        return FINDING_CLASS[name], f"{act}: violates {name} ({FINDING_CLASS[name]})"
    return None


class TieringSubject:
    """The tiering explorer's subject (see the module doc)."""

    def __init__(
        self,
        bounds: TieringBounds,
        profile: Profile | str = Profile.SPEC,
        model: type[ModelTiering] = ModelTiering,
        *,
        masked: frozenset[str] = frozenset(),
        liveness: bool = False,
        partner: Partner | None = None,
    ) -> None:
        self.bounds = bounds
        self.profile = Profile(profile)
        self.model = model
        self.masked = masked
        self.liveness = liveness
        self.partner = partner
        self.in_flight: Edge | None = None
        self.verdicts: dict[World, tuple[str, ...]] = {}

    def state_verdict(self, canon: World) -> tuple[str, ...]:
        """The state invariants the canonical world `canon` violates (names do not
        matter to them: judged once per canonical world)."""
        got = self.verdicts.get(canon)
        if got is None:
            names = STATE_INVARIANTS if canon.step_open else BETWEEN_INVARIANTS
            got = check_tiering(canon.snap, names=names).violated
            if len(self.verdicts) < 500_000:
                self.verdicts[canon] = got
        return got

    def root(self) -> tuple[Hashable, Payload]:
        world = root_world(self.bounds, self.profile, self.model)
        return world, (world, ())

    def expand(self, payload: Payload) -> Expansion[Payload, Edge]:
        world, path = payload
        out: Expansion[Payload, Edge] = Expansion()
        if self.liveness:
            out.props = liveness_props(world, self.bounds)
        twin = self._replayed(path) if self.partner is not None else None
        for act in moves(world, self.bounds):
            label = Edge(act, edge_props_of(act, world))
            self.in_flight = label
            applied = apply(self.model, self.profile, world, act, self.bounds.stale)
            out.edges += 1
            nxt = canonical(applied.world, self.bounds)[0]
            verdict = () if applied.error is not None else self.state_verdict(nxt)
            found = judge(act, applied, verdict)
            if found is None and twin is not None:
                found = self._lockstep(path, twin, label, applied)
            self.in_flight = None
            if found is not None:
                kind, reason = found
                if kind not in self.masked:
                    out.found = Found(reason, label)
                    return out
                out.notes[kind] += 1
                if applied.error is not None and act.op != "poll":
                    continue  # a crash ends the engine; the poll thread logs it and goes on
            out.successors.append((nxt, (nxt, (*path, label) if self.partner else ()), label))
        return out

    # ------------------------------------------------------------ lock-step

    def _replayed(self, path: tuple[Edge, ...]) -> tuple[World, TieringAdapter]:
        """The concrete world and the partner after `path` (labels translated)."""
        assert self.partner is not None
        world = root_world(self.bounds, self.profile, self.model)
        impl = self.partner(world.snap)
        for label in path:
            _, ren = canonical(world, self.bounds)
            act = translate(label.act, ren.inverse())
            _call_partner(impl, act)
            world = apply(self.model, self.profile, world, act, self.bounds.stale).world
        return world, impl

    def _lockstep(
        self, path: tuple[Edge, ...], twin: tuple[World, TieringAdapter], label: Edge, mine: Applied
    ) -> tuple[str, str] | None:
        world, _ = twin
        _, ren = canonical(world, self.bounds)
        act = translate(label.act, ren.inverse())
        _, impl = self._replayed(path)
        model_side = apply(self.model, self.profile, world, act, self.bounds.stale)
        answer: object = None
        error: BaseException | None = None
        try:
            answer = _call_partner(impl, act)
        except Exception as exc:
            error = exc
        if type(error) is not type(model_side.error):
            return "divergence", f"{act}: model raised {model_side.error!r}, impl {error!r}"
        if answer != model_side.answer:
            return "divergence", f"{act}: model answered {model_side.answer!r}, impl {answer!r}"
        theirs = impl.snapshot()
        if theirs != model_side.snap:
            return "divergence", f"{act}: the snapshots differ after it"
        del mine
        return None


def _call_partner(impl: TieringAdapter, act: Act) -> object:
    from evictable.proofs.explore.tiering_moves import keys_arg
    from evictable.proofs.explore.tiering_world import client_id

    req = client_id(act.client)
    if act.op == "new_request":
        impl.new_request(req)
    elif act.op in ("scan", "store"):
        return getattr(impl, act.op)(req, keys_arg(act))
    elif act.op == "complete_load":
        impl.complete_load(req, keys_arg(act))
    elif act.op == "complete_store":
        impl.complete_store(req, keys_arg(act), bool(act.args[1]))
    elif act.op == "finish":
        impl.finish(req)
    else:
        return getattr(impl, act.op)(*act.args)
    return None


# ------------------------------------------------------------------ searches


def explore(
    bounds: TieringBounds,
    profile: Profile | str = Profile.SPEC,
    model: type[ModelTiering] = ModelTiering,
    *,
    masked: frozenset[str] = frozenset(),
    record_edges: bool = False,
    partner: Partner | None = None,
) -> Result[Edge]:
    """Every world reachable at `bounds`, each edge judged (see the module doc)."""
    subject = TieringSubject(
        bounds, profile, model, masked=masked, liveness=record_edges, partner=partner
    )
    return search(subject, max_states=bounds.max_states, record_edges=record_edges)


@dataclass(frozen=True)
class Livelock:
    """A liveness search: the graph's figures and the lasso found (None: none)."""

    result: Result[Edge]
    lasso: Lasso[Edge] | None


SAFETY_CLASSES: frozenset[str] = frozenset(FINDING_CLASS.values())


def livelock(
    bounds: TieringBounds,
    profile: Profile | str = Profile.SPEC,
    model: type[ModelTiering] = ModelTiering,
) -> Livelock:
    """The fair-cycle search at `bounds` (safety findings counted and looked past)."""
    result = explore(bounds, profile, model, masked=SAFETY_CLASSES | {"crash"}, record_edges=True)
    if not result.complete:
        return Livelock(result, None)
    return Livelock(result, find_lasso(result, edge_props))


def trace_lines(
    bounds: TieringBounds,
    profile: Profile | str,
    labels: tuple[Edge, ...],
    model: type[ModelTiering] = ModelTiering,
    cycle: tuple[Edge, ...] = (),
    repeat: int = 2,
) -> list[str]:
    """A runnable snippet: the labels (canonical, per state) replayed on one model with
    concrete names, each call with its answer; a lasso's cycle is run `repeat` times."""
    prof = Profile(profile)
    world = root_world(bounds, prof, model)
    lines = [
        "from evictable.model.tiering import ModelTiering",
        "from evictable.model.tiering_types import JobOutcome, TierSpec",
        "from evictable.proofs.explore.tiering_world import TieringBounds, root_snapshot",
        f"bounds = {bounds!r}",
        f"m = ModelTiering.restore(root_snapshot(bounds), {prof.value!r})",
    ]
    steps = [("", lab) for lab in labels]
    for n in range(repeat if cycle else 0):
        steps += [(f"cycle {n + 1}", lab) for lab in cycle]
    mark = ""
    for tag, label in steps:
        if tag != mark:
            lines.append(f"# --- {tag} ---")
            mark = tag
        _, ren = canonical(world, bounds)
        act = translate(label.act, ren.inverse())
        applied = apply(model, prof, world, act, bounds.stale)
        note = f"raises {type(applied.error).__name__}" if applied.error else _answer(applied)
        lines.append(f"{act}{'  # ' + note if note else ''}")
        if applied.error is not None:
            break
        world = applied.world
    return lines


def _answer(applied: Applied) -> str:
    if applied.answer is None and applied.snap.log is not None:
        scanned = any(m.kind.value == "open" for m in applied.snap.log)
        return "-> None (try later)" if scanned and applied.answer is None else ""
    return f"-> {applied.answer!r}"
