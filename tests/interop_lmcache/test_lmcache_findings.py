"""`evictable check --profile lmcache-0.5 --contract exact` on LMCache 0.5's own CPU tier:
exactly LMCache's real defects, per policy and mode (docs/interop.md, "LMCache 0.5").

The three findings, each reproduced on LMCache alone by a script in interop/lmcache/
(`test_lmcache_scripts.py`):

* `leaked_pin` -- a batched get that fails half-way keeps the read references it took
  (every policy, both modes): interop/lmcache/leaked_read_refs.py;
* `rejected_good_call` -- `touch_cache` raises `KeyError` for a looked-up key that left
  the index, and for ever after (LRU, MRU, LFU; not FIFO):
  interop/lmcache/touch_cache_stuck.py;
* `result` and `state` -- LFU in layerwise mode drops the candidates it did not evict
  from its tables, so an idle chunk is never evicted again (a store refused, LFU's
  buckets short): interop/lmcache/lfu_layerwise_lost_chunks.py.

evictable's policy in LMCache's backend (`cache_policy: EVICTABLE`) has the first only:
it is the backend's, not the policy's.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("lmcache")

from tests.interop_lmcache.conftest import classes

ADAPTERS = "evictable.proofs.adapters.lmcache"
RUN = ("--seed", "0", "--examples", "120", "--no-explore")

EXPECTED = {
    f"{ADAPTERS}:lru_backend": {"leaked_pin", "rejected_good_call"},
    f"{ADAPTERS}:fifo_backend": {"leaked_pin"},
    f"{ADAPTERS}:mru_backend": {"leaked_pin", "rejected_good_call"},
    f"{ADAPTERS}:lfu_backend": {"leaked_pin", "rejected_good_call"},
    f"{ADAPTERS}:lru_layerwise_backend": {"leaked_pin", "rejected_good_call"},
    # finding 3: the different state is followed to the different result it leads to
    # (`following:`), reported under that class
    f"{ADAPTERS}:lfu_layerwise_backend": {"leaked_pin", "rejected_good_call", "result"},
    "evictable.lmcache:evictable_backend": {"leaked_pin"},
    "evictable.lmcache:evictable_layerwise_backend": {"leaked_pin"},
}


@pytest.mark.parametrize("spec", sorted(EXPECTED))
def test_check_reports_exactly_lmcaches_defects(check: Any, spec: str) -> None:
    code, report, out = check(spec, *RUN)
    assert report["contract"]["profile"] == "lmcache-0.5"
    assert report["contract"]["mode"] == "exact"
    assert code == 1, out
    assert classes(report) == EXPECTED[spec], out


def test_the_leak_is_the_batched_gets(check: Any) -> None:
    _, report, _ = check(f"{ADAPTERS}:lru_backend", *RUN)
    leak = next(f for f in report["findings"] if f["class"] == "leaked_pin")
    assert "prepare_load raises KeyError" in leak["reason"]


def test_the_touch_failure_is_a_key_error_from_touch_cache(check: Any) -> None:
    _, report, _ = check(f"{ADAPTERS}:lru_backend", *RUN)
    touch = next(f for f in report["findings"] if f["class"] == "rejected_good_call")
    assert "touch_cache" in touch["reason"] and "KeyError" in touch["reason"]


def test_the_explorer_holds_evictables_policy_to_lmcaches_lru(check: Any) -> None:
    """Both engines on evictable's policy: the backend's leak, nothing of the policy's."""
    code, report, out = check(
        "evictable.lmcache:evictable_backend", "--seed", "0", "--examples", "60"
    )
    assert code == 1
    assert classes(report) == {"leaked_pin"}, out
    last = report["explorations"][-1]
    assert last["verdict"] == "ok" and last["figures"]["complete"], out
