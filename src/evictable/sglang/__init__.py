"""evictable and SGLang 0.5: check SGLang's HiCache host tier with this project's engines.

    from evictable.sglang import host_tier
    # evictable check evictable.sglang:host_tier   (the sglang-0.5 profile, declared)

* `host_tier` -- the factory `evictable check` (or `evictable.testing`) takes:
  `(num_blocks, policy, enable_events) -> SglangHostTier`, SGLang's own
  `UnifiedRadixCache` with a host tier behind the CPU manager protocol, declaring its
  contract (the `sglang-0.5` profile of the model, exact; valid inputs only, no
  repeated keys, any error type);
* `SglangHostTier` -- the adapter itself (docs/interop.md, "SGLang 0.5", says what it
  drives and what it hides);
* `SGLANG_VERSION` -- the SGLang series the adapter and the profile follow ("0.5").

SGLang imports `torchvision` on the way to its caches; where no working torchvision
is installed (a CPU torch beside the index's CUDA torchvision), importing this module
installs a stub for it first (`evictable.proofs.adapters.sglang.torchvision_stub`).
Without SGLang, importing this module raises one `ImportError` that says what to
install (`make interop-sglang` builds a venv with it).
"""

from __future__ import annotations

from evictable.proofs.adapters.sglang import SGLANG_VERSION, SglangHostTier, host_tier

__all__ = ["SGLANG_VERSION", "SglangHostTier", "host_tier"]
