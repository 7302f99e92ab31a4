"""Bounds on one step of an engine: a call that spins or blocks is a finding, not a hang.

Every lock-step engine (the CPU conformance `LockStep`, the GPU and lazy machines)
and every explorer subject makes each call of the implementation inside
`step_guard(what=call)`. Two bounds apply to the block (`base.flight`), and neither
depends on how busy the machine is:

* **spinning -- CPU time.** After `STEP_BOUND_S` seconds of CPU time in the block
  (`ITIMER_PROF`: user and system time, counted only while the process runs) a
  `StepTimeout` is raised *inside* it, from a `SIGPROF` handler, so it interrupts
  pure-Python code such as a walk around a corrupted list. A machine busy with other
  work never turns a step into a finding: on a 2-core machine at load 8 a step gets
  a fifth of a core, and its wall time grows fivefold while its CPU time does not.
* **blocked -- wall time without CPU.** A call that waits forever (a lock never
  released, an event never set) uses no CPU, so the first bound never fires. The
  watcher thread (`base.watch`, one per process, started by the first guarded step)
  finds the step in flight using less than `IDLE_SHARE` of a core for `BLOCK_S`
  seconds of wall time in a row, and sends the step's thread `SIGPROF`; the same
  handler then raises `StepBlocked` inside the call. Python handles signals inside
  lock waits, sleeps, joins, queue and socket reads, so those calls are interrupted
  where they wait. A call that computes, however slowly, uses CPU and is never
  "blocked" (a thread gets less than 2% of a core only on a machine that runs some
  fifty runnable threads per core).

A blocked call that Python cannot interrupt (it waits inside C code that never
returns to the interpreter) stays blocked: the watcher reports it on stderr and,
in the `evictable` command, the run gives up with the finding (`base.watch`). What
an interrupted call leaves behind is the subject's: the engines drop the instance
whose call blocked and start their next example afresh, but a lock the call had
taken stays taken, so later calls that need it block too -- each reported the same
way, after the session's shorter bound (`base.flight.guard_session`).

`StepTimeout` derives from `BaseException`, so that no `except Exception` between
the hanging call and the engine (the comparator's `invoke`, an implementation's own
handlers) swallows it; `StepBlocked` is a `StepTimeout`. Either names the bound as
documented, whatever shorter bound a session applied. Guards nest: an inner guard
never outlives the outer one.

**Where it works.** `signal.setitimer` and `SIGPROF` exist on POSIX only and a
handler can only be installed from the main thread (the explorer's forked workers
run their tasks in their main thread). Elsewhere `step_guard` is a no-op and the
engines run unguarded (`available()` says which).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from evictable.proofs.base.flight import (
    ACTIVE,
    AFTER_BLOCK_S,
    AFTER_TIMEOUT_S,
    BLOCK_S,
    COUNTS,
    INTERRUPTED,
    STEP_BOUND_S,
    Called,
    Flight,
    bounds_text,
    current_session,
    guard_session,
)
from evictable.proofs.base.watch import start_watcher

__all__ = [
    "AFTER_BLOCK_S",
    "AFTER_TIMEOUT_S",
    "BLOCK_S",
    "STEP_BOUND_S",
    "Called",
    "StepBlocked",
    "StepTimeout",
    "WallTimeout",
    "available",
    "bounds_text",
    "guard_session",
    "step_guard",
    "wall_guard",
]

REFIRE_S = 0.05
"""Once a guard has fired, its alarm fires again this often until the block is left:
a `StepTimeout` raised where Python swallows exceptions (a garbage-collection
callback, a `__del__`) is raised again, so the hanging call is still interrupted."""


class StepTimeout(BaseException):
    """A guarded call spun: it did not return within `bound_s` seconds of CPU time."""

    kind = "spinning"

    def __init__(self, bound_s: float, what: str = "") -> None:
        super().__init__(self.explain(bound_s))
        self.bound_s = bound_s
        self.what = what
        """The call in flight, as the engine named it ("" when none was named)."""

    @staticmethod
    def explain(bound_s: float) -> str:
        return f"did not return: it spun for {bound_s:g}s of CPU time (the per-step bound)"


class StepBlocked(StepTimeout):
    """A guarded call blocked: it used no CPU for `bound_s` seconds of wall time."""

    kind = "blocked"

    @staticmethod
    def explain(bound_s: float) -> str:
        return (
            f"did not return: it was blocked, using no CPU for {bound_s:g}s of wall time "
            "(the per-step bound)"
        )


class WallTimeout(StepTimeout):
    """A `wall_guard` block ran past its bound of wall time (a setup backstop)."""

    kind = "no return"

    @staticmethod
    def explain(bound_s: float) -> str:
        return f"did not return within {bound_s:g}s of wall time (a hang backstop)"


def available() -> bool:
    """Whether guards can interrupt here (POSIX, main thread)."""
    return (
        hasattr(signal, "setitimer")
        and hasattr(signal, "SIGPROF")
        and threading.current_thread() is threading.main_thread()
    )


def _quiet_unraisable(hook: Any) -> Any:
    """`sys.unraisablehook`, minus a `StepTimeout`: an alarm that lands in a finaliser
    (a generator closed by the garbage collector) is swallowed there and fires again
    (`REFIRE_S`); it is not an error worth printing."""

    def unraisable(info: Any) -> None:
        if not isinstance(info.exc_value, StepTimeout):
            hook(info)

    unraisable.quiet = True  # type: ignore[attr-defined]
    return unraisable


def _install() -> Any:
    """Our SIGPROF handler (returning the one it replaces), and the quiet
    unraisable hook (once)."""
    if not getattr(sys.unraisablehook, "quiet", False):
        sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
    return signal.signal(signal.SIGPROF, _fire)


def _fire(_signum: int, _frame: FrameType | None) -> None:
    if not ACTIVE:
        return  # a stale alarm after the last guard closed
    flight = ACTIVE[-1]
    if flight.blocked:  # the watcher found it blocked and woke this thread
        if flight.session is not None:
            flight.session.blocked = True
        raise StepBlocked(flight.documented_block(), flight.describe())
    if time.process_time() < flight.end - 1e-3:
        _arm(flight.end)  # woken early (by the watcher, or an outer guard's alarm)
        return
    if flight.session is not None:
        flight.session.timed_out = True
    signal.setitimer(signal.ITIMER_PROF, REFIRE_S)  # in case this raise is swallowed
    raise StepTimeout(flight.documented, flight.describe())


def _arm(end: float) -> None:
    signal.setitimer(signal.ITIMER_PROF, max(end - time.process_time(), 1e-4))


class step_guard:
    """Raise `StepTimeout` inside the block once it has run `bound_s` seconds of CPU
    time (default: the session's bound), `StepBlocked` once it has waited its
    blocking bound without CPU (see the module doc). `what` names the call (any
    object, shown with `str` only when needed; an inner guard without one takes the
    outer one's). A no-op where guards are unavailable.

    Complexity: two `setitimer` calls per block (a few microseconds).
    """

    __slots__ = ("bound_s", "previous", "what")

    def __init__(self, bound_s: float | None = None, what: object = None) -> None:
        self.bound_s = bound_s
        self.what = what
        self.previous: Any = _KEEP

    def __enter__(self) -> None:
        if not available():
            return
        COUNTS["steps"] += 1
        session = current_session()
        bound = self.bound_s
        if bound is None:
            bound = session.bound() if session is not None else STEP_BOUND_S
        documented = session.bound_s if session is not None and self.bound_s is None else bound
        wait = session.block() if session is not None else BLOCK_S
        end = time.process_time() + bound
        what = self.what
        if ACTIVE:
            outer = ACTIVE[-1]
            if what is None:
                what = outer.what
            if outer.end < end:
                end, bound, documented = outer.end, outer.bound, outer.documented
        elif signal.getsignal(signal.SIGPROF) is not _fire:
            self.previous = _install()
        ACTIVE.append(Flight(end, bound, session, what, wait, documented))
        start_watcher()
        _arm(end)

    def __exit__(self, kind: object, *exc: object) -> None:
        if not ACTIVE or not available():
            return
        flight = ACTIVE.pop()
        if kind is KeyboardInterrupt and "what" not in INTERRUPTED:
            INTERRUPTED["what"] = flight.describe()
        if ACTIVE:
            _arm(ACTIVE[-1].end)
            return
        signal.setitimer(signal.ITIMER_PROF, 0)
        previous = self.previous
        if previous is not _KEEP and previous not in (signal.SIG_DFL, None):
            signal.signal(signal.SIGPROF, previous)  # someone else's handler: give it back


_KEEP: Any = object()
"""`step_guard.previous` when it installed no handler (ours stays installed: harmless)."""


@contextmanager
def wall_guard(bound_s: float) -> Iterator[None]:
    """Raise `WallTimeout` inside the block once it has run `bound_s` seconds of wall
    time (`SIGALRM`): for user code that may block without burning CPU -- an import,
    a constructor -- where giving up is a setup error, never a finding. Not nested
    with itself (one `ITIMER_REAL`); beside `step_guard`, which counts CPU time on its
    own timer. A no-op where guards are unavailable.
    """
    if not available() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(_signum: int, _frame: FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_REAL, REFIRE_S)  # in case this raise is swallowed
        raise WallTimeout(bound_s)

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, bound_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
