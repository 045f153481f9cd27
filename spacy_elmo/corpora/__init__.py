"""Reading corpora, once for ``spacy-elmo embed`` (:mod:`.keyed_sentences`) and pretraining
(:mod:`.record_stream`): text, JSONL and ``.spacy`` files, with what real corpora hold (invalid
UTF-8, huge lines, stray binary files) skipped, counted or refused."""
