"""Examples run from a checkout (docs/conformance.md); not installed."""
