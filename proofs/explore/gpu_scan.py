"""The plumbing the GPU explorers share: actions, worlds, judging, cursors and iterators.

A *world* holds the model and the implementation side by side (`_World`); every
call is made on both and judged by the one comparator (`judged`: results in model
terms, error identity, all-or-nothing). A world also holds one cursor and one live
iterator over a free queue (`Scan`), and the state key of that scan: whether the
cursor still names its link, and whether the iterator is live (and where it
resumes), dead (the queue changed since it was opened) or done.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.free_queue import ModelCursor, ModelFreeQueue
from evictable.model.types import BlockId
from evictable.proofs.base.compare import Reply, invoke, judge

__all__ = [
    "NEXT",
    "Act",
    "Scan",
    "World",
    "judged",
    "probe",
    "scan_action",
    "scan_actions",
    "scan_key",
]


@dataclass(frozen=True)
class Act:
    """One call, printable as the Python it stands for."""

    op: str
    args: tuple[Any, ...] = ()
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text or f"{self.op}{self.args}"


def _ids(value: Any) -> Any:
    """Impl results in model terms: blocks as ids, cursors as model cursors."""
    if isinstance(value, KVCacheBlock):
        return value.block_id
    if isinstance(value, Cursor):
        return ModelCursor(BlockId(value.block.block_id), value.generation)
    if isinstance(value, list):
        return [_ids(v) for v in value]
    return value


@dataclass
class Scan:
    """The held cursor and the live iterator of a world, on both sides."""

    cursor: tuple[int, ModelCursor, Cursor] | None = None
    it: tuple[Iterator[BlockId], Iterator[KVCacheBlock]] | None = None
    after: int | None = None  # the iterator resumes after this block (None: the front)
    opened_at: int = 0  # the model queue's modification count when it was opened
    done: bool = False


def scan_key(scan: Scan, mq: ModelFreeQueue) -> Hashable:
    cursor = None
    if scan.cursor is not None:
        cursor = (scan.cursor[0], mq.cursor_is_valid(scan.cursor[1]))
    if scan.it is None:
        it: Hashable = None
    elif scan.done:
        it = "done"
    elif mq.modifications != scan.opened_at:
        it = "dead"
    else:
        it = ("live", scan.after)
    return cursor, it


class World:
    """Model and implementation side by side; `cached` holds the last observation."""

    judging = True
    """False while a path is replayed: its calls were judged when first made."""
    cached: tuple[Any, Any] | None = None

    def observe(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def seen_now(self) -> tuple[Any, Any]:
        if self.cached is None:
            self.cached = self.observe()
        return self.cached


def judged(
    label: str, world: World, model_call: Callable[[], Any], impl_call: Callable[[], Any]
) -> tuple[Reply, Reply, str | None]:
    """Both calls, judged; (model reply, impl reply, why they disagree or None)."""
    if not world.judging:
        rm, ri = invoke(model_call), invoke(impl_call)
        world.cached = None
        return rm, ri, None
    try:
        m_pre, i_pre = world.seen_now()
    except Exception as exc:
        return Reply(True, exc), Reply(True, exc), f"{label}: a snapshot raised {exc!r}"
    rm, ri = invoke(model_call), invoke(impl_call)
    world.cached = None
    try:
        m_post, i_post = world.seen_now()
    except Exception as exc:
        return rm, ri, f"{label}: a snapshot raised {type(exc).__name__}: {exc}"
    found = judge(rm, ri, m_pre, i_pre, m_post, i_post, _ids)
    return rm, ri, None if found is None else f"{label}: {found.reason}"


def scan_action(
    label: str,
    act: Act,
    scan: Scan,
    world: World,
    mq: ModelFreeQueue,
    iq: FreeKVCacheBlockQueue,
    block: Callable[[int], KVCacheBlock],
) -> str | None:
    """`cursor` / `iter` / `next` on one queue of both sides (shared by both subjects)."""
    if act.op == "cursor":
        b = act.args[0]
        made: list[Any] = []

        def take_model() -> ModelCursor:
            made.append(mq.cursor_for(BlockId(b)))
            return made[-1]  # type: ignore[no-any-return]

        def take_impl() -> Cursor:
            made.append(iq.cursor_for(block(b)))
            return made[-1]  # type: ignore[no-any-return]

        rm, _, why = judged(label, world, take_model, take_impl)
        if why is None and not rm.raised:
            scan.cursor = (b, made[0], made[1])
        return why
    if act.op == "iter":
        src = act.args[0]
        mcur: Any = None
        icur: Any = None
        if src == "cursor" and scan.cursor is not None:
            _, mcur, icur = scan.cursor
        elif isinstance(src, int):
            mcur, icur = BlockId(src), block(src)
        its: list[Any] = []
        rm, _, why = judged(
            label,
            world,
            lambda: its.append(mq.iter_blocks_after(mcur)),
            lambda: its.append(iq.iter_blocks_after(icur)),
        )
        if why is None and not rm.raised:
            start = mcur.block_id if isinstance(mcur, ModelCursor) else mcur
            scan.it, scan.after, scan.opened_at, scan.done = (
                (its[0], its[1]),
                None if start is None else int(start),
                mq.modifications,
                False,
            )
        return why
    if scan.it is None:
        return None
    mit, iit = scan.it
    rm, _, why = judged(label, world, lambda: next(mit), lambda: next(iit))
    if why is None:
        if rm.raised:
            scan.done = True
        else:
            scan.after = int(rm.value)
    return why


NEXT = Act("next", (), "next(it)")


def probe(scan: Scan, mq: ModelFreeQueue) -> Act | None:
    """One step of the iterator when it is live: what a no-op call must not disturb."""
    live = scan.it is not None and not scan.done and mq.modifications == scan.opened_at
    return NEXT if live else None


def scan_actions(scan: Scan, blocks: Sequence[int]) -> list[Act]:
    out = [Act("cursor", (b,), f"c = q.cursor_for({b})") for b in blocks]
    out.append(Act("iter", ("front",), "it = q.iter_blocks_after(None)"))
    out += [Act("iter", (b,), f"it = q.iter_blocks_after({b})") for b in blocks]
    if scan.cursor is not None:
        out.append(Act("iter", ("cursor",), "it = q.iter_blocks_after(c)"))
    if scan.it is not None:
        out.append(NEXT)
    return out
