"""Layer 0 of the biLM: words to char ids to one context-free vector per word.

- :mod:`.char_ids`: a word as 50 byte ids (bilm-tf's encoding), sentences as padded id arrays;
- :mod:`.code_points`: a word as code-point ids and a word id (ELMoForManyLangs' encoding);
- :mod:`.word_batch`: the ids of each distinct word of a batch once, through the model's
  :class:`~.word_batch.TokenEncoding`, and distinct id rows;
- :mod:`.char_cnn`: :class:`~.char_cnn.CharEncoder` (char embedding, convolutions, :mod:`.highway`,
  projection), whose convolutions run as summed table lookups on CPUs (:mod:`.char_tables`).

Layer-0 vectors kept per word are :mod:`spacy_elmo.embedding.word_cache`'s job.
"""
