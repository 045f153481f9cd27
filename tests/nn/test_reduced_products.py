"""Products in bfloat16 and int8: exact int8 sums for any shape, error bounds against float32,
and the bias / accumulate forms the LSTM loop uses."""

import pytest
import torch

from spacy_elmo.nn import reduced_products
from spacy_elmo.nn.reduced_products import ReducedWeight, quantize_rows


@pytest.mark.parametrize("shape", [(1, 3, 5), (4, 6, 10), (17, 16, 24), (3, 64, 7), (70, 33, 129)])
def test_int_mm_takes_odd_shapes_on_cpus_exactly(shape):
    """No padding is needed: torch._int_mm on CPUs sums any shape exactly in int32."""
    m, k, n = shape
    generator = torch.Generator().manual_seed(sum(shape))
    a = torch.randint(-127, 128, (m, k), dtype=torch.int8, generator=generator)
    b = torch.randint(-127, 128, (k, n), dtype=torch.int8, generator=generator)
    got = torch._int_mm(a, b)
    assert got.dtype == torch.int32
    assert torch.equal(got, a.to(torch.int32) @ b.to(torch.int32))


def test_rows_are_quantized_symmetrically_each_by_its_own_scale():
    x = torch.tensor([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [300.0, 1.0, -150.0]])
    q, scale = quantize_rows(x)
    assert q.dtype == torch.int8
    torch.testing.assert_close(scale, torch.tensor([1.0 / 127, 0.0, 300.0 / 127]))
    assert q[0].tolist() == [64, -127, 32] and q[1].tolist() == [0, 0, 0] and q[2].tolist() == [127, 0, -64]
    assert ((q.to(torch.float32) * scale[:, None] - x).abs() <= scale[:, None] / 2 * (1 + 1e-5)).all()


@pytest.mark.parametrize("precision,mean_bound,max_bound", [("bfloat16", 4e-3, 2.5e-2), ("int8", 1.3e-2, 7e-2)])
def test_products_are_close_to_float32(precision, mean_bound, max_bound):
    """Relative to the mean magnitude of the float32 product. Measured (seed 0, 200 x 300 by
    300 x 150, so more than one row block; Gaussian values): bfloat16 mean 2.9e-3, max 1.7e-2;
    int8 mean 1.0e-2, max 5.5e-2."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(200, 300, generator=generator)
    weight = torch.randn(150, 300, generator=generator)
    bias = torch.randn(150, generator=generator)
    want = x @ weight.t()
    held = ReducedWeight(weight, precision)
    got = held.product_into(x, torch.empty(200, 150))
    scale = want.abs().mean()
    error = (got - want).abs() / scale
    assert 1e-4 < error.mean() < mean_bound  # reduced (not float32), and close
    assert error.max() < max_bound
    with_bias = held.product_into(x, torch.empty(200, 150), bias)
    torch.testing.assert_close(with_bias, got + bias, atol=1e-5, rtol=1e-5)
    start = torch.randn(200, 150, generator=generator)
    accumulated = held.product_into(x, start.clone(), accumulate=True)
    torch.testing.assert_close(accumulated, start + got, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_row_blocks_give_each_row_the_same_result(monkeypatch, precision):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(10, 40, generator=generator)
    held = ReducedWeight(torch.randn(24, 40, generator=generator), precision)
    whole = held.product_into(x, torch.empty(10, 24))
    monkeypatch.setattr(reduced_products, "BLOCK_ROWS", 3)
    blocked = held.product_into(x, torch.empty(10, 24))
    if precision == "int8":  # per-row scales and exact sums: the same bits in any block
        assert torch.equal(blocked, whole)
    else:
        torch.testing.assert_close(blocked, whole, atol=1e-6, rtol=1e-6)


def test_weights_are_converted_once_and_bad_arguments_refused():
    weight = torch.randn(8, 4)
    held = ReducedWeight(weight, "int8")
    assert held.matrix.dtype == torch.int8 and tuple(held.matrix.shape) == (4, 8)  # (in, out)
    assert held.scale is not None and tuple(held.scale.shape) == (8,)
    assert ReducedWeight(weight, "bfloat16").matrix.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="'bfloat16', 'float16' or 'int8'"):
        ReducedWeight(weight, "float32")
    with pytest.raises(ValueError, match="must be a matrix"):
        ReducedWeight(torch.randn(8), "int8")
