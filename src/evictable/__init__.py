"""evictable: a checked model of the KV-cache block lifecycle and its implementation.

The installed distribution is this one namespace:

* `evictable.model` -- the executable specification (the lifecycle tables and the
  reference models); standard library only;
* `evictable.impl` -- the optimized implementation to import (no z3, no hypothesis);
* `evictable.proofs` -- the verification suite and the `evictable` command.

The repository keeps the three as top-level folders (`model/`, `impl/`, `proofs/`);
`src/evictable/` links them into this package (see docs/architecture.md).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
