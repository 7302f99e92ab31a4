"""Watching a run: a call that blocks is found, progress is never silent.

One daemon thread per process, the *watcher*, looks at the guarded step in flight
(`base.flight`) every `TICK_S` seconds. It is started by the first guarded step
(`base.guard.step_guard`), and again in a forked worker (the parent's thread is not
there).

* **Blocked.** Once the step's thread has used less than `IDLE_SHARE` of a core for
  the step's blocking bound (`BLOCK_S`, 30 s by default) of wall time in a row, the
  watcher marks the step blocked and sends its thread `SIGPROF`: the guard's handler
  raises `StepBlocked` inside the call, and the engine reports a `blocked` finding
  naming the call and its arguments. Wall time counts only while the watcher runs,
  so a suspended machine or a stopped process does not count. A call that does not
  leave within `GRACE_S` waits inside code that does not let Python handle
  signals: the `on_stuck` hooks are called (then every `PROGRESS_S`).
* **Progress** (`show_progress(stream)`): one line at least every `PROGRESS_S`
  seconds, from this thread, so a run whose main thread waits still prints: the time
  so far, what the run is doing (`status`), the steps made, the call in flight and
  for how long.
* **Interrupted** (`interrupted()`): after a `KeyboardInterrupt`, the call that was
  in flight when it came, else what the run was doing.
* **Stuck** (`give_up_when_stuck(hook)`): a blocked call that cannot be interrupted is
  said on stderr, naming it and the process; a hook may end the run (the `evictable`
  command prints the finding and exits 1).

Forking while a thread runs is unsafe (Python 3.12 warns of it): a process that
forks workers does it inside `paused_watcher()`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

from evictable.proofs.base.flight import (
    ACTIVE,
    BLOCK_S,
    IDLE_SHARE,
    INTERRUPTED,
    Flight,
    env_float,
    in_flight,
    last_interrupted,
    steps_made,
)

__all__ = [
    "GRACE_S",
    "PROGRESS_S",
    "TICK_S",
    "detail",
    "give_up_when_stuck",
    "interrupted",
    "on_stuck",
    "on_tick",
    "paused_watcher",
    "progress_line",
    "running",
    "show_progress",
    "start_watcher",
    "status",
    "stuck_text",
]

TICK_S: float = min(0.5, BLOCK_S / 10)
"""How often the watcher looks at the step in flight."""

GRACE_S = 5.0
"""How long a blocked call may take to leave once interrupted before it is stuck."""

PROGRESS_S: float = env_float("EVICTABLE_PROGRESS_S", 10.0)
"""The longest stretch without a progress line while `show_progress` is on (default
10; `EVICTABLE_PROGRESS_S` overrides)."""

_ticks: list[Callable[[float], None]] = []
_stuck: list[Callable[[Flight, float], None]] = []


def on_tick(hook: Callable[[float], None]) -> Callable[[], None]:
    """Call `hook(time.monotonic())` from the watcher every `TICK_S` (quick, never
    raising); returns the function that removes it."""
    _ticks.append(hook)
    return lambda: _ticks.remove(hook) if hook in _ticks else None


def on_stuck(hook: Callable[[Flight, float], None]) -> Callable[[], None]:
    """Call `hook(flight, seconds_without_cpu)` from the watcher when a blocked step did
    not leave within `GRACE_S` (then every `PROGRESS_S`); returns the remover."""
    _stuck.append(hook)
    return lambda: _stuck.remove(hook) if hook in _stuck else None


class _Watcher(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="evictable-watcher", daemon=True)
        self.main = threading.main_thread().ident or 0
        self.halt = threading.Event()

    def cpu(self) -> Callable[[], float]:
        """The CPU clock of the main thread (else the process's: still flat while the
        process waits)."""
        try:
            clock = time.pthread_getcpuclockid(self.main)
            time.clock_gettime(clock)
        except (AttributeError, OSError):
            return time.process_time
        return lambda: time.clock_gettime(clock)

    def run(self) -> None:
        cpu = self.cpu()
        wall, used = time.monotonic(), cpu()
        tracked: Flight | None = None
        idle = woke = told = 0.0
        while not self.halt.wait(TICK_S):
            now, spent = time.monotonic(), cpu()
            dt, dcpu = min(now - wall, 2 * TICK_S), spent - used
            wall, used = now, spent
            flight = ACTIVE[-1] if ACTIVE else None
            if flight is not tracked:  # another step: its stretch starts now
                tracked, idle, woke, told = flight, 0.0, 0.0, 0.0
            elif flight is not None:
                idle = idle + dt if dcpu < IDLE_SHARE * dt else 0.0
                if idle >= flight.wait and not flight.blocked:
                    flight.blocked = True
                    woke = now
                    self.wake()
                elif flight.blocked and now - woke < GRACE_S:
                    self.wake()  # in case the first wake-up was swallowed
                elif flight.blocked and now - told >= PROGRESS_S:
                    told = now
                    for hook in list(_stuck):
                        hook(flight, idle)
            for tick in list(_ticks):
                tick(now)

    def wake(self) -> None:
        with suppress(OSError, ValueError):
            signal.pthread_kill(self.main, signal.SIGPROF)


_state: dict[str, Any] = {"watcher": None, "paused": 0}


def start_watcher() -> None:
    """Start this process's watcher if it is not running (cheap when it is)."""
    if _state["watcher"] is not None or _state["paused"]:
        return
    w = _Watcher()
    _state["watcher"] = w
    w.start()


