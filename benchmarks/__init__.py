"""Benchmarks and the bit-identity harness; run them from the repository root as modules,
e.g. ``python -m benchmarks.bench_embed`` (the package makes their shared code importable)."""
