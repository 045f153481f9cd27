"""Reading corpora: one reader for ``spacy-elmo embed`` and for pretraining.

Both read plain text (a line a record), JSONL (a text field a line) and ``.spacy`` files, and
both must survive what real corpora hold: invalid UTF-8, huge lines, stray binary files. So the
reading is done once, here, one job a module:

- :mod:`.files`: which format a file is, which files a folder holds, and files not to read;
- :mod:`.lines`: text and JSONL lines in binary mode, bounded, with byte offsets to resume at;
- :mod:`.jsonl`: a JSONL line's text (and tokens);
- :mod:`.docbin`: the Docs of a ``.spacy`` file;
- :mod:`.keyed_sentences`: ``embed``'s sentences, each with a key a rerun reproduces;
- :mod:`.pipelines`: the spaCy pipelines that tokenize and split sentences.

Pretraining's resumable pass over many files and its text-to-sentences step build on these
and live with it (``corpora/record_stream.py``, ``pretrain/data/sentences.py``).
"""
