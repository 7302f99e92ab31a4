"""Benchmark tests never start vLLM: the interop venv is hidden from them.

`bench.interop.shared_worker()` would start a vLLM worker whenever the interop venv
exists; every test here sees none instead (`make test` must not need vLLM). The
worker protocol itself is tested with this project's manager (`test_interop.py`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import bench.interop as interop


@pytest.fixture(autouse=True)
def _no_interop_venv(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(interop, "interop_python", lambda: (None, "hidden from the tests"))
    monkeypatch.setattr(interop, "_shared", None)
    yield
