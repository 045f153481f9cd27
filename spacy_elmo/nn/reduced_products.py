"""Products ``x @ W^T`` in a reduced precision with float32 results, for inference.

bfloat16 / float16: ``W`` rounded once, ``x`` at every product, the backend's GEMM in that dtype.
int8: ``W`` quantized once per row, ``x`` per row at every product (symmetric, scale
``max|x| / 127``), multiplied by oneDNN's prepacked int8 linear (the weight in its VNNI layout,
the activations as uint8 at zero point 128: its native kernel; how it scales its sums varies
between CPUs, within int8's own error), or by ``torch._int_mm`` (exact, slower) where oneDNN's
ops are missing or fail a probe.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Optional

import torch

logger = logging.getLogger("spacy_elmo")

#: The largest int8 magnitude used: symmetric quantization keeps -128 out.
INT8_LEVELS = 127
#: oneDNN's activations are uint8: int8 levels shifted by this zero point.
ZERO_POINT = 128
#: How far oneDNN's scaled sums may be from the exact ones, relative to the largest (the probe).
PROBE_TOLERANCE = 1e-2
#: The kernel names :class:`Int8Matrix` takes.
KERNELS = ("onednn", "int_mm")


def _levels(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row of float32 ``x``: the quantized levels (integers in float32) and the scale."""
    scale = x.abs().amax(dim=1) / INT8_LEVELS
    divisor = torch.where(scale > 0, scale, 1.0)
    return (x / divisor[:, None]).round_().clamp_(-INT8_LEVELS, INT8_LEVELS), scale


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 quantization per row of float32 ``x`` ``(rows, n)``: ``(q, scale)`` with
    ``x ~ q * scale[:, None]``, ``scale = max|x_row| / 127`` (a zero row: zeros, scale 0)."""
    levels, scale = _levels(x)
    return levels.to(torch.int8), scale


def quantize_rows_shifted(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`quantize_rows` as uint8 ``q + 128`` (oneDNN's activation type), the same scale."""
    levels, scale = _levels(x)
    return levels.add_(ZERO_POINT).to(torch.uint8), scale


def _onednn_ops() -> tuple[Any, Any]:
    """oneDNN's int8 linear ops, or AttributeError where this torch lacks them."""
    return torch.ops.onednn.qlinear_prepack, torch.ops.onednn.qlinear_pointwise


def _onednn_product(
    packed: torch.Tensor, scale: torch.Tensor, zero_points: torch.Tensor, q: torch.Tensor
) -> torch.Tensor:
    """``float(q_int8 @ W^T) * scale`` for uint8 ``q`` (``q_int8 + 128``), float32."""
    _, pointwise = _onednn_ops()
    return pointwise(q, 1.0, ZERO_POINT, packed, scale, zero_points, None, 1.0, 0, torch.float32, "none", [], "")


@functools.lru_cache(maxsize=1)
def onednn_unavailable() -> Optional[str]:
    """Why oneDNN's int8 linear cannot serve here (one sentence, logged once), or None.

    A small product against an integer reference checks that the ops exist, run and sum right,
    with extreme rows among random ones: CPUs without VNNI multiply uint8 by int8 in pairs
    summed into int16, which can saturate there (``2 * 255 * 127 > 32767``).
    """
    generator = torch.Generator().manual_seed(0)
    weight = torch.randint(-INT8_LEVELS, INT8_LEVELS + 1, (24, 40), dtype=torch.int8, generator=generator)
    q = torch.randint(-INT8_LEVELS, INT8_LEVELS + 1, (5, 40), dtype=torch.int8, generator=generator)
    q[0], weight[0], weight[1] = INT8_LEVELS, INT8_LEVELS, -INT8_LEVELS
    scale = torch.ones(24)
    try:
        prepack, _ = _onednn_ops()
        got = _onednn_product(prepack(weight, None), scale, torch.zeros(24, dtype=torch.long), _shift(q))
    except (AttributeError, RuntimeError, TypeError) as error:
        reason = f"oneDNN's int8 linear is not usable in this torch ({type(error).__name__}: {error})"
    else:
        exact = (q.to(torch.int64) @ weight.to(torch.int64).t()).to(torch.float32)
        # Saturated (int16) sums are off by thousands; a scaling rounding by far less than int8's own error.
        if got.dtype == torch.float32 and bool(((got - exact).abs() <= PROBE_TOLERANCE * exact.abs().max()).all()):
            return None
        reason = "oneDNN's int8 linear gave wrong sums in this torch"
    logger.warning("ELMo int8: %s; using torch._int_mm (slower) instead.", reason.splitlines()[0])
    return reason


def _shift(q: torch.Tensor) -> torch.Tensor:
    return (q.to(torch.int16) + ZERO_POINT).to(torch.uint8)


class Int8Matrix:
    """An int8 weight ``(out, in)`` with its per-row float32 ``scale``, held for exact products
    by ``kernel`` (:data:`KERNELS`; default: oneDNN where usable, else ``_int_mm``)."""

    def __init__(self, quantized: torch.Tensor, scale: torch.Tensor, kernel: Optional[str] = None) -> None:
        if quantized.dtype != torch.int8 or quantized.dim() != 2:
            raise ValueError(
                f"an int8 weight must be an int8 matrix, not {quantized.dtype} of shape {tuple(quantized.shape)}"
            )
        if kernel is None:
            usable = quantized.device.type == "cpu" and onednn_unavailable() is None
            kernel = "onednn" if usable else "int_mm"
        if kernel not in KERNELS:
            raise ValueError(f"int8 kernel must be one of {', '.join(map(repr, KERNELS))}, not {kernel!r}")
        self.kernel = kernel
        self.scale = scale.to(torch.float32).contiguous()
        self.zero_points = torch.zeros(quantized.shape[0], dtype=torch.long, device=quantized.device)
        if kernel == "onednn":
            prepack, _ = _onednn_ops()
            # (in, out) in oneDNN's blocked layout: an opaque tensor, read only by the kernel
            self.matrix = prepack(quantized.contiguous(), None)
        else:
            # (in, out) contiguous: _int_mm's fastest operand layout on CPUs
            self.matrix = quantized.t().contiguous()

    def scaled_sums(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For float32 ``x`` ``(rows, in)``: ``(float(q @ W^T) * scale, row_scale)`` with ``q``,
        ``row_scale`` its per-row quantization; ``x @ W^T ~ result * row_scale[:, None]``."""
        if self.kernel == "onednn":
            shifted, row_scale = quantize_rows_shifted(x)
            return _onednn_product(self.matrix, self.scale, self.zero_points, shifted), row_scale
        q, row_scale = quantize_rows(x)
        return torch._int_mm(q, self.matrix).to(torch.float32).mul_(self.scale), row_scale


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
