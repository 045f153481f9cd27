"""The GPU's paths (skipped without CUDA): the same function as on the CPU, and the precisions
that run only there."""

import copy
import random

import numpy
import pytest
import torch

from spacy_elmo import embed_layers
from spacy_elmo.nn import TINY_CONFIG, BiLM, BiLMConfig

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
WORDS = "the bank raised interest rates they sat by river a of to in and 日本 🙂 é x".split()


def _sentences(seed, n, max_len=40):
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(1, max_len))] for _ in range(n)]


@needs_cuda
def test_gpu_bilm_matches_cpu_bilm():
    torch.manual_seed(18)
    model = BiLM(TINY_CONFIG).eval()  # default initialisation: well-conditioned
    sentences = _sentences(19, 40)
    on_cpu = embed_layers(model, sentences)
    on_gpu = embed_layers(model.cuda(), sentences)
    scale = max(numpy.abs(c).max() for c in on_cpu)
    for gpu, cpu in zip(on_gpu, on_cpu):
        numpy.testing.assert_allclose(gpu, cpu, atol=1e-5 * scale, rtol=0)


@needs_cuda
@pytest.mark.parametrize("precision,bound", [("bfloat16", 0.01), ("float16", 0.002)])
def test_reduced_precision_on_a_gpu_stays_within_its_bound(precision, bound):
    """Error as a fraction of the largest float32 activation."""
    torch.manual_seed(20)
    model = BiLM(TINY_CONFIG).eval().cuda()
    sentences = _sentences(21, 30)
    full = embed_layers(model, sentences)
    reduced = embed_layers(model, sentences, precision=precision)
    scale = max(numpy.abs(f).max() for f in full)
    assert 0 < max(numpy.abs(r - f).max() for r, f in zip(reduced, full)) <= bound * scale


@needs_cuda
def test_gpu_results_do_not_share_the_staging_buffer():
    model = BiLM(TINY_CONFIG).eval().cuda()
    first = embed_layers(model, [["one", "sentence"]])
    snapshot = first[0].copy()
    embed_layers(model, [["another", "one", "entirely"]])
    numpy.testing.assert_array_equal(first[0], snapshot)


@needs_cuda
def test_layer_0_stays_float32_when_cudnn_may_use_tf32(monkeypatch):
    """With TF32 allowed (torch's default for cuDNN), wide convolutions would lose ~1e-3."""
    torch.manual_seed(35)
    config = BiLMConfig(filters=((1, 32), (3, 256), (7, 1024)), n_highway=1, lstm_dim=32, projection_dim=16)
    encoder = BiLM(config).char_encoder.eval()
    ids = torch.randint(1, 262, (2000, 50))
    ids[:, 12:] = 0
    with torch.no_grad():
        exact = copy.deepcopy(encoder).double()(ids)
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
        on_gpu = encoder.cuda()(ids.cuda()).cpu().double()
    assert torch.backends.cudnn.allow_tf32  # the caller's setting is restored
    error = (on_gpu - exact).abs().max() / exact.abs().max()
    assert error < 2e-6, error
