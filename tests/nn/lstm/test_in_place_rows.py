"""The in-place loop gives a row the same bits alone and in a batch (issue 33, item 1).

Widths that are not whole 64-byte lines are padded with zero units, so every row sits at the
same alignment (MKL's summation order for narrow products followed a row's address), and up to
512 cells the projection is one 4-row product per group, whatever the step's row count. Before,
with 10 cells projected to 6 (or 9 to 5), rows in batches of 17 or 40 differed from the row
alone by up to 6e-8 (the cases with whole lines passed already)."""

import pytest
import torch

from spacy_elmo.nn.lstm import LstmStack, run_time_major


@pytest.mark.skipif(
    not torch.backends.mkl.is_available(),
    reason="relies on MKL's row-count-independent rounding",
)
@pytest.mark.parametrize("cell, proj", [(10, 6), (9, 5), (64, 16), (512, 128)])
def test_a_row_gets_the_same_bits_alone_and_in_any_batch(cell, proj):
    torch.manual_seed(0)
    stacks = [LstmStack(proj, cell, proj, 2, cell_clip=3.0, proj_clip=3.0) for _ in range(2)]
    steps = 20
    for batch in (5, 16, 40):
        inputs = torch.randn(2, steps, batch, proj)
        with torch.no_grad():
            together = run_time_major(stacks, inputs, [batch] * steps)
            for row in (0, batch // 2, batch - 1):
                alone = run_time_major(stacks, inputs[:, :, row : row + 1], [1] * steps)
                for layer_alone, layer_all in zip(alone, together):
                    assert torch.equal(layer_alone[:, :, 0], layer_all[:, :, row]), (
                        batch,
                        row,
                    )


def test_padded_widths_give_the_reference_loop_s_layers():
    torch.manual_seed(1)
    stacks = [LstmStack(7, 10, 6, 2, cell_clip=1.0, proj_clip=0.8) for _ in range(2)]
    inputs = torch.randn(2, 12, 3, 7)
    active = [3] * 8 + [2] * 3 + [1]
    for row, length in enumerate([12, 11, 8]):
        inputs[:, length:, row] = 0.0
    with torch.no_grad():
        fast = run_time_major(stacks, inputs, active)
        reference = run_time_major(stacks, inputs, active, per_direction=True)
    for got, want in zip(fast, reference):
        assert got.shape == want.shape == (2, 12, 3, 6)
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
