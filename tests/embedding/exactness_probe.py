"""The exactness contract of docs/reliability.md, checked in one process:

1. a sentence's layers agree, within :data:`BATCH_BOUND` of each layer's largest magnitude (at
   least 1), alone, in batches of other sentences, and through the word cache cold and warm;
2. every layer is within :data:`FLOAT64_BOUND` of a float64 run: on AllenNLP's and
   ELMoForManyLangs' reference fixtures and on a clipped model with long sentences;
3. a repeated call gives the same bits.

``test_exactness.py`` runs it in a subprocess per BLAS setting (``MKL_ENABLE_INSTRUCTIONS``,
``MKL_CBWR``, threads), since MKL reads those once, when the process starts:

    python -m tests.embedding.exactness_probe [THREADS]

prints one JSON list of the checks that failed (empty when all hold).
"""

from __future__ import annotations

import copy
import json
import random
import sys

import numpy
import torch

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.config import CHAR_MARKERS, TINY_CONFIG, BiLMConfig, Lexicon
from spacy_elmo.loading import load_bilm
from spacy_elmo.nn import BiLM
from spacy_elmo.nn.words import char_tables

from ..conftest import (
    ALLENNLP_FIXTURES,
    BATCH_BOUND,
    FLOAT64_BOUND,
    MANY_LANGS_FIXTURES,
    MANY_LANGS_MODELS,
    many_langs_reference,
    relative_difference,
)

LETTERS = "abcdefghijklmnopqrstuvwxyzéßøñçü日本語中文北京😀🙂"


def randomized(bilm: BiLM, scale: float, seed: int = 0) -> BiLM:
    torch.manual_seed(seed)
    with torch.no_grad():
        for parameter in bilm.parameters():
            parameter.normal_(0.0, scale)
    return bilm.eval()


def other_sentences(seed: int, alphabet: str, count: int = 40, max_len: int = 30) -> list[list[str]]:
    """Sentences of random words over ``alphabet``: other characters, widths and lengths."""
    rng = random.Random(seed)
    word = lambda: "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))  # noqa: E731
    return [[word() for _ in range(rng.randint(1, max_len))] for _ in range(count)]


def large_alphabet_model() -> tuple[BiLM, str]:
    """A code-point model whose alphabet is too large for the full tables (once the limit is
    lowered): each batch builds the tables of the characters it uses."""
    letters = list(dict.fromkeys([chr(0x4E00 + i) for i in range(300)] + list(LETTERS)))
    chars = {c: i for i, c in enumerate(letters + list(CHAR_MARKERS))}
    config = BiLMConfig(
        char_embed_dim=5,
        filters=((1, 4), (2, 5), (3, 6)),
        n_highway=2,
        lstm_dim=10,
        projection_dim=6,
        n_layers=2,
        char_encoding="code_points",
        max_characters_per_token=12,
        n_characters=len(chars) + 1,
        cell_clip=1.0,
        proj_clip=0.8,
    )
    return randomized(BiLM(config, lexicon=Lexicon(chars)), 0.5), "".join(letters)


def clipped_model() -> BiLM:
    """bilm-tf's clips at 3 biting: large input and projection weights, as in a trained model."""
    torch.manual_seed(0)
    config = BiLMConfig(filters=((1, 32), (2, 32), (3, 64), (4, 128)), n_highway=2, lstm_dim=512, projection_dim=128)
    bilm = BiLM(config).eval()
    with torch.no_grad():
        for stack in (bilm.forward_lstm, bilm.backward_lstm):
            for layer in stack.layers:
                layer.input_weight.mul_(4.0)
                layer.projection_weight.mul_(4.0)
    return bilm


def largest_difference(expected: list, got: list) -> float:
    return max(float(numpy.abs(want - have).max(initial=0.0)) for want, have in zip(expected, got))


