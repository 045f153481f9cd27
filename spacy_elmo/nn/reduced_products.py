"""Matrix products ``x @ W^T`` in bfloat16 or int8 with float32 results, for inference.

A :class:`ReducedWeight` converts a float32 weight ``W`` ``(out, in)`` once (the LSTM loop
keeps it with the layer's other derived tensors, :mod:`.derived_cache`) and then computes
products of float32 activations with it:

- bfloat16: ``W`` rounded to bfloat16 once; each product rounds ``x`` to bfloat16 and runs
  oneDNN's bfloat16 GEMM (float32 accumulation; AVX512-BF16 or AMX), whose bfloat16 result is
  added or copied into a float32 tensor;
- int8: ``W`` quantized once per output row (symmetric, ``scale = max|w| / 127``), ``x``
  quantized per row at every product the same way; ``torch._int_mm`` multiplies them
  (int8 x int8, exact int32 sums; AVX512-VNNI or AMX through oneDNN on CPUs) and the sums are
  scaled back to float32 by the two scales. The CPU kernel takes any shape (the tests check
  odd ones against exact integer products), so nothing is padded.

Nothing here is differentiable: these products serve inference only.
"""

from __future__ import annotations

from typing import Optional

import torch

#: The largest int8 magnitude used: symmetric quantization keeps -128 out.
INT8_LEVELS = 127
#: Rows per product call (see :meth:`ReducedWeight.product_into`).
BLOCK_ROWS = 128


class ReducedWeight:
    """A weight ``(out, in)`` held for products in ``precision`` ("bfloat16" or "int8")."""

    def __init__(self, weight: torch.Tensor, precision: str) -> None:
        if weight.dim() != 2:
            raise ValueError(f"a reduced-precision weight must be a matrix, not of shape {tuple(weight.shape)}")
        self.precision = precision
        self.out_features, self.in_features = weight.shape
        weight = weight.detach().to(torch.float32)
        self.scale: Optional[torch.Tensor] = None
        if precision == "bfloat16":
            # (out, in) rows read through a transposed view: the faster layout for oneDNN here
            self.matrix = weight.to(torch.bfloat16).contiguous()
        elif precision == "int8":
            quantized, self.scale = quantize_rows(weight)
            # (in, out) contiguous: _int_mm's fastest operand layout on CPUs (measured 1.5-2x)
            self.matrix = quantized.t().contiguous()
        else:
            raise ValueError(f"reduced precision must be 'bfloat16' or 'int8', not {precision!r}")

    def product_into(
        self, x: torch.Tensor, out: torch.Tensor, bias: Optional[torch.Tensor] = None, accumulate: bool = False
    ) -> torch.Tensor:
        """``out = x @ W^T (+ bias)``, or with ``accumulate`` ``out += x @ W^T``, in float32 ``out``
        ``(rows, out)`` for float32 ``x`` ``(rows, in)``; returns ``out``.

        Rows go in blocks of :data:`BLOCK_ROWS`: the intermediate results of a block stay small
        (a window's input products would otherwise allocate, and fault in, tens of MB per call).
        """
        for first in range(0, x.shape[0], BLOCK_ROWS):
            block = slice(first, first + BLOCK_ROWS)
            self._block_into(x[block], out[block], bias, accumulate)
        return out

    def _block_into(self, x: torch.Tensor, out: torch.Tensor, bias: Optional[torch.Tensor], accumulate: bool) -> None:
        # Every conversion is its own call: element-wise ops on mixed dtypes (float32 with
        # bfloat16 or int32) run unvectorized in ATen, 4-6x slower than a copy and a float op.
        if self.precision == "bfloat16":
            result = torch.mm(x.to(torch.bfloat16), self.matrix.t())
            if accumulate:
                out.add_(result.to(torch.float32))
            else:
                out.copy_(result)
                if bias is not None:
                    out.add_(bias)
            return
        assert self.scale is not None
        quantized, row_scale = quantize_rows(x)
        sums = torch._int_mm(quantized, self.matrix)  # (rows, out) int32, exact
        if accumulate:
            scaled = sums.to(torch.float32).mul_(self.scale)
            out.addcmul_(scaled, row_scale[:, None])
            return
        out.copy_(sums).mul_(self.scale)
        if bias is not None:
            torch.addcmul(bias, out, row_scale[:, None], out=out)
        else:
            out.mul_(row_scale[:, None])


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 quantization per row of float32 ``x`` ``(rows, n)``: ``(q, scale)`` with
    ``x ~ q * scale[:, None]``, ``scale = max|x_row| / 127`` (a zero row: zeros, scale 0)."""
    scale = x.abs().amax(dim=1) / INT8_LEVELS
    divisor = torch.where(scale > 0, scale, 1.0)
    quantized = (x / divisor[:, None]).round_().clamp_(-INT8_LEVELS, INT8_LEVELS).to(torch.int8)
    return quantized, scale
