"""evictable: a checked model of the KV-cache block lifecycle and its implementation.

The installed distribution is this one namespace:

* `evictable.model` -- the executable specification (the lifecycle tables and the
  reference models); standard library only;
* `evictable.impl` -- the optimized implementation to import (no z3, no hypothesis);
* `evictable.proofs` -- the verification suite and the `evictable` command.

The repository keeps the three as top-level folders (`model/`, `impl/`, `proofs/`);
`src/evictable/` links them into this package (see docs/architecture.md). The public
face is small: `evictable.impl`, `evictable.model`, `evictable.errors` (the typed
errors) and `evictable.testing` (check a manager from your own tests); everything
else in `evictable.proofs` is internal.
"""

from __future__ import annotations

import os as _os

__all__ = ["__version__"]

for _name in ("model", "impl", "proofs"):  # a checkout without symlinks: say so at once
    _here = _os.path.join(_os.path.dirname(__file__), _name)
    if not _os.path.isfile(_os.path.join(_here, "__init__.py")):
        raise ImportError(
            f"evictable: {_here} is not a directory (a checkout made without "
            "symlinks); clone again with `git -c core.symlinks=true clone ...`"
        )
del _name, _here

__version__ = "0.2.0"
