"""Eviction policies: the interface (`base.CachePolicy`), the built-in LRU (`lru`) and
ARC (`arc`, with its idle index `arc_index` and ghost lists `arc_ghosts`), and the
registry of policies by name (`factory`). docs/semantics.md, "The policy interface".
The names users need are re-exported by `evictable.impl`."""
