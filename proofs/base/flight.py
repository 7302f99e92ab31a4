"""The steps in flight: the per-step bounds, the guard sessions, and what is running now.

`base.guard` bounds each step of an engine and `base.watch` watches the step in
flight; both read what this module holds:

* the documented per-step bounds: `STEP_BOUND_S` seconds of CPU time (spinning;
  `EVICTABLE_STEP_BOUND_S` overrides the default 2) and `BLOCK_S` seconds of wall
  time without CPU (blocked; `EVICTABLE_BLOCK_S` overrides the default 30);
* a *guard session* (`guard_session`): once a step of the session spun (blocked),
  its later steps are stopped after `AFTER_TIMEOUT_S` (`AFTER_BLOCK_S`), so that
  replaying a finding to shrink its trace does not pay the full bound every time;
* the stack of guarded steps in flight in this process's main thread (`Flight`,
  innermost last), how many steps were made, and what a `KeyboardInterrupt` left.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = [
    "AFTER_BLOCK_S",
    "AFTER_TIMEOUT_S",
    "BLOCK_S",
    "IDLE_SHARE",
    "STEP_BOUND_S",
    "Called",
    "Flight",
    "Session",
    "bounds_text",
    "current_session",
    "env_float",
    "guard_session",
    "in_flight",
    "last_interrupted",
    "steps_made",
]


def env_float(name: str, default: float) -> float:
    """A positive number from the environment, else `default`."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


STEP_BOUND_S: float = env_float("EVICTABLE_STEP_BOUND_S", 2.0)
"""CPU seconds one guarded step may take (default 2; `EVICTABLE_STEP_BOUND_S` overrides)."""

BLOCK_S: float = env_float("EVICTABLE_BLOCK_S", 30.0)
"""Wall seconds a guarded step may go without CPU (default 30; `EVICTABLE_BLOCK_S`)."""

IDLE_SHARE = 0.02
"""Below this share of one core a step's thread counts as using no CPU (a thread that
waits in a poll loop of 10 ms sleeps uses about 0.6%)."""

AFTER_TIMEOUT_S = 0.25
"""The CPU bound of later steps in a `guard_session` once one of its steps spun."""

AFTER_BLOCK_S = 1.0
"""The blocking bound of later steps in a `guard_session` once one of its steps blocked."""


def bounds_text() -> str:
    """The per-step bounds, as every report prints them."""
    return (
        f"{STEP_BOUND_S:g}s of CPU time (spinning) or {BLOCK_S:g}s of wall time "
        "without CPU (blocked)"
    )


@dataclass
class Session:
    """One guard session: its documented bounds, and whether a step spun or blocked."""

    bound_s: float
    after_timeout_s: float
    block_s: float
    timed_out: bool = False
    blocked: bool = False

    def bound(self) -> float:
        """The CPU bound of the next step."""
        return self.after_timeout_s if self.timed_out else self.bound_s

    def block(self) -> float:
        """The blocking bound of the next step."""
        return min(self.block_s, AFTER_BLOCK_S) if self.blocked else self.block_s


_SESSION: ContextVar[Session | None] = ContextVar("evictable_guard_session", default=None)


def current_session() -> Session | None:
    return _SESSION.get()


@contextmanager
def guard_session(
    bound_s: float | None = None,
    after_timeout_s: float = AFTER_TIMEOUT_S,
    block_s: float | None = None,
) -> Iterator[None]:
    """Guards inside use `bound_s` (default `STEP_BOUND_S`) and `block_s` (default
    `BLOCK_S`), and the shorter bounds once one of them spun or blocked. With no
    bound given inside an open session, that session goes on (a run and the
    shrinking of its findings share one)."""
    if _SESSION.get() is not None and bound_s is None and block_s is None:
        yield
        return
    bound = bound_s or STEP_BOUND_S
    token = _SESSION.set(Session(bound, min(after_timeout_s, bound), block_s or BLOCK_S))
    try:
        yield
    finally:
        _SESSION.reset(token)


class Flight:
    """One guarded step in flight: its CPU deadline, its bounds, what it is."""

    __slots__ = ("blocked", "bound", "documented", "end", "session", "wait", "what")

    def __init__(
        self,
        end: float,
        bound: float,
        session: Session | None,
        what: object,
        wait: float,
        documented: float,
    ) -> None:
        self.end = end
        """The process CPU time (`time.process_time`) at which the step has spun."""
        self.bound = bound
        self.session = session
        self.what = what
        """What the engine named the step (any object, shown with `str` when needed)."""
        self.wait = wait
        """Wall seconds without CPU after which the step is blocked."""
        self.documented = documented
        """The documented CPU bound the step runs under (what a finding names)."""
        self.blocked = False
        """Set by the watcher (`base.watch`) when the step is found blocked."""

    def describe(self) -> str:
        what = self.what
        if what is None:
            return ""
        try:
            return str(what)
        except Exception:  # a subject whose repr raises: never crash the watcher
            return f"<{type(what).__name__}>"

    def documented_block(self) -> float:
        return self.session.block_s if self.session is not None else BLOCK_S


class Called:
    """How an engine names the call a step makes on the subject: `m.<call>` (the call
    is any object that prints as Python, shown only when the name is needed)."""

    __slots__ = ("call",)

    def __init__(self, call: object) -> None:
        self.call = call

    def __str__(self) -> str:
        return f"m.{self.call}"


ACTIVE: list[Flight] = []
"""The guards entered and not yet left in this process's main thread, innermost last."""

COUNTS = {"steps": 0}
INTERRUPTED: dict[str, str] = {}


def in_flight() -> Flight | None:
    """The innermost step in flight, if any."""
    return ACTIVE[-1] if ACTIVE else None


def steps_made() -> int:
    """Guarded steps entered in this process so far (a progress count)."""
    return COUNTS["steps"]


def last_interrupted() -> str:
    """The step a `KeyboardInterrupt` last left, as named ("" when none did)."""
    return INTERRUPTED.get("what", "")
