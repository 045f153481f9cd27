"""The one place that sets a step's torch threads: ``python -m scripts --threads N COMMAND``
calls it before the command, and the seed pool calls it in each child process.

Why: the biLM's LSTM runs many small matrix products on a training batch of a few sentences.
With one thread per core they are fast on an idle machine but collapse (tens of times slower,
measured) when other processes share the cores, as the OpenMP threads wait for each other.
One thread is the safe default for the workflow's steps (project.yml's ``threads``).
"""

from __future__ import annotations

import os


def set_threads(n_threads: int) -> None:
    """torch intra-op threads (and OpenMP/MKL for anything started from here); 0: leave torch's
    default (one per core)."""
    if n_threads < 0:
        raise ValueError(f"threads must be 0 (torch's default) or more, not {n_threads}")
    if n_threads == 0:
        return
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(n_threads)
    import torch

    torch.set_num_threads(n_threads)
