"""The worker that runs a benchmark trace on another manager, in its own process.

    <python> -m bench.interop_driver --backend vllm|impl     (from a checkout's root)

vLLM is not importable in the project's venv, so `bench.interop` starts this script
with the interop venv's python and drives it over stdin/stdout, one JSON object per
line each way. The worker builds the very trace the benchmark uses
(`bench.workloads.make_trace`, same seed: the keys are byte-for-byte vLLM's
`OffloadKey`s, 32 hash bytes + a 4-byte big-endian group index), fills its
managers, and runs steps on demand, timing its own work (`time.process_time` and
`time.perf_counter` around the steps alone), so the benchmark interleaves it with
the in-process contenders and never counts this process's start or vLLM's import.

Backends:

* `vllm` -- `vllm.v1.kv_offload.cpu.manager.CPUOffloadingManager(num_chunks,
  cache_policy)`, driven through vLLM's own API: one `ReqContext` per trace step
  (a step is one request: its store, commit, load and load end), results read from
  the `PrepareStoreOutput` and the `LoadStoreSpec`s (`block_ids`);
* `impl` -- this project's `evictable.impl.manager.CPUOffloadingManager`, for the
  protocol's test (`tests/bench/test_interop.py`) without vLLM.

Requests (`op`, then fields) and replies (`ok`, then fields; `ok: false` carries
`error`, a traceback):

* `hello` -> `backend`, `version`, `python`, `import_s` (the backend's import, timed);
* `setup` `id`, `policy`, `num_blocks`, `pinned_fraction` (or `pinned`, a count),
  `num_steps`, `seed` -> `fill_s` (a manager filled and pinned as
  `bench.workloads.fill` does);
* `run` `id`, `units` -> `cpu_s`, `wall_s` (the next `units` steps of its trace);
* `latencies` `id`, `units` -> `us`: the wall-clock µs of each `prepare_store` of the
  next `units` steps (the eviction-latency benchmark's measurement);
* `digest` `policy`, `num_blocks`, `pinned_fraction`, `num_steps`, `seed` -> `sha256`
  of every result on a fresh manager, and `shape_sha256` of their lengths
  (`bench.interop.trace_digest` computes the same on this project's manager: equal
  digests mean the same results, equal shapes as many keys stored, evicted, loaded);
* `memory` `policy`, `num_blocks` -> `bytes_per_block`: tracemalloc's bytes still
  allocated per block after filling a fresh manager, keys excluded;
* `gc` `freeze` -> a full collection, then `gc.freeze()` (true: the set-up is not
  rescanned during the rounds) or `gc.unfreeze()` (false);
* `drop` `id`; `quit`.

This file is not installed and holds no vLLM code: it only calls vLLM's public API.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import platform
import sys
import time
import traceback
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from bench.workloads import Step, Trace, make_trace, pinned_indices

__all__ = ["Backend", "main"]

RunSteps = Callable[[Sequence[Step]], None]

CHUNK = 1024
"""Keys per call while filling (as `bench.workloads.fill_timed`)."""


class Backend:
    """How one kind of manager is built, filled, stepped and observed."""

    name = "abstract"
    version = "?"

    def build(self, policy: str, num_blocks: int) -> Any:
        raise NotImplementedError

    def fill(self, manager: Any, trace: Trace) -> None:
        raise NotImplementedError

    def runner(self, manager: Any) -> RunSteps:
        raise NotImplementedError

    def store_latencies(self, manager: Any, steps: Sequence[Step]) -> list[float]:
        """Run the steps; the wall-clock µs of each `prepare_store`."""
        raise NotImplementedError

    def results(self, manager: Any, steps: Sequence[Step]) -> list[Any]:
        """Run the steps; return what each call returned, as JSON-able values."""
        raise NotImplementedError


class VllmBackend(Backend):
    """vLLM 0.33's CPU offloading manager, through its public API."""

    name = "vllm"

    def __init__(self) -> None:
        from vllm import __version__
        from vllm.v1.kv_offload.base import ReqContext, make_offload_key
        from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

        self.version = __version__
        self.context = ReqContext
        self.make_key = make_offload_key
        self.manager = CPUOffloadingManager

    def build(self, policy: str, num_blocks: int) -> Any:
        return self.manager(num_chunks=num_blocks, cache_policy=policy)

    def check_keys(self, trace: Trace) -> None:
        """The trace's keys are vLLM's OffloadKeys (make_offload_key gives the same bytes)."""
        for key in (*trace.fill_keys[:3], *trace.steps[0].stores[:3]):
            if self.make_key(key[:-4], int.from_bytes(key[-4:], "big")) != key:
                raise RuntimeError(f"trace key {key!r} is not a vLLM OffloadKey")

    def fill(self, manager: Any, trace: Trace) -> None:
        self.check_keys(trace)
        keys = trace.fill_keys
        for start in range(0, len(keys), CHUNK):
            part = keys[start : start + CHUNK]
            ctx = self.context("fill")
            out = manager.prepare_store(part, ctx)
            if out is None or len(out.keys_to_store) != len(part):
                raise RuntimeError("fill: vLLM refused to store into free slots")
            manager.complete_store(part, ctx)
        pinned = [keys[i] for i in trace.pinned]
        for start in range(0, len(pinned), CHUNK):
            manager.prepare_load(pinned[start : start + CHUNK], self.context("pin"))

    def runner(self, manager: Any) -> RunSteps:
        context = self.context
        prepare_store = manager.prepare_store
        complete_store = manager.complete_store
        prepare_load = manager.prepare_load
        complete_load = manager.complete_load

        def run(steps: Sequence[Step]) -> None:
            for step in steps:
                ctx = context("step")
                if prepare_store(step.stores, ctx) is None:
                    raise RuntimeError("trace: prepare_store could not evict enough blocks")
                complete_store(step.stores, ctx)
                prepare_load(step.loads, ctx)
                complete_load(step.loads, ctx)

        return run

    def store_latencies(self, manager: Any, steps: Sequence[Step]) -> list[float]:
        clock = time.perf_counter_ns
        out: list[float] = []
        for step in steps:
            ctx = self.context("step")
            t0 = clock()
            stored = manager.prepare_store(step.stores, ctx)
            out.append((clock() - t0) / 1000.0)
            if stored is None:
                raise RuntimeError("trace: prepare_store could not evict enough blocks")
            manager.complete_store(step.stores, ctx)
            manager.prepare_load(step.loads, ctx)
            manager.complete_load(step.loads, ctx)
        return out

    def results(self, manager: Any, steps: Sequence[Step]) -> list[Any]:
        out: list[Any] = []
        for step in steps:
            ctx = self.context("step")
            stored = manager.prepare_store(step.stores, ctx)
            manager.complete_store(step.stores, ctx)
            loaded = manager.prepare_load(step.loads, ctx)
            manager.complete_load(step.loads, ctx)
            out.append(
                [
                    [k.hex() for k in stored.keys_to_store],
                    [int(i) for i in stored.store_spec.block_ids],
                    [k.hex() for k in stored.evicted_keys],
                    [int(i) for i in loaded.block_ids],
                ]
            )
        return out


