"""Reading text, JSONL and ``.spacy`` corpora for ``embed`` (:mod:`.keyed_sentences`) and pretraining
(:mod:`.record_stream`), with what real corpora hold (invalid UTF-8, huge lines, binary files)."""
