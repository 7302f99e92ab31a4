"""vLLM 0.33's `TieringOffloadingManager` behind the tiering adapter protocol
(`proofs.base.tiering_protocol.TieringAdapter`).

`VllmTiering(config, kinds)` holds one real manager built by vLLM's own
`TieringOffloadingSpec` (`tiering_build.build_manager`: the `SharedOffloadRegion`
primary under /dev/shm, tiers through vLLM's `SecondaryTierFactory`, no poll thread)
and translates, call for call, at the connector's granularity:

* `scan(req, keys)` is the connector's own prefix scan,
  `OffloadingConnectorScheduler._maximal_prefix_lookup` (lookups in order until the
  first MISS; None when one answered HIT_PENDING or RETRY), called on a stand-in for
  the connector that holds only the manager, then -- when it answers n > 0 -- the
  pin of `keys[:n]` (`prepare_load`, what `update_state_after_alloc` does), both
  inside one hold of `manager.lock`;
* `store` / `complete_store` / `complete_load` / `finish` are `prepare_store`,
  `complete_store`, `complete_load`, `on_request_finished` with the request's one
  `ReqContext` (the connector reuses it for every call of a request); `end_step` is
  `on_schedule_end`; `poll` one `poll_tiers()` round; `reset` / `reset_flushed` are
  `reset_cache` / `on_reset_flushed`; `shutdown` is `shutdown()` (without the lock,
  as vLLM asks). Like the connector, the adapter forgets the GPU stores and loads a
  successful reset made stale (the connector never completes them).

Each call runs under `manager.lock`; exceptions are vLLM's own and propagate (a tier
fault armed by `submit_raises` raises `TierSubmitError` from inside vLLM's call).

The tiers (`kinds`, one per `TierSpec` of the config): `example` (vLLM's example tier:
every job finishes, successfully, inside its submit), `fs` (vLLM's fs tier on a
temporary directory; the adapter waits, after every call, until its worker threads
have finished every submitted job and its lookup thread has answered every posted
probe, so its jobs too finish at once and its probes answer before the next call: the
interleavings where they finish later are the harness tier's to explore), `harness` /
`serving` (`harness_tier.HarnessTier` / `ServingHarnessTier`: every move an event),
`peer` (`harness_tier.PeerServerTier`, vLLM's p2p `ServerRole`) and `p2p` (vLLM's real
`P2PSecondaryTierManager`, its transports stubbed; a peer is one `StubConnection`
that completes the handshake, sends LookupMsg / FetchMsg; its writes complete at the
tier's next poll). Events a tier kind cannot have are refused with `UnknownTierError`
/ `UnknownJobError` (a job of the example tier cannot fail on demand).

`snapshot()` (`tiering_snapshot.read_snapshot`) reads vLLM's state; the operation log
is recorded by wrappers set on the manager, the primary tier and the tiers (instance
attributes that call vLLM's method unchanged and note what happened). Keys that are
not bytes (the explorer's `"k0"`) are given vLLM keys, `K(0)`, `K(1)`, ... in order of
first use, and snapshots name them as the engine does. `start(snapshot)` brings a fresh
orchestrator to an explorer's start state. The factories, one per kind of tier, are in
`tiering_factories`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Hashable, Sequence
from types import SimpleNamespace
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np
from vllm.distributed.kv_transfer.kv_connector.v1.offloading.scheduler import (
    OffloadingConnectorScheduler,
)
from vllm.v1.kv_offload.base import ReqContext, ScheduleEndContext
from vllm.v1.kv_offload.tiering.async_lookup import LookupPhase
from vllm.v1.kv_offload.tiering.base import TransferJob

from evictable.model.errors import InvalidArgumentError, UnknownJobError, UnknownTierError
from evictable.model.tiering_types import (
    JobId,
    JobOutcome,
    OutcomeKind,
    PendingOwner,
    ReqId,
    StoreOutcome,
    TierId,
    TieringConfig,
    TieringSnapshot,
    TierSpec,
)
from evictable.model.types import Key
from evictable.proofs.adapters.vllm.harness_tier import HARNESS_MODULE, give_up, round_of
from evictable.proofs.adapters.vllm.keys import K, OffloadKey
from evictable.proofs.adapters.vllm.manager import translate_store
from evictable.proofs.adapters.vllm.tiering_build import StubConnection, build_manager
from evictable.proofs.adapters.vllm.tiering_log import Recorder
from evictable.proofs.adapters.vllm.tiering_snapshot import pending_owners, read_snapshot
from evictable.proofs.base.tiering_protocol import start_chunks

__all__ = ["KINDS", "VllmTiering", "tier_entry"]

KINDS = ("example", "fs", "harness", "serving", "peer", "p2p")
"""The tier kinds a `VllmTiering` builds (see the module docstring)."""

END_OF_STEP = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())
SETTLE_BACKSTOP_S = 30.0
"""How long the adapter waits for the fs tier's threads after a call (a hang backstop)."""


