"""Layer 0 of the biLM: words to char ids to one context-free vector per word.

- :mod:`.char_ids`: a word as 50 char ids (bilm-tf's encoding), sentences as padded id arrays;
- :mod:`.code_points`: a word as code-point ids and a word id (ELMoForManyLangs' encoding);
- :mod:`.word_batch`: the ids of each distinct word of a batch once, plus a token index, through
  the model's :class:`~.word_batch.TokenEncoding` (one of the two above);
- :mod:`.char_cnn`: :class:`~.char_cnn.CharEncoder`, the char embedding, convolutions,
  :mod:`.highway` layers and projection, which sends the work to one of two faster paths:
  :mod:`.char_cnn_tables` (no autograd: table lookups in fixed word blocks) and
  :mod:`.char_cnn_training` (autograd on a CPU: table lookups with a sparse backward), both
  reading only the char rows a batch needs on large alphabets (:mod:`.alphabet`).

Layer-0 vectors kept per word string are :mod:`spacy_elmo.embedding.word_cache`'s job.

Nothing is imported here: callers import the module they need.
"""
