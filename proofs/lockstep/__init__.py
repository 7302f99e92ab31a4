"""The lock-step conformance engine: Hypothesis machines that drive the model and an
implementation side by side through the one comparator (`base.compare`).
"""
