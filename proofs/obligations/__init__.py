"""The obligations layer: every claim `evictable verify` discharges, paired with its
negative controls.

One module per group (`registry.GROUPS`, in the order `verify` runs them), each with
`obligations(level) -> list[Obligation]`. This is the only layer that imports
`proofs.controls` (the deliberately broken variants): an engine states and decides a
claim; here each claim meets the broken variant it must refute.
"""
