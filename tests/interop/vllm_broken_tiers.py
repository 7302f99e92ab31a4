"""A vLLM secondary tier that breaks the tier contract, for `evictable check --target
tier` in the interop suite (vLLM's example tier, raising where it must report)."""

from __future__ import annotations

from typing import Any

from vllm.v1.kv_offload.tiering.example.manager import ExampleSecondaryTierManager


class RaisesOnMissingLoad(ExampleSecondaryTierManager):  # type: ignore[misc]
    """Raises from `submit_load` for a key it does not hold, instead of reporting the
    job failed."""

    def submit_load(self, job_metadata: Any) -> None:
        missing = [k for k in job_metadata.keys if k not in self.chunks]
        if missing:
            raise KeyError(f"not in this tier: {missing!r}")
        super().submit_load(job_metadata)
