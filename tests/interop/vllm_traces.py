"""Random serving-like traces for vLLM's `CPUOffloadingManager`, replayed on two managers.

`run_pair(seed, policy_a, policy_b, ...)` drives two real vLLM managers (the same
class, each with the cache policy given by name and module path) through one random
trace: requests that span several calls and finish at random points, keys of two KV
cache groups, token positions set on some requests, stores that fail, loads, touches,
resets, a repeated key now and then. After every call it compares what each manager
answered (results, errors by type, events) and what each policy shows (the LRU's
eviction order and ranks; ARC's four lists and target), and returns the first
difference as text, or None.
"""

from __future__ import annotations

import random
from typing import Any

from vllm.v1.kv_offload.base import LookupResult, ReqContext, make_offload_key
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

Spec = tuple[str, str | None]
"""A cache policy as vLLM's factory takes it: (name, module path or None)."""


def key(i: int) -> bytes:
    """The i-th key: a hash and a group index (two KV cache groups)."""
    return bytes(make_offload_key(f"h{i}".encode(), i % 2))


def make(spec: Spec, num_chunks: int, events: bool = True) -> CPUOffloadingManager:
    name, module = spec
    return CPUOffloadingManager(
        num_chunks=num_chunks,
        cache_policy=name,
        cache_policy_module_path=module,
        enable_events=events,
    )


def policy_view(manager: CPUOffloadingManager) -> Any:
    """What a policy shows, the same for vLLM's classes and evictable's."""
    pol = manager._policy
    if hasattr(pol, "t1"):
        return (
            [k for k in pol.t1],
            [k for k in pol.t2],
            list(pol.b1),
            list(pol.b2),
            float(pol.target_t1_size),
            {k: int(c.ref_cnt) for k, c in pol.t1.items()},
            {k: int(c.ref_cnt) for k, c in pol.t2.items()},
        )
    if hasattr(pol, "evictable_keys"):
        order = pol.evictable_keys()
        ranks = {k: pol.rank_of(k) for k in pol.chunks}
    else:
        ranks = dict(pol._ranks)
        order = sorted(pol._evictable, key=lambda k: (ranks[k], k))
    return order, ranks, {k: int(c.ref_cnt) for k, c in pol.chunks.items()}


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        got = fn(*args)
    except Exception as exc:  # vLLM asserts; both sides must fail alike
        return ("raised", type(exc).__name__)
    if got is None:
        return None
    if isinstance(got, LookupResult):
        return got.name
    if hasattr(got, "keys_to_store"):
        return (list(got.keys_to_store), list(got.store_spec.block_ids), list(got.evicted_keys))
    if hasattr(got, "block_ids"):
        return list(got.block_ids)
    return got


def _events(manager: CPUOffloadingManager) -> Any:
    return [(list(e.keys), e.removed, e.metadata_only) for e in manager.take_events()]


