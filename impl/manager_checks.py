"""The manager's checks: a pluggable policy's victims, and its own records and table.

Every function raises `InvariantViolationError` naming the broken invariant and
changes nothing. `accept_victims` runs on every eviction by a policy that is not a
built-in class (a built-in policy's victims are trusted: the conformance engine and
the explorer check them); `check_records` and `check_policy_tracks` run only in
`check_invariants`.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from evictable.impl.block import BlockStatus
from evictable.impl.policies.base import CachePolicy
from evictable.model.errors import InvariantViolationError
from evictable.model.types import Key

__all__ = ["accept_victims", "check_policy_tracks", "check_records"]


def accept_victims(
    chosen: object,
    need: int,
    protected: Set[Key],
    blocks: Mapping[Key, BlockStatus],
    own_table: bool,
) -> list[tuple[Key, BlockStatus]]:
    """A pluggable policy's `evict` answer, checked.

    Pre: `blocks` is the manager's key table (its own when `own_table`, else the
    policy's). Post: `chosen` itself when it is a list of `need` (key, record) pairs
    of distinct, idle (ref 0), unprotected resident keys with their own records
    (filed under the key in the manager's own table, else carrying the key); else
    `InvariantViolationError` ("policy_evict_contract").
    Complexity: O(need).
    """
    if not isinstance(chosen, list) or len(chosen) != need:
        raise InvariantViolationError(
            ["policy_evict_contract"], f"asked for {need} victims, got {chosen!r}"
        )
    seen: set[Key] = set()
    for item in chosen:
        ok = isinstance(item, tuple) and len(item) == 2
        if ok:
            key, block = item
            ok = (
                isinstance(block, BlockStatus)
                and key not in seen
                and key not in protected
                and (blocks.get(key) is block if own_table else block.key == key)
                and block.ref_cnt == 0
            )
        if not ok:
            raise InvariantViolationError(
                ["policy_evict_contract"],
                f"victim {item!r} is not an idle, unprotected resident block",
            )
        seen.add(key)
    return chosen


def check_records(blocks: Mapping[Key, object], high_water: int) -> None:
    """Every value of the key table is a record with an int ref count >= -1 and an
    int slot id below `high_water`.

    Pre: none. Post: returns, or `InvariantViolationError` ("block_record",
    "ref_at_least_minus_one" or "slot_partition") for the first bad record.
    Complexity: O(n).
    """
    for key, block in blocks.items():
        if not isinstance(block, BlockStatus):
            raise InvariantViolationError(["block_record"], f"{key!r} -> {block!r}")
        if type(block.ref_cnt) is not int or block.ref_cnt < -1:
            raise InvariantViolationError(
                ["ref_at_least_minus_one"], f"{key!r} has ref {block.ref_cnt!r}"
            )
        if type(block.block_id) is not int or not 0 <= block.block_id < high_water:
            raise InvariantViolationError(
                ["slot_partition"], f"{key!r} has slot {block.block_id!r}"
            )


def check_policy_tracks(
    policy: CachePolicy, blocks: Mapping[Key, BlockStatus], own_table: bool
) -> None:
    """The policy holds exactly the manager's records: its shared table is still the
    manager's (unless the manager keeps its own), and it files every resident key
    under the manager's record.

    Pre: none. Post: returns, or `InvariantViolationError` ("policy_tracks_blocks").
    Complexity: O(n).
    """
    if not own_table and policy.shared_table() is not blocks:
        raise InvariantViolationError(["policy_tracks_blocks"], "the shared table moved")
    for key, block in blocks.items():
        if policy.get(key) is not block:
            raise InvariantViolationError(
                ["policy_tracks_blocks"], f"policy does not hold {key!r}'s record"
            )
