"""The pretraining commands from the outside: export of a trained model, training plots, spaCy's CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.nn import BiLM
from spacy_elmo.nn.words.char_ids import encode_sentences

SENTENCES = [["The", "cat", "sees", "a", "dog", "."], ["Every", "child", "likes", "birds"]]


def test_export_allennlp_round_trip_gives_identical_activations(trained_run, tmp_path):
    result = CliRunner().invoke(app, ["export-allennlp", str(trained_run / "model-best"), str(tmp_path / "export")])
    assert result.exit_code == 0, result.output
    ours = BiLM.from_disk(trained_run / "model-best")
    theirs = BiLM.from_allennlp(tmp_path / "export" / "options.json", tmp_path / "export" / "weights.hdf5")
    ids, lengths = encode_sentences(SENTENCES)
    with torch.no_grad():
        expected = ours(torch.from_numpy(ids), torch.from_numpy(lengths))
        actual = theirs(torch.from_numpy(ids), torch.from_numpy(lengths))
    assert torch.equal(actual, expected)


def test_plot_training_writes_a_png(trained_run, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "curves.png"
    result = CliRunner().invoke(app, ["plot-training", str(trained_run), "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_training_without_matplotlib_names_what_to_install(trained_run, tmp_path, monkeypatch):
    """The hint names a package an index has: spacy-elmo itself is on none."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    target = tmp_path / "curves.png"
    result = CliRunner().invoke(app, ["plot-training", str(trained_run), "--output", str(target)])
    assert result.exit_code == 1
    assert result.output == "Error: plot-training needs matplotlib: pip install matplotlib\n"
    assert not target.exists()


def test_plot_training_without_metrics_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["plot-training", str(tmp_path)])
    assert result.exit_code == 1 and "No metrics" in result.output


def test_pretrain_is_reachable_as_python_m_spacy_elmo_and_through_spacys_cli():
    for command in (["-m", "spacy_elmo", "pretrain", "--help"], ["-m", "spacy", "elmo", "pretrain", "--help"]):
        done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "--resume" in done.stdout and "--init-from" in done.stdout
