"""The window loop behind the GPU path computes what the reference loop does.

On CPUs the windows run eagerly (the same code a CUDA graph records); ``test_gpu_paths.py``
records and replays real graphs where a GPU is present.
"""

import numpy
import pytest
import torch

from spacy_elmo import embed_layers
from spacy_elmo.nn.lstm import LstmStack, active_rows, run_time_major
from spacy_elmo.nn.lstm import graphed as lstm_graphed
from spacy_elmo.nn.lstm.graphed import run_graphed

from ..test_speed_paths import LENGTHS, random_bilm, random_sentences, random_stacks, time_major_inputs


@pytest.mark.parametrize("dtype,tolerance", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
@pytest.mark.parametrize("row_bucket", [1, 8, 32])
def test_window_loop_equals_per_direction_loop(small_windows, dtype, tolerance, row_bucket):
    stacks = random_stacks(dtype, seed=11)
    inputs = time_major_inputs(LENGTHS, 6, dtype)
    active = active_rows(LENGTHS, max(LENGTHS))
    with torch.no_grad():
        reference = run_time_major(stacks, inputs, active, per_direction=True)
        windowed = run_graphed(stacks, inputs, active, use_graphs=False, row_bucket=row_bucket)
    assert len(windowed) == len(reference) == 3
    for got, want in zip(windowed, reference):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, atol=tolerance, rtol=0)


def test_window_loop_keeps_padding_zero(small_windows):
    stacks = random_stacks(torch.float32, seed=12)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    with torch.no_grad():
        outputs = run_graphed(stacks, inputs, active_rows(LENGTHS, max(LENGTHS)), use_graphs=False)
    for layer in outputs:
        for row, length in enumerate(LENGTHS):
            assert (layer[:, length:, row] == 0).all()
            assert (layer[:, :length, row] != 0).any()


def test_window_loop_without_steps_or_rows():
    stacks = random_stacks(torch.float32)
    with torch.no_grad():
        for shape in [(2, 0, 3, 6), (2, 4, 0, 6)]:
            outputs = run_graphed(stacks, torch.zeros(shape), [0] * shape[1], use_graphs=False)
            assert [tuple(o.shape) for o in outputs] == [shape[:3] + (5,)] * 3


def test_window_loop_follows_parameter_changes(small_windows):
    """Window weights (and, on a GPU, the graphs recorded over them) are rebuilt on any change."""
    stacks = random_stacks(torch.float32, seed=13)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    active = active_rows(LENGTHS, max(LENGTHS))
    with torch.no_grad():
        before = run_graphed(stacks, inputs, active, use_graphs=False)
        stacks[0].layers[2].projection_weight.mul_(0.5)
        stacks[1].layers[0].input_weight.add_(0.1)
        after = run_graphed(stacks, inputs, active, use_graphs=False)
        reference = run_time_major(stacks, inputs, active, per_direction=True)
    assert not torch.equal(before[2], after[2])
    for got, want in zip(after, reference):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_runners_per_layer_are_bounded(monkeypatch):
    monkeypatch.setattr(lstm_graphed, "MAX_GRAPHS_PER_LAYER", 2)
    stacks = random_stacks(torch.float32, seed=14)
    with torch.no_grad():
        for batch in [1, 2, 3, 4]:
            lengths = [5] * batch
            run_graphed(
                stacks, time_major_inputs(lengths, 6, torch.float32), [batch] * 5, use_graphs=False, row_bucket=1
            )
    layer = lstm_graphed._graphed_layer(stacks, 0, None, torch.zeros(1))
    assert [rows for rows, _ in layer._runners] == [3, 4]


def test_windowed_bilm_equals_default_bilm():
    model = random_bilm(seed=15)
    sentences = random_sentences(16, 30, max_len=40)
    fused = embed_layers(model, sentences, batch_sentences=9)
    model.lstm_loop = "windowed"
    windowed = embed_layers(model, sentences, batch_sentences=9)
    for got, want in zip(windowed, fused):
        numpy.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_window_buffers_made_in_inference_mode_serve_no_grad_calls():
    """embed_layers runs under inference_mode, forward() under no_grad: both reuse the buffers."""
    from spacy_elmo.nn.words.char_ids import encode_sentences

    model = random_bilm(seed=20)
    model.lstm_loop = "windowed"
    sentences = random_sentences(21, 6)
    first = embed_layers(model, sentences)
    ids, lengths = encode_sentences(sentences)
    with torch.no_grad():
        layers = model(torch.from_numpy(ids), torch.from_numpy(lengths)).numpy()
    for row, (sentence, expected) in enumerate(zip(sentences, first)):
        numpy.testing.assert_allclose(layers[:, row, : len(sentence)], expected, atol=1e-6, rtol=0)
    for again, expected in zip(embed_layers(model, sentences), first):
        numpy.testing.assert_array_equal(again, expected)


def test_default_path_records_graphs_only_where_launches_dominate(monkeypatch):
    """The rule itself (the device is faked: graphs_pay only reads shapes and sizes)."""
    monkeypatch.setattr(lstm_graphed, "graphs_available", lambda inputs: True)
    original = [LstmStack(512, 4096, 512, 2) for _ in range(2)]
    small = [LstmStack(128, 1024, 128, 2) for _ in range(2)]

    def pays(stacks, rows, dtype=None):
        inputs = torch.zeros(2, 1, rows, stacks[0].layers[0].input_dim)
        return lstm_graphed.graphs_pay(stacks, inputs, dtype)

    assert pays(small, 32) and pays(small, 128) and not pays(small, 129)
    assert not pays(original, 32)  # float32 matmuls keep the GPU busy: no gain measured
    assert pays(original, 32, torch.bfloat16) and not pays(original, 512, torch.bfloat16)
