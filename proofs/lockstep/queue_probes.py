"""Probes of the free queue where the model cannot follow: its sentinels, the links
of the blocks it hands back, and lists corrupted through the blocks' public links.

The model's queue (`model.free_queue`) has no sentinels and no links, so the
lock-step machines and the explorer cannot see these; `queue_probe(factory)` checks
them exhaustively over small catalogues (`factory(blocks)` builds a queue, as
`FreeKVCacheBlockQueue` does):

* **sentinels**: every block-taking call given the queue's own head or tail
  sentinel is refused with a `LifecycleError` naming block -1 (the sentinels' id),
  and the queue is unchanged;
* **unlinked blocks**: a block `popleft`, `popleft_n` or `remove` hands back has no
  links and no owner left;
* **corrupted lists** (`CORRUPTIONS`: a dangling link, a back link to the wrong
  block, a count below the length): every call raises a `LifecycleError` or
  returns, never another exception; the bounded observers
  (`get_all_free_blocks`, a full iteration, `snapshot`) raise
  `InvariantViolationError` ("links_well_formed") whose detail names the defect and
  the blocks around it; `check_invariants` raises `InvariantViolationError`.

Returns None when every case holds, else the first failing one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.errors import InvariantViolationError, LifecycleError

__all__ = ["CORRUPTIONS", "queue_probe"]

QueueFactory = Callable[[Sequence[KVCacheBlock]], Any]
N = 3
"""Blocks linked in every probed queue (ids 1..N; block N+1 stays unlinked)."""


def _fresh(factory: QueueFactory) -> tuple[Any, list[KVCacheBlock]]:
    blocks = [KVCacheBlock(i) for i in range(1, N + 2)]
    return factory(blocks[:N]), blocks


def _dangling(q: Any, b: list[KVCacheBlock]) -> None:
    b[1].next_free_block = None


def _dangling_front(q: Any, b: list[KVCacheBlock]) -> None:
    b[0].next_free_block = None


def _dangling_head(q: Any, b: list[KVCacheBlock]) -> None:
    q.fake_free_list_head.next_free_block = None


def _dangling_tail(q: Any, b: list[KVCacheBlock]) -> None:
    q.fake_free_list_tail.prev_free_block = None


def _back_link(q: Any, b: list[KVCacheBlock]) -> None:
    b[2].prev_free_block = b[0]


def _count_low(q: Any, b: list[KVCacheBlock]) -> None:
    q.num_free_blocks -= 1


Corrupt = Callable[[Any, list[KVCacheBlock]], None]

CORRUPTIONS: dict[str, tuple[Corrupt, str | None, bool]] = {
    "a dangling link after block 2": (
        _dangling,
        "the list ends in a dangling link after block 2",
        True,
    ),
    "a dangling link after the front block": (
        _dangling_front,
        "the list ends in a dangling link after block 1",
        True,
    ),
    "a dangling link at the head": (_dangling_head, "dangling link after block -1", True),
    "no back link at the tail": (_dangling_tail, None, True),
    "block 3 links back to block 1": (_back_link, "block 3 does not link back to block 2", True),
    "a count one below the length": (_count_low, "more than num_free_blocks=2 blocks", True),
}
"""Corruption name -> (how, what the detail of `get_all_free_blocks` / `snapshot`
must say (None: the front-to-back walk does not meet it), whether a full iteration
is probed: the iterator tests the count (a cycle) and links to nothing, not back
links)."""


def _calls(q: Any, b: list[KVCacheBlock]) -> list[tuple[str, Callable[[], object]]]:
    spare = b[N]
    out: list[tuple[str, Callable[[], object]]] = [
        ("popleft()", q.popleft),
        ("append(spare)", lambda: q.append(spare)),
        ("append_n([spare])", lambda: q.append_n([spare])),
        ("prepend_n([spare])", lambda: q.prepend_n([spare])),
        ("get_all_free_blocks()", q.get_all_free_blocks),
        ("list(iter_blocks_after())", lambda: list(q.iter_blocks_after())),
        ("snapshot()", q.snapshot),
        ("check_invariants()", q.check_invariants),
    ]
    out += [(f"popleft_n({k})", _bind(q.popleft_n, k)) for k in range(N + 1)]
    out += [(f"remove(block {x.block_id})", _bind(q.remove, x)) for x in b[:N]]
    return out


def _bind(fn: Callable[[Any], object], arg: object) -> Callable[[], object]:
    return lambda: fn(arg)


OBSERVERS = ("get_all_free_blocks()", "snapshot()")
ITERATE = "list(iter_blocks_after())"


def _sentinels(factory: QueueFactory) -> str | None:
    for which in ("fake_free_list_head", "fake_free_list_tail"):
        calls: list[tuple[str, Callable[[Any, Any], object]]] = [
            ("append", lambda q, s: q.append(s)),
            ("append_n", lambda q, s: q.append_n([s])),
            ("prepend_n", lambda q, s: q.prepend_n([s])),
            ("remove", lambda q, s: q.remove(s)),
            ("cursor_for", lambda q, s: q.cursor_for(s)),
            ("iter_blocks_after", lambda q, s: q.iter_blocks_after(s)),
        ]
        for name, call in calls:
            q, _ = _fresh(factory)
            s = getattr(q, which)
            before = q.snapshot()
            what = f"{name}({which})"
            try:
                call(q, s)
            except LifecycleError as err:
                named = list(getattr(err, "block_ids", ()) or ())
                if named != [-1]:
                    return f"{what}: {type(err).__name__} names blocks {named!r}, not [-1]"
            except Exception as exc:
                return f"{what}: raised {type(exc).__name__}: {exc}"
            else:
                return f"{what}: accepted the queue's own sentinel"
            try:
                after = q.snapshot()
                q.check_invariants()
            except Exception as exc:
                return f"{what}: the refused call broke the queue: {exc}"
            if after != before:
                return f"{what}: the refused call changed the queue"
    return None


def _unlinked(factory: QueueFactory) -> str | None:
    takes: list[tuple[str, Callable[[Any, list[KVCacheBlock]], list[KVCacheBlock]]]] = [
        ("popleft()", lambda q, b: [q.popleft()]),
        *((f"popleft_n({k})", lambda q, b, k=k: q.popleft_n(k)) for k in range(1, N + 1)),
        *(
            (f"remove(block {i + 1})", lambda q, b, i=i: (q.remove(b[i]), [b[i]])[1])
            for i in range(N)
        ),
    ]
    for name, take in takes:
        q, b = _fresh(factory)
        for x in take(q, b):
            if (
                x.prev_free_block is not None
                or x.next_free_block is not None
                or x.owner is not None
            ):
                return f"{name}: block {x.block_id} left the queue with links or an owner"
    return None


def _corrupted(factory: QueueFactory) -> str | None:
    for label, (corrupt, detail, iterate) in CORRUPTIONS.items():
        q0, b0 = _fresh(factory)
        for i, (name, _) in enumerate(_calls(q0, b0)):
            if name == ITERATE and not iterate:
                continue
            if name == ITERATE and label == "a count one below the length":
                detail_here: str | None = detail  # the walk meets the tail one step late
            elif name == ITERATE:
                detail_here = None
            else:
                detail_here = detail
            q, b = _fresh(factory)
            corrupt(q, b)
            call = _calls(q, b)[i][1]
            what = f"{label}: {name}"
            named = (name in OBSERVERS or name == ITERATE) and detail_here is not None
            try:
                call()
            except InvariantViolationError as err:
                if named and (
                    err.names != ("links_well_formed",) or str(detail_here) not in str(err)
                ):
                    return (
                        f"{what}: raised {err.names} {err}, want links_well_formed: {detail_here}"
                    )
                continue
            except LifecycleError:
                if named:
                    return f"{what}: raised another error than links_well_formed"
                continue
            except Exception as exc:
                return f"{what}: raised {type(exc).__name__}: {exc}"
            if named or name == "check_invariants()":
                return f"{what}: returned normally on a broken list"
    return None


def queue_probe(factory: QueueFactory = FreeKVCacheBlockQueue) -> str | None:
    """The first failing sentinel, unlinked-block or corruption case, or None."""
    return _sentinels(factory) or _unlinked(factory) or _corrupted(factory)
