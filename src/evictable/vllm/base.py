"""The ground the vLLM plug-in modules stand on: the import guard, the vLLM names they
use, and the read-only views of a policy's lists.

Every module of `evictable.vllm` (the face, `lru`, `arc`, `checked`, `mirrored`,
`tiers`, `tiering`) imports this one before anything of vLLM, so without vLLM each
raises the same one `ImportError` naming the extra to install (`pip install
evictable[vllm]`), and a vLLM other than 0.33 is refused the same way.
"""

from __future__ import annotations

try:
    import vllm as _vllm
    from vllm.v1.kv_offload.base import OffloadKey, ReqContext
    from vllm.v1.kv_offload.cpu.policies.base import (
        CachePolicy,
        ChunkStatus,
        order_request_keys,
    )
except ImportError as _exc:  # one clear error, not vLLM's (or torch's) traceback
    raise ImportError(
        "evictable.vllm needs vLLM 0.33 (and torch): `pip install evictable[vllm]` "
        f"({type(_exc).__name__}: {_exc})"
    ) from None

from evictable.model.vllm033 import VLLM_VERSION

if not str(getattr(_vllm, "__version__", "")).startswith(VLLM_VERSION):
    raise ImportError(
        f"evictable.vllm is written for vLLM {VLLM_VERSION}.x, found "
        f"{getattr(_vllm, '__version__', '?')}: `pip install evictable[vllm]`"
    )

from collections.abc import Iterator, Mapping
from typing import Any, cast

from evictable.impl.policies.arc_ghosts import GhostList

__all__ = [
    "VLLM_VERSION",
    "CachePolicy",
    "ChunkStatus",
    "ChunkView",
    "GhostView",
    "OffloadKey",
    "ReqContext",
    "order_request_keys",
]


# ---------------------------------------------------------------- views


class ChunkView(Mapping[OffloadKey, ChunkStatus]):
    """A read-only, ordered view of a resident list: key -> vLLM's `ChunkStatus`.

    Iterates least recent first, as vLLM's `OrderedDict`s do; `len`, `in`, `[key]`,
    `items()` and truth value as a dict. Complexity: O(1) per item.
    """

    __slots__ = ("field", "nodes")

    def __init__(self, nodes: Mapping[OffloadKey, Any], field: str = "chunk") -> None:
        self.nodes = nodes
        self.field = field

    def __getitem__(self, key: OffloadKey) -> ChunkStatus:
        return cast("ChunkStatus", getattr(self.nodes[key], self.field))

    def __iter__(self) -> Iterator[OffloadKey]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, key: object) -> bool:
        return key in self.nodes

    def __repr__(self) -> str:
        return f"ChunkView({list(self.nodes)!r})"


class GhostView(Mapping[OffloadKey, None]):
    """A read-only, ordered view of a ghost list (B1 or B2): key -> None, least recent
    first, as vLLM's `OrderedDict[key, None]`. Complexity: O(1) per item."""

    __slots__ = ("ghosts",)

    def __init__(self, ghosts: GhostList) -> None:
        self.ghosts = ghosts

    def __getitem__(self, key: OffloadKey) -> None:
        if key not in self.ghosts:
            raise KeyError(key)
        return None

    def __iter__(self) -> Iterator[OffloadKey]:
        return iter(self.ghosts)

    def __len__(self) -> int:
        return len(self.ghosts)

    def __contains__(self, key: object) -> bool:
        return key in self.ghosts

    def __repr__(self) -> str:
        return f"GhostView({list(self.ghosts)!r})"
