"""The verification suite of evictable, in layers (docs/architecture.md, "Layers").

From the bottom: `base` (records, levels, bounds, profiles, the adapter protocol,
contracts, the one comparator, findings, the step guard) imports no engine; the
engines `z3`, `explore` and `lockstep`, and `adapters` (vLLM behind the adapter
protocol), import only `base` (and `model`, `impl`); `controls` (every deliberately
broken variant), `refine` (the Z3 relations evaluated on the code's own steps) and
`check` (a user's check: setup, both engines, the pytest fixture, trace replay) may
import the engines; `obligations` pairs every claim with its negative controls and
is the only importer of `controls`; `cli` (the `evictable` command) is on top. The
public face, `evictable.testing` and `evictable.errors`, sits above them all;
everything in this package is internal.
"""

from __future__ import annotations

__all__ = ["LAYERS"]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("model",),
    ("impl",),
    ("proofs", "proofs.base"),
    ("proofs.z3", "proofs.explore", "proofs.lockstep", "proofs.adapters"),
    ("proofs.controls", "proofs.refine", "proofs.check"),
    ("proofs.obligations",),
    ("proofs.cli",),
    ("face",),
)
"""Packages by layer, bottom first. A module may import its own package and any
package of a lower layer, never a package of its own layer or above; `proofs` is
this module alone, `face` the public modules beside `evictable/__init__.py`
(`evictable.testing`, `evictable.errors`). `tools/layers.py` checks it on the code's
imports."""
