"""The cell's arithmetic, shared by the inference and training loops, against the plain formulas."""

import pytest
import torch

from spacy_elmo.nn.lstm.cell import cell_update_, tanh_into


def test_tanh_is_within_a_few_float32_ulps_of_torch():
    x = torch.linspace(-30, 30, 200_001)
    ours = tanh_into(x, x.clone())
    assert float((ours.double() - torch.tanh(x.double())).abs().max()) <= 4e-7
    assert float(ours.abs().max()) <= 1.0


@pytest.mark.parametrize("cell_clip", [None, 0.7])
@pytest.mark.parametrize("in_place", [True, False])
def test_one_step_is_the_lstm_cell(cell_clip, in_place):
    generator = torch.Generator().manual_seed(0)
    gates = torch.randn(2, 3, 16, generator=generator, dtype=torch.float64) * 2
    previous = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    i, j, f, o = gates.chunk(4, dim=-1)
    raw = torch.sigmoid(f) * previous + torch.sigmoid(i) * torch.tanh(j)
    cells = raw.clamp(-cell_clip, cell_clip) if cell_clip else raw
    outputs = torch.sigmoid(o) * torch.tanh(cells)

    state = previous.clone() if in_place else torch.empty_like(previous)
    got_outputs, tanh_cells, passes = torch.empty_like(previous), torch.empty_like(previous), torch.empty_like(previous)
    cell_update_(
        gates.clone(),
        state if in_place else previous,
        state,
        got_outputs,
        cell_clip,
        tanh_cells=tanh_cells,
        clip_passes=passes,
    )
    torch.testing.assert_close(state, cells, rtol=0, atol=1e-12)
    torch.testing.assert_close(got_outputs, outputs, rtol=0, atol=1e-12)
    torch.testing.assert_close(tanh_cells, torch.tanh(cells), rtol=0, atol=1e-12)
    if cell_clip:
        assert torch.equal(passes, (raw.abs() <= cell_clip).double())
        assert (passes == 0).any()
