"""The training text as pretraining reads it: records to sentences to batches to tensors.

- :mod:`.sentences`: records (texts or Docs) to sentences, with overlong tokens cut and overlong
  sentences split, counted;
- :mod:`.passes`: whole passes over a text: the word counts of the vocabulary, the dev set;
- :mod:`.batches`: the endless, sharded, resumable stream of training batches;
- :mod:`.step_inputs`: a batch of sentences to the tensors one step needs (char ids, lengths,
  target word ids).

The records themselves come from :mod:`spacy_elmo.corpora.record_stream`.
"""
