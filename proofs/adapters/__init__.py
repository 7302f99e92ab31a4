"""Adapters that put other projects' managers behind this project's adapter protocol.

`evictable.proofs.adapters.vllm` wraps vLLM 0.33's CPU offloading manager (LRU and
ARC), its GPU free queue and block pool, and its lazy offload walk (docs/interop.md).
It needs vLLM installed (`make interop` builds a venv with it); importing it without
vLLM raises one `ImportError` that says so.
"""
