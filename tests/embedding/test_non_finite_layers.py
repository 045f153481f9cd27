"""Finite weights that overflow (what a diverged run can save: every weight finite, every
checksum valid) give NaN layers; every way to layers refuses them with an error naming the
weights: ``embed_layers``, the ``elmo`` component in each precision, ``spacy-elmo embed``."""

import re

import pytest
import spacy
import torch
from typer.testing import CliRunner

from spacy_elmo import BiLM, embed_layers
from spacy_elmo.cli import app
from spacy_elmo.nn import precision as precision_module

from ..conftest import random_tiny_bilm

REFUSAL = "NaN or infinite layers"


def overflowing() -> BiLM:
    bilm = random_tiny_bilm()
    with torch.no_grad():
        for param in bilm.char_encoder.parameters():
            param.mul_(1e18)  # still finite in float32
    return bilm


@pytest.fixture(scope="module")
def diverged(tmp_path_factory):
    path = tmp_path_factory.mktemp("diverged") / "bilm"
    overflowing().to_disk(path)  # writing and loading check that every weight is finite
    return path


def test_embed_layers_refuses_and_names_the_weights(diverged):
    with pytest.raises(ValueError, match=REFUSAL) as error:
        embed_layers(BiLM.from_disk(diverged), [["The", "bank"], ["rates"]])
    assert str(diverged) in str(error.value)


def test_a_bilm_built_in_memory_is_refused_too():
    with pytest.raises(ValueError, match="this biLM's weights"):
        embed_layers(overflowing(), [["a"]])


@pytest.mark.parametrize("precision", ["float32", "bfloat16", "int8"])
def test_the_component_refuses_in_every_precision(diverged, monkeypatch, precision):
    monkeypatch.setattr(precision_module, "cpu_flags", lambda: frozenset({"avx512_bf16", "avx512_vnni"}))
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(diverged), "precision": precision})
    with pytest.raises(ValueError, match=REFUSAL) as error:
        nlp("The bank raised interest rates .")
    assert str(diverged) in str(error.value)


def test_a_saved_pipeline_names_its_folder(diverged, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(diverged)})
    nlp.to_disk(tmp_path / "pipeline")
    with pytest.raises(ValueError, match=REFUSAL) as error:
        spacy.load(tmp_path / "pipeline")("The bank .")
    assert str(tmp_path / "pipeline" / "elmo") in str(error.value)


def test_embed_fails_and_writes_nothing(diverged, tmp_path):
    corpus = tmp_path / "text.txt"
    corpus.write_text("The bank raised interest rates .\nThey sat by the river bank .\n", encoding="utf8")
    output = tmp_path / "out.hdf5"
    result = CliRunner().invoke(app, ["embed", str(corpus), str(output), "-w", str(diverged), "--no-progress"])
    assert result.exit_code == 1
    assert re.search(rf"Error: .*{REFUSAL}.*{re.escape(str(diverged))}", " ".join(result.output.split()))
    assert "Wrote" not in result.output
    assert not output.exists()
