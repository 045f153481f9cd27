"""The one ``precision`` setting: its values, the check where it enters, and what runs where.

``float32`` (the default); ``bfloat16`` and ``int8`` for inference on CPUs with the instructions
(oneDNN), ``bfloat16`` and ``float16`` on GPUs (also training). Cell states, gates and outputs
stay float32. Where the device cannot run the precision asked for, float32 runs and one line per
process, precision and reason says so; int8 with gradients is refused (no backward pass)."""

from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path
from typing import Optional

import torch

logger = logging.getLogger("spacy_elmo")

#: The values of the setting; the first is the default.
PRECISIONS = ("float32", "bfloat16", "int8", "float16")
DEFAULT_PRECISION = PRECISIONS[0]

#: Per precision, the CPU flags (``/proc/cpuinfo``'s names) any one of which runs it natively.
CPU_FLAGS_NEEDED = {
    "bfloat16": ("avx512_bf16", "amx_bf16"),
    "int8": ("avx512_vnni", "avx_vnni", "amx_int8"),
}
_INSTRUCTION_NAMES = {"bfloat16": "AVX512-BF16 or AMX-BF16", "int8": "AVX512-VNNI, AVX-VNNI or AMX-INT8"}

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def check_precision(precision: object, where: str = "precision") -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a ValueError naming ``where``."""
    if precision not in PRECISIONS:
        raise ValueError(f"{where} must be one of {', '.join(map(repr, PRECISIONS))}, not {precision!r}")
    return str(precision)


@functools.lru_cache(maxsize=1)
def _proc_cpuinfo_flags() -> Optional[frozenset[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return None


def _torch_probe_flags() -> frozenset[str]:
    """The flags torch's own CPU probes vouch for (used where ``/proc/cpuinfo`` is missing)."""
    probes = {
        "avx512_bf16": "_is_avx512_bf16_supported",
        "avx512_vnni": "_is_vnni_supported",
        "amx_bf16": "_is_amx_tile_supported",
        "amx_int8": "_is_amx_tile_supported",
    }
    found = set()
    for flag, name in probes.items():
        probe = getattr(torch.cpu, name, None)
        try:
            if probe is not None and probe():
                found.add(flag)
        except RuntimeError:
            continue
    return frozenset(found)


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's CPU (``/proc/cpuinfo``'s names)."""
    flags = _proc_cpuinfo_flags()
    return flags if flags is not None else _torch_probe_flags()


def why_not(precision: str, device: torch.device, training: bool = False) -> Optional[str]:
    """Why ``precision`` (already checked) cannot run on ``device``, or None when it can."""
    if precision == DEFAULT_PRECISION:
        return None
    if device.type == "cuda":
        return "int8 runs on CPUs only" if precision == "int8" else None
    if training or precision == "float16":
        return f"{precision} {'training' if training else 'inference'} runs on GPUs only (here: {device.type})"
    if device.type != "cpu":
        return f"reduced precision runs on CPUs and CUDA GPUs only (here: {device.type})"
    if not set(CPU_FLAGS_NEEDED[precision]) & cpu_flags():
        return f"this CPU lacks {_INSTRUCTION_NAMES[precision]} (flags {', '.join(CPU_FLAGS_NEEDED[precision])})"
    return None


def running_precision(precision: str, device: torch.device, training: bool = False) -> str:
    """The precision that runs: ``precision``, or float32 where ``device`` cannot run it (said
    once per process, precision and reason). int8 with gradients is a ValueError."""
    if training and precision == "int8":
        raise ValueError("precision 'int8' is for inference only: it has no backward pass")
    reason = why_not(precision, device, training)
    if reason is None:
        return precision
    with _warned_lock:
        first = (precision, reason) not in _warned
        _warned.add((precision, reason))
    if first:
        logger.warning("ELMo precision %r: %s; running float32 instead.", precision, reason)
    return DEFAULT_PRECISION
