"""The exactness contract (docs/reliability.md) holds under the BLAS code paths we can select:
MKL picks its kernels when the process starts, from ``MKL_ENABLE_INSTRUCTIONS``, ``MKL_CBWR``
and the CPU, so :mod:`.exactness_probe` runs in a subprocess per setting. The switches stand in
for other CPUs: the bounds must hold on any x86 CPU."""

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
    "MKL_CBWR=COMPATIBLE": ({"MKL_CBWR": "COMPATIBLE"}, 1),
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_the_exactness_contract_holds(setting):
    switches, threads = SETTINGS[setting]
    env = {**os.environ, **switches, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.embedding.exactness_probe", str(threads)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert failures == [], "\n".join(failures)
