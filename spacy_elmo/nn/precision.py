"""The ``precision`` setting of inference: its values, the check, and the CPU's support for it.

``"float32"`` (the default) runs every product in float32, bit for bit as before the setting
existed. ``"bfloat16"`` and ``"int8"`` run the LSTMs' input, recurrent and projection products
in that precision (:mod:`.reduced_products`, in the loop :mod:`.lstm.reduced`); the cell state,
the gates' non-linearities, the clipping and every output stay float32.

They only pay on CPUs with instructions for them: bfloat16 needs AVX512-BF16 or AMX-BF16,
int8 needs AVX512-VNNI, AVX-VNNI or AMX-INT8 (without them oneDNN emulates the products, slower
than float32). :func:`effective_precision` checks that once per process and precision: where the
instructions are missing it logs one line saying so and float32 runs instead. The check reads
the flags of ``/proc/cpuinfo`` and, where that file is missing (other systems), torch's own CPU
probes; tests replace :func:`cpu_flags` to play another CPU.
"""

from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path
from typing import Optional

import torch

logger = logging.getLogger("spacy_elmo")

#: The values of the setting; the first is the default.
PRECISIONS = ("float32", "bfloat16", "int8")
DEFAULT_PRECISION = PRECISIONS[0]

#: Per reduced precision, the CPU flags (as ``/proc/cpuinfo`` names them) any one of which lets
#: oneDNN run its products natively.
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
    path = Path("/proc/cpuinfo")
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return None


def _torch_probe_flags() -> frozenset[str]:
    """The flags torch's own CPU probes vouch for (private helpers of ``torch.cpu``, used only
    where ``/proc/cpuinfo`` cannot be read)."""
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


def missing_instructions(precision: str, device: torch.device) -> Optional[str]:
    """Why ``precision`` cannot run natively on ``device`` (one sentence), or None when it can."""
    check_precision(precision)
    if precision == DEFAULT_PRECISION:
        return None
    if device.type != "cpu":  # GPUs have BiLM.use_autocast
        return f"the precision setting is for CPUs (here: {device.type}; on GPUs see BiLM.use_autocast)"
    if not set(CPU_FLAGS_NEEDED[precision]) & cpu_flags():
        return f"this CPU lacks {_INSTRUCTION_NAMES[precision]} (flags {', '.join(CPU_FLAGS_NEEDED[precision])})"
    return None


def effective_precision(precision: str, device: torch.device) -> str:
    """The precision that runs: ``precision``, or float32 where the device lacks the
    instructions; that fallback is logged once per process, precision and reason."""
    reason = missing_instructions(precision, device)
    if reason is None:
        return precision
    with _warned_lock:
        first = (precision, reason) not in _warned
        _warned.add((precision, reason))
    if first:
        logger.warning("ELMo precision %r: %s; running float32 instead.", precision, reason)
    return DEFAULT_PRECISION
