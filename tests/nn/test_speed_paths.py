"""The fast paths compute what the plain ones do: fused vs per-direction LSTM loops (values and
gradients), table-lookup char-CNN vs convolutions, vectorized char ids, reduced precision within
its documented error, and every path against the AllenNLP reference activations."""

import json
import random

import h5py
import numpy
import pytest
import torch

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.nn import TINY_CONFIG, BiLM
from spacy_elmo.nn.lstm import LstmStack, active_rows, run_stacks, run_time_major
from spacy_elmo.nn.words import char_cnn
from spacy_elmo.nn.words.char_cnn_tables import WORD_BLOCK
from spacy_elmo.nn.words.char_ids import encode_sentences, encode_word
from spacy_elmo.nn.words.word_batch import index_words, words_to_char_ids

# Documented error of reduced-precision matmuls (BiLM.use_autocast), as a fraction of the largest
# float32 activation. Measured: bfloat16 0.32% on the AllenNLP fixture model and 0.50-0.59% on
# default-initialised tiny models; float16 0.034% and 0.07-0.085%.
BF16_MAX_RELATIVE_ERROR = 0.01
FP16_MAX_RELATIVE_ERROR = 0.002
CONFORMANCE_TOLERANCE = 1e-5
WORDS = "the bank raised interest rates they sat by river a of to in and 日本 🙂 é x".split()


def random_stacks(dtype, seed=0, n_layers=3, input_dim=6):
    torch.manual_seed(seed)
    stacks = [LstmStack(input_dim, 16, 5, n_layers, cell_clip=0.8, proj_clip=0.6) for _ in range(2)]
    with torch.no_grad():
        for stack in stacks:
            for param in stack.parameters():
                param.normal_(0.0, 0.5)
    return [stack.to(dtype) for stack in stacks]


def time_major_inputs(lengths, dim, dtype, seed=0):
    steps = max(lengths)
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(2, steps, len(lengths), dim, generator=generator, dtype=dtype)
    mask = torch.arange(steps)[:, None] < torch.tensor(lengths)[None, :]
    return values * mask[None, :, :, None].to(dtype)


def random_bilm(seed=0, scale=0.5):
    torch.manual_seed(seed)
    model = BiLM(TINY_CONFIG)
    if scale:
        with torch.no_grad():
            for param in model.parameters():
                param.normal_(0.0, scale)
    return model.eval()


def random_sentences(seed, n, max_len=25):
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(1, max_len))] for _ in range(n)]


LENGTHS = [11, 11, 9, 6, 6, 3, 1]


@pytest.mark.parametrize("dtype,tolerance", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_fused_two_direction_loop_equals_per_direction_loop(dtype, tolerance):
    stacks = random_stacks(dtype)
    inputs = time_major_inputs(LENGTHS, 6, dtype)
    active = active_rows(LENGTHS, max(LENGTHS))
    reference = run_time_major(stacks, inputs, active, per_direction=True)
    fused_autograd = run_time_major(stacks, inputs, active)  # parameters require grad
    with torch.no_grad():
        fused_inference = run_time_major(stacks, inputs, active)
    assert len(reference) == len(fused_autograd) == len(fused_inference) == 3
    for ref, grad_path, fast_path in zip(reference, fused_autograd, fused_inference):
        torch.testing.assert_close(grad_path, ref, atol=tolerance, rtol=0)
        torch.testing.assert_close(fast_path, ref, atol=tolerance, rtol=0)


def test_fused_gradients_equal_per_direction_gradients():
    stacks = random_stacks(torch.float64, seed=1)
    active = active_rows(LENGTHS, max(LENGTHS))
    weights = [torch.randn(2, max(LENGTHS), len(LENGTHS), 5, dtype=torch.float64) for _ in range(3)]

    def gradients(per_direction):
        inputs = time_major_inputs(LENGTHS, 6, torch.float64).requires_grad_(True)
        outputs = run_time_major(stacks, inputs, active, per_direction=per_direction)
        loss = sum((out * w).sum() for out, w in zip(outputs, weights))
        params = [p for stack in stacks for p in stack.parameters()]
        return torch.autograd.grad(loss, [inputs] + params)

    for fused, reference in zip(gradients(False), gradients(True)):
        torch.testing.assert_close(fused, reference, atol=1e-10, rtol=0)


def test_inference_loop_keeps_padding_zero_and_rows_independent():
    stacks = random_stacks(torch.float32, seed=2)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    with torch.no_grad():
        together = run_time_major(stacks, inputs, active_rows(LENGTHS, max(LENGTHS)))
        for row, length in enumerate(LENGTHS):
            alone = run_time_major(stacks, inputs[:, :length, row : row + 1], [1] * length)
            for layer_all, layer_alone in zip(together, alone):
                torch.testing.assert_close(layer_all[:, :length, row], layer_alone[:, :, 0], atol=1e-6, rtol=0)
                assert (layer_all[:, length:, row] == 0).all()


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="relies on MKL's row-count-independent rounding")
def test_a_sentence_gets_the_same_bits_in_any_batch():
    """Matmuls get at least 4 rows (MIN_ROWS) and word blocks have a fixed size, so with MKL a
    sentence's vectors do not depend on its batch at all, not just up to rounding."""
    model = random_bilm(seed=8)
    sentences = random_sentences(9, 24, max_len=40)
    together = embed_layers(model, sentences, batch_sentences=24)
    for sentence, layers in zip(sentences, together):
        numpy.testing.assert_array_equal(embed_layers(model, [sentence])[0], layers)


