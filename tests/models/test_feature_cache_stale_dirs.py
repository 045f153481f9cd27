"""Spill folders left by a training run killed with SIGKILL are removed by the next cache that
uses the same folder; those of live processes and of other hosts are kept."""

import os
import signal
import subprocess
import sys

import numpy

from spacy_elmo.models.feature_cache import SPILL_PREFIX, FeatureCache, _host_tag

CHILD = """
import sys, time, numpy
from spacy_elmo.models.feature_cache import FeatureCache
cache = FeatureCache(0.0, sys.argv[1], 10.0)
cache.put(b"k", numpy.ones(1000, dtype=numpy.float32))
print("ready", flush=True)
time.sleep(600)
"""


def spill_dirs(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(SPILL_PREFIX))


def test_a_killed_owners_folder_is_removed_at_the_next_start(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    (left,) = spill_dirs(tmp_path)
    assert left.startswith(f"{SPILL_PREFIX}{_host_tag()}-{child.pid}-")
    FeatureCache(0.0, tmp_path, 10.0)  # the owner still runs: kept
    assert spill_dirs(tmp_path) == [left]
    child.send_signal(signal.SIGKILL)
    child.wait()
    other_host = tmp_path / f"{SPILL_PREFIX}otherhost-{child.pid}-abc"
    other_host.mkdir()
    unrelated = tmp_path / "spacy-elmo-features-notes"
    unrelated.mkdir()
    cache = FeatureCache(0.0, tmp_path, 10.0)
    assert spill_dirs(tmp_path) == sorted([other_host.name, unrelated.name])
    cache.put(b"k", numpy.ones(10, dtype=numpy.float32))
    mine = [name for name in spill_dirs(tmp_path) if f"-{os.getpid()}-" in name]
    assert len(mine) == 1