def _after_fork_in_child() -> None:
    """The parent's watcher is not in the child, nor are its steps in flight."""
    _state["watcher"] = None
    _state["paused"] = 0
    ACTIVE.clear()
    _ticks.clear()  # the parent's progress is the parent's to print
    _stuck.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def paused_watcher() -> Iterator[None]:
    """No watcher thread inside the block (fork workers here); it starts again after."""
    w = _state["watcher"]
    _state["paused"] += 1
    if w is not None:
        w.halt.set()
        w.join()
        _state["watcher"] = None
    try:
        yield
    finally:
        _state["paused"] -= 1
        if w is not None:
            start_watcher()


# ------------------------------------------------------------------ a run, as shown

_run: dict[str, Any] = {"label": "", "start": 0.0, "status": "", "detail": ""}


@contextmanager
def running(label: str) -> Iterator[None]:
    """A run named `label` (a run inside a run keeps the outer one)."""
    if _run["label"]:
        yield
        return
    _run.update(label=label, start=time.monotonic(), status="")
    INTERRUPTED.clear()
    try:
        yield
    finally:
        _run.update(label="", status="")


def status(text: str) -> None:
    """What the run does now (one short line)."""
    _run["status"] = text
    _run["detail"] = ""


def detail(text: str) -> None:
    """How far the current status has come ("depth 5, 812 states")."""
    _run["detail"] = text


def progress_line(now: float | None = None, started: dict[int, float] | None = None) -> str:
    """The line `show_progress` prints: time so far, status, calls, the call in flight."""
    now = time.monotonic() if now is None else now
    label = _run["label"] or "evictable"
    start = _run["start"] or now
    doing = f"; {_run['status']}" if _run["status"] else ""
    if _run["detail"]:
        doing += f" ({_run['detail']})"
    line = f"{label}: {now - start:.0f}s{doing}; {steps_made()} calls"
    flight = in_flight()
    if flight is not None:
        seen = started if started is not None else {}
        if id(flight) not in seen:
            seen.clear()
            seen[id(flight)] = now
        line += f"; in flight: {flight.describe() or 'a call'} for {now - seen[id(flight)]:.0f}s"
    return line


@contextmanager
def show_progress(stream: TextIO | None = None, every: float = PROGRESS_S) -> Iterator[None]:
    """Print `progress_line()` to `stream` (default stderr) at least every `every`
    seconds while the block runs."""
    out = stream if stream is not None else sys.stderr
    last = {"at": time.monotonic()}
    started: dict[int, float] = {}

    def tick(now: float) -> None:
        if now - last["at"] < every:
            return
        last["at"] = now
        with suppress(OSError, ValueError):  # a closed stream: progress is a courtesy
            print(progress_line(now, started), file=out, flush=True)

    remove = on_tick(tick)
    start_watcher()
    try:
        yield
    finally:
        remove()


def interrupted() -> str:
    """What a `KeyboardInterrupt` interrupted: the call in flight, else what the run
    was doing ("" when nothing is known)."""
    what = last_interrupted()
    if what:
        return f"the call {what}"
    return str(_run["status"] or "")


def stuck_text(flight: Flight, seconds: float) -> str:
    """One line: a blocked call that could not be interrupted."""
    return (
        f"evictable: the call {flight.describe() or '(unnamed)'} has used no CPU for "
        f"{seconds:.0f}s and cannot be interrupted (it waits inside code that does not "
        f"let Python handle signals); stop process {os.getpid()} to end the run"
    )


@contextmanager
def give_up_when_stuck(hook: Callable[[Flight, float], None] | None = None) -> Iterator[None]:
    """Inside the block, a blocked call that cannot be interrupted is said on stderr
    (every `PROGRESS_S`), then handed to `hook` (which may end the process)."""

    def stuck(flight: Flight, seconds: float) -> None:
        with suppress(OSError, ValueError):
            print(stuck_text(flight, seconds), file=sys.stderr, flush=True)
        if hook is not None:
            hook(flight, seconds)

    remove = on_stuck(stuck)
    try:
        yield
    finally:
        remove()
