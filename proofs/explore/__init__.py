"""The explorer: one breadth-first search engine (`engine`) and its subjects -- the CPU
manager, the ARC model, the free queue and the block pool, the lazy scanner --
visiting every reachable state within small bounds.
"""
