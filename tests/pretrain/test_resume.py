"""SIGKILL at a random moment, then --resume: the weights end exactly where an uninterrupted run's do."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import torch

from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.output_folder import read_metrics

from .conftest import TINY_CONFIG, tiny_settings

STEPS = 40
OPTIONS = {
    "training.max_steps": STEPS,
    "training.checkpoint_every": 4,
    "training.eval_every": 8,
    "training.dropout": 0.2,
    "training.lstm_dropout": 0.2,
    "training.lr_decay": "linear",
    "training.min_learning_rate": 0.001,
    "softmax.n_negatives": 16,
}


def command(corpus, out, *extra):
    overrides = [f"--{key}={value}" for key, value in OPTIONS.items()]
    return [
        sys.executable,
        "-m",
        "spacy_elmo",
        "pretrain",
        str(TINY_CONFIG),
        str(out),
        "--quiet",
        "--paths.train",
        str(corpus / "train.txt"),
        "--paths.dev",
        str(corpus / "dev.txt"),
        *overrides,
        *extra,
    ]


def test_sigkill_then_resume_matches_an_uninterrupted_run(corpus_dir, tmp_path):
    # Dropout (between LSTM layers too), the decay and sampled negatives on: every random
    # generator and the schedule must come back, not just the data.
    settings, _ = tiny_settings(corpus_dir, **{k.replace(".", "__"): v for k, v in OPTIONS.items()})
    pretrain(settings, tmp_path / "straight", progress=False)

    out = tmp_path / "killed"
    process = subprocess.Popen(command(corpus_dir, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (out / "checkpoint.pt").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(random.uniform(0.0, 0.3))  # somewhere past the first checkpoint, mid-step or mid-write
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    killed_at = load_checkpoint(out / "checkpoint.pt")["step"]
    assert 0 < killed_at < STEPS

    resumed = subprocess.run(command(corpus_dir, out, "--resume"), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr

    straight = BiLM.from_disk(tmp_path / "straight" / "model-last").state_dict()
    finished = BiLM.from_disk(out / "model-last").state_dict()
    for name, tensor in straight.items():
        assert torch.allclose(finished[name], tensor, rtol=0, atol=1e-6), name
    # The log has each evaluation once, with the same numbers.
    assert read_metrics(out / "metrics.jsonl") == [
        {**r, "elapsed_seconds": m["elapsed_seconds"], "tokens_per_second": m["tokens_per_second"]}
        for r, m in zip(read_metrics(tmp_path / "straight" / "metrics.jsonl"), read_metrics(out / "metrics.jsonl"))
    ]


def test_sigterm_saves_a_checkpoint_and_stops_cleanly(corpus_dir, tmp_path):
    out = tmp_path / "stopped"
    process = subprocess.Popen(
        command(corpus_dir, out, "--training.max_steps=100000", "--training.checkpoint_every=100000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (out / "vocab.json").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "--resume" in stderr
    step = load_checkpoint(out / "checkpoint.pt")["step"]
    assert 0 < step < 100000
    assert (out / "model-last" / "weights.hdf5").is_file()
