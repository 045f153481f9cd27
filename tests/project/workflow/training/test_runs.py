"""The training steps' runs: ``--gpu auto`` never asks for a GPU that is not there, and a finished
run is reused only while what it made is unchanged."""
import json
import shutil

import pytest
import torch

from scripts.workflow.training import runs as train_runs


def test_numbers_are_used_as_given():
    assert train_runs.gpu_id("-1") == -1 and train_runs.gpu_id("1") == 1


@pytest.mark.parametrize("cuda, cupy, expected", [(False, True, -1), (True, False, -1), (True, True, 0)])
def test_auto_needs_both_a_gpu_and_cupy(monkeypatch, cuda, cupy, expected):
    import importlib.util

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" and cupy else (None if name == "cupy" else real(name, *a)))
    assert train_runs.gpu_id("auto") == expected


def _fake_train(calls):
    """Stands in for spacy train: records the call and writes a model-best."""

    def train(config, output_dir, use_gpu=-1, overrides=None):
        calls.append(output_dir)
        (output_dir / "model-best").mkdir(parents=True)
        (output_dir / "model-best" / "weights").write_bytes(b"w" * 100)

    return train


def test_a_finished_run_is_reused_only_while_its_product_is_what_it_made(tmp_path, monkeypatch, capsys):
    """The "already done" check reads the product's content: a model-best cut short, edited or
    removed after the run is trained again, with a warning naming it; never reused."""
    import spacy.cli.train

    calls = []
    monkeypatch.setattr(spacy.cli.train, "train", _fake_train(calls))
    config = tmp_path / "a.cfg"
    config.write_text("[x]\n")
    out = tmp_path / "run"
    overrides = {"training.max_steps": 3}
    assert train_runs.train_unless_done(config, out, overrides) is True
    assert train_runs.train_unless_done(config, out, overrides) is False and len(calls) == 1
    stored = json.loads((out / train_runs.DONE_FILE).read_text())
    assert stored["product"] == "model-best" and len(stored["product_sha256"]) == 64
    weights = out / "model-best" / "weights"
    weights.write_bytes(weights.read_bytes()[:33])  # cut short
    capsys.readouterr()
    assert train_runs.train_unless_done(config, out, overrides) is True and len(calls) == 2
    assert f"{out / 'model-best'} is not what the finished run made there" in " ".join(capsys.readouterr().out.split())
    assert weights.read_bytes() == b"w" * 100
    # other inputs, a removed product, or a record without the product's checksum: trained again
    assert train_runs.train_unless_done(config, out, {"training.max_steps": 4}) is True
    shutil.rmtree(out / "model-best")
    assert train_runs.train_unless_done(config, out, {"training.max_steps": 4}) is True
    description = train_runs.describe_run(config, {"training.max_steps": 4})
    (out / train_runs.DONE_FILE).write_text(json.dumps(description))
    assert not train_runs.is_done(out, description)
    assert len(calls) == 4


def test_folds_and_a_left_out_training_corpus(tmp_path, monkeypatch):
    """--folds: one run per fold and seed, {fold} in the overrides replaced; a training corpus in a
    left-out folder trains nothing and marks the output folder (and a later real run unmarks it)."""
    import spacy.cli.train

    from scripts.workflow.datasets import left_out

    calls = []
    seen = []

    def train(config, output_dir, use_gpu=-1, overrides=None):
        seen.append((output_dir.relative_to(tmp_path).as_posix(), overrides["paths.train"], overrides["system.seed"]))
        _fake_train(calls)(config, output_dir)

    monkeypatch.setattr(spacy.cli.train, "train", train)
    monkeypatch.setattr("scripts.workflow.parallel.pool.run_parallel", lambda f, runs, jobs: [f(*r) for r in runs])
    config = tmp_path / "a.cfg"
    config.write_text("[x]\n")
    corpus = tmp_path / "corpus"
    for fold in (0, 1):
        (corpus / f"fold{fold}").mkdir(parents=True)
        (corpus / f"fold{fold}" / "train.spacy").write_bytes(b"")
    overrides = {"paths.train": str(corpus / "fold{fold}" / "train.spacy")}
    train_runs.train_seeds(config, tmp_path / "out", [0, 1], overrides, folds=[0, 1])
    assert seen == [
        (f"out/fold{fold}/seed{seed}", str(corpus / f"fold{fold}" / "train.spacy"), seed)
        for fold in (0, 1)
        for seed in (0, 1)
    ]
    left_out.mark(corpus / "fold0", "wnut16")
    train_runs.train_seeds(config, tmp_path / "out", [0, 1], overrides, folds=[0, 1])
    assert len(seen) == 4 and left_out.left_out(tmp_path / "out") == "wnut16"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [left_out.MARKER]
    (corpus / "fold0" / left_out.MARKER).unlink()
    train_runs.train_seeds(config, tmp_path / "out", [0], overrides, folds=[1])
    assert seen[-1][0] == "out/fold1/seed0" and left_out.left_out(tmp_path / "out") is None
