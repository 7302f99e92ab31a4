"""Discharge obligations in worker processes: `jobs` at a time, each one killable.

`run_parallel(obligations, jobs, backstop_s, on_result)` forks one worker process per
*job* -- a claim, a negative control, or the claims and controls of the obligations
that share a `batch` (they run one after another in one worker and share its caches)
-- keeping at most `jobs` alive, the longest jobs first when the previous run's times
are known. A worker runs `records.run_claim` / `run_control` and sends the records
back through a pipe. Every worker starts from the same parent state, so a check's work
(and its verdict) does not depend on what ran before it or beside it.

The hang backstop is enforced twice: inside the worker (`records.deadline`, which
the engines honour) and by the parent, which kills a worker that outlives its
backstop by `GRACE_S` (a hang inside native code, say) and reports its checks as
`unknown: hang backstop`. A worker that dies reports its checks as `error`.
`KeyboardInterrupt` in the parent kills every worker and returns the records that
had landed (`Interrupted.records`).

POSIX only (`os.fork`); elsewhere, and with `jobs <= 0`, obligations run in this
process (`records.run_all`).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evictable.proofs.base.records import (
    HANG_BACKSTOP_S,
    Obligation,
    Result,
    Status,
    backstop_text,
    run_claim,
    run_control,
)
from evictable.proofs.base.watch import paused_watcher

__all__ = ["GRACE_S", "Interrupted", "Part", "jobs_of", "run_parallel"]

GRACE_S = 30.0
"""How long past its backstop the parent waits before it kills a worker."""


class Interrupted(KeyboardInterrupt):
    """The run was interrupted; `records` holds what had landed, in obligation order."""

    def __init__(self, records: list[Result]) -> None:
        super().__init__("interrupted")
        self.records = records


Part = tuple[int, bool]
"""One record to make: (obligation index, True for its negative control)."""


def jobs_of(obligations: Sequence[Obligation]) -> list[list[Part]]:
    """The records to make, grouped into jobs: one per claim and one per control,
    except that the obligations with the same `batch` share one (in their order)."""
    out: list[list[Part]] = []
    where: dict[str, list[Part]] = {}
    for i, ob in enumerate(obligations):
        parts: list[Part] = [(i, False)] + ([(i, True)] if ob.negative is not None else [])
        if ob.batch:
            if ob.batch not in where:
                where[ob.batch] = []
                out.append(where[ob.batch])
            where[ob.batch].extend(parts)
        else:
            out.extend([part] for part in parts)
    return out


@dataclass
class _Worker:
    pid: int
    fd: int
    job: list[Part]
    started: float
    data: bytearray = field(default_factory=bytearray)


def _record_for(
    ob: Obligation, control: bool, status: Status, text: str, backstop_s: float
) -> Result:
    """A record made by the runner itself (the worker died or was killed)."""
    if not control:
        return Result(ob.name, ob.kind, ob.bounds, status, 0.0, text, ob.statement, "", backstop_s)
    return Result(
        f"{ob.name}~neg",
        ob.kind,
        ob.bounds if ob.negative_bounds is None else ob.negative_bounds,
        status,
        0.0,
        text,
        ob.negative_statement,
        "",
        backstop_s,
        control_of=ob.name,
    )


def _run(ob: Obligation, control: bool, backstop_s: float) -> Result:
    return run_control(ob, backstop_s) if control else run_claim(ob, backstop_s)


def _child(obligations: Sequence[Obligation], job: list[Part], backstop_s: float, fd: int) -> None:
    """The worker: run the job, write the pickled records, exit without cleanup."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides about Ctrl-C
        os.environ["EVICTABLE_EXPLORER_WORKERS"] = "1"  # the cores are the pool's
        records = [_run(obligations[i], control, backstop_s) for i, control in job]
        payload = pickle.dumps(records)
        view = memoryview(payload)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        sys.stdout.flush()
    except BaseException:  # the parent reports a worker that sent nothing as an error
        code = 1
    finally:
        os._exit(code)


