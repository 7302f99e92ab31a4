"""Helpers of the SGLang suite (it runs where SGLang 0.5 is installed: `make
interop-sglang`). Each test module starts with `pytest.importorskip("sglang")`, so that
`make test` (without SGLang) reports the suite as skipped. The `check` fixture is the
vLLM suite's: `evictable check` run in-process, each argument list once."""

from __future__ import annotations

from tests.interop.conftest import check

__all__ = ["check"]
