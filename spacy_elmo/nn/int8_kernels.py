"""Int8 products for :mod:`.reduced_products`: oneDNN's prepacked linear, else ``torch._int_mm``.

Both return ``float(q @ W^T) * scale`` for int8 activations ``q`` and an int8 weight with per-row
scales. oneDNN reorders the weight into its VNNI layout once and takes the activations as uint8
at zero point 128 (its native kernel); how it scales its sums varies between CPUs, within int8's
own error. ``torch._int_mm`` (exact, slower) serves where oneDNN's ops are missing or fail a probe."""

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
