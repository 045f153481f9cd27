"""Products ``x @ W^T`` in a reduced precision with float32 results, for inference.

bfloat16 / float16: ``W`` rounded once, ``x`` at every product, the backend's GEMM in that dtype.
int8: ``W`` quantized once per row, ``x`` per row at every product (:mod:`.int8_kernels`)."""

from __future__ import annotations

from typing import Optional

import torch

from .int8_kernels import INT8_LEVELS, Int8Matrix, quantize_rows

__all__ = ["BLOCK_ROWS", "INT8_LEVELS", "ReducedWeight", "quantize_rows"]

#: Rows per product call (see :meth:`ReducedWeight.product_into`).
BLOCK_ROWS = 128


class ReducedWeight:
    """A weight ``(out, in)`` held for products in ``precision`` ("bfloat16", "float16" or "int8")."""

    def __init__(self, weight: torch.Tensor, precision: str) -> None:
        if weight.dim() != 2:
            raise ValueError(f"a reduced-precision weight must be a matrix, not of shape {tuple(weight.shape)}")
        self.precision = precision
        self.out_features, self.in_features = weight.shape
        weight = weight.detach().to(torch.float32)
        self.scale: Optional[torch.Tensor] = None
        self.int8: Optional[Int8Matrix] = None
        self.dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(precision)
        if self.dtype is not None:
            # (out, in) rows read through a transposed view: the faster layout for oneDNN
            self.matrix = weight.to(self.dtype).contiguous()
        elif precision == "int8":
            quantized, self.scale = quantize_rows(weight)
            self.int8 = Int8Matrix(quantized, self.scale)
            # (in, out): a plain tensor for _int_mm, or oneDNN's prepacked (opaque) one
            self.matrix = self.int8.matrix
        else:
            raise ValueError(f"reduced precision must be 'bfloat16', 'float16' or 'int8', not {precision!r}")

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
        if self.dtype is not None:
            result = torch.mm(x.to(self.dtype), self.matrix.t())
            if accumulate:
                out.add_(result.to(torch.float32))
            else:
                out.copy_(result)
                if bias is not None:
                    out.add_(bias)
            return
        assert self.int8 is not None
        # (rows, out) float32 sums times the weight's scales; each row's own scale comes last
        scaled, row_scale = self.int8.scaled_sums(x)
        if accumulate:
            out.addcmul_(scaled, row_scale[:, None])
        elif bias is not None:
            torch.addcmul(bias, scaled, row_scale[:, None], out=out)
        else:
            torch.mul(scaled, row_scale[:, None], out=out)