class ImplBackend(Backend):
    """This project's manager (the protocol's own test: no vLLM needed)."""

    name = "impl"

    def __init__(self) -> None:
        from evictable import __version__
        from evictable.impl.manager import CPUOffloadingManager

        self.version = __version__
        self.manager = CPUOffloadingManager

    def build(self, policy: str, num_blocks: int) -> Any:
        return self.manager(num_blocks, policy)

    def fill(self, manager: Any, trace: Trace) -> None:
        from bench.workloads import fill

        fill(manager, trace)

    def runner(self, manager: Any) -> RunSteps:
        from bench.workloads import run_steps

        return lambda steps: run_steps(manager, steps)

    def store_latencies(self, manager: Any, steps: Sequence[Step]) -> list[float]:
        from bench.bench_manager import timed_stores

        out: list[float] = []
        timed_stores(manager, steps, out)
        return out

    def results(self, manager: Any, steps: Sequence[Step]) -> list[Any]:
        from bench.interop import impl_results

        return impl_results(manager, steps)


BACKENDS: dict[str, Callable[[], Backend]] = {"vllm": VllmBackend, "impl": ImplBackend}


_TRACES: dict[tuple[int, int, int], Trace] = {}
"""Traces by (blocks, steps, seed): the contenders of one size share their keys."""


