"""Run a Python module with a given number of torch threads, in this process.

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
from typing import Sequence


def set_threads(n_threads: int) -> None:
    """torch intra-op threads (and OpenMP/MKL for anything started from here); 0: default."""
    if n_threads <= 0:
        return
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(n_threads)
    import torch

    torch.set_num_threads(n_threads)


def run_module(module: str, args: Sequence[str]) -> None:
    """Run ``module`` as ``python -m MODULE ARGS...`` would, in this process."""
    sys.argv = [module] + list(args)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
