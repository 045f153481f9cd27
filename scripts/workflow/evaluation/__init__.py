"""Scoring the trained pipelines and comparing two settings on the same test documents.

| module | job |
| --- | --- |
| `scoring` | spaCy's scores of each setting's pipelines, and the per-document counts beside them |
| `doc_counts` | per-document counts under spaCy's scoring rules (summed, they give its scores back) |
| `paired_stats` | paired bootstrap interval and approximate-randomization p-value over documents |
"""
