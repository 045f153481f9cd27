"""Speed and memory measurements; run each as a module from the repository root
(``python -m benchmarks.bench_pretrain``), so that one can import another without sys.path edits."""
