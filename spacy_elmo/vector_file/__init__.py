"""``spacy-elmo embed``'s job: a whole corpus into one HDF5 file of ELMo vectors, crash-safe.

- :mod:`.job`: :func:`~.job.embed_corpus`, the driver: chunks of sentences, planned into groups
  by the :class:`~spacy_elmo.embedding.Embedder`, each finished group stored as one part, shards;
- :mod:`.parts`: the parts folder (``OUTPUT.parts``): finished groups written safely, found again
  on a rerun, and the shards' agreement on who joins;
- :mod:`.join`: the result file: its layout, the checks before writing into it, and the join
  of the parts into it;
- :mod:`.output_lock`: one run per output and shard at a time.

They need h5py and are imported on demand (``spacy-elmo embed`` imports :mod:`.job`); turning
sentences into layers is :mod:`spacy_elmo.embedding`'s job.
"""
