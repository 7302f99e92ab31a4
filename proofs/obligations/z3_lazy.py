"""`lazy.z3.*`: the bounded Z3 check of the lazy cursor finding, with its control."""

from __future__ import annotations

from evictable.model.lazy_offload import Validation
from evictable.proofs.base.records import Kind, Obligation
from evictable.proofs.z3.lazy import pool_ops_keep_scan_complete


def obligations(level: str) -> list[Obligation]:
    n, k = {"quick": (3, 3), "default": (4, 3), "thorough": (4, 5)}.get(level, (4, 3))
    return [
        Obligation(
            name="lazy.z3.pool_ops_keep_scan_complete",
            statement=f"generation validation: from any state satisfying scan completeness "
            f"({n} blocks), up to {k} pool operations keep it",
            check=pool_ops_keep_scan_complete(n, k, Validation.GENERATION),
            negative=pool_ops_keep_scan_complete(n, k, Validation.REFCOUNT),
            negative_statement="ref-count-only validation: some pool operations break it",
            tags=("lazy", "z3"),
            kind=Kind.BOUNDED,
            bounds=f"{n} blocks, up to {k} pool operations",
        ),
    ]
