"""The `vllm-0.33` profile of the model (model/vllm033.py), without vLLM."""

from __future__ import annotations

import pytest

from evictable.model.errors import InvalidArgumentError
from evictable.model.types import OffloadingEvent
from evictable.model.vllm033 import (
    PROFILES,
    Request,
    Vllm033Manager,
    check_profile,
    group_of,
    order_request_keys,
)


def test_profiles_and_their_check() -> None:
    assert PROFILES[:2] == ("seed", "vllm-0.33")
    assert "sglang-0.5" in PROFILES and "lmcache-0.5" in PROFILES
    assert check_profile("vllm-0.33") == "vllm-0.33"
    with pytest.raises(InvalidArgumentError):
        check_profile("vllm-0.32")


def test_group_and_token_order() -> None:
    assert group_of(b"abcd\x00\x00\x00\x02") == 2 and group_of("k") == 0
    req = Request("r", {"a": 30, "b": 10, "c": 20})
    assert order_request_keys([("a", "b"), ("c",)], req) == ["b", "c", "a"]
    partial = Request("r", {"a": 1})
    assert order_request_keys([("b", "a")], partial) == ["b", "a"]


def test_a_repeated_key_is_stored_once() -> None:
    m = Vllm033Manager(2, "lru")
    out = m.prepare_store(["a", "a"])
    assert out is not None and out.keys_to_store == ["a"] and len(out.slot_ids) == 1


def test_lru_request_positions_rank_within_a_request() -> None:
    m = Vllm033Manager(2, "lru")
    req = Request("r", {"a": 16, "b": 32})
    m.on_new_request(req)
    m.prepare_store(["a", "b"], req)
    m.complete_store(["a", "b"], req=req)
    # inside one unfinished request, the later position is the older rank: b first
    assert list(m.policy.snapshot().evictable) == ["b", "a"]
    m.on_request_finished(req)
    # finishing re-ranks in prefix order, tail first: a is the most recent
    assert list(m.policy.snapshot().evictable) == ["b", "a"]
    out = m.prepare_store(["c"])
    assert out is not None and out.evicted_keys == ["b"]


def test_arc_ghost_hit_adapts_on_store_miss_once_per_request() -> None:
    m = Vllm033Manager(1, "arc")
    m.prepare_store(["a"])
    m.complete_store(["a"])
    m.prepare_store(["b"])  # evicts a into B1
    m.complete_store(["b"])
    assert m.policy.target == 0
    req = Request("r")
    m.on_new_request(req)
    m.prepare_store(["a"], req)  # a store miss that is a B1 ghost hit
    assert m.policy.target == 1


def test_a_failed_store_is_a_metadata_only_removal() -> None:
    m = Vllm033Manager(2, "lru", enable_events=True)
    m.prepare_store(["a"])
    m.complete_store(["a"], success=False)
    assert m.take_events() == [OffloadingEvent(keys=("a",), removed=True, metadata_only=True)]
    m.prepare_store(["a"])
    m.complete_store(["a"], success=False)
    m.prepare_store(["a"])  # resident again: the notice loses the key, then is dropped
    assert m.take_events() == []
