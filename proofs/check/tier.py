"""The tier contract: a secondary tier (vLLM 0.33's `SecondaryTierManager`, the plug-in
point of tier authors) held to what its orchestrator relies on.

The contract (what `TieringOffloadingManager` assumes of every tier, read from vLLM's
tier API and from what breaks when a tier does otherwise -- docs/interop.md, "Tiered
offloading"):

* **every submitted job is reported exactly once** (`get_finished_jobs`): a job never
  submitted, or reported twice, is `unknown job reported` / `job reported twice` (vLLM
  fails an assertion and loses the rest of that batch of results);
* **failures are results, never raised**: `submit_store` / `submit_load` of a valid
  job, and every other call, return normally; a load of a key the tier does not hold
  is reported as a failed (or partial) job (`failure raised, not reported`);
* **after `drain_jobs()` nothing is unreported**: every job submitted before it is
  reported by the next `get_finished_jobs()` (`job not reported`; vLLM's reset fails
  an assertion half way);
* **answers are well formed**: a lookup answers HIT, MISS or RETRY; a result names a
  job id, a Boolean success, and -- for a partial promotion -- successful keys that
  are keys of that job (`malformed answer`);
* **lookups are stable within a hold**: looking the same keys up again, with no other
  call in between, answers the same (`lookup unstable within a hold`);
* **events are consistent**: a "stored" event names keys of store jobs the tier was
  given and did not report failed, a "removed" event keys it had announced stored
  (`inconsistent events`);
* **no call blocks**: a call that does not return within the hang backstop is a
  finding (`no return`), and the run of that example ends there.

`check_tier(build, examples, steps, seed)` runs example 0, a fixed scenario (stores,
lookups in holds, loads of stored and never-stored keys, a partial one, the drain,
events), then `examples - 1` random sequences of `steps` calls over six keys, three
requests and the tier's primary slots (a slot is reused only after its job was
reported); each example ends with a drain, a final poll and the shutdown. The driver
(`build()`, e.g. `proofs.adapters.vllm.tier_driver.TierDriver`) takes plain values;
this module imports no engine. Verdicts come from these work bounds; the clock only
bounds a call that never returns.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.proofs.base.compare import Kind
from evictable.proofs.base.findings import Finding, group
from evictable.proofs.base.guard import StepTimeout, wall_guard

__all__ = ["TIER_BACKSTOP_S", "TIER_CLASSES", "TierCheck", "check_tier"]


def _env_backstop() -> float:
    try:
        value = float(os.environ.get("EVICTABLE_TIER_BACKSTOP_S", ""))
    except ValueError:
        return 30.0
    return value if value > 0 else 30.0


TIER_BACKSTOP_S = _env_backstop()
"""How long one call of the tier may run before it counts as not returning (a hang
backstop, never a verdict on a tier that returns); default 30 s,
`EVICTABLE_TIER_BACKSTOP_S` overrides."""

TIER_CLASSES: tuple[Kind, ...] = (
    Kind.TIER_UNREPORTED,
    Kind.TIER_TWICE,
    Kind.TIER_UNKNOWN,
    Kind.TIER_RAISED,
    Kind.HANG,
    Kind.TIER_GARBAGE,
    Kind.TIER_UNSTABLE,
    Kind.TIER_EVENTS,
)
"""The finding classes of the tier contract."""

NUM_KEYS = 6
REQUESTS = ("r0", "r1", "r2")
ANSWERS = ("HIT", "MISS", "RETRY")


class _Stop(Exception):
    """The example cannot go on (the tier blocked or a call broke it)."""


@dataclass(frozen=True)
class TierCheck:
    """What `check_tier` found: findings (one per class, ranked), the work done."""

    findings: tuple[Finding, ...]
    examples_run: int
    calls: int
    seconds: float
    seed: int

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass
class _Job:
    keys: tuple[Hashable, ...]
    slots: tuple[int, ...]
    load: bool
    reported: int = 0
    success: bool | None = None
    late: bool = False


@dataclass
class _Example:
    """One driven tier and the engine's bookkeeping of it."""

    driver: Any
    key: Callable[[int], Hashable]
    preamble: tuple[str, ...]
    factory_line: str
    backstop_s: float
    lines: list[tuple[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    jobs: dict[int, _Job] = field(default_factory=dict)
    free: list[int] = field(default_factory=list)
    stored: set[Hashable] = field(default_factory=set)
    evented: set[Hashable] = field(default_factory=set)
    active: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)
    next_job: int = 0
    calls: int = 0

    # ------------------------------------------------------------ calls

    def call(self, code: str, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` as the trace line `code`; what it raises is a finding."""
        self.calls += 1
        self.lines.append((code, ""))
        try:
            with wall_guard(self.backstop_s):
                return fn(*args)
        except StepTimeout:
            self.note("did not return")
            self.find(Kind.HANG, f"{code} did not return within {self.backstop_s:g}s")
            raise _Stop from None
        except _Stop:
            raise
        except Exception as exc:
            self.note(f"raised {type(exc).__name__}: {exc}")
            self.find(
                Kind.TIER_RAISED,
                f"{code} raised {type(exc).__name__}: {exc} (a failure must be a result)",
            )
            raise _Stop from None

    def note(self, text: str) -> None:
        code, old = self.lines[-1]
        self.lines[-1] = (code, f"{old}; {text}" if old else text)

    def find(self, kind: Kind, reason: str) -> None:
        trace = "\n".join(f"{c}  # {n}" if n else c for c, n in self.lines)
        body = [*self.preamble, self.factory_line]
        body += [f"{c}  # {n}" if n else c for c, n in self.lines]
        body.append(f"# {reason}")
        self.findings.append(
            Finding(
                kind=kind,
                engine="tier contract",
                reason=reason,
                trace=trace,
                snippet="\n".join(body),
                calls=len(self.lines),
            )
        )

    def k(self, i: int) -> str:
        return f"K({i})"

    # ------------------------------------------------------ the tier's calls

    def new_request(self, req: str) -> None:
        self.call(f"t.new_request({req!r})", self.driver.new_request, req)
        self.active.append(req)

    def finish_request(self, req: str) -> None:
        self.call(f"t.request_finished({req!r})", self.driver.request_finished, req)
        self.active.remove(req)
        self.done.add(req)

    def hold(self, keys: Sequence[int], req: str) -> None:
        """Look `keys` up, then again, with no other call between: same answers."""
        first = [self.lookup(i, req) for i in keys]
        again = [self.lookup(i, req) for i in keys]
        for i, a, b in zip(keys, first, again, strict=True):
            if a != b:
                self.find(
                    Kind.TIER_UNSTABLE,
                    f"lookup of {self.k(i)} answered {a}, then {b}, within one hold",
                )
                return

    def lookup(self, i: int, req: str) -> str:
        raw = self.call(f"t.lookup({self.k(i)}, {req!r})", self.driver.lookup, self.key(i), req)
        name = getattr(raw, "name", None)
        got = name if type(raw).__name__ == "LookupResult" and name in ANSWERS else repr(raw)
        self.note(f"-> {got}")
        if got not in ANSWERS:
            self.find(
                Kind.TIER_GARBAGE, f"lookup of {self.k(i)} answered {got} (HIT, MISS or RETRY)"
            )
        return str(got)

    def submit(self, keys: Sequence[int], req: str, load: bool) -> None:
        if len(self.free) < len(keys) or not keys:
            return
        slots = tuple(self.free.pop() for _ in keys)
        job = self.next_job
        self.next_job += 1
        self.jobs[job] = _Job(tuple(self.key(i) for i in keys), slots, load)
        name = "submit_load" if load else "submit_store"
        ks = ", ".join(self.k(i) for i in keys)
        self.call(
            f"t.{name}({job}, [{ks}], {list(slots)}, {req!r})",
            getattr(self.driver, name),
            job,
            [self.key(i) for i in keys],
            list(slots),
            req,
        )

    def poll(self) -> None:
        raw = self.call("t.finished()", self.driver.finished)
        try:
            results = [
                (
                    getattr(r, "job_id", r),
                    getattr(r, "success", None),
                    getattr(r, "successful_keys", None),
                )
                for r in raw
            ]
        except Exception as exc:
            self.note(f"-> {raw!r}")
            self.find(
                Kind.TIER_GARBAGE,
                f"get_finished_jobs() answered {raw!r}, not an iterable of results "
                f"({type(exc).__name__}: {exc})",
            )
            raise _Stop from None
        self.note(f"-> {_show(results)}")
        for result in results:
            self.judge(result)

    def judge(self, result: tuple[Any, Any, Any]) -> None:
        job_id, success, ok_keys = result
        job = self.jobs.get(job_id) if isinstance(job_id, int) else None
        if not isinstance(job_id, int) or job is None:
            self.find(Kind.TIER_UNKNOWN, f"a result for job {job_id!r}, never submitted")
            return
        if job.late:  # its missing report was a finding already: a late one is not
            job.late = False
            return
        if job.reported:
            self.find(Kind.TIER_TWICE, f"job {job_id} reported a second time")
            return
        job.reported += 1
        if not isinstance(success, bool):
            self.find(Kind.TIER_GARBAGE, f"job {job_id} reported success={success!r} (a bool)")
            return
        job.success = success
        self.free.extend(job.slots)
        if ok_keys is not None and job.load and not success:
            try:
                outside = [k for k in ok_keys if k not in job.keys]
            except TypeError:
                outside = [ok_keys]
            if outside:
                self.find(
                    Kind.TIER_GARBAGE,
                    f"job {job_id} reported successful keys {outside!r} outside its keys",
                )
        if success and not job.load:
            self.stored.update(job.keys)

    def events(self) -> None:
        raw = self.call("t.events()", self.driver.events)
        try:
            got = [(tuple(e.keys), bool(e.removed)) for e in raw]
        except Exception as exc:
            self.find(
                Kind.TIER_GARBAGE,
                f"take_events() answered {raw!r}, not an iterable of events "
                f"({type(exc).__name__}: {exc})",
            )
            raise _Stop from None
        self.note(f"-> {len(got)} event(s)")
        storing = {
            k
            for job in self.jobs.values()
            if not job.load and job.success is not False
            for k in job.keys
        }
        for keys, removed in got:
            bad = [k for k in keys if k not in (self.evented if removed else storing)]
            if bad:
                what = (
                    "removed, never stored"
                    if removed
                    else "stored by no store job that did not fail"
                )
                self.find(Kind.TIER_EVENTS, f"an event names {bad!r}: {what}")
                return
            if removed:
                self.evented.difference_update(keys)
            else:
                self.evented.update(keys)

    def drain_and_settle(self) -> None:
        self.call("t.drain()", self.driver.drain)
        self.poll()
        missing = sorted(j for j, job in self.jobs.items() if not job.reported)
        if missing:
            self.find(
                Kind.TIER_UNREPORTED,
                f"job(s) {missing} submitted before drain_jobs() were not reported after it",
            )
            for j in missing:
                self.jobs[j].reported = 1
                self.jobs[j].late = True
                self.free.extend(self.jobs[j].slots)


def _quiet_shutdown(driver: Any, backstop_s: float) -> None:
    """Shut a tier down after its example stopped (its threads would linger)."""
    try:
        with wall_guard(backstop_s):
            driver.shutdown()
    except (Exception, StepTimeout):
        return


def _show(results: Any) -> str:
    try:
        return "[" + ", ".join(f"({j!r}, {s!r}, {k!r})" for j, s, k in results) + "]"
    except (TypeError, ValueError):
        return repr(results)


def _scenario(ex: _Example) -> None:
    """Example 0: the cases every tier meets first."""
    ex.new_request("r0")
    ex.hold([0, 1], "r0")
    ex.call("t.end_step()", ex.driver.end_step)
    ex.submit([0, 1], "r0", load=False)
    ex.submit([2], "r0", load=False)
    ex.poll()
    ex.call("t.end_step()", ex.driver.end_step)
    ex.poll()
    ex.drain_and_settle()
    ex.events()
    for _ in range(2):
        ex.hold([0, 1, 2, 3], "r0")
        ex.call("t.end_step()", ex.driver.end_step)
    ex.submit([0, 1], "r0", load=True)
    ex.submit([5], "r0", load=True)
    ex.submit([2, 5], "r0", load=True)
    ex.poll()
    ex.drain_and_settle()
    ex.events()
    ex.finish_request("r0")
    ex.call("t.end_step()", ex.driver.end_step)


def _random_walk(ex: _Example, rng: random.Random, steps: int) -> None:
    ex.new_request("r0")
    for _ in range(steps):
        op = rng.choice(("hold", "store", "load", "poll", "end", "req", "drain", "events"))
        req = rng.choice(ex.active) if ex.active else None
        if req is None:
            fresh = [r for r in REQUESTS if r not in ex.active and r not in ex.done]
            if not fresh:
                break
            ex.new_request(fresh[0])
            continue
        keys = rng.sample(range(NUM_KEYS), rng.randint(1, 3))
        if op == "hold":
            ex.hold(keys, req)
        elif op in ("store", "load"):
            ex.submit(keys, req, load=op == "load")
        elif op == "poll":
            ex.poll()
        elif op == "end":
            ex.call("t.end_step()", ex.driver.end_step)
        elif op == "req":
            fresh = [r for r in REQUESTS if r not in ex.active and r not in ex.done]
            if fresh and rng.random() < 0.5:
                ex.new_request(fresh[0])
            else:
                ex.finish_request(req)
        elif op == "drain":
            ex.drain_and_settle()
        else:
            ex.events()


def check_tier(
    build: Callable[[], Any],
    key: Callable[[int], Hashable],
    preamble: Sequence[str],
    factory_line: str,
    examples: int = 20,
    steps: int = 30,
    seed: int | None = None,
    backstop_s: float = TIER_BACKSTOP_S,
    slots: int = 8,
) -> TierCheck:
    """Hold the tiers `build()` makes to the tier contract (module docstring).

    `key(i)` makes the i-th key; `preamble` and `factory_line` (`t = ...`) start every
    finding's snippet. `build()` raising is the caller's to report (a setup error).
    """
    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    t0 = time.perf_counter()
    found: list[Finding] = []
    calls = 0
    run = 0
    for n in range(examples):
        ex = _Example(build(), key, tuple(preamble), factory_line, backstop_s)
        ex.free = list(range(slots))[::-1]
        run += 1
        try:
            if n == 0:
                _scenario(ex)
            else:
                _random_walk(ex, rng, steps)
            ex.drain_and_settle()
            ex.events()
            ex.call("t.shutdown()", ex.driver.shutdown)
        except _Stop:
            _quiet_shutdown(ex.driver, backstop_s)
        calls += ex.calls
        found.extend(ex.findings)
    return TierCheck(group(found), run, calls, time.perf_counter() - t0, seed)
