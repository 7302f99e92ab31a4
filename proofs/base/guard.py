"""A hang backstop on one step of an engine: a call that hangs is a finding, not a hang.

Every lock-step engine (the CPU conformance `LockStep`, the GPU and lazy machines)
and every explorer subject makes each call of the implementation inside
`step_guard()`. If the block has not finished after the bound, a `StepTimeout` is
raised *inside* it (from a `SIGPROF` handler, so it interrupts pure-Python code such
as a walk around a corrupted list), and the engine reports the call as a finding,
with its trace, like any other disagreement.

**CPU time, not the wall clock.** The bound is on the CPU time the process spends
in the block (`ITIMER_PROF`: user and system time, counted only while the process
runs), so a machine busy with other work never turns a step into a finding: on a
2-core machine at load 8 a step gets a fifth of a core, and its wall time grows
fivefold while its CPU time does not. A step that spins (the hangs the seeded bugs
and real ones make: a walk around a corrupted list, a loop that never ends) burns
CPU and is caught after the bound; one that blocks without burning CPU (a lock
never released) is left to the obligation's hang backstop, which reports `unknown`
(`records.deadline`), never a finding.

`StepTimeout` derives from `BaseException`, so that no `except Exception` between
the hanging call and the engine (the comparator's `invoke`, an implementation's
own handlers) swallows it.

**Bounds.** The default bound is `STEP_BOUND_S` CPU seconds (`EVICTABLE_STEP_BOUND_S`
in the environment overrides it): a hang backstop, about a thousand times the
slowest step at the engines' sizes (steps take microseconds to a millisecond). Inside a
`guard_session`, once one step of the session timed out,
later guards use the session's shorter `after_timeout_s`: the run already has its
finding, and replaying it to shrink the trace should not pay the full bound on
every replay. Guards nest: an inner guard never outlives the outer one.

**Where it works.** `signal.setitimer` and `SIGPROF` exist on POSIX only and a
handler can only be installed from the main thread (the explorer's forked workers
run their tasks in their main thread). Elsewhere `step_guard` is a no-op and the
engines run unguarded, as before (`available()` says which).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import FrameType
from typing import Any

__all__ = [
    "AFTER_TIMEOUT_S",
    "STEP_BOUND_S",
    "StepTimeout",
    "available",
    "guard_session",
    "step_guard",
    "wall_guard",
]


def _env_bound() -> float:
    raw = os.environ.get("EVICTABLE_STEP_BOUND_S", "")
    try:
        value = float(raw)
    except ValueError:
        return 2.0
    return value if value > 0 else 2.0


STEP_BOUND_S: float = _env_bound()
"""CPU seconds one guarded step may take (default 2; `EVICTABLE_STEP_BOUND_S` overrides)."""

REFIRE_S = 0.05
"""Once a guard has fired, its alarm fires again this often until the block is left:
a `StepTimeout` raised where Python swallows exceptions (a garbage-collection
callback, a `__del__`) is raised again, so the hanging call is still interrupted."""

AFTER_TIMEOUT_S = 0.25
"""The bound of later steps in a `guard_session` once one of its steps timed out."""


class StepTimeout(BaseException):
    """A guarded call did not return within its bound (`bound_s` seconds)."""

    def __init__(self, bound_s: float, clock: str = "CPU time") -> None:
        super().__init__(f"did not return within {bound_s:g}s of {clock} (the per-step bound)")
        self.bound_s = bound_s


@dataclass
class _Session:
    bound_s: float
    after_timeout_s: float
    timed_out: bool = False

    def bound(self) -> float:
        return self.after_timeout_s if self.timed_out else self.bound_s


_SESSION: ContextVar[_Session | None] = ContextVar("evictable_guard_session", default=None)

_active: list[tuple[float, float, _Session | None]] = []
"""The guards entered and not yet left, innermost last: (deadline, bound, session)."""


def available() -> bool:
    """Whether guards can interrupt here (POSIX, main thread)."""
    return (
        hasattr(signal, "setitimer")
        and hasattr(signal, "SIGPROF")
        and threading.current_thread() is threading.main_thread()
    )


@contextmanager
def guard_session(
    bound_s: float | None = None, after_timeout_s: float = AFTER_TIMEOUT_S
) -> Iterator[None]:
    """Guards inside use `bound_s` (default `STEP_BOUND_S`), and `after_timeout_s` once
    one of them timed out."""
    token = _SESSION.set(
        _Session(bound_s or STEP_BOUND_S, min(after_timeout_s, bound_s or STEP_BOUND_S))
    )
    try:
        yield
    finally:
        _SESSION.reset(token)


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
    if not _active:
        return  # a stale alarm after the last guard closed
    end, bound, session = _active[-1]
    if time.process_time() < end - 1e-3:
        _arm(end)  # woken early (an outer guard's alarm re-armed late): wait on
        return
    if session is not None:
        session.timed_out = True
    signal.setitimer(signal.ITIMER_PROF, REFIRE_S)  # in case this raise is swallowed
    raise StepTimeout(bound)


def _arm(end: float) -> None:
    signal.setitimer(signal.ITIMER_PROF, max(end - time.process_time(), 1e-4))


class step_guard:
    """Raise `StepTimeout` inside the block once it has run `bound_s` seconds (default:
    the session's bound, see the module doc). A no-op where guards are unavailable.

    Complexity: two `setitimer` calls per block (a few microseconds).
    """

    __slots__ = ("bound_s", "previous")

    def __init__(self, bound_s: float | None = None) -> None:
        self.bound_s = bound_s
        self.previous: Any = _KEEP

    def __enter__(self) -> None:
        if not available():
            return
        session = _SESSION.get()
        bound = self.bound_s
        if bound is None:
            bound = session.bound() if session is not None else STEP_BOUND_S
        end = time.process_time() + bound
        if _active:
            outer = _active[-1]
            if outer[0] < end:
                end, bound, session = outer
        elif signal.getsignal(signal.SIGPROF) is not _fire:
            self.previous = _install()
        _active.append((end, bound, session))
        _arm(end)

    def __exit__(self, *exc: object) -> None:
        if not _active or not available():
            return
        _active.pop()
        if _active:
            _arm(_active[-1][0])
            return
        signal.setitimer(signal.ITIMER_PROF, 0)
        previous = self.previous
        if previous is not _KEEP and previous not in (signal.SIG_DFL, None):
            signal.signal(signal.SIGPROF, previous)  # someone else's handler: give it back


_KEEP: Any = object()
"""`step_guard.previous` when it installed no handler (ours stays installed: harmless)."""


@contextmanager
def wall_guard(bound_s: float) -> Iterator[None]:
    """Raise `StepTimeout` inside the block once it has run `bound_s` seconds of wall
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
        raise StepTimeout(bound_s, clock="wall time")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, bound_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