def run_pair(
    seed: int,
    a: Spec,
    b: Spec,
    steps: int = 300,
    num_chunks: int = 6,
    num_keys: int = 14,
    clean: bool = False,
    wrap: Any = None,
) -> str | None:
    """One random trace on two managers; the first difference as text, or None.
    `clean`: no repeated key and no load of an absent key (a trace on which vLLM's
    defects cannot fire); `wrap`: applied to the second manager (a checking mode)."""
    rng = random.Random(seed)
    ma, mb = make(a, num_chunks), make(b, num_chunks)
    if wrap is not None:
        mb = wrap(mb)
    live: list[tuple[ReqContext, ReqContext]] = []
    loads: list[tuple[list[bytes], int]] = []  # (keys, index of the request pair)
    pending: list[list[bytes]] = []
    trace: list[str] = []
    serial = 0

    def new_request() -> int:
        nonlocal serial
        serial += 1
        pair = (ReqContext(req_id=f"r{serial}"), ReqContext(req_id=f"r{serial}"))
        if rng.random() < 0.5:  # a request that knows its keys' token positions
            for i in rng.sample(range(num_keys), rng.randint(1, num_keys)):
                pos = 16 * rng.randint(1, 8)
                pair[0].set_offload_key_position(key(i), pos)
                pair[1].set_offload_key_position(key(i), pos)
        ma.on_new_request(pair[0])
        mb.on_new_request(pair[1])
        live.append(pair)
        return len(live) - 1

    def batch(k: int) -> list[bytes]:
        keys = [key(i) for i in rng.sample(range(num_keys), k)]
        if not clean and rng.random() < 0.03 and keys:
            keys.append(keys[0])  # a repeated key (vLLM's defect shows on both sides)
        return keys

    call: tuple[object, ...]
    for step in range(steps):
        if not live or rng.random() < 0.15:
            new_request()
        r = rng.randrange(len(live))
        ca, cb = live[r]
        op = rng.random()
        if op < 0.30:
            keys = batch(rng.randint(1, 4))
            call = ("prepare_store", keys)
            got = (_outcome(ma.prepare_store, keys, ca), _outcome(mb.prepare_store, keys, cb))
            if isinstance(got[0], tuple) and got[0][0] != "raised" and got[0][0]:
                pending.append(list(got[0][0]))
        elif op < 0.45 and pending:
            keys = pending.pop(rng.randrange(len(pending)))
            ok = rng.random() < 0.85
            call = ("complete_store", keys, ok)
            got = (
                _outcome(ma.complete_store, keys, ca, ok),
                _outcome(mb.complete_store, keys, cb, ok),
            )
        elif op < 0.60:
            ready = [k for k in (key(i) for i in range(num_keys)) if ma._policy.get(k) is not None]
            ready = [k for k in ready if ma._policy.get(k).ref_cnt >= 0]
            keys = rng.sample(ready, min(len(ready), rng.randint(1, 3)))
            if not clean and rng.random() < 0.1:
                keys.append(key(rng.randrange(num_keys)))  # maybe a bad key: both assert
            call = ("prepare_load", keys)
            got = (_outcome(ma.prepare_load, keys, ca), _outcome(mb.prepare_load, keys, cb))
            if not (isinstance(got[0], tuple) and got[0][0] == "raised"):
                loads.append((keys, r))
        elif op < 0.72 and loads:
            keys, _ = loads.pop(rng.randrange(len(loads)))
            call = ("complete_load", keys)
            got = (_outcome(ma.complete_load, keys, ca), _outcome(mb.complete_load, keys, cb))
        elif op < 0.80:
            keys = batch(rng.randint(1, 4))
            call = ("touch", keys)
            got = (_outcome(ma.touch, keys, ca), _outcome(mb.touch, keys, cb))
        elif op < 0.92:
            call = ("on_request_finished", live[r][0].req_id)
            got = (_outcome(ma.on_request_finished, ca), _outcome(mb.on_request_finished, cb))
            live.pop(r)
        elif op < 0.97:
            k = key(rng.randrange(num_keys))
            call = ("lookup", k)
            got = (_outcome(ma.lookup, k, ca), _outcome(mb.lookup, k, cb))
        else:
            call = ("reset_cache",)
            got = (_outcome(ma.reset_cache), _outcome(mb.reset_cache))
            loads.clear()
            pending.clear()
        trace.append(repr(call))
        if got[0] != got[1]:
            return f"seed {seed} step {step} {call}: results differ {got}\n" + "\n".join(trace)
        ea, eb = _events(ma), _events(mb)
        if ea != eb:
            return f"seed {seed} step {step} {call}: events differ {ea} {eb}\n" + "\n".join(trace)
        va, vb = policy_view(ma), policy_view(mb)
        if va != vb:
            return f"seed {seed} step {step} {call}: policies differ\n{va}\n{vb}\n" + "\n".join(
                trace
            )
        counters = (
            (ma._num_evictable_cache_chunks, ma._num_write_pending_chunks, list(ma._free_list)),
            (mb._num_evictable_cache_chunks, mb._num_write_pending_chunks, list(mb._free_list)),
        )
        if counters[0] != counters[1]:
            return f"seed {seed} step {step} {call}: counters differ {counters}"
    return None
