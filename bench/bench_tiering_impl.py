"""Our tiering orchestrator against vLLM 0.33's on the same workload: CPU cost per
scheduler step.

Each point (primary chunks, secondary tiers, pinned fraction) runs one workload on two
orchestrators in one process, interleaved step by step: ours
(`evictable.impl.tiering.TieringManager`, LRU primary) and vLLM's
`TieringOffloadingManager` built by its own `TieringOffloadingSpec` (its CPU primary
and its in-memory `example` tier per secondary tier). Both are driven through the same
scheduler loop: requests arrive with prefixes drawn from a pool of shared documents
(so lookups hit the primary, hit a tier and promote, or miss), are scanned each step
until the scan answers, load their hits, store the rest, complete and finish; a
fraction of the primary is pinned by long-running loads (`pinned`). Every step's CPU
time (`time.process_time`) is charged to the side that ran it; `ratio` is vLLM's
per-step cost over ours (> 1: ours is cheaper), the median over `rounds` rounds, with
the spread (min..max). Calls and scan answers per side are reported: the two sides see
the same arrivals, and their answers may differ where their victims do.
`pinned_on_top` asks whether the cost is flat in the pinned fraction: the same
workload on 1,024 unpinned chunks with pinned chunks added on top (so the work is the
same and only the number of pinned chunks grows), each side's cost over its own at 0%.

Without vLLM (the main venv) only our side is measured and the vLLM side says why.
`python -m bench.bench_tiering_impl [--quick]` (with the interop venv's python for
both sides) writes bench/results/tiering_impl.json; `evictable bench --only
tiering_impl` runs `run(quick)`.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any, cast

from bench.runner import standalone
from evictable.impl.tiering import PeerParent, TieringManager, TierJob
from evictable.model.tiering_types import JobId, JobOutcome, ReqId, TierAnswer

__all__ = ["MemoryTier", "main", "run"]


def key(i: int) -> bytes:
    """Chunk `i` as vLLM's key format (a hash, then a 4-byte group index)."""
    return i.to_bytes(8, "big") + b"\0\0\0\0"


class MemoryTier:
    """Our counterpart of vLLM's example tier: copies in a dict, every job finished at
    once and reported at the next poll point."""

    serving = False
    request_level = False

    def __init__(self) -> None:
        self.copies: dict[Hashable, bool] = {}
        self.done: list[tuple[JobId, JobOutcome]] = []

    def lookup(self, k: Hashable, req: ReqId) -> TierAnswer:
        return TierAnswer.HIT if k in self.copies else TierAnswer.MISS

    def submit_store(self, job: TierJob) -> None:
        for k in job.keys:
            self.copies[k] = True
        self.done.append((job.job, JobOutcome.ok()))

    def submit_load(self, job: TierJob) -> None:
        self.done.append((job.job, JobOutcome.ok()))

    def finished_jobs(self) -> Iterable[tuple[JobId, JobOutcome]]:
        out, self.done = self.done, []
        return out

    def drain(self) -> None:
        return

    def serve_peers(self, parent: PeerParent) -> None:
        return

    def new_request(self, req: ReqId) -> None:
        return

    def request_finished(self, req: ReqId) -> None:
        return

    def end_of_step(self) -> None:
        return

    def has_pending_work(self) -> bool:
        return bool(self.done)

    def shutdown(self) -> None:
        return


class Ours:
    def __init__(self, slots: int, tiers: int) -> None:
        self.m = TieringManager(slots, [MemoryTier() for _ in range(tiers)])

    def new(self, req: str) -> None:
        self.m.new_request(ReqId(req))

    def scan(self, req: str, keys: list[bytes]) -> int | None:
        return self.m.scan(ReqId(req), keys)

    def store(self, req: str, keys: list[bytes]) -> list[bytes] | None:
        out = self.m.store(ReqId(req), keys)
        return None if out is None else cast(list[bytes], out.keys_to_store)

    def complete_store(self, req: str, keys: list[bytes]) -> None:
        self.m.complete_store(ReqId(req), keys)

    def complete_load(self, req: str, keys: list[bytes]) -> None:
        self.m.complete_load(ReqId(req), keys)

    def finish(self, req: str) -> None:
        self.m.finish(ReqId(req))

    def end_step(self) -> None:
        self.m.end_step()


