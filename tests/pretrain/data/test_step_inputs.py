"""StepInputBuilder: char ids equal the per-word reference encoder's; targets frame each sentence."""

import numpy

from spacy_elmo.nn.words.char_ids import encode_sentences
from spacy_elmo.pretrain.data.step_inputs import PAD_TARGET, StepInputBuilder
from spacy_elmo.pretrain.vocab import SPECIALS, Vocabulary

SENTENCES = [["the", "cat", "日本", "🙂", "x" * 70, "<S>", "</S>", "the"], [], ["cat"]]


def test_batch_encoder_matches_the_reference_encoder():
    vocab = Vocabulary(list(SPECIALS) + ["the", "cat"])
    batch = StepInputBuilder(vocab).encode(SENTENCES)
    expected_ids, expected_lengths = encode_sentences(SENTENCES)
    numpy.testing.assert_array_equal(batch.char_ids.numpy(), expected_ids)
    numpy.testing.assert_array_equal(batch.lengths.numpy(), expected_lengths)
    assert batch.n_tokens == sum(len(s) + 1 for s in SENTENCES)
    assert batch.targets[0].tolist() == vocab.framed_ids(SENTENCES[0])
    assert batch.targets[1].tolist() == vocab.framed_ids([]) + [PAD_TARGET] * 8
    assert batch.targets[2, :3].tolist() == vocab.framed_ids(["cat"])
