"""vLLM's managers as benchmark contenders, in a worker process of the interop venv.

vLLM is not importable in the project's venv. `make interop` builds a second venv
with vLLM 0.33.0 and a CPU torch at `<checkout>/.venv-interop/`; the environment
variable `EVICTABLE_INTEROP_PYTHON` may name another interpreter that has vLLM
(it wins when set). `interop_python()` finds it, or says why there is none.

`Worker` starts `python -m bench.interop_driver --backend vllm` there (see that
module for the protocol) and makes each of its managers a `bench.timing.Contender`
whose `timed(units)` asks the worker to run the next `units` steps of its trace and
returns the CPU and wall seconds the worker measured around them. The benchmark
interleaves those rounds with its in-process contenders, so a ratio against vLLM is
a paired ratio like any other; process start and vLLM's import are not counted
(the worker reports its import time separately).

`trace_digest` and `impl_results` compute, on this project's manager, the digest
the worker computes on vLLM's, to check that both did the same work on the trace.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from bench.timing import Contender
from bench.workloads import OPS_PER_STEP, Step

__all__ = [
    "CHECKOUT",
    "ENV",
    "VLLM_CONTENDERS",
    "Worker",
    "impl_results",
    "interop_python",
    "shared_worker",
    "trace_digest",
]

CHECKOUT = Path(__file__).resolve().parent.parent
ENV = "EVICTABLE_INTEROP_PYTHON"
VENV = CHECKOUT / ".venv-interop"

VLLM_CONTENDERS: dict[str, str] = {"vllm-lru": "lru", "vllm-arc": "arc"}
"""Contender name -> vLLM `cache_policy`."""


def interop_python() -> tuple[str | None, str]:
    """The interop interpreter (`$EVICTABLE_INTEROP_PYTHON`, else the checkout's
    `.venv-interop/bin/python`) and where it came from, or None and why not."""
    named = os.environ.get(ENV)
    if named:
        if os.access(named, os.X_OK):
            return named, f"${ENV}"
        return None, f"${ENV}={named} is not an executable"
    default = VENV / "bin" / "python"
    if os.access(default, os.X_OK):
        return str(default), str(VENV.relative_to(CHECKOUT)) + "/"
    return None, (
        f"no interop venv: `make interop` creates {VENV.name}/ with vLLM 0.33.0 "
        f"(or set {ENV} to a python that has vLLM)"
    )


class WorkerError(RuntimeError):
    """The worker failed a request or exited."""


class Worker:
    """One worker process; `request` sends one JSON line and reads one back."""

    def __init__(self, python: str, backend: str = "vllm") -> None:
        self.process = subprocess.Popen(
            [python, "-m", "bench.interop_driver", "--backend", backend],
            cwd=CHECKOUT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
        )
        self.hello = self.request("hello")

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        stdin, stdout = self.process.stdin, self.process.stdout
        if stdin is None or stdout is None:
            raise WorkerError("worker pipes are closed")
        return stdin, stdout

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send a request; return the reply's fields, or raise `WorkerError`."""
        stdin, stdout = self._pipes()
        try:
            stdin.write(json.dumps({"op": op, **fields}) + "\n")
            stdin.flush()
        except BrokenPipeError as exc:
            raise WorkerError(f"worker exited ({self.process.poll()})") from exc
        line = stdout.readline()
        if not line:
            raise WorkerError(f"worker exited ({self.process.wait()}) during {op!r}")
        reply: dict[str, Any] = json.loads(line)
        if not reply.pop("ok", False):
            raise WorkerError(f"worker failed {op!r}:\n{reply.get('error', reply)}")
        return reply

    def setup(
        self,
        cid: str,
        policy: str,
        num_blocks: int,
        fraction: float,
        num_steps: int,
        pinned: int | None = None,
    ) -> float:
        """Build and fill a manager for contender `cid` (the `pinned` oldest blocks
        loading, default `int(fraction * num_blocks)`); return the fill's seconds."""
        reply = self.request(
            "setup",
            id=cid,
            policy=policy,
            num_blocks=num_blocks,
            pinned_fraction=fraction,
            num_steps=num_steps,
            pinned=pinned,
        )
        return float(reply["fill_s"])

    def contender(self, cid: str) -> Contender:
        """Contender `cid` (after `setup`): timed in the worker, step by step."""

        def timed(units: int) -> tuple[float, float]:
            reply = self.request("run", id=cid, units=units)
            return float(reply["cpu_s"]), float(reply["wall_s"])

        def run(units: int) -> None:
            timed(units)

        return Contender(cid, run, OPS_PER_STEP, timed=timed)

    def latencies(self, cid: str, units: int) -> list[float]:
        """The wall-clock µs of each `prepare_store` of the next `units` steps of `cid`."""
        return [float(x) for x in self.request("latencies", id=cid, units=units)["us"]]

    def memory(self, policy: str, num_blocks: int) -> float:
        """Bytes per resident block of a freshly filled manager (tracemalloc, in the worker)."""
        return float(
            self.request("memory", policy=policy, num_blocks=num_blocks)["bytes_per_block"]
        )

    def freeze(self, on: bool) -> None:
        """Freeze (True) or unfreeze the worker's objects after a full collection;
        `bench.timing.interleaved` calls it around the rounds."""
        self.request("gc", freeze=on)

    def drop(self, cid: str) -> None:
        """Forget contender `cid`'s manager (frees its memory in the worker)."""
        self.request("drop", id=cid)

    def digest(
        self, policy: str, num_blocks: int, fraction: float, num_steps: int
    ) -> dict[str, str]:
        """The worker's digests of every result on a fresh manager (see `trace_digest`)."""
        reply = self.request(
            "digest",
            policy=policy,
            num_blocks=num_blocks,
            pinned_fraction=fraction,
            num_steps=num_steps,
        )
        return {"sha256": str(reply["sha256"]), "shape_sha256": str(reply["shape_sha256"])}

    def close(self) -> None:
        """Ask the worker to quit and wait for it."""
        if self.process.poll() is None:
            try:
                stdin, _ = self._pipes()
                stdin.write(json.dumps({"op": "quit"}) + "\n")
                stdin.close()
            except (BrokenPipeError, WorkerError):
                pass
            self.process.wait(timeout=60)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: tuple[Worker | None, str] | None = None


