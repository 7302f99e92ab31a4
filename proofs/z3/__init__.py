"""The Z3 encodings and checks: the lifecycle tables, the manager relation over an
unbounded key sort, bounded model checking, eviction, slots, ARC, the free queue
and the lazy cursor. Every query is bounded by work.
"""