def test_run_stacks_keeps_its_batch_major_layout():
    stacks = random_stacks(torch.float32, seed=3)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    with torch.no_grad():
        time_major = run_time_major(stacks, inputs, active_rows(LENGTHS, max(LENGTHS)))
        batch_major = run_stacks(stacks, inputs.transpose(1, 2), torch.tensor(LENGTHS))
        single = [out[0] for out in run_stacks(stacks[:1], inputs[:1].transpose(1, 2), torch.tensor(LENGTHS))]
    for tm, bm, one in zip(time_major, batch_major, single):
        torch.testing.assert_close(bm, tm.transpose(1, 2), atol=0, rtol=0)
        torch.testing.assert_close(one, tm[0].transpose(0, 1), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="sorted"):
        run_stacks(stacks, inputs.transpose(1, 2), torch.tensor(LENGTHS[::-1]))


def test_inference_weights_follow_parameter_changes():
    """Stacked weights are cached between calls; any change to a parameter must be seen."""
    stacks = random_stacks(torch.float32, seed=4)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    active = active_rows(LENGTHS, max(LENGTHS))
    with torch.no_grad():
        before = run_time_major(stacks, inputs, active)
        stacks[1].layers[1].recurrent_weight.mul_(0.5)  # in place: only the version moves
        stacks[0].layers[0].bias.add_(0.25)
        after = run_time_major(stacks, inputs, active)
        reference = run_time_major(stacks, inputs, active, per_direction=True)
        other = random_stacks(torch.float32, seed=5)
        for stack, source in zip(stacks, other):
            stack.load_state_dict(source.state_dict())
        loaded = run_time_major(stacks, inputs, active)
        loaded_reference = run_time_major(other, inputs, active, per_direction=True)
    assert not torch.equal(before[1], after[1])
    for fast, ref in zip(after + loaded, reference + loaded_reference):
        torch.testing.assert_close(fast, ref, atol=1e-5, rtol=0)


def test_char_encoder_table_path_equals_convolutions(monkeypatch):
    model = random_bilm(seed=6)
    ids, _ = encode_sentences([WORDS, ["x" * 70, "<S>", "a"]])
    ids = torch.from_numpy(ids)
    with monkeypatch.context() as patch:
        patch.setattr(char_cnn, "USE_TABLE_TRAINING", False)
        convolutions = model.char_encoder(ids)  # parameters require grad: the plain path
    with torch.no_grad():
        tables = model.char_encoder(ids)
    assert convolutions.requires_grad and not tables.requires_grad
    scale = convolutions.abs().max().item()
    torch.testing.assert_close(tables, convolutions.detach(), atol=1e-6 * scale, rtol=0)


