"""Damaged or empty inputs: skipped and counted with a warning, or a clean stop with a message."""

from __future__ import annotations

import json
import logging
import os

import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.output_folder import read_metrics

from .conftest import TINY_CONFIG, tiny_settings


@pytest.fixture()
def messy_corpus(tmp_path, corpus_dir):
    train = tmp_path / "train"
    train.mkdir()
    (train / "a_good.txt").write_text((corpus_dir / "train.txt").read_text()[:20000])
    (train / "b_empty.txt").write_bytes(b"")
    (train / "c_binary.dat").write_bytes(os.urandom(4096) + b"\x00\x01\x02")
    (train / "d_invalid.txt").write_bytes(
        b"The cat sees a dog .\n\xff\xfe\xfd not utf-8\nA dog likes the cat .\n\xc0\xaf\n"
    )
    (train / "e_long.txt").write_bytes(b"x" * 1_000_000 + b"\nThe bird sees the farmer .\n")
    (train / "f_docs.jsonl").write_text('{"text": "The child likes every bird ."}\n{"oops": 1}\nnot json\n')
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc("A farmer sees a cat ."), nlp.make_doc("Birds chase dogs .")]).to_disk(
        train / "g_docs.spacy"
    )
    (train / "h_broken.spacy").write_bytes(b"\x00\x01 not a DocBin")
    (tmp_path / "dev_empty.txt").write_bytes(b"")
    return train, tmp_path / "dev_empty.txt"


def test_run_goes_on_past_damaged_files_and_counts_what_it_skipped(messy_corpus, tmp_path, caplog):
    train, dev = messy_corpus
    settings, _ = tiny_settings(
        train.parent, paths__train=str(train), paths__dev=str(dev), training__max_steps=5, training__eval_every=5
    )
    with caplog.at_level(logging.WARNING, logger="spacy_elmo.pretrain"):
        result = pretrain(settings, tmp_path / "out", progress=False)
    assert result.step == 5
    stats = json.loads((tmp_path / "out" / "corpus_stats.json").read_text())
    reading = stats["reading"]
    assert reading["invalid_utf8_lines"] == 2
    assert reading["bad_json_lines"] == 2
    assert reading["overlong_lines"] == 1
    assert [os.path.basename(p) for p in reading["binary_files"]] == ["c_binary.dat"]
    assert [os.path.basename(p) for p in reading["empty_files"]] == ["b_empty.txt"]
    assert [os.path.basename(p) for p in reading["unreadable_files"]] == ["h_broken.spacy"]
    assert reading["files_read"] == 6  # a, d, e, f, g and the broken .spacy file that was tried
    assert stats["cut_tokens"] == 1  # the 100 kB "word" left after cutting the line
    vocab = json.loads((tmp_path / "out" / "vocab.json").read_text())
    assert max(len(word) for word in vocab) <= 50
    messages = caplog.text
    assert "not valid UTF-8" in messages and "binary" in messages and "dev text" in messages.lower()
    [record] = read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert record["dev_perplexity_forward"] is None and record["train_loss"] > 0
    assert (tmp_path / "out" / "model-best" / "weights.hdf5").is_file()  # chosen by training loss


def test_empty_training_text_stops_cleanly_with_a_message(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n   \n")
    result = CliRunner().invoke(
        app,
        ["pretrain", str(TINY_CONFIG), str(tmp_path / "out"), "--paths.train", str(tmp_path / "empty.txt"), "--quiet"],
    )
    assert result.exit_code == 1
    assert "has no sentences" in result.output
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


def test_missing_training_path_and_bad_override_are_reported(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app, ["pretrain", str(TINY_CONFIG), str(tmp_path / "out"), "--paths.train", str(tmp_path / "nope.txt")]
    )
    assert result.exit_code == 1 and "not found" in result.output
    result = runner.invoke(app, ["pretrain", str(TINY_CONFIG), str(tmp_path / "out"), "--training.max_stepz", "3"])
    assert result.exit_code == 1 and "max_stepz" in result.output
