"""Reading corpora: one reader for ``spacy-elmo embed`` and for pretraining.

Both read plain text (a line a record), JSONL (a text field a line) and ``.spacy`` files, and
both must survive what real corpora hold: invalid UTF-8, huge lines, stray binary files. So the
reading is done once, here, one job a module:

- :mod:`.files`: which format a file is, which files a folder holds, and files not to read;
- :mod:`.lines`: text and JSONL lines in binary mode, bounded, with byte offsets to resume at;
- :mod:`.jsonl`: a JSONL line's text (and tokens);
- :mod:`.docbin`: the Docs of a ``.spacy`` file;
- :mod:`.keyed_sentences`: ``embed``'s sentences, each with a key a rerun reproduces;
- :mod:`.record_stream`: pretraining's resumable pass over many files, record by record, with
  what it skipped counted;
- :mod:`.pipelines`: the spaCy pipelines that tokenize and split sentences.

Pretraining's text-to-sentences step builds on these and lives with it
(:mod:`spacy_elmo.pretrain.data`).
"""
