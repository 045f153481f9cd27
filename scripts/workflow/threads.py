"""Run a Python module or script with a given number of torch threads.

Usage: ``torch_threads.py N -m MODULE [ARGS...]`` or ``torch_threads.py N SCRIPT.py [ARGS...]``,
e.g. ``torch_threads.py 1 -m spacy train configs/ner_elmo.cfg --output training/ner-elmo``.
N = 0 keeps torch's default (one thread per core). The module or script runs in this
process, exactly as ``python -m MODULE ARGS...`` / ``python SCRIPT.py ARGS...`` would.

Why: the biLM's LSTM runs many small matrix products on a training batch of a few sentences.
With one thread per core they are fast on an idle machine but collapse (tens of times slower,
measured) when other processes share the cores, as the OpenMP threads wait for each other.
One thread is the safe default for the training and evaluation steps; pretraining, with
larger batches, has its own ``[system] threads`` setting.
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import List, Optional, Sequence, Tuple


def set_threads(n_threads: int) -> None:
    """torch intra-op threads (and OpenMP/MKL for anything started from here); 0: default."""
    if n_threads <= 0:
        return
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(n_threads)
    import torch

    torch.set_num_threads(n_threads)


USAGE = "usage: torch_threads.py N (-m MODULE | SCRIPT.py) [ARGS...]"


def parse(argv: Sequence[str]) -> Tuple[int, Optional[str], Optional[str], List[str]]:
    """(threads, module or None, script or None, the target's arguments)."""
    if len(argv) < 2 or (argv[1] == "-m" and len(argv) < 3):
        raise SystemExit(USAGE)
    try:
        n_threads = int(argv[0])
    except ValueError:
        raise SystemExit(f"torch_threads.py: N must be an integer, not {argv[0]!r}")
    if argv[1] == "-m":
        return n_threads, argv[2], None, list(argv[3:])
    return n_threads, None, argv[1], list(argv[2:])


def main(argv: Optional[Sequence[str]] = None) -> None:
    n_threads, module, script, args = parse(sys.argv[1:] if argv is None else argv)
    set_threads(n_threads)
    if module is not None:
        sys.argv = [module] + args
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [script] + args
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
