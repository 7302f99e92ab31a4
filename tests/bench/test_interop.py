"""The interop worker's protocol, run with this project's manager (no vLLM needed):
it builds the benchmark's trace, times its own steps, reports errors and survives
them, and computes the same digests as this process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import bench.interop as interop
from bench.interop import Worker, WorkerError, trace_digest
from bench.timing import interleaved


@pytest.fixture
def worker() -> Iterator[Worker]:
    w = Worker(sys.executable, backend="impl")
    yield w
    w.close()


def test_hello_names_the_backend_and_its_import_time(worker: Worker) -> None:
    assert worker.hello["backend"] == "impl"
    assert worker.hello["import_s"] >= 0
    assert worker.hello["python"]


def test_a_remote_contender_is_timed_in_the_worker_and_interleaved(worker: Worker) -> None:
    assert worker.setup("a", "arc", 512, 0.9, 400) >= 0
    assert worker.setup("b", "lru", 512, 0.0, 400) >= 0
    results = interleaved(
        [worker.contender("a"), worker.contender("b")],
        2,
        target_s=0.001,
        warm_s=0.001,
        max_units=20,
    )
    assert all(len(m.rates) == 2 and min(m.rates) > 0 for m in results.values())


def test_latencies_time_each_prepare_store(worker: Worker) -> None:
    worker.setup("a", "lru", 256, 0.5, 10, pinned=100)
    latencies = worker.latencies("a", 5)
    assert len(latencies) == 5 and all(x > 0 for x in latencies)


def test_the_worker_computes_this_process_digests(worker: Worker) -> None:
    for policy in ("lru", "arc"):
        assert worker.digest(policy, 512, 0.9, 30) == trace_digest(policy, 512, 0.9, 30)
    assert worker.digest("lru", 256, 0.0, 30) != trace_digest("arc", 256, 0.0, 30)


def test_memory_is_bytes_per_block(worker: Worker) -> None:
    assert 50 < worker.memory("arc", 1024) < 1000


def test_rejects_a_bad_request_and_keeps_serving(worker: Worker) -> None:
    with pytest.raises(WorkerError, match="unknown op"):
        worker.request("nonesuch")
    worker.setup("a", "lru", 128, 0.0, 3)
    worker.contender("a").measure(3)
    with pytest.raises(WorkerError, match="trace exhausted"):
        worker.contender("a").measure(1)
    assert worker.request("hello")["backend"] == "impl"


def test_a_dead_worker_is_an_error(worker: Worker) -> None:
    worker.process.kill()
    worker.process.wait()
    with pytest.raises(WorkerError, match="exited"):
        worker.request("hello")


def test_interop_python_prefers_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(interop, "interop_python", _real_interop_python)
    monkeypatch.setattr(interop, "VENV", tmp_path / ".venv-interop")
    monkeypatch.delenv(interop.ENV, raising=False)
    python, why = interop.interop_python()
    assert python is None and "make interop" in why
    venv_python = tmp_path / ".venv-interop" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("#!/bin/sh\n")
    venv_python.chmod(0o755)
    monkeypatch.setattr(interop, "CHECKOUT", tmp_path)
    assert interop.interop_python() == (str(venv_python), ".venv-interop/")
    monkeypatch.setenv(interop.ENV, sys.executable)
    assert interop.interop_python() == (sys.executable, f"${interop.ENV}")
    monkeypatch.setenv(interop.ENV, os.fspath(tmp_path / "missing"))
    python, why = interop.interop_python()
    assert python is None and "not an executable" in why


_real_interop_python = interop.interop_python