def _name(ob: Obligation, control: bool) -> str:
    return f"{ob.name}~neg" if control else ob.name


def run_parallel(
    obligations: Sequence[Obligation],
    jobs: int,
    backstop_s: float = HANG_BACKSTOP_S,
    on_result: Callable[[Result], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    estimate: Mapping[str, float] | None = None,
) -> list[Result]:
    """Every obligation's records, in obligation order (see the module docstring).

    `on_start` sees the name of each record when its work starts; `on_result` each
    record as it lands (in completion order). `estimate` (record name -> seconds,
    e.g. the last run's) starts the longest jobs first.
    """
    parts: list[Part] = [
        (i, control)
        for i, ob in enumerate(obligations)
        for control in ((False, True) if ob.negative is not None else (False,))
    ]
    done: dict[Part, Result] = {}

    def ordered() -> list[Result]:
        return [done[p] for p in parts if p in done]

    def land(part: Part, record: Result) -> None:
        done[part] = record
        if on_result is not None:
            on_result(record)

    if jobs <= 0 or not hasattr(os, "fork"):
        try:
            for part in parts:
                ob, control = obligations[part[0]], part[1]
                if on_start is not None:
                    on_start(_name(ob, control))
                land(part, _run(ob, control, backstop_s))
        except KeyboardInterrupt:
            raise Interrupted(ordered()) from None
        return ordered()
    pending = jobs_of(obligations)
    if estimate:
        known = dict(estimate)

        def cost(job: list[Part]) -> float:
            return sum(known.get(_name(obligations[i], c), 0.0) for i, c in job)

        pending.sort(key=cost)  # pop() from the end takes the longest first
    else:
        pending.reverse()  # pop() from the end takes them in order
    live: dict[int, _Worker] = {}

    def finish(w: _Worker, status: Status, text: str) -> None:
        for i, control in w.job:
            land((i, control), _record_for(obligations[i], control, status, text, backstop_s))

    try:
        while pending or live:
            while pending and len(live) < jobs:
                job = pending.pop()
                if on_start is not None:
                    for i, control in job:
                        on_start(_name(obligations[i], control))
                rd, wr = os.pipe()
                with paused_watcher():  # no thread of ours runs while the worker forks
                    pid = os.fork()
                if pid == 0:  # pragma: no cover - the child never returns
                    os.close(rd)
                    _child(obligations, job, backstop_s, wr)
                os.close(wr)
                live[rd] = _Worker(pid, rd, job, time.monotonic())
            readable, _, _ = select.select(list(live), [], [], 1.0)
            for fd in readable:
                worker = live[fd]
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    worker.data += chunk
                    continue
                os.close(fd)
                del live[fd]
                _, status = os.waitpid(worker.pid, 0)
                if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and worker.data:
                    records: list[Result] = pickle.loads(bytes(worker.data))
                    for part, record in zip(worker.job, records, strict=True):
                        land(part, record)
                else:
                    how = (
                        f"signal {os.WTERMSIG(status)}"
                        if os.WIFSIGNALED(status)
                        else f"exit code {os.WEXITSTATUS(status)}"
                    )
                    finish(worker, Status.ERROR, f"the worker process died ({how})")
            now = time.monotonic()
            for fd, worker in list(live.items()):
                allowed = backstop_s * len(worker.job) + GRACE_S
                if now - worker.started > allowed:
                    os.kill(worker.pid, signal.SIGKILL)
                    os.waitpid(worker.pid, 0)
                    os.close(fd)
                    del live[fd]
                    finish(
                        worker,
                        Status.UNKNOWN,
                        backstop_text(allowed, "the worker was killed, its records lost"),
                    )
    except KeyboardInterrupt:
        for worker in live.values():
            try:
                os.kill(worker.pid, signal.SIGKILL)
                os.waitpid(worker.pid, 0)
            except OSError:
                pass
            os.close(worker.fd)
        raise Interrupted(ordered()) from None
    return ordered()
