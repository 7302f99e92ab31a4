"""Helpers of the LMCache suite (it runs where LMCache 0.5 is installed:
`make interop-lmcache`). Each test module starts with `pytest.importorskip("lmcache")`,
so that `make test` (without LMCache) reports the suite as skipped. The `check`
fixture is the vLLM suite's: `evictable check` run in-process, each argument list
once."""

from __future__ import annotations

import os
from typing import Any

from tests.interop.conftest import check

os.environ.setdefault("LMCACHE_LOG_LEVEL", "ERROR")  # before LMCache makes its loggers

__all__ = ["check", "classes"]


def classes(report: dict[str, Any]) -> set[str]:
    """The finding classes of a check report."""
    return {f["class"] for f in report["findings"]}
