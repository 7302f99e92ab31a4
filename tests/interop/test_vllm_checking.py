"""The checking mode for vLLM's CI: `EvictableChecked` (each hook call held to the
policy contract) and `CheckedOffloadingSpec` (vLLM's manager mirrored on the model).

A seeded bug per clause of the policy contract is caught at its call; vLLM's three
manager defects are each reported by the mirror at the call that causes it; clean
random traces report nothing, and the checked policy answers exactly as the policy
it wraps.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.base import ReqContext
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus
from vllm.v1.kv_offload.cpu.policies.factory import CachePolicyFactory
from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec
from vllm.v1.kv_offload.factory import OffloadingSpecFactory

from evictable.errors import MirrorDivergenceError, PolicyContractError
from evictable.vllm import CheckedOffloadingSpec, EvictableChecked, MirroredManager
from tests.interop.vllm_traces import key, run_pair

MODULE = "evictable.vllm"
BUGGY = "tests.interop.buggy_policies"
R = ReqContext(req_id="r")


def manager(policy: str, num_chunks: int) -> CPUOffloadingManager:
    return CPUOffloadingManager(
        num_chunks=num_chunks, cache_policy=policy, cache_policy_module_path=MODULE
    )


def stored(m: Any, *keys: bytes) -> None:
    m.prepare_store(list(keys), R)
    m.complete_store(list(keys), R)


# ---------------------------------------------------------------- EvictableChecked


def test_loads_through_vllms_factory_with_its_options() -> None:
    plain = CachePolicyFactory.get_cache_policy_cls("EvictableChecked", MODULE)
    assert plain is EvictableChecked and plain.policy == "lru" and plain.on_violation == "raise"
    arc = CachePolicyFactory.get_cache_policy_cls("EvictableChecked(EvictableARC, log)", MODULE)
    assert issubclass(arc, EvictableChecked)
    assert (arc.policy, arc.on_violation) == ("EvictableARC", "log")
    with pytest.raises(ValueError):
        EvictableChecked.of("no_such_policy")
    with pytest.raises(ValueError):
        EvictableChecked.of("lru", "shrug")


@pytest.mark.parametrize(
    "inner", [("lru", None), ("arc", None), ("EvictableLRU", MODULE), ("EvictableARC", MODULE)]
)
@pytest.mark.parametrize("seed", range(3))
def test_clean_traces_report_nothing_and_answer_as_the_wrapped_policy(
    inner: tuple[str, str | None], seed: int
) -> None:
    checked = (f"EvictableChecked({inner[0]})", MODULE)
    assert run_pair(seed, inner, checked, steps=250, clean=True) is None


def test_a_repeated_key_is_vllms_second_insert() -> None:
    """vLLM's own defect seen at the hook: a repeated key is inserted twice."""
    m = manager("EvictableChecked(lru)", 2)
    with pytest.raises(PolicyContractError) as info:
        m.prepare_store([key(0), key(0)], R)
    assert info.value.call == "insert" and "second insert" in info.value.clause


def _policy(inner: str = "lru") -> Any:
    return EvictableChecked.of(inner)(cache_capacity=4)


def test_caller_clauses_raise_before_the_policy_changes() -> None:
    p = _policy()
    chunk = ChunkStatus(0)  # pending (ref -1)
    p.insert(b"a", chunk, R)
    with pytest.raises(PolicyContractError, match="mark_evictable only at ref 0"):
        p.mark_evictable(b"a")  # still pending
    assert b"a" not in p.inner._evictable
    chunk.ref_cnt = 0
    p.mark_evictable(b"a")
    with pytest.raises(PolicyContractError, match="mark_evictable only at ref 0"):
        p.mark_evictable(b"a")  # twice
    with pytest.raises(PolicyContractError, match="no second insert"):
        p.insert(b"a", ChunkStatus(1), R)
    assert p.inner.get(b"a") is chunk
    with pytest.raises(PolicyContractError, match="remove only of a pending chunk"):
        p.remove(b"a")  # ready, not pending
    assert p.inner.get(b"a") is chunk
    p.mark_non_evictable(b"a")
    chunk.ref_cnt = 1
    with pytest.raises(PolicyContractError, match="only when leaving ref 0"):
        p.mark_non_evictable(b"a")  # not evictable
    with pytest.raises(PolicyContractError, match="only when leaving ref 0"):
        p.mark_non_evictable(b"zz")  # not resident


@pytest.mark.parametrize(
    ("bug", "clause"),
    [
        ("EvictsProtected", "never returns a protected chunk"),
        ("EvictsPinned", "never returns a pinned or pending chunk"),
        ("NotAtomic", "a refused eviction changes nothing"),
        ("KeepsVictims", "an evicted chunk is no longer resident"),
    ],
)
def test_a_seeded_policy_bug_per_evict_clause_is_caught(bug: str, clause: str) -> None:
    m = manager(f"EvictableChecked({BUGGY}:{bug})", 2)
    stored(m, key(0), key(1))
    with pytest.raises(PolicyContractError) as info:
        if bug == "EvictsProtected":
            m.prepare_store([key(0), key(2)], R)  # key(0) is protected
        elif bug == "EvictsPinned":
            m.prepare_load([key(0)], R)
            m.prepare_store([key(2)], R)
        elif bug == "NotAtomic":
            m.prepare_store([key(0), key(2), key(3)], R)  # only key(1) is a candidate
        else:
            m.prepare_store([key(2)], R)
    assert info.value.call == "evict" and clause in info.value.clause, info.value


