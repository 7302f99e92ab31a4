"""The bottom layer of `evictable.proofs`: what every engine shares, importing no engine.

* `records` -- obligations, outcomes, result records and the one runner;
* `levels` -- the verification levels (`quick`, `default`, `thorough`);
* `bounds` -- the explorer's bounds for the CPU manager;
* `profiles` -- one verification profile per policy;
* `protocol` -- the adapter protocol (what the engines call, how they build it);
* `contract` -- what an implementation is held to (exact or safety, error contract,
  black box, inputs, key space);
* `compare` -- the one comparator (`judge`): a call on both sides, judged;
* `cpu_contract`, `safety` -- the CPU manager under a contract: the reference
  model, observing both sides, classifying a disagreement;
* `faults` -- fault injection into policy hooks;
* `findings` -- findings, grouped by class, and the one runnable-snippet renderer;
* `guard` -- the per-step backstop against a call that never returns.

The engines (`z3`, `explore`, `lockstep`) sit above this layer and never import one
another; see docs/architecture.md, "Layers".
"""