def _trace(request: dict[str, Any]) -> Trace:
    n, fraction, steps = request["num_blocks"], request["pinned_fraction"], request["num_steps"]
    seed = request.get("seed", 7)
    base = _TRACES.get((n, steps, seed))
    if base is None:
        base = _TRACES[(n, steps, seed)] = make_trace(n, 0.0, steps, seed=seed)
    count = request.get("pinned")
    pinned = pinned_indices(n, fraction) if count is None else list(range(count))
    return Trace(n, fraction, base.fill_keys, pinned, base.steps)


class Worker:
    """The managers this process holds, by id, and the position in each one's trace."""

    def __init__(self, backend: Backend, import_s: float) -> None:
        self.backend = backend
        self.import_s = import_s
        self.runs: dict[str, tuple[RunSteps, list[Step], list[int], Any]] = {}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "hello":
            return {
                "backend": self.backend.name,
                "version": self.backend.version,
                "python": platform.python_version(),
                "import_s": self.import_s,
            }
        if op == "setup":
            trace = _trace(request)
            t0 = time.perf_counter()
            manager = self.backend.build(request["policy"], trace.num_blocks)
            self.backend.fill(manager, trace)
            fill_s = time.perf_counter() - t0
            self.runs[request["id"]] = (self.backend.runner(manager), trace.steps, [0], manager)
            return {"fill_s": fill_s}
        if op in ("run", "latencies"):
            run, steps, pos, manager = self.runs[request["id"]]
            units = int(request["units"])
            if pos[0] + units > len(steps):
                raise RuntimeError(f"trace exhausted: {pos[0] + units} > {len(steps)} steps")
            part = steps[pos[0] : pos[0] + units]
            pos[0] += units
            if op == "latencies":
                return {"us": self.backend.store_latencies(manager, part)}
            w0, t0 = time.perf_counter(), time.process_time()
            run(part)
            cpu, wall = time.process_time() - t0, time.perf_counter() - w0
            return {"cpu_s": cpu, "wall_s": wall}
        if op == "gc":
            gc.collect()
            if request["freeze"]:
                gc.freeze()
            else:
                gc.unfreeze()
            return {}
        if op == "memory":
            return {"bytes_per_block": self._memory(request["policy"], request["num_blocks"])}
        if op == "digest":
            trace = _trace(request)
            manager = self.backend.build(request["policy"], trace.num_blocks)
            self.backend.fill(manager, trace)
            results = self.backend.results(manager, trace.steps)
            shape = [[len(part) for part in step] for step in results]
            return {"sha256": digest(results), "shape_sha256": digest(shape)}
        if op == "drop":
            self.runs.pop(request["id"], None)
            gc.collect()
            return {}
        raise ValueError(f"unknown op {op!r}")

    def _memory(self, policy: str, n: int) -> float:
        """Bytes per block still allocated after a fill (tracemalloc, keys made first)."""
        trace = _trace({"num_blocks": n, "pinned_fraction": 0.0, "num_steps": 1, "seed": 11})
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            manager = self.backend.build(policy, n)
            self.backend.fill(manager, trace)
            gc.collect()
            used = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        del manager
        return used / n


def digest(results: list[Any]) -> str:
    """The sha256 of a results list (canonical JSON)."""
    return hashlib.sha256(json.dumps(results, separators=(",", ":")).encode()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve requests from stdin until `quit` or end of input; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=sorted(BACKENDS), required=True)
    parser.add_argument(
        "--no-freeze",
        dest="freeze",
        action="store_false",
        help="keep the objects the backend's import created in the collector's generations",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    t0 = time.perf_counter()
    backend = BACKENDS[args.backend]()
    worker = Worker(backend, time.perf_counter() - t0)
    if args.freeze:
        gc.collect()
        gc.freeze()  # the import's objects: the collector does not rescan them per run
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "quit":
            break
        try:
            reply = {"ok": True, **worker.handle(request)}
        except Exception:
            reply = {"ok": False, "error": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