def test_the_correct_base_of_the_seeded_bugs_passes() -> None:
    m = manager(f"EvictableChecked({BUGGY}:TinyLRU)", 2)
    stored(m, key(0), key(1))
    m.prepare_load([key(0)], R)
    assert m.prepare_store([key(0), key(2), key(3)], R) is None
    out = m.prepare_store([key(2)], R)
    assert out is not None and out.evicted_keys == [key(1)]


def test_log_mode_logs_and_carries_on(caplog: pytest.LogCaptureFixture) -> None:
    m = manager(f"EvictableChecked({BUGGY}:EvictsProtected, log)", 2)
    stored(m, key(0), key(1))
    with caplog.at_level(logging.ERROR, logger="evictable.vllm"):
        m.prepare_store([key(0), key(2)], R)
    seen = m._policy.violations
    assert len(seen) == 1 and isinstance(seen[0], PolicyContractError)
    assert "policy contract violated" in caplog.text


# ---------------------------------------------------------------- CheckedOffloadingSpec


def test_the_spec_loads_through_vllms_spec_factory() -> None:
    cls = OffloadingSpecFactory.get_spec_cls(
        {"spec_name": "CheckedOffloadingSpec", "spec_module_path": MODULE}
    )
    assert cls is CheckedOffloadingSpec and issubclass(cls, CPUOffloadingSpec)


def test_the_specs_manager_is_vllms_own_mirrored() -> None:
    spec = CheckedOffloadingSpec.__new__(CheckedOffloadingSpec)  # no GPU config needed
    spec.extra_config = {"mirror_on_violation": "log"}
    spec._manager = None
    spec.num_chunks = 4
    spec.eviction_policy = "arc"
    spec.cache_policy_module_path = None
    spec.kv_events_config = type("Events", (), {"enable_kv_cache_events": True})()
    spec.cpu_info = None
    got = spec.get_manager()
    assert isinstance(got, MirroredManager) and got.on_violation == "log"
    assert isinstance(got.vllm, CPUOffloadingManager) and spec.get_manager() is got


def mirrored(policy: str = "lru", on_violation: str = "raise") -> MirroredManager:
    return MirroredManager(
        CPUOffloadingManager(num_chunks=2, cache_policy=policy, enable_events=True),
        on_violation,
    )


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_each_defect_is_reported_at_the_call_that_causes_it(policy: str) -> None:
    m = mirrored(policy)
    with pytest.raises(MirrorDivergenceError) as info:
        m.prepare_store([key(0), key(0)], R)
    err = info.value
    assert err.call == "prepare_store" and "orphaned" in err.detail
    assert "pending 2" in err.vllm_state and "pending 1" in err.model_state

    m = mirrored(policy)
    stored(m, key(0))
    with pytest.raises(MirrorDivergenceError) as info:
        m.prepare_load([key(0), key(1)], R)
    err = info.value
    assert err.call == "prepare_load" and err.clause == "leaked pin"
    assert "LOADING ref 1" in err.vllm_state and "READY ref 0" in err.model_state

    m = mirrored(policy)
    stored(m, key(0))
    m.prepare_load([key(0)], R)
    with pytest.raises(MirrorDivergenceError) as info:
        m.complete_load([key(0), key(1)], R)
    err = info.value
    assert err.call == "complete_load" and err.clause == "atomicity"
    assert "READY ref 0" in err.vllm_state and "LOADING ref 1" in err.model_state


def test_log_mode_reports_the_first_divergence_once() -> None:
    m = mirrored("lru", "log")
    m.prepare_store([key(0), key(0)], R)
    m.prepare_store([key(1)], R)
    assert len(m.violations) == 1 and m.diverged
    assert m.violations[0].call == "prepare_store"


@pytest.mark.parametrize("policy", [("lru", None), ("arc", None), ("EvictableARC", MODULE)])
@pytest.mark.parametrize("seed", range(3))
def test_clean_traces_mirror_without_a_divergence(
    policy: tuple[str, str | None], seed: int
) -> None:
    assert run_pair(seed, policy, policy, steps=200, clean=True, wrap=MirroredManager) is None


def test_traces_with_vllms_defects_are_caught() -> None:
    """The same random traces, repeated keys and bad loads left in: the mirror reports."""
    found = [
        run_pair(seed, ("lru", None), ("lru", None), steps=300, wrap=MirroredManager)
        for seed in range(6)
    ]
    assert any(f is not None and "MirrorDivergenceError" in f for f in found), found
