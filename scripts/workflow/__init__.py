"""The code the project's steps share; the commands themselves are the thin functions in
``scripts/commands/`` (``python -m scripts COMMAND``).

| module or package | job |
| --- | --- |
| `datasets` | fetching the archives; Brown, WNUT-16 and the pretraining text as datasets |
| `training` | `spacy train` runs a rerun skips when finished: per seed, per probed layer, per recipe; spaCy's own pretraining within a CPU budget |
| `evaluation` | spaCy's scores, per-document counts, paired tests over documents |
| `report` | `report.md`, `results.json`, the plots, the README section, the probe summary |
| `parallel` | seeds and workflow steps side by side; each step's times; project.yml as weasel reads it |
| `checksums` | SHA-256 of files and folders: what a rerun compares |
| `process_times` | the CPU and wall time of a child process tree; the file that carries the biLM's CPU time |
| `threads` | the one place that sets a step's torch threads |
"""
