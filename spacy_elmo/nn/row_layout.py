"""Row layouts under which one row of a batched computation does not depend on the other rows.

A word's layer-0 vector must be the same bits whichever words share its block (the word cache
returns what the uncached path computes). With the block's shape fixed, two more things decide
how a CPU rounds one row, and both depend on where the row sits in the block:

- the row's address. MKL's sgemm (2024.2, default mode; an AMD EPYC with AVX-512) sums a
  narrow product (outputs up to about 32 wide) in an order that depends on each input row's
  address modulo 16 bytes: with 15-float rows, moving a row down by one changed the last bits
  of most of its outputs (up to 2e-6). Rows padded with zero columns to a multiple of
  :data:`ROW_BYTES`, in buffers that torch allocates 64-byte aligned, all sit at the same
  alignment; the zero columns add exact zeros. Under ``MKL_CBWR`` the dependence is gone, and
  widths that are already multiples (every published model's) are left as they are.
- the thread split of element-wise functions. ATen divides a large tensor's elements evenly
  among threads and computes the last elements of each part (fewer than two vectors) with
  scalar code, whose ``sigmoid`` differs from the vector one in the last bit for about 4% of
  inputs; a split falls inside a row whenever ``numel / threads`` is not a multiple of the
  row width (3 threads, say). :func:`rowwise_` applies such functions to groups of rows small
  enough that ATen keeps each call on one thread, so every row is computed the same way.
"""

from __future__ import annotations

from typing import Callable

import torch

#: Row widths (in bytes) of padded operands: a cache line, one AVX-512 vector.
ROW_BYTES = 64
#: ATen runs an element-wise call on one thread below its grain of 32,768 elements.
SERIAL_ELEMENTS = 16384


def aligned_width(width: int, dtype: torch.dtype, row_bytes: int = ROW_BYTES) -> int:
    """``width`` rounded up so that a row of ``dtype`` takes a multiple of ``row_bytes``."""
    per_row = max(1, row_bytes // torch.empty((), dtype=dtype).element_size())
    return -(-width // per_row) * per_row


def padded_columns(matrix: torch.Tensor, width: int) -> torch.Tensor:
    """``matrix`` ``(rows, w)`` followed by zero columns up to ``width``: a new, contiguous
    (hence 64-byte aligned) tensor, or ``matrix`` itself when it is already that wide and contiguous."""
    if matrix.shape[-1] == width and matrix.is_contiguous():
        return matrix
    result = matrix.new_zeros(*matrix.shape[:-1], width)
    result[..., : matrix.shape[-1]] = matrix
    return result


def rowwise_(function: Callable[[torch.Tensor], torch.Tensor], matrix: torch.Tensor) -> torch.Tensor:
    """Apply the in-place element-wise ``function`` (``torch.Tensor.sigmoid_``, say) to
    ``matrix`` ``(rows, width)`` in groups of rows that each run on one thread; returns ``matrix``."""
    rows, width = matrix.shape
    if matrix.device.type != "cpu" or rows * width <= SERIAL_ELEMENTS or torch.get_num_threads() == 1:
        function(matrix)
        return matrix
    group = 1
    while group * 2 * width <= SERIAL_ELEMENTS:  # a power of two: whole groups tile a block
        group *= 2
    for start in range(0, rows, group):
        function(matrix[start : start + group])
    return matrix
