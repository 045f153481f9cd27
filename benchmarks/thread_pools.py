"""One thread means one thread, for benchmarks timed by the process's CPU time.

numpy's OpenBLAS starts a pool of workers (one per core) when numpy is imported, and they spin
for a while after each product, whether or not the product used them. ``torch.set_num_threads``
does not reach them. A run timed by ``time.process_time`` then counts the spinning as work: on
2 cores it added 0.1 CPU-s to every pass of ``bench_precision --ner`` at each precision, a
quarter of int8's time, while the wall time did not move. The pools read their size from the
environment only when they start, so a benchmark re-executes itself with it set.
"""

from __future__ import annotations

import os
import sys

#: the variables that size the BLAS/OpenMP pools (the workflow's price step sets the same)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def pool_environment(threads: int) -> dict[str, str]:
    """This process's environment with every pool of ``threads`` threads, for a child process."""
    return {**os.environ, **{name: str(threads) for name in THREAD_VARIABLES}}


def pools_sized(threads: int) -> bool:
    """Whether every pool variable already says ``threads``."""
    return all(os.environ.get(name) == str(threads) for name in THREAD_VARIABLES)


def rerun_with_pools_of(threads: int, module: str) -> None:
    """Re-execute ``python -m module`` with the same arguments and every pool of ``threads``
    threads, unless they already are; returns only in the process whose pools are sized."""
    if pools_sized(threads):
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], pool_environment(threads))
