"""Products in bfloat16 and int8: exact int8 sums for any shape, error bounds against float32,
the bias / accumulate forms the LSTM loop uses, and the two int8 kernels (oneDNN's prepacked linear
and torch._int_mm: the same sums, checked against an int64 product; oneDNN's absence falls back to
_int_mm, said once)."""

import logging

import pytest
import torch

from spacy_elmo.nn import reduced_products
from spacy_elmo.nn.reduced_products import Int8Matrix, ReducedWeight, quantize_rows, quantize_rows_shifted


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


needs_onednn = pytest.mark.skipif(
    reduced_products.onednn_unavailable() is not None, reason="oneDNN's int8 linear is not usable in this torch"
)


@pytest.fixture
def fresh_probe():
    """The probe's answer is cached per process: tests that change what it sees start and end afresh."""
    reduced_products.onednn_unavailable.cache_clear()
    yield
    reduced_products.onednn_unavailable.cache_clear()


def random_int8(shape, generator):
    return torch.randint(-127, 128, shape, dtype=torch.int8, generator=generator)


#: oneDNN's scaled sums against the exact ones, relative (measured up to 1.1e-3 on an AMX CPU).
ONEDNN_TOLERANCE = 4e-3


@pytest.mark.parametrize("kernel", [pytest.param("onednn", marks=needs_onednn), "int_mm"])
@pytest.mark.parametrize(
    "rows,inner,out,extreme",
    [
        (1, 3, 5, False),
        (0, 8, 4, False),
        (7, 40, 48, False),
        (33, 129, 70, False),
        (5, 4096, 96, True),
        (130, 1100, 17, True),
    ],
)
def test_each_kernel_sums_then_scales_per_output(kernel, rows, inner, out, extreme):
    """``float32(exact int sum) * scale``, for odd shapes and, with ``extreme``, sums past
    2**24 of either sign: exactly with ``torch._int_mm``; with oneDNN, whose scaling rounds
    differently on different CPUs (in lower precision on AMX), within a tolerance far inside
    int8's own error."""
    generator = torch.Generator().manual_seed(rows + inner + out)
    weight = random_int8((out, inner), generator)
    x = random_int8((rows, inner), generator).to(torch.float32)
    x[:, 0] = 127.0  # each row's max |x| is 127: its quantization is x itself, scale 1
    if extreme:
        x[0] = 127.0
        weight[0], weight[1] = 127, -127
    scale = torch.rand(out, generator=generator) * 0.01 + 1e-4
    held = Int8Matrix(weight, scale, kernel)
    assert held.kernel == kernel
    q, row_scale = quantize_rows(x)
    assert torch.equal(q.to(torch.float32), x) and torch.equal(row_scale, torch.ones(rows))
    exact = q.to(torch.int64) @ weight.to(torch.int64).t()
    assert extreme == bool((exact.abs() > 2**24).any())
    got, row_scale = held.scaled_sums(x)
    assert got.dtype == torch.float32 and tuple(got.shape) == (rows, out)
    assert torch.equal(row_scale, torch.ones(rows))
    want = exact.to(torch.float32) * scale
    if kernel == "int_mm":
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(
            got, want, rtol=ONEDNN_TOLERANCE, atol=ONEDNN_TOLERANCE * max(1.0, float(want.abs().max())) if rows else 1.0
        )


@needs_onednn
@pytest.mark.parametrize("rows", [1, 6, 32, 129, 300])
def test_both_kernels_agree_in_every_product_form(rows):
    generator = torch.Generator().manual_seed(rows)
    weight = torch.randn(72, 56, generator=generator)
    bias = torch.randn(72, generator=generator)
    x = torch.randn(rows, 56, generator=generator) * torch.rand(rows, 1, generator=generator) * 10
    x[rows // 2] = 0.0  # a zero row: scale 0, zeros out
    onednn = ReducedWeight(weight, "int8")
    assert onednn.int8 is not None and onednn.int8.kernel == "onednn"
    int_mm = ReducedWeight(weight, "int8")
    assert int_mm.int8 is not None
    int_mm.int8 = Int8Matrix(quantize_rows(weight)[0], int_mm.int8.scale, "int_mm")
    start = torch.randn(rows, 72, generator=generator)
    for options in ({}, {"bias": bias}, {"accumulate": True}):
        a = onednn.product_into(x, start.clone(), **options)
        b = int_mm.product_into(x, start.clone(), **options)
        torch.testing.assert_close(a, b, rtol=ONEDNN_TOLERANCE, atol=ONEDNN_TOLERANCE * float(b.abs().max()))
    assert (onednn.product_into(x, torch.empty(rows, 72), bias)[rows // 2] == bias).all()


def test_shifted_quantization_is_the_signed_one_plus_128():
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(9, 31, generator=generator) * 5
    x[4] = 0.0
    q, scale = quantize_rows(x)
    shifted, shifted_scale = quantize_rows_shifted(x)
    assert shifted.dtype == torch.uint8
    assert torch.equal(shifted.to(torch.int16) - 128, q.to(torch.int16))
    assert torch.equal(shifted_scale, scale)


def test_without_onednn_the_int_mm_kernel_runs_and_says_so_once(monkeypatch, caplog, fresh_probe):
    def missing():
        raise AttributeError("'_OpNamespace' 'onednn' object has no attribute 'qlinear_prepack'")

    monkeypatch.setattr(reduced_products, "_onednn_ops", missing)
    generator = torch.Generator().manual_seed(4)
    weight = torch.randn(24, 40, generator=generator)
    x = torch.randn(5, 40, generator=generator)
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        held = [ReducedWeight(weight, "int8") for _ in range(3)]
    assert all(h.int8 is not None and h.int8.kernel == "int_mm" for h in held)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1
    assert "int8" in lines[0] and "torch._int_mm" in lines[0] and "AttributeError" in lines[0]
    q, row_scale = quantize_rows(x)
    wq, wscale = quantize_rows(weight)
    exact = (q.to(torch.int64) @ wq.to(torch.int64).t()).to(torch.float32) * wscale
    got = held[0].product_into(x, torch.empty(5, 24))
    assert torch.equal(got, exact * row_scale[:, None])
    with pytest.raises(AttributeError):
        Int8Matrix(wq, wscale, "onednn")  # asked for by name, it does not hide the cause


def test_a_saturating_onednn_is_not_used(monkeypatch, caplog, fresh_probe):
    """CPUs without VNNI sum pairs of products in int16, which saturates on extreme rows."""
    real = reduced_products._onednn_product
    monkeypatch.setattr(reduced_products, "_onednn_product", lambda *args: real(*args).clamp(-32767, 32767))
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        assert "wrong sums" in (reduced_products.onednn_unavailable() or "")
        held = ReducedWeight(torch.randn(8, 4), "int8")
    assert held.int8 is not None and held.int8.kernel == "int_mm"
    assert len(caplog.records) == 1 and "wrong sums" in caplog.records[0].getMessage()


def test_bad_weights_and_kernels_are_refused():
    scale = torch.ones(4)
    with pytest.raises(ValueError, match="int8 matrix"):
        Int8Matrix(torch.zeros(4, 3), scale)
    with pytest.raises(ValueError, match="int8 matrix"):
        Int8Matrix(torch.zeros(4, dtype=torch.int8), scale)
    with pytest.raises(ValueError, match="kernel must be one of 'onednn', 'int_mm'"):
        Int8Matrix(torch.zeros(4, 3, dtype=torch.int8), scale, "vnni")
