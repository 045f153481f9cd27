"""The code the project's steps share; the steps themselves are the thin commands in ``scripts/``.

| module or package | job |
| --- | --- |
| `corpora` | fetching the archives; Brown, WNUT-16 and the pretraining text as corpora |
| `training` | `spacy train` runs a rerun skips when finished: per seed, per probed layer, per recipe |
| `evaluation` | spaCy's scores, per-document counts, paired tests over documents |
| `report` | `report.md`, `results.json`, the plots, the README section, the probe summary |
| `checksums` | SHA-256 of files and folders: what a rerun compares |
| `step_clock` | each step's wall and CPU time |
| `threads` | running a module with a given number of torch threads |
"""
