"""Row layouts that keep one row's bits independent of the other rows (issue 33, item 1)."""

import pytest
import torch

from spacy_elmo.nn.row_layout import (
    SERIAL_ELEMENTS,
    aligned_width,
    padded_columns,
    rowwise_,
)


@pytest.mark.parametrize(
    "width, dtype, expected",
    [
        (15, torch.float32, 16),
        (16, torch.float32, 16),
        (17, torch.float32, 32),
        (2148, torch.float32, 2160),
        (7, torch.float64, 8),
        (9, torch.float64, 16),
        (1, torch.bfloat16, 32),
    ],
)
def test_widths_round_up_to_whole_64_byte_lines(width, dtype, expected):
    assert aligned_width(width, dtype) == expected


def test_padded_columns_append_zeros_in_an_aligned_copy():
    matrix = torch.randn(5, 15)
    padded = padded_columns(matrix, 16)
    assert padded.shape == (5, 16) and padded.is_contiguous() and padded.data_ptr() % 64 == 0
    assert torch.equal(padded[:, :15], matrix) and not padded[:, 15:].any()
    aligned = torch.randn(5, 16)
    assert padded_columns(aligned, 16) is aligned
    view = aligned[:, :16].t()  # right width, not contiguous: copied
    assert padded_columns(view, 5).is_contiguous()


@pytest.mark.parametrize("threads", [1, 3])
def test_rowwise_functions_give_every_row_the_bits_it_gets_alone(threads):
    """With 3 threads, ATen splits a (256, 320) sigmoid inside rows 85 and 170 and computes the
    ends of the parts with its scalar code, whose sigmoid differs from the vector one in the
    last bit for some inputs; in row groups each row is computed as it is alone."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        matrix = torch.randn(256, 640, generator=torch.Generator().manual_seed(0)) * 4
        gates = matrix[:, 320:]  # a strided half, as the highway's gates are
        expected = torch.stack([torch.sigmoid(row.clone()) for row in gates])
        assert gates.numel() > 2 * SERIAL_ELEMENTS  # large enough to be split among threads
        result = rowwise_(torch.Tensor.sigmoid_, gates)
        assert result is gates
        assert torch.equal(gates, expected)
    finally:
        torch.set_num_threads(previous)