@pytest.mark.parametrize("count", [1, WORD_BLOCK - 1, WORD_BLOCK, WORD_BLOCK + 1, 3 * WORD_BLOCK + 5])
def test_word_vectors_do_not_depend_on_their_batch(count):
    model = random_bilm(seed=7)
    rng = random.Random(count)
    words = ["".join(rng.choice("abcdefgh日é") for _ in range(rng.randint(1, 12))) for _ in range(count)]
    ids = torch.from_numpy(words_to_char_ids(words))
    together = model.char_encoder.encode_words(ids)
    for start in (0, count // 2, count - 1):
        alone = model.char_encoder.encode_words(ids[start : start + 1])
        assert torch.equal(alone[0], together[start])
    shuffled = list(range(count))
    rng.shuffle(shuffled)
    assert torch.equal(model.char_encoder.encode_words(ids[shuffled]), together[shuffled])


def test_vectorized_char_ids_equal_encode_word():
    words = WORDS + ["", "<S>", "</S>", "<s>", "x" * 60, "é" * 30, "\ud800", "\x00", "🙂👍🏽"]
    ids = words_to_char_ids(words)
    for word, row in zip(words, ids):
        numpy.testing.assert_array_equal(row, encode_word(word))
    batch = index_words([["a", "b", "a"], [], ["b", "<S>"]], reserved=("<S>", "</S>"))
    assert batch.words == ["<S>", "</S>", "a", "b"]
    assert batch.token_words.tolist() == [2, 3, 2, 3, 0]
    assert batch.lengths.tolist() == [3, 0, 2]


@pytest.mark.parametrize(
    "dtype,bound", [(torch.bfloat16, BF16_MAX_RELATIVE_ERROR), (torch.float16, FP16_MAX_RELATIVE_ERROR)]
)
@pytest.mark.parametrize("loop", ["fused", "windowed"])
def test_reduced_precision_within_documented_error(dtype, bound, loop):
    for seed in range(3):
        model = random_bilm(seed=seed, scale=0)  # default initialisation
        sentences = random_sentences(seed, 10)
        exact = embed_layers(model, sentences)
        model.lstm_loop = loop
        model.use_autocast(dtype)
        approximate = embed_layers(model, sentences)
        scale = max(numpy.abs(e).max() for e in exact)
        error = max(numpy.abs(a - e).max() for a, e in zip(approximate, exact))
        assert 0 < error <= bound * scale, (seed, error / scale)
        assert all(a.dtype == numpy.float32 for a in approximate)


def test_use_autocast_rejects_other_dtypes():
    with pytest.raises(ValueError, match="autocast"):
        random_bilm().use_autocast(torch.float64)


def test_unknown_lstm_loop_is_an_error():
    model = random_bilm()
    model.lstm_loop = "fast"
    with pytest.raises(ValueError, match="lstm_loop"):
        embed_layers(model, [["a"]])


# ---------------------------------------------------------------------- conformance
@pytest.fixture(scope="module")
def reference(allennlp_fixtures):
    model = BiLM.from_allennlp(allennlp_fixtures / "options.json", allennlp_fixtures / "lm_weights.hdf5")
    with h5py.File(allennlp_fixtures / "expected_allennlp_stateless.hdf5", "r") as handle:
        sentences = json.loads(handle.attrs["sentences_json"])
        expected = [handle["layers_f64"][str(i)][...] for i in range(len(sentences))]
    return model, sentences, expected


def _via_forward(model, sentences, grad):
    ids, lengths = encode_sentences(sentences)
    with torch.set_grad_enabled(grad):
        layers = model(torch.from_numpy(ids), torch.from_numpy(lengths))
    layers = layers.detach().numpy()
    return [layers[:, row, : len(s)] for row, s in enumerate(sentences)]


def _with_loop(loop):
    def run(model, sentences):
        model.lstm_loop = loop
        try:
            return embed_layers(model, sentences)
        finally:
            model.lstm_loop = "fused"

    return run


def _cached_twice(model, sentences):
    embedder = Embedder(model, batch_sentences=7, word_cache_words=64)  # smaller than the vocabulary: evictions happen
    embedder.layers(sentences)
    embedder.batch_sentences = 5
    return embedder.layers(sentences)


SPEED_PATHS = {
    "default": lambda model, sentences: embed_layers(model, sentences),
    "word_cache": _cached_twice,
    "per_direction_loop": _with_loop("per_direction"),
    "windowed_loop": _with_loop("windowed"),
    "small_batches": lambda model, sentences: embed_layers(model, sentences, batch_sentences=3, batch_tokens=40),
    "one_big_batch": lambda model, sentences: embed_layers(model, sentences, batch_sentences=1000, batch_tokens=None),
    "forward_no_grad": lambda model, sentences: _via_forward(model, sentences, grad=False),
    "forward_autograd": lambda model, sentences: _via_forward(model, sentences, grad=True),
}


@pytest.mark.parametrize("path", sorted(SPEED_PATHS))
def test_every_speed_path_matches_the_reference_activations(reference, path):
    model, sentences, expected = reference
    actual = SPEED_PATHS[path](model, sentences)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        assert numpy.abs(got - want).max() <= CONFORMANCE_TOLERANCE


@pytest.mark.parametrize(
    "dtype,bound", [(torch.bfloat16, BF16_MAX_RELATIVE_ERROR), (torch.float16, FP16_MAX_RELATIVE_ERROR)]
)
def test_reduced_precision_on_the_reference_model(reference, dtype, bound):
    model, sentences, expected = reference
    model.use_autocast(dtype)
    try:
        actual = embed_layers(model, sentences)
    finally:
        model.use_autocast(None)
    scale = max(numpy.abs(e).max() for e in expected)
    assert max(numpy.abs(a - e).max() for a, e in zip(actual, expected)) <= bound * scale
