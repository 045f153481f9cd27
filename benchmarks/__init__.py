"""Benchmarks and the bit-identity harness; run them from the repository root as modules
(``python -m benchmarks.bench_embed``), so that one can import another without sys.path edits."""