def tier_entry(kind: str, index: int, spec: TierSpec, root: str | None) -> dict[str, Any]:
    if kind in ("example", "p2p"):
        return {"type": kind}
    if kind == "fs":
        return {"type": "fs", "root_dir": root, "n_read_threads": 1, "n_write_threads": 1}
    if kind == "peer":
        return {"type": "PeerServerTier", "module_path": HARNESS_MODULE, "index": index}
    cls = "ServingHarnessTier" if kind == "serving" else "HarnessTier"
    return {
        "type": cls,
        "module_path": HARNESS_MODULE,
        "index": index,
        "async_lookup": spec.async_lookup,
        "request_level": spec.request_level,
    }


P = ParamSpec("P")
R = TypeVar("R")


def _recorded(
    fn: Callable[Concatenate[VllmTiering, P], R],
) -> Callable[Concatenate[VllmTiering, P], R]:
    """An event of the engine: its own record (`TieringSnapshot.log`), then the fs
    tiers settle, as after every call."""

    def run(self: VllmTiering, /, *args: P.args, **kwargs: P.kwargs) -> R:
        self.recorder.begin(fn.__name__)
        try:
            return fn(self, *args, **kwargs)
        finally:
            self.recorder.end()
            self._settle()

    run.__name__, run.__doc__ = fn.__name__, fn.__doc__
    return run


