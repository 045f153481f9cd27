"""The GPU paths compute what the CPU ones do: CUDA-graph replays of the window loop, the
char-CNN's convolution path, the word cache. Run only where a CUDA device is present; the CPU
test at the top checks the convolution path's arithmetic everywhere."""

import copy

import numpy
import pytest
import torch

from spacy_elmo import embed_layers
from spacy_elmo.nn import BiLM, BiLMConfig
from spacy_elmo.nn.lstm import active_rows, run_time_major
from spacy_elmo.nn.lstm.graphed import run_graphed
from spacy_elmo.nn.words import char_cnn_tables

from .test_speed_paths import LENGTHS, random_bilm, random_sentences, random_stacks, time_major_inputs

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_convolution_path_equals_table_path():
    """The GPU's char-CNN path (cuDNN convolutions), run here on the CPU, against the tables."""
    model = random_bilm(seed=30, scale=0.1)
    ids = torch.randint(1, 262, (300, 50))
    ids[:, 20:] = 0  # words end: padding chars, as real ids have
    tables = char_cnn_tables.encode_words(model.char_encoder, ids)
    with torch.no_grad():
        convolutions = char_cnn_tables._encode_block_by_convolution(model.char_encoder, ids)
    torch.testing.assert_close(convolutions, tables, atol=1e-5, rtol=0)


@needs_cuda
@pytest.mark.parametrize("compute_dtype", [None, torch.bfloat16])
@pytest.mark.parametrize("row_bucket", [1, 32])  # 1: a smaller graph takes over as rows finish
def test_graphs_replay_what_the_eager_windows_compute(small_windows, compute_dtype, row_bucket):
    stacks = [stack.cuda() for stack in random_stacks(torch.float32, seed=17)]
    inputs = time_major_inputs(LENGTHS, 6, torch.float32).cuda()
    other = time_major_inputs(LENGTHS, 6, torch.float32, seed=1).cuda()
    active = active_rows(LENGTHS, max(LENGTHS))

    def windows(values, use_graphs):
        return run_graphed(stacks, values, active, compute_dtype, use_graphs=use_graphs, row_bucket=row_bucket)

    with torch.no_grad():
        eager, other_eager = windows(inputs, False), windows(other, False)
        graphed = windows(inputs, True)
        other_graphed = windows(other, True)  # replays the same graphs
        replayed = windows(inputs, True)
    for got, want, second in zip(graphed, eager, replayed):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
        torch.testing.assert_close(second, got, atol=0, rtol=0)
    for got, want in zip(other_graphed, other_eager):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
    reference = run_time_major(stacks, inputs, active, per_direction=True)
    if compute_dtype is None:
        for got, want in zip(graphed, reference):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


@needs_cuda
def test_gpu_bilm_matches_cpu_bilm():
    model = random_bilm(seed=18, scale=0)  # default initialisation: well-conditioned
    sentences = random_sentences(19, 40, max_len=40)
    on_cpu = embed_layers(model, sentences)
    model.cuda()
    on_gpu = embed_layers(model, sentences)
    model.cuda_graphs = False
    on_gpu_eager = embed_layers(model, sentences)
    scale = max(numpy.abs(c).max() for c in on_cpu)
    for gpu, gpu_eager, cpu in zip(on_gpu, on_gpu_eager, on_cpu):
        numpy.testing.assert_allclose(gpu, cpu, atol=1e-5 * scale, rtol=0)
        numpy.testing.assert_allclose(gpu_eager, cpu, atol=1e-5 * scale, rtol=0)


@needs_cuda
def test_gpu_results_do_not_share_the_staging_buffer():
    model = random_bilm(seed=33).cuda()
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
    on_gpu = char_cnn_tables.encode_words(encoder.cuda(), ids.cuda()).cpu().double()
    assert torch.backends.cudnn.allow_tf32  # the caller's setting is restored
    error = (on_gpu - exact).abs().max() / exact.abs().max()
    assert error < 2e-6, error
