"""The training steps' runs of ``spacy train``: each is skipped when a finished run of the same
inputs is there, so a rerun after a failure goes on where it stopped.

| module | job |
| --- | --- |
| `runs` | one run unless done (`inputs.json`, with the checksum of what the run made); one run per seed (and fold); the `--gpu` choice |
| `probes` | one run per biLM layer, the listener fixed on that layer |
| `recipes` | listener recipe variants and their dev scores (not part of a workflow) |
| `options` | the training commands' shared option values (`--seeds`, `--layers`, `--gpu`) |
"""