class Vllm:
    """vLLM's orchestrator, driven as its connector's scheduler side drives it (the
    prefix scan: lookups until the first MISS, None on HIT_PENDING or RETRY)."""

    def __init__(self, slots: int, tiers: int) -> None:
        from vllm.v1.kv_offload.base import LookupResult, ReqContext, ScheduleEndContext

        from evictable.proofs.adapters.vllm.tiering_build import build_manager

        self.m = build_manager(slots, [{"type": "example"} for _ in range(tiers)])
        self.ctx = ReqContext
        self.end = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())
        self.miss, self.hit = LookupResult.MISS, LookupResult.HIT
        self.contexts: dict[str, Any] = {}

    def new(self, req: str) -> None:
        ctx = self.contexts[req] = self.ctx(req_id=req)
        self.m.on_new_request(ctx)

    def scan(self, req: str, keys: list[bytes]) -> int | None:
        ctx = self.contexts[req]
        n, later = 0, False
        for k in keys:
            got = self.m.lookup(k, ctx)
            if got is self.miss:
                break
            if got is not self.hit:
                later = True
            n += 1
        if later:
            return None
        if n:
            self.m.prepare_load(keys[:n], ctx)
        return n

    def store(self, req: str, keys: list[bytes]) -> list[bytes] | None:
        out = self.m.prepare_store(keys, self.contexts[req])
        return None if out is None else list(out.keys_to_store)

    def complete_store(self, req: str, keys: list[bytes]) -> None:
        self.m.complete_store(keys, self.contexts[req], True)

    def complete_load(self, req: str, keys: list[bytes]) -> None:
        self.m.complete_load(keys, self.contexts[req])

    def finish(self, req: str) -> None:
        self.m.on_request_finished(self.contexts.pop(req))

    def end_step(self) -> None:
        self.m.on_schedule_end(self.end)


class VllmInside(Vllm):
    """Our orchestrator inside vLLM: vLLM's spec loader selects `EvictableTieringSpec`
    (`evictable.vllm`), driven as vLLM's connector drives a manager, each scan inside
    one hold of the manager's lock (the connector holds it for the whole step)."""

    def __init__(self, slots: int, tiers: int) -> None:
        super().__init__(1, 0)  # the vLLM names only; the manager is replaced below
        self.m.shutdown()
        from evictable.proofs.adapters.vllm.tiering_build import offloading_config
        from evictable.vllm.tiering import EvictableTieringSpec

        config = offloading_config(slots, [{"type": "example"} for _ in range(tiers)])
        self.m = EvictableTieringSpec(config).get_manager()

    def scan(self, req: str, keys: list[bytes]) -> int | None:
        with self.m.lock:
            return super().scan(req, keys)


def _makers() -> tuple[dict[str, Callable[[int, int], Any]], str | None]:
    """The sides this venv can build, and why vLLM's are missing (None: present)."""
    makers: dict[str, Callable[[int, int], Any]] = {"ours": Ours}
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        why = f"vLLM is not installed here ({exc.name}): run with the interop venv's python"
        return makers, why
    makers["vllm"] = Vllm
    makers["ours_in_vllm"] = VllmInside
    return makers, None


def long_prefix(slots: int, length: int, limit: int) -> dict[str, Any]:
    """Steps until a prefix longer than the primary answers: `length` chunks stored one
    request each (the primary keeps the last `slots`, one tier keeps them all), then a
    request scans the whole prefix once a step until the scan answers a number (or
    `limit` steps: "never within N steps")."""
    makers, why = _makers()
    out: dict[str, Any] = {"slots": slots, "prefix": length, "limit": limit}
    prefix = [key(5 * 10**9 + i) for i in range(length)]
    for name, make in makers.items():
        side = make(slots, 1)
        for i, k in enumerate(prefix):
            side.new(f"w{i}")
            side.complete_store(f"w{i}", side.store(f"w{i}", [k]) or [])
            side.finish(f"w{i}")
            side.end_step()
        side.end_step()
        side.end_step()
        side.new("reader")
        got: dict[str, Any] = {"steps": f"never within {limit} steps", "answer": None}
        for step in range(1, limit + 1):
            n = side.scan("reader", prefix)
            side.end_step()
            if n is not None:
                got = {"steps": step, "answer": n}
                break
        out[name] = got
        if hasattr(side.m, "shutdown") and name != "ours":
            side.m.shutdown()
    if why:
        out["vllm"] = why
    return out


