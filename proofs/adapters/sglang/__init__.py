"""SGLang 0.5's HiCache host tier behind this project's CPU manager adapter protocol.

The factories here are what `evictable check` takes (docs/interop.md, "SGLang 0.5"):

* `host_tier`: SGLang's `UnifiedRadixCache` with a host tier, over its pure-Python tree
  core (`sglang.srt.mem_cache.unified_cache.unified_tree_core.UnifiedTreeCore`).

Each declares its contract (`evictable_contract`): the `sglang-0.5` profile of the
model, valid inputs only, no repeated keys, any error type. Keys are any hashable
values; each becomes one page-sized node under the tree's root (`host_tier.py`).

SGLang imports `torchvision` on the way to its caches, and the index's torchvision
does not import beside a CPU torch: where no working torchvision is installed, this
package installs a stub first (`torchvision_stub`). Importing it without SGLang
installed raises one `ImportError` that says how to get it; SGLang releases other
than 0.5 are refused the same way.
"""

from __future__ import annotations

import importlib as _importlib

try:
    from evictable.proofs.adapters.sglang import torchvision_stub as _stub

    _stub.install()  # before SGLang (and transformers) first look for torchvision
    _importlib.import_module("sglang.srt.mem_cache.unified_radix_cache")  # and torch
except ImportError as _exc:  # one clear error, not SGLang's (or torch's) traceback
    _stub.uninstall()
    raise ImportError(
        "evictable.proofs.adapters.sglang needs SGLang 0.5 and torch "
        f"({type(_exc).__name__}: {_exc}); `make interop-sglang` builds "
        '.venv-interop-sglang with them (docs/interop.md, "SGLang 0.5")'
    ) from None

from importlib import metadata as _metadata

from evictable.model.sglang05 import SGLANG_VERSION

if not _metadata.version("sglang").startswith(SGLANG_VERSION + "."):
    raise ImportError(
        f"evictable.proofs.adapters.sglang is written for SGLang {SGLANG_VERSION}.x, "
        f"found {_metadata.version('sglang')} (docs/interop.md)"
    )

from evictable.proofs.adapters.sglang.host_tier import PAGE_SIZE, SglangHostTier, host_tier

__all__ = ["PAGE_SIZE", "SGLANG_VERSION", "SglangHostTier", "host_tier"]
