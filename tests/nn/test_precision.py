"""The one ``precision`` setting: its values, and what runs on which device."""

import logging

import pytest
import torch

from spacy_elmo.nn import precision
from spacy_elmo.nn.precision import PRECISIONS, check_precision, running_precision, why_not

CPU, GPU = torch.device("cpu"), torch.device("cuda")


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Each test starts as a new process would: no fallback logged yet."""
    monkeypatch.setattr(precision, "_warned", set())


def test_the_values_and_a_clear_error_for_others():
    assert PRECISIONS == ("float32", "bfloat16", "int8", "float16")
    for value in PRECISIONS:
        assert check_precision(value) == value
    for bad in ("fp16", "INT8", "", None, 8):
        with pytest.raises(
            ValueError, match=r"--precision must be one of 'float32', 'bfloat16', 'int8', 'float16', not"
        ):
            check_precision(bad, "--precision")


@pytest.mark.parametrize(
    "flags,supported",
    [
        ({"avx512f"}, set()),
        ({"avx512f", "avx512_bf16"}, {"bfloat16"}),
        ({"avx512f", "avx512_vnni"}, {"int8"}),
        ({"avx2", "avx_vnni"}, {"int8"}),
        ({"amx_tile", "amx_bf16", "amx_int8"}, {"bfloat16", "int8"}),
    ],
)
def test_which_cpu_flags_let_each_precision_run(monkeypatch, flags, supported):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    assert why_not("float32", CPU) is None
    for name in ("bfloat16", "int8"):
        assert (why_not(name, CPU) is None) == (name in supported)
    assert "GPUs only" in why_not("float16", CPU)


def test_what_runs_where_and_in_training(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16", "avx512_vnni"}))
    assert [why_not(p, GPU) is None for p in PRECISIONS] == [True, True, False, True]
    assert [why_not(p, GPU, training=True) is None for p in ("float32", "bfloat16", "float16")] == [True] * 3
    assert "GPUs only" in why_not("bfloat16", CPU, training=True)
    with pytest.raises(ValueError, match="inference only"):
        running_precision("int8", GPU, training=True)
    assert "CPUs and CUDA" in why_not("bfloat16", torch.device("meta"))


def test_a_cpu_without_the_instructions_runs_float32_and_says_so_once(monkeypatch, caplog, fresh_warnings):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        assert [running_precision("int8", CPU) for _ in range(3)] == ["float32"] * 3
        assert running_precision("bfloat16", CPU) == "float32"
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2  # once per precision
    assert "'int8'" in lines[0] and "AVX512-VNNI" in lines[0] and "running float32 instead" in lines[0]
    assert "'bfloat16'" in lines[1] and "AVX512-BF16" in lines[1]
    assert all("\n" not in line for line in lines)


def test_a_supporting_cpu_runs_the_precision_silently(monkeypatch, caplog, fresh_warnings):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16", "avx512_vnni"}))
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        assert running_precision("int8", CPU) == "int8"
        assert running_precision("bfloat16", CPU) == "bfloat16"
    assert not caplog.records


def test_flags_come_from_proc_cpuinfo_or_torchs_probes(monkeypatch):
    assert isinstance(precision.cpu_flags(), frozenset)
    monkeypatch.setattr(precision, "_proc_cpuinfo_flags", lambda: None)
    monkeypatch.setattr(torch.cpu, "_is_vnni_supported", lambda: True, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    assert precision.cpu_flags() == {"avx512_vnni"}
