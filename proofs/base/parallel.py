"""Discharge obligations in worker processes: `jobs` at a time, each one killable.

`run_parallel(obligations, jobs, backstop_s, on_result)` forks one worker process per
*job* -- an obligation, or the obligations that share a `batch` (they run one after
another in one worker and share its caches) -- keeping at most `jobs` alive. A
worker runs `records.run_one` on each of its obligations and sends the records back
through a pipe. Every worker starts from the same parent state, so a check's work
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from evictable.proofs.base.records import (
    HANG_BACKSTOP_S,
    Obligation,
    Result,
    Status,
    backstop_text,
    run_one,
)

__all__ = ["GRACE_S", "Interrupted", "jobs_of", "run_parallel"]

GRACE_S = 30.0
"""How long past its backstop the parent waits before it kills a worker."""


class Interrupted(KeyboardInterrupt):
    """The run was interrupted; `records` holds what had landed, in obligation order."""

    def __init__(self, records: list[Result]) -> None:
        super().__init__("interrupted")
        self.records = records


def jobs_of(obligations: Sequence[Obligation]) -> list[list[int]]:
    """The obligations' indexes grouped into jobs: one per obligation, except that
    obligations with the same `batch` share one (in their order)."""
    out: list[list[int]] = []
    where: dict[str, list[int]] = {}
    for i, ob in enumerate(obligations):
        if ob.batch:
            if ob.batch not in where:
                where[ob.batch] = []
                out.append(where[ob.batch])
            where[ob.batch].append(i)
        else:
            out.append([i])
    return out


@dataclass
class _Worker:
    pid: int
    fd: int
    job: list[int]
    started: float
    data: bytearray = field(default_factory=bytearray)


def _records_for(ob: Obligation, status: Status, text: str, backstop_s: float) -> list[Result]:
    out = [Result(ob.name, ob.kind, ob.bounds, status, 0.0, text, ob.statement, "", backstop_s)]
    if ob.negative is not None:
        bounds = ob.bounds if ob.negative_bounds is None else ob.negative_bounds
        out.append(
            Result(
                f"{ob.name}~neg",
                ob.kind,
                bounds,
                status,
                0.0,
                text,
                ob.negative_statement,
                "",
                backstop_s,
                control_of=ob.name,
            )
        )
    return out


def _child(obligations: Sequence[Obligation], job: list[int], backstop_s: float, fd: int) -> None:
    """The worker: run the job, write the pickled records, exit without cleanup."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides about Ctrl-C
        records = [r for i in job for r in run_one(obligations[i], backstop_s)]
        payload = pickle.dumps(records)
        view = memoryview(payload)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except BaseException:  # the parent reports a worker that sent nothing as an error
        code = 1
    finally:
        os._exit(code)


def run_parallel(
    obligations: Sequence[Obligation],
    jobs: int,
    backstop_s: float = HANG_BACKSTOP_S,
    on_result: Callable[[Result], None] | None = None,
    on_start: Callable[[Obligation], None] | None = None,
) -> list[Result]:
    """Every obligation's records, in obligation order (see the module docstring).

    `on_start` sees each obligation when its worker starts; `on_result` each record
    as it lands (in completion order).
    """
    if jobs <= 0 or not hasattr(os, "fork"):
        out: list[Result] = []
        try:
            for ob in obligations:
                if on_start is not None:
                    on_start(ob)
                for rec in run_one(ob, backstop_s):
                    out.append(rec)
                    if on_result is not None:
                        on_result(rec)
        except KeyboardInterrupt:
            raise Interrupted(out) from None
        return out
    pending = jobs_of(obligations)
    pending.reverse()  # pop() from the end takes them in order
    done: dict[int, list[Result]] = {}
    live: dict[int, _Worker] = {}

    def land(index: int, records: list[Result]) -> None:
        done[index] = records
        if on_result is not None:
            for rec in records:
                on_result(rec)

    def finish(w: _Worker, status: Status, text: str) -> None:
        for i in w.job:
            land(i, _records_for(obligations[i], status, text, backstop_s))

    try:
        while pending or live:
            while pending and len(live) < jobs:
                job = pending.pop()
                if on_start is not None:
                    for i in job:
                        on_start(obligations[i])
                rd, wr = os.pipe()
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
                    by_name = {rec.name: rec for rec in records}
                    for i in worker.job:
                        ob = obligations[i]
                        names = [ob.name] + ([f"{ob.name}~neg"] if ob.negative else [])
                        land(i, [by_name[n] for n in names])
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
        raise Interrupted([rec for i in sorted(done) for rec in done[i]]) from None
    return [rec for i in range(len(obligations)) for rec in done[i]]
