"""Independent runs in parallel processes, one per run, up to a number of jobs.

Each run gets a fresh interpreter (``spawn``, one task per process) with this process's torch
threads, so a run never sees what another one left in memory. A run that fails does not stop
the others; the first failure is raised once all are done, so a rerun only redoes the failed.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any, Callable, List, Sequence, Tuple


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def jobs_for(choice: int) -> int:
    """``choice`` parallel jobs; 0 means one per available core."""
    if choice < 0:
        raise ValueError(f"jobs must be 0 (one per core) or more, not {choice}")
    return choice or available_cores()


def _with_threads(threads: int, function: Callable[..., Any], args: Tuple[Any, ...]) -> Any:
    from ..threads import set_threads

    set_threads(threads)
    return function(*args)


def run_parallel(function: Callable[..., Any], runs: Sequence[Tuple[Any, ...]], jobs: int) -> List[Any]:
    """``[function(*args) for args in runs]``, at most ``jobs`` at a time in child processes
    (in this process when ``jobs`` is 1 or there is one run); results in the order of ``runs``."""
    if jobs <= 1 or len(runs) <= 1:
        return [function(*args) for args in runs]
    import torch

    threads = torch.get_num_threads()
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(runs)), mp_context=get_context("spawn"), max_tasks_per_child=1
    ) as pool:
        futures = [pool.submit(_with_threads, threads, function, args) for args in runs]
        errors = [future.exception() for future in futures]
    failed = [error for error in errors if error is not None]
    if failed:
        raise failed[0]
    return [future.result() for future in futures]