def shared_worker() -> tuple[Worker | None, str]:
    """The one vLLM worker of this process (started on first use, closed at exit), or
    None and why there is none (no interop venv, or the worker failed to start)."""
    global _shared
    if _shared is None:
        python, where = interop_python()
        if python is None:
            _shared = None, where
        else:
            try:
                t0 = time.perf_counter()
                worker = Worker(python)
                worker.hello["start_s"] = time.perf_counter() - t0
                worker.hello["source"] = where
                atexit.register(worker.close)
                _shared = worker, where
            except (OSError, WorkerError) as exc:
                _shared = None, f"the vLLM worker ({where}) did not start: {exc}"
    return _shared


def impl_results(manager: Any, steps: Sequence[Step]) -> list[Any]:
    """Run the steps on a manager of this project; every result as the worker reports
    vLLM's: [keys to store (hex), their slots, evicted keys (hex), load slots]."""
    out: list[Any] = []
    for step in steps:
        stored = manager.prepare_store(step.stores)
        manager.complete_store(step.stores)
        loaded = manager.prepare_load(step.loads)
        manager.complete_load(step.loads)
        out.append(
            [
                [k.hex() for k in stored.keys_to_store],
                list(stored.slot_ids),
                [k.hex() for k in stored.evicted_keys],
                list(loaded),
            ]
        )
    return out


def trace_digest(policy: str, num_blocks: int, fraction: float, num_steps: int) -> dict[str, str]:
    """The digests of every result of this project's manager on the trace, as the
    worker's `digest` request computes them for its backend (`sha256`, `shape_sha256`)."""
    from bench.interop_driver import ImplBackend
    from bench.interop_driver import Worker as Serve

    reply = Serve(ImplBackend(), 0.0).handle(
        {
            "op": "digest",
            "policy": policy,
            "num_blocks": num_blocks,
            "pinned_fraction": fraction,
            "num_steps": num_steps,
        }
    )
    return {"sha256": str(reply["sha256"]), "shape_sha256": str(reply["shape_sha256"])}
