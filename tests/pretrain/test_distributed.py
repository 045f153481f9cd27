"""Two processes under torchrun (gloo on CPU) train like one process with the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.output_folder import read_metrics

from .conftest import TINY_CONFIG, tiny_settings

# Two data shards in both runs: each of the two processes reads one; the single process reads
# both and joins their batches, so every step sees the same sentences. No dropout, full softmax.
OPTIONS = {
    "training.max_steps": 16,
    "training.eval_every": 4,
    "training.checkpoint_every": 8,
    "training.dropout": 0.0,
    "training.shards": 2,
}


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_two_process_torchrun_matches_one_process(corpus_dir, tmp_path):
    settings, _ = tiny_settings(corpus_dir, **{k.replace(".", "__"): v for k, v in OPTIONS.items()})
    pretrain(settings, tmp_path / "one", progress=False)

    overrides = [f"--{key}={value}" for key, value in OPTIONS.items()]
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "spacy_elmo",
        "pretrain",
        str(TINY_CONFIG),
        str(tmp_path / "two"),
        "--quiet",
        "--paths.train",
        str(corpus_dir / "train.txt"),
        "--paths.dev",
        str(corpus_dir / "dev.txt"),
        *overrides,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr

    one, two = read_metrics(tmp_path / "one" / "metrics.jsonl"), read_metrics(tmp_path / "two" / "metrics.jsonl")
    assert [r["step"] for r in two] == [4, 8, 12, 16] and [r["processes"] for r in two] == [2] * 4
    assert [r["tokens"] for r in two] == [r["tokens"] for r in one]
    for a, b in zip(one, two):
        for key in ("train_loss", "dev_perplexity_forward", "dev_perplexity_backward"):
            assert b[key] == pytest.approx(a[key], rel=1e-4), key
    single, double = BiLM.from_disk(tmp_path / "one" / "model-last"), BiLM.from_disk(tmp_path / "two" / "model-last")
    for name, tensor in single.state_dict().items():
        torch.testing.assert_close(double.state_dict()[name], tensor, rtol=1e-3, atol=1e-4)