def check_batches(name: str, bilm: BiLM, sentences: list, others: list) -> list[str]:
    """Each of ``sentences`` alone, among ``others`` in batches of 3 and in one batch, through
    the word cache cold, warm and in reverse order; and a repeated call."""
    alone = [embed_layers(bilm, [sentence])[0] for sentence in sentences]
    mixed = others[: len(others) // 2] + sentences + others[len(others) // 2 :]
    ours = slice(len(others) // 2, len(others) // 2 + len(sentences))
    cached = Embedder(bilm, batch_sentences=len(mixed), word_cache_words=100_000)
    arrangements = {
        "in batches of 3": embed_layers(bilm, mixed, batch_sentences=3)[ours],
        "in one batch": embed_layers(bilm, mixed, batch_sentences=len(mixed))[ours],
        "word cache, cold": cached.layers(mixed)[ours],
        "word cache, warm": cached.layers(mixed)[ours],
        "word cache, warm, reversed": cached.layers(mixed[::-1])[::-1][ours],
    }
    failures = []
    for label, layers in arrangements.items():
        difference = relative_difference(alone, layers)
        if difference > BATCH_BOUND:
            failures.append(f"{name}: {label}: layers differ from the sentences alone by {difference:.3g} (relative)")
    again = embed_layers(bilm, mixed, batch_sentences=len(mixed))[ours]
    if any(not numpy.array_equal(a, b) for a, b in zip(arrangements["in one batch"], again)):
        failures.append(f"{name}: a repeated call gave other bits")
    return failures


def check_float64(name: str, bilm: BiLM, sentences: list, reference: list | None = None) -> list[str]:
    """Float32 layers against the same weights in float64 (and against ``reference``, float64
    layers of the reference implementation, when given)."""
    got = embed_layers(bilm, sentences)
    references = {"float64": embed_layers(copy.deepcopy(bilm).double(), sentences)}
    if reference is not None:
        references["the reference implementation"] = reference
    failures = []
    for label, expected in references.items():
        difference = largest_difference(expected, got)
        if difference > FLOAT64_BOUND:
            failures.append(f"{name}: layers differ from {label} by {difference:.3g}")
    return failures


def allennlp_reference() -> tuple[BiLM, list, list] | None:
    if not (ALLENNLP_FIXTURES / "lm_weights.hdf5").is_file():
        return None
    import h5py

    bilm = BiLM.from_allennlp(ALLENNLP_FIXTURES / "options.json", ALLENNLP_FIXTURES / "lm_weights.hdf5")
    with h5py.File(ALLENNLP_FIXTURES / "expected_allennlp_stateless.hdf5", "r") as handle:
        sentences = json.loads(handle.attrs["sentences_json"])
        expected = [handle["layers_f64"][str(i)][...] for i in range(len(sentences))]
    return bilm, sentences, expected


def main() -> None:
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    failures = []
    with torch.inference_mode():
        for name in MANY_LANGS_MODELS:
            sentences, layers = many_langs_reference(name)
            chars = "".join(sorted({c for sentence in sentences for word in sentence for c in word}))
            bilm = load_bilm(MANY_LANGS_FIXTURES / f"{name}.model")
            failures += check_batches(name, bilm, sentences, other_sentences(1, chars + LETTERS))
            failures += check_float64(name, bilm, sentences, layers)
        reference = allennlp_reference()
        if reference is not None:
            bilm, sentences, expected = reference
            failures += check_batches("allennlp", bilm, sentences[:6], other_sentences(4, LETTERS))
            failures += check_float64("allennlp", bilm, sentences, expected)
        char_tables.FULL_TABLE_FLOATS = 0  # every batch builds the tables of its characters
        bilm, letters = large_alphabet_model()
        others = other_sentences(2, letters)
        failures += check_batches("large alphabet", bilm, others[:6], others[6:])
        char_tables.FULL_TABLE_FLOATS = 1 << 24
        others = other_sentences(3, LETTERS)
        failures += check_batches("tiny bytes", randomized(BiLM(TINY_CONFIG), 0.5), others[:6], others[6:])
        long_sentences = other_sentences(5, LETTERS[:12], count=12, max_len=100)
        clipped = clipped_model()
        failures += check_batches("clipped", clipped, long_sentences[:3], long_sentences[3:])
        failures += check_float64("clipped", clipped, long_sentences)
    print(json.dumps(failures))


if __name__ == "__main__":
    main()