class Scheduler:
    """The workload on one orchestrator (see the module doc)."""

    def __init__(
        self, side: Any, slots: int, pinned: float, seed: int, work: int | None = None
    ) -> None:
        """`work`: the chunks the shared documents are sized by (default `slots`)."""
        self.side = side
        self.rng = random.Random(seed)
        docs = max(4, (slots if work is None else work) // 16)
        self.docs = [[key(d * 100_000 + i) for i in range(32)] for d in range(docs)]
        self.waiting: list[tuple[str, list[bytes]]] = []
        self.loading: list[tuple[str, list[bytes], list[bytes]]] = []
        self.storing: list[tuple[str, list[bytes]]] = []
        self.n = 0
        self.calls = 0
        self.answers = {"hit_chunks": 0, "try_later": 0}
        hold = int(slots * pinned)
        if hold:  # long-running loads pinning `pinned` of the primary
            keys = [key(10**9 + i) for i in range(hold)]
            for i in range(0, hold, 64):
                req = f"pin{i}"
                side.new(req)
                got = side.store(req, keys[i : i + 64]) or []
                side.complete_store(req, got)
                side.end_step()
                side.scan(req, keys[i : i + 64])

    def step(self) -> None:
        s = self.side
        for _ in range(4):
            doc = self.rng.choice(self.docs)
            req = f"r{self.n}"
            self.n += 1
            prefix = [*doc[: self.rng.randint(8, 32)], key(2 * 10**9 + self.n)]
            s.new(req)
            self.waiting.append((req, prefix))
        for req, keys in self.storing:
            s.complete_store(req, keys)
            s.finish(req)
        self.storing = []
        for req, keys, rest in self.loading:
            s.complete_load(req, keys)
            got = s.store(req, rest)
            if got is not None:
                self.storing.append((req, got))
            else:
                s.finish(req)
        self.loading = []
        still = []
        for req, prefix in self.waiting:
            n = s.scan(req, prefix)
            if n is None:
                self.answers["try_later"] += 1
                still.append((req, prefix))
                continue
            self.answers["hit_chunks"] += n
            self.loading.append((req, prefix[:n], prefix[n:]))
        self.waiting = still[-64:]  # a scheduler gives up on the oldest
        for req, _ in still[:-64]:
            s.finish(req)
        s.end_step()


def _interleaved(sides: dict[Any, Scheduler], steps: int) -> dict[Any, float]:
    """Step every scheduler `steps` times, one step of each in turn, charging each
    step's CPU time to its scheduler; the CPU seconds per step of each."""
    spent = dict.fromkeys(sides, 0.0)
    gc.collect()
    for _ in range(steps):
        for name, sched in sides.items():
            t = time.process_time()
            sched.step()
            spent[name] += time.process_time() - t
    return {name: total / steps for name, total in spent.items()}


def _point(
    slots: int, tiers: int, pinned: float, steps: int, rounds: int, work: int | None = None
) -> dict[str, Any]:
    makers, why = _makers()
    per_step: dict[str, list[float]] = {name: [] for name in makers}
    answers: dict[str, Any] = {}
    for r in range(rounds):
        sides = {
            name: Scheduler(make(slots, tiers), slots, pinned, seed=r, work=work)
            for name, make in makers.items()
        }
        spent = _interleaved(sides, steps)
        for name in sides:
            per_step[name].append(spent[name])
            answers[name] = sides[name].answers
    out: dict[str, Any] = {"slots": slots, "tiers": tiers, "pinned": pinned, "steps": steps}
    if work is not None:
        out["work"] = work
    for name, xs in per_step.items():
        out[f"{name}_step_us"] = round(statistics.median(xs) * 1e6, 1)
    out["answers"] = answers
    if "vllm" in per_step:
        ratios = [v / o for v, o in zip(per_step["vllm"], per_step["ours"], strict=True)]
        out["ratio"] = round(statistics.median(ratios), 2)
        out["ratio_spread"] = [round(min(ratios), 2), round(max(ratios), 2)]
        inside = [v / o for v, o in zip(per_step["vllm"], per_step["ours_in_vllm"], strict=True)]
        out["ratio_inside"] = round(statistics.median(inside), 2)
        out["ratio_inside_spread"] = [round(min(inside), 2), round(max(inside), 2)]
    else:
        out["vllm"] = why
    return out


def pinned_on_top(work: int, fractions: Iterable[float], steps: int, rounds: int) -> dict[str, Any]:
    """Flatness in the pinned fraction: the same workload (documents sized by `work`)
    on a primary of `work` unpinned chunks with a fraction `p` of pinned chunks added
    on top (`work / (1 - p)` chunks in all), so only the number of pinned chunks
    changes. Every (fraction, side) pair is stepped interleaved with the others, step
    by step, so the machine's load falls on all alike; per side, `growth` is each
    fraction's per-step cost over its cost at the first fraction (1.0: flat), the
    median over rounds, with the spread."""
    makers, why = _makers()
    fracs = list(fractions)
    costs: dict[tuple[str, float], list[float]] = {(n, f): [] for n in makers for f in fracs}
    for r in range(rounds):
        sides = {
            (name, f): Scheduler(
                make(round(work / (1 - f)), 1), round(work / (1 - f)), f, seed=r, work=work
            )
            for name, make in makers.items()
            for f in fracs
        }
        spent = _interleaved(sides, steps)
        for pair in sides:
            costs[pair].append(spent[pair])
    out: dict[str, Any] = {"work": work, "pinned": fracs, "steps": steps, "rounds": rounds}
    for name in makers:
        out[f"{name}_step_us"] = [
            round(statistics.median(costs[(name, f)]) * 1e6, 1) for f in fracs
        ]
        grows = [
            [c / b for c, b in zip(costs[(name, f)], costs[(name, fracs[0])], strict=True)]
            for f in fracs
        ]
        out[f"{name}_growth"] = [round(statistics.median(g), 2) for g in grows]
        out[f"{name}_growth_spread"] = [[round(min(g), 2), round(max(g), 2)] for g in grows]
    if why:
        out["vllm"] = why
    return out


def run(quick: bool) -> dict[str, Any]:
    """Every point of the grid; see the module doc."""
    grid = [(1024, 1, 0.0), (1024, 2, 0.0), (1024, 1, 0.9)]
    if not quick:
        grid += [(65536, 1, 0.0), (65536, 1, 0.9)]
    steps, rounds = (30, 1) if quick else (200, 3)
    points = [_point(s, t, p, steps, rounds) for s, t, p in grid]
    limit = 50 if quick else 200
    prefixes = [long_prefix(s, n, limit) for s, n in ((8, 12), (64, 96))]
    flat = pinned_on_top(1024, (0.0, 0.5, 0.9) if not quick else (0.0, 0.9), steps, rounds)
    return {
        "points": points,
        "pinned_on_top": flat,
        "long_prefix": prefixes,
        "notes": [
            "ratio = vLLM's CPU seconds per step / ours (> 1: ours is cheaper), median of "
            "rounds, spread min..max; both sides interleaved step by step in one process",
            "ratio_inside = vLLM's per step / ours inside vLLM (EvictableTieringSpec, the "
            "connector's per-key lookups under the manager's lock)",
            "long_prefix: steps until a scan of a prefix longer than the primary answers",
            "pinned_on_top: the same workload with pinned chunks added on top of 1,024 "
            "unpinned ones; growth = per-step cost over the cost at 0% pinned (1.0: flat)",
        ],
    }


def main() -> None:
    standalone("tiering_impl", run, __doc__.split("\n")[0])


if __name__ == "__main__":
    main()
