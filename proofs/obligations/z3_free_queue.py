"""`free_queue.*`: the intrusive free queue's link well-formedness, `iter_blocks_after`
as the suffix after the cursor and the cursor generation (bounded Z3), with controls.
"""

from __future__ import annotations

from functools import partial

from evictable.model.lifecycle import GPU_MACHINE, Hook, RefGuard, derive_hook
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation
from evictable.proofs.z3.free_queue import (
    check_generation,
    check_iter,
    check_nonvacuity,
    check_table,
    check_wf,
)

BOUNDS: dict[str, int] = {"quick": 4, "default": 5, "thorough": 6}


_WF_OPS = ("popleft", "remove", "append", "prepend", "popleft_n", "append_n", "prepend_n")


_BROKEN = {
    "popleft": "popleft that does not fix the new front's prev",
    "remove": "remove that forgets to fix prev",
    "append": "append that does not bump the count",
    "prepend": "prepend that links after the first block",
    "popleft_n": "popleft_n that does not fix the new front's prev",
    "append_n": "append_n that does not bump the count",
    "prepend_n": "prepend_n that links after the first block",
}


def wrong_hook(h: Hook) -> Hook:
    return Hook.FLAG_ON if h is Hook.NONE else Hook.NONE


def obligations(level: Level) -> list[Obligation]:
    k = BOUNDS[level]
    obs: list[Obligation] = []
    for op in _WF_OPS:
        obs.append(
            Obligation(
                name=f"free_queue.wf.{op}",
                statement=f"{op} keeps the queue well formed and yields the intended order (K={k})",
                check=partial(check_wf, op, k, False),
                negative=partial(check_wf, op, k, True),
                negative_statement=f"{_BROKEN[op]} is refuted",
                tags=("z3", "gpu", "free_queue"),
                kind=Kind.BOUNDED,
                bounds=f"K={k} blocks",
            )
        )
    obs.append(
        Obligation(
            name="free_queue.nonvacuity",
            statement=f"a well-formed queue exists for every count 0..{k} "
            "(no claim holds vacuously)",
            check=partial(check_nonvacuity, k, False),
            negative=partial(check_nonvacuity, k, True),
            negative_statement=f"no well-formed queue has {k + 1} of {k} blocks",
            tags=("z3", "gpu", "free_queue"),
            kind=Kind.BOUNDED,
            bounds=f"K={k} blocks",
        )
    )
    obs.append(
        Obligation(
            name="free_queue.iter_blocks_after",
            statement=f"the walk after a cursor yields exactly the suffix after it, in order "
            f"(K={k})",
            check=lambda to: check_iter(k, False, to),
            negative=lambda to: check_iter(k, True, to),
            negative_statement="a walk that yields the cursor block itself is refuted",
            tags=("z3", "gpu", "free_queue"),
            kind=Kind.BOUNDED,
            bounds=f"K={k} blocks",
        )
    )
    obs.append(
        Obligation(
            name="free_queue.cursor_generation",
            statement="a block that leaves and rejoins gets a stamp no earlier cursor holds",
            check=lambda to: check_generation(k, False, to),
            negative=lambda to: check_generation(k, True, to),
            negative_statement="relinking that keeps the old stamp is refuted",
            tags=("z3", "gpu", "free_queue"),
            kind=Kind.BOUNDED,
            bounds=f"K={k} blocks",
        )
    )
    for t in GPU_MACHINE.transitions:
        hook = derive_hook(GPU_MACHINE, t)
        label = f"{t.event.value}.{t.source.name}->{t.target.name}"
        if t.guard is not RefGuard.ANY:
            label += f"[{t.guard.name.lower()}]"
        obs.append(
            Obligation(
                name=f"free_queue.table.{label}",
                statement=f"GPU row {label} with derived hook {GPU_MACHINE.hook_name(hook)} keeps "
                f"the queue well formed and linked ⇔ ref_cnt == 0 (K={k})",
                check=partial(check_table, t, k, hook),
                negative=partial(check_table, t, k, wrong_hook(hook)),
                negative_statement=f"row {label} with the wrong queue hook is refuted",
                tags=("z3", "gpu", "free_queue"),
                kind=Kind.BOUNDED,
                bounds=f"K={k} blocks",
            )
        )
    return obs
