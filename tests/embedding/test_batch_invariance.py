"""Layer 0 and the word cache give the same bits whatever else is in the batch, under every BLAS
code path we can select, with one thread and with three (issue 33, item 1); so do all layers
in batches of up to 16 sentences (larger ones run other LSTM products, equal to rounding).

MKL picks its kernels when the process starts, from ``MKL_ENABLE_INSTRUCTIONS``, ``MKL_CBWR``
and the CPU; so :mod:`.invariance_probe` runs in a subprocess per setting. On an AMD EPYC with
AVX-512 (MKL 2024.2, default mode) the code-point models' vectors used to depend on their row
in a block (a row's address modulo 16 bytes decides MKL's summation order for narrow products:
up to 3.8e-6), and with three threads a wide char-CNN's gate ``sigmoid`` used to differ in the
rows where ATen splits the block between threads (up to 6e-8, bytes as well); ``MKL_CBWR``
hides the first. Each setting must give no failure at all.
"""

import json
import os
import subprocess
import sys

import pytest

from ..conftest import REPO_ROOT

SETTINGS = {
    "default": ({}, 1),
    "three threads": ({}, 3),
    "MKL_ENABLE_INSTRUCTIONS=AVX2": ({"MKL_ENABLE_INSTRUCTIONS": "AVX2"}, 1),
    "MKL_ENABLE_INSTRUCTIONS=AVX512": ({"MKL_ENABLE_INSTRUCTIONS": "AVX512"}, 1),
    "MKL_CBWR=COMPATIBLE": ({"MKL_CBWR": "COMPATIBLE"}, 1),
    "MKL_CBWR=AVX2": ({"MKL_CBWR": "AVX2"}, 1),
    "MKL_CBWR=AVX512": ({"MKL_CBWR": "AVX512"}, 1),
    "MKL_DEBUG_CPU_TYPE=5": ({"MKL_DEBUG_CPU_TYPE": "5"}, 1),
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_vectors_do_not_depend_on_the_batch_or_the_cache(setting):
    switches, threads = SETTINGS[setting]
    env = {**os.environ, **switches, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.embedding.invariance_probe", str(threads)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert failures == [], "\n".join(failures)
