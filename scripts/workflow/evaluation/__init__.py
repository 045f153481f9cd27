"""Scoring the trained pipelines and comparing two settings on the same test documents.

| module | job |
| --- | --- |
| `scoring` | spaCy's scores of each setting's pipelines, and the per-document counts beside them |
| `doc_counts` | per-document counts under spaCy's scoring rules (summed, they give its scores back) |
| `pipeline_price` | one pipeline's price: words per CPU-second on one thread, peak memory, size on disk (a fresh process) |
| `settings_price` | the `price` step: one seed's pipeline per setting, one file each |
| `paired_stats` | paired bootstrap interval and approximate-randomization p-value over documents |
| `pooled_stats` | one setting against its baseline over several biLMs: a bootstrap over biLMs, seeds and documents |
| `cv_stats` | a cross-validated setting against its baseline over folds, seeds and biLMs |
"""
