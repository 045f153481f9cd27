"""The benchmarks' one-thread guard: it re-executes with every pool sized, and only when needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import thread_pools
from benchmarks.thread_pools import THREAD_VARIABLES, pools_sized, rerun_with_pools_of


class Executed(Exception):
    pass


def record_execve(calls: list):
    def execve(path, argv, environment):
        calls.append((path, argv, environment))
        raise Executed

    return execve


def test_sized_pools_return_without_executing(monkeypatch):
    for name in THREAD_VARIABLES:
        monkeypatch.setenv(name, "1")
    calls: list = []
    monkeypatch.setattr(thread_pools.os, "execve", record_execve(calls))
    assert pools_sized(1)
    rerun_with_pools_of(1, "benchmarks.bench_precision")
    assert calls == []


@pytest.mark.parametrize("missing", THREAD_VARIABLES)
def test_one_unsized_pool_reexecutes_the_module_with_its_arguments(monkeypatch, missing):
    for name in THREAD_VARIABLES:
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv(missing, "2")
    monkeypatch.setattr(sys, "argv", ["/somewhere/bench_precision.py", "--ner", "--texts", "32"])
    calls: list = []
    monkeypatch.setattr(thread_pools.os, "execve", record_execve(calls))
    assert not pools_sized(1)
    with pytest.raises(Executed):
        rerun_with_pools_of(1, "benchmarks.bench_precision")
    [(path, argv, environment)] = calls
    assert path == sys.executable
    assert argv == [sys.executable, "-m", "benchmarks.bench_precision", "--ner", "--texts", "32"]
    assert all(environment[name] == "1" for name in THREAD_VARIABLES)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2, reason="needs Linux, 2+ cores")
def test_sized_pools_leave_numpy_without_worker_threads():
    """What the guard is for: with the pools sized, importing numpy (and torch) starts no thread
    that could spin beside the timed one; without, OpenBLAS starts one per extra core."""
    code = "import numpy, torch, os; print(len(os.listdir('/proc/self/task')))"
    base = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    sized = {**base, **{name: "1" for name in THREAD_VARIABLES}}
    assert threads_after(code, sized) == 1
    assert threads_after(code, base) > 1


def threads_after(code: str, environment: dict) -> int:
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    return int(done.stdout)
