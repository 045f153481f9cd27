"""The report step and the probe summary: from the workflow's outputs to markdown, plots and JSON.

| module | job |
| --- | --- |
| `data` | reads scores, per-document counts, pretraining runs, learned mixes; pairs the settings |
| `rows` | one row per setting, comparison (with its paired test) and target |
| `text` | markdown tables and the sentences that state each result |
| `price` | the `price` step's numbers beside each setting's score (`-` where not measured) |
| `pooled` | the comparisons over biLMs (the `robustness` workflow) |
| `cv` | the cross-validated tweets (the `tweets` workflow) |
| `targets` | the headline's targets: over biLMs, against spaCy's pretraining, cross-validated |
| `paper` | the ELMo paper's CoNLL-2003 row beside ours |
| `low_precision` | the ELMo settings at bfloat16 and int8 against float32: paired differences, equivalence within a margin, words per CPU second |
| `plots` | the PNG figures |
| `build` | puts them together: `report.md`, `results.json`, the README section |
| `readme` | rewrites the README between its results markers |
| `probes` | the `probe` workflow's summary: `probe.md` and its plot |
"""