class VllmTiering:
    """One vLLM `TieringOffloadingManager` with the tiering adapter protocol."""

    def __init__(self, config: TieringConfig, kinds: Sequence[str]) -> None:
        self._build(config, kinds, "TieringOffloadingSpec", None)
        self.primary: Any = self.vllm.primary_tier
        self.recorder = Recorder(self)
        self.shim = SimpleNamespace(
            manager=self.vllm, _events_tracker=SimpleNamespace(record_lookup=_ignore)
        )

    def _build(
        self, config: TieringConfig, kinds: Sequence[str], spec_name: str, module: str | None
    ) -> None:
        """Validate `kinds`, build the manager of spec `spec_name` (from `module`, as a
        user's config names an out-of-tree spec) over a tier per kind (fs tiers on
        temporary directories), and start the engine-side bookkeeping empty."""
        if len(kinds) != len(config.tiers) or any(k not in KINDS for k in kinds):
            raise InvalidArgumentError(f"one tier kind per tier of {config}, from {KINDS}")
        self.config = config
        self.kinds = tuple(kinds)
        self.roots = [tempfile.mkdtemp(prefix="evictable-fs-") for k in kinds if k == "fs"]
        roots = iter(self.roots)
        entries = [
            tier_entry(k, i, spec, next(roots) if k == "fs" else None)
            for i, (k, spec) in enumerate(zip(kinds, config.tiers, strict=True))
        ]
        self.vllm: Any = build_manager(config.num_slots, entries, spec_name, module)
        self.tiers: list[Any] = list(self.vllm.secondary_tiers)
        self.contexts: dict[str, Any] = {}
        self.stores: dict[str, list[Key]] = {}
        """Per request, the engine's keys of its GPU stores prepared, not completed."""
        self.loads: dict[str, list[Key]] = {}
        """Per request, the engine's keys its scans pinned, not completed."""
        self.keys_seen: dict[bytes, Key] = {}
        """vLLM's key -> the engine's key (the same object when the engine's are bytes)."""
        self.vkeys: dict[Hashable, Key] = {}
        """An engine key that is not bytes (the model's `"k0"`) -> the vLLM key made for it."""
        self.peers: dict[int, StubConnection] = {}
        self.peer_rounds: dict[int, int] = {}
        self.closed = False

    # -------------------------------------------------------------- helpers

    def key(self, raw: Hashable) -> Key:
        """The key as the engine made it (vLLM hands back plain bytes)."""
        if isinstance(raw, bytes):
            return self.keys_seen[raw] if raw in self.keys_seen else OffloadKey(raw)
        return raw

    def vkey(self, key: Key) -> Key:
        """The vLLM key of the engine's `key`: itself when it is bytes (vLLM's format),
        else `K(n)`, n in order of first use (vLLM's manager reads a key's last four
        bytes as its group, so it must be bytes)."""
        if isinstance(key, bytes):
            self.keys_seen.setdefault(bytes(key), key)
            return key
        made = self.vkeys.get(key)
        if made is None:
            made = self.vkeys[key] = K(len(self.vkeys))
            self.keys_seen[bytes(made)] = key
        return made

    def _see(self, keys: Sequence[Key]) -> list[Key]:
        return [self.vkey(k) for k in keys]

    def pending_owners(self, key: Hashable) -> tuple[PendingOwner, ...]:
        """Who may complete the PENDING chunk of `key` now (`tiering_snapshot`)."""
        return pending_owners(self, key)

    def _ctx(self, req: str) -> Any:
        ctx = self.contexts.get(req)
        if ctx is None:
            ctx = self.contexts[req] = ReqContext(req_id=str(req))
        return ctx

    def _call(self, name: str, fn: Callable[[], Any], *, lock: bool = True) -> Any:
        self.recorder.begin(name)
        try:
            if not lock:
                return fn()
            with self.vllm.lock:
                return fn()
        finally:
            self.recorder.end()
            self._settle()

    def _settle(self) -> None:
        """Let the fs tiers' threads finish what they were given (module docstring)."""
        if self.closed:
            return
        for kind, tier in zip(self.kinds, self.tiers, strict=True):
            if kind != "fs":
                continue
            tier.drain_jobs()
            lookups = tier._lookup_manager
            deadline = time.monotonic() + SETTLE_BACKSTOP_S
            while any(s.phase is LookupPhase.IN_FLIGHT for s in lookups._lookup_state.values()):
                if time.monotonic() > deadline:
                    raise RuntimeError("vLLM's fs lookup thread did not answer (backstop)")
                lookups.drain_results()
                time.sleep(0.0005)

    def _tier(self, tier: TierId, *allowed: str) -> Any:
        if not 0 <= int(tier) < len(self.tiers):
            raise UnknownTierError(tier)
        if allowed and self.kinds[int(tier)] not in allowed:
            raise UnknownTierError(tier, f"a {self.kinds[int(tier)]} tier cannot do that")
        return self.tiers[int(tier)]

    def start(self, snap: TieringSnapshot) -> None:
        """Bring this fresh orchestrator to the start state `snap` (the model's
        `root_snapshot`): READY primary chunks, least recent first in slot order (each
        stored straight into the primary tier as a request of its own, so no cascade),
        and PRESENT tier copies (written into the example, fs or harness tier directly).
        Anything else in `snap` is refused."""
        chunks = start_chunks(snap, self.config)
        p = self.primary
        with self.vllm.lock:
            for i, c in enumerate(chunks):
                ctx = ReqContext(req_id=f"start{i}")
                p.on_new_request(ctx)
                p.prepare_store([self.vkey(c.key)], ctx)
                p.complete_store([self.vkey(c.key)], ctx)
                p.on_request_finished(ctx)
        self.write_copies(snap)
        self.recorder.begin("start")  # the start is no call: an empty record
        self.recorder.end()
        self._settle()

    def write_copies(self, snap: TieringSnapshot) -> None:
        """Write the PRESENT tier copies of the start state `snap` into the tiers
        directly (example, fs, harness; any other kind holds none)."""
        for n, copy in enumerate(sorted(snap.copies or (), key=lambda c: (c.tier, str(c.key)))):
            tier, kind, key = (
                self.tiers[int(copy.tier)],
                self.kinds[int(copy.tier)],
                self.vkey(copy.key),
            )
            if kind == "example":
                tier.chunks[key] = True
            elif kind in ("harness", "serving"):
                tier.present.add(key)
            elif kind == "fs":
                job = TransferJob(
                    -1 - n, [key], np.array([0], dtype=np.int32), False, ReqContext("start")
                )
                tier.submit_store(job)
                tier.drain_jobs()
                list(tier.get_finished_jobs())
            else:
                raise InvalidArgumentError(f"a {kind} tier holds no copies")

    # --------------------------------------------------------- scheduler side

    def new_request(self, req: ReqId) -> None:
        self._call("new_request", lambda: self.vllm.on_new_request(self._ctx(req)))

    def scan(self, req: ReqId, keys: Sequence[Key]) -> int | None:
        mine = list(keys)
        keys = self._see(keys)
        ctx = self._ctx(req)

        def run() -> int | None:
            self.recorder.open(req)
            n = OffloadingConnectorScheduler._maximal_prefix_lookup(
                self.shim, keys, ctx, None, None, 0
            )
            if n:
                self.vllm.prepare_load(keys[:n], ctx)
                self.loads.setdefault(req, []).extend(mine[:n])
            self.recorder.close()
            return int(n) if n is not None else None

        result: int | None = self._call("scan", run)
        return result

    def store(self, req: ReqId, keys: Sequence[Key]) -> StoreOutcome | None:
        keys = self._see(keys)
        out = self._call("store", lambda: self.vllm.prepare_store(keys, self._ctx(req)))
        got = translate_store(out)
        if got is not None:
            got = StoreOutcome(
                keys_to_store=[self.key(k) for k in got.keys_to_store],
                slot_ids=got.slot_ids,
                evicted_keys=[self.key(k) for k in got.evicted_keys],
            )
            self.stores.setdefault(req, []).extend(got.keys_to_store)
        return got

    def complete_store(self, req: ReqId, keys: Sequence[Key], success: bool = True) -> None:
        mine, keys = list(keys), self._see(keys)
        try:
            self._call(
                "complete_store", lambda: self.vllm.complete_store(keys, self._ctx(req), success)
            )
        finally:
            _remove(self.stores.get(req), mine)

    def complete_load(self, req: ReqId, keys: Sequence[Key]) -> None:
        mine, keys = list(keys), self._see(keys)
        self._call("complete_load", lambda: self.vllm.complete_load(keys, self._ctx(req)))
        _remove(self.loads.get(req), mine)

    def finish(self, req: ReqId) -> None:
        self._call("finish", lambda: self.vllm.on_request_finished(self._ctx(req)))

    def end_step(self) -> None:
        self._call("end_step", lambda: self.vllm.on_schedule_end(END_OF_STEP))

    def poll(self) -> None:
        self._call("poll", self.vllm.poll_tiers)

    def reset(self) -> None:
        self._call("reset", self.vllm.reset_cache)
        self.stores.clear()
        self.loads.clear()

    def reset_flushed(self) -> None:
        self._call("reset_flushed", self.vllm.on_reset_flushed)

    def shutdown(self) -> None:
        try:
            self._call("shutdown", self.vllm.shutdown, lock=False)
        finally:
            self.closed = True
            for root in self.roots:
                shutil.rmtree(root, ignore_errors=True)

    def has_pending_work(self) -> bool:
        with self.vllm.lock:
            return bool(self.vllm.has_pending_work())

    def snapshot(self) -> TieringSnapshot:
        return read_snapshot(self)

    # ------------------------------------------------------ other threads, tiers

    @_recorded
    def job_finishes(self, job: JobId, outcome: JobOutcome) -> None:
        meta = self.vllm._jobs.get(int(job))
        if meta is None:
            raise UnknownJobError(job, "not registered with the manager")
        index = int(meta.tier_idx)
        kind, tier = self.kinds[index], self.tiers[index]
        if outcome.kind is OutcomeKind.PARTIAL:
            outcome = JobOutcome.partial(tuple(self.vkey(k) for k in outcome.ok_keys))
        if kind in ("harness", "serving"):
            tier.finish(int(job), outcome)
        elif kind == "peer":
            tier.fetch(int(job), outcome.kind is OutcomeKind.OK)
        elif kind == "p2p" and meta.transfer_job.req_context.req_id in self.recorder.origin:
            self._p2p_fetch(index, int(job), outcome.kind is OutcomeKind.OK)
        elif outcome.kind is not OutcomeKind.OK:
            raise UnknownJobError(job, f"the {kind} tier finishes its jobs by itself")

    @_recorded
    def submit_raises(self, tier: TierId) -> None:
        self._tier(tier, "harness", "serving").armed = True

    @_recorded
    def tier_reports_unknown(self, tier: TierId) -> None:
        """Tier `tier` (a harness tier) reports, first in its next batch of results, a
        job id it was never given."""
        self._tier(tier, "harness", "serving").stray = True

    @_recorded
    def probe_answers(self, tier: TierId, key: Key, found: bool) -> None:
        t = self._tier(tier, "harness", "serving", "fs")
        key = self.vkey(key)
        if self.kinds[int(tier)] != "fs":
            t.answer(key, found)
            return
        state = t._lookup_manager._lookup_state.get(key)
        if state is None or state.result is not bool(found):
            raise InvalidArgumentError(f"vLLM's fs tier answers what the disk holds for {key!r}")

    @_recorded
    def peer_request(self, tier: TierId, keys: Sequence[Key]) -> None:
        keys = self._see(keys)
        t = self._tier(tier, "serving", "peer", "p2p")
        if self.kinds[int(tier)] != "p2p":
            t.peer_request(keys)
            return
        conn = self.peers.get(int(tier))
        if conn is None:
            conn = self.peers[int(tier)] = StubConnection("peer:1")
            conn.inbox += _handshake(t)
            t._control.incoming.append(conn)
        seq = self.peer_rounds[int(tier)] = self.peer_rounds.get(int(tier), 0) + 1
        conn.inbox.append(
            {"type": "lookup", "kv_request_id": f"kv{seq}", "keys": keys, "round_seq": seq}
        )

    @_recorded
    def tier_drops(self, tier: TierId, key: Key) -> None:
        t = self._tier(tier, "example", "fs", "harness", "serving")
        kind = self.kinds[int(tier)]
        key = self.vkey(key)
        if kind == "example":
            t.chunks.pop(key, None)
        elif kind == "fs":
            path = t.file_mapper.get_file_name(key)
            if os.path.exists(path):
                os.remove(path)
        else:
            t.drop(key)

    def peer_gives_up(self, tier: TierId) -> None:
        t = self._tier(tier, "serving", "peer", "p2p")
        parent = self.vllm._tier_parents[t]

        def run() -> None:
            self.recorder.serving = True  # the give-up's lookups are a peer's hold
            try:
                self.give_up_at(tier, parent)
            finally:
                self.recorder.end_serve()

        self._call("peer_gives_up", run)

    def give_up_at(self, tier: TierId, parent: Any) -> None:
        """The oldest peer lookup parked at serving tier `tier` passes its deadline,
        answered through `parent` (vLLM's `ParentManager` for that tier);
        `UnknownJobError` when none is parked there."""
        t, kind = self.tiers[int(tier)], self.kinds[int(tier)]
        if kind == "serving":
            t.give_up(parent)
            return
        servers = [t.server] if kind == "peer" else [s._server for s in t._sessions.values()]
        if not any(give_up(server, parent) for server in servers):
            raise UnknownJobError(tier, "no peer lookup parked at this tier")

    def _p2p_fetch(self, index: int, job: int, success: bool) -> None:
        conn = self.peers[index]
        found = None
        for session in self.tiers[index]._sessions.values():
            found = found or round_of(session._server, job)
        if found is None:
            raise UnknownJobError(job, "no peer round holds it")
        kv, seq, keys = found
        self.tiers[index]._data.fail_next = not success
        conn.inbox.append(
            {
                "type": "fetch",
                "kv_request_id": kv,
                "keys": keys,
                "block_indexes": list(range(len(keys))),
                "round_seq": seq,
            }
        )


def _handshake(p2p: Any) -> list[dict[str, Any]]:
    """The stub peer's ConnectMsg and ConnectAckMsg (vLLM's wire dicts)."""
    return [
        {
            "type": "connect",
            "peer_id": "peer:1",
            "agent_metadata": b"stub",
            "base_addr": 0,
            "num_blocks": int(p2p._data.num_blocks),
            "block_len": int(p2p._data.block_len),
            "config_fingerprint": "",
            "hash_seed": p2p._get_hash_seed(),
        },
        {"type": "connect_ack", "peer_id": "peer:1"},
    ]


def _ignore(*args: Any) -> None:
    return None


def _remove(held: list[Key] | None, keys: Sequence[Key]) -> None:
    if held is None:
        return
    for k in keys:
        if k in held:
            held.remove(k)
