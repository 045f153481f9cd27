"""spacy-elmo perplexity: a saved biLM scored apart from its run gives the numbers the run logged."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.pretrain.output_folder import read_metrics
from spacy_elmo.pretrain.perplexity import saved_model_perplexity

from .conftest import TINY_CONFIG


def measure(*args):
    result = CliRunner().invoke(app, ["perplexity", *map(str, args)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])  # stdout only: log lines go to stderr


def test_model_best_of_a_run_scores_what_the_run_logged_for_it(trained_run):
    best = min(read_metrics(trained_run / "metrics.jsonl"), key=lambda record: record["dev_perplexity"])
    measured = measure(trained_run)
    assert measured["model"] == str(trained_run / "model-best")
    assert measured["forward"] == pytest.approx(best["dev_perplexity_forward"], rel=1e-6)
    assert measured["backward"] == pytest.approx(best["dev_perplexity_backward"], rel=1e-6)
    assert measured["perplexity"] == pytest.approx(best["dev_perplexity"], rel=1e-6) and measured["tokens"] > 0


def test_a_model_folder_of_a_run_reads_the_run_config_and_another_dev_text(trained_run, corpus_dir):
    last = read_metrics(trained_run / "metrics.jsonl")[-1]
    measured = measure(trained_run / "model-last")
    assert measured["dev"] == str(corpus_dir / "dev.txt")
    assert measured["forward"] == pytest.approx(last["dev_perplexity_forward"], rel=1e-6)
    other = measure(trained_run, corpus_dir / "train.txt", "--model", "model-last", "--threads", "1")
    assert other["dev"] == str(corpus_dir / "train.txt") and other["forward"] != measured["forward"]


def test_a_model_outside_a_run_needs_dev_text_and_takes_a_config(trained_run, corpus_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(trained_run / "model-last", model)
    result = CliRunner().invoke(app, ["perplexity", str(model)])
    assert result.exit_code == 1 and "No dev text" in result.output
    with_config = measure(model, corpus_dir / "dev.txt", "--config", TINY_CONFIG)
    as_in_run = saved_model_perplexity(trained_run / "model-last")
    assert with_config["forward"] == pytest.approx(as_in_run.scores.perplexity_forward, rel=1e-6)


def test_a_folder_that_holds_no_model_is_a_clear_error(tmp_path, corpus_dir):
    result = CliRunner().invoke(app, ["perplexity", str(tmp_path), str(corpus_dir / "dev.txt")])
    assert result.exit_code == 1 and "Error:" in result.output and "Traceback" not in result.output
