"""The Z3 relations evaluated on the code's own steps: the bridge between what is
proved and what runs (per block, per manager call, eviction, slots, ARC, the free
queue).
"""
