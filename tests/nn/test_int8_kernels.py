"""The int8 kernels: oneDNN's prepacked linear and torch._int_mm give exact sums (checked against
an int64 product) and the same bits; oneDNN's absence falls back to _int_mm, said once."""

import logging

import pytest
import torch

from spacy_elmo.nn import reduced_products as int8_kernels
from spacy_elmo.nn.reduced_products import Int8Matrix, ReducedWeight, quantize_rows, quantize_rows_shifted

needs_onednn = pytest.mark.skipif(
    int8_kernels.onednn_unavailable() is not None, reason="oneDNN's int8 linear is not usable in this torch"
)


@pytest.fixture
def fresh_probe():
    """The probe's answer is cached per process: tests that change what it sees start and end afresh."""
    int8_kernels.onednn_unavailable.cache_clear()
    yield
    int8_kernels.onednn_unavailable.cache_clear()


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

    monkeypatch.setattr(int8_kernels, "_onednn_ops", missing)
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
    real = int8_kernels._onednn_product
    monkeypatch.setattr(int8_kernels, "_onednn_product", lambda *args: real(*args).clamp(-32767, 32767))
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        assert "wrong sums" in (int8_kernels.onednn_unavailable() or "")
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
