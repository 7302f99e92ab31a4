"""The soak profile (`tools.soak`): not part of `make test`.

`EVICTABLE_SOAK=1` (or `make soak`) runs 10^6 mixed steps per policy; otherwise a
short run checks that the soak itself works.
"""

from __future__ import annotations

import os

import pytest

from tools.soak import soak

SOAK = os.environ.get("EVICTABLE_SOAK", "") not in ("", "0")


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_a_short_soak_finds_nothing_and_measures_memory(policy: str) -> None:
    report = soak(policy, steps=20_000, num_blocks=200, keys=600, check_every=2_000)
    assert not report.problems, report.text()
    assert report.checks >= 10 and report.evictions > 0 and report.rss_mb


@pytest.mark.skipif(not SOAK, reason="the soak profile: EVICTABLE_SOAK=1 or make soak")
@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_a_million_steps_keep_memory_flat_and_lose_no_slot(policy: str) -> None:
    report = soak(policy, steps=1_000_000)
    print("\n" + report.text())
    assert not report.problems, report.text()
