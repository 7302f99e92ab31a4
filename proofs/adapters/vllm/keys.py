"""vLLM's key format, for the engines' key pool.

Keys are vLLM's own format: `K(i)` is
`make_offload_key(i.to_bytes(32, "big"), i % 2)` (a 32-byte block hash and a 4-byte
big-endian group index), a `bytes` value that prints as `K(i)` so traces stay
readable and snippets runnable (`VLLM_KEYS`).
"""

from __future__ import annotations

from vllm.v1.kv_offload.base import make_offload_key as _make_offload_key

from evictable.proofs.base.contract import KeySpace

__all__ = ["VLLM_KEYS", "K", "OffloadKey"]


class OffloadKey(bytes):
    """A vLLM offload key (`bytes`: 32-byte hash + 4-byte group index) printing as `K(i)`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"K({int.from_bytes(self[:32], 'big')})"


def K(i: int) -> OffloadKey:
    """The i-th key of the engines' pool, in vLLM's format (see the module docstring)."""
    return OffloadKey(_make_offload_key(int(i).to_bytes(32, "big"), int(i) % 2))


VLLM_KEYS = KeySpace(
    make=K,
    preamble=("from evictable.proofs.adapters.vllm import K",),
    name="vllm OffloadKey (32-byte hash + 4-byte big-endian group index)",
)
"""The key space the vLLM adapters declare: the engines make vLLM's own keys."""
