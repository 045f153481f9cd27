"""``spacy-elmo export-allennlp`` of a trained pipeline: its elmo component's biLM, or the copy
that ``replace_listeners`` gave a component (possibly fine-tuned since)."""

import numpy
import spacy
import torch
from typer.testing import CliRunner

from spacy_elmo import BiLM, embed_layers
from spacy_elmo.cli import app
from spacy_elmo.models import get_bilm


def run(*args):
    return CliRunner().invoke(app, list(args))


SENTENCES = [["The", "river", "bank", "."], ["Alice", "works", "at", "Acme"]]


def assert_same_weights(exported_dir, bilm):
    """The same activations (bilm-tf's format has no row for the padding character)."""
    exported = BiLM.from_allennlp(exported_dir / "options.json", exported_dir / "weights.hdf5")
    for got, want in zip(embed_layers(exported, SENTENCES), embed_layers(bilm, SENTENCES)):
        numpy.testing.assert_array_equal(got, want)


def test_export_from_a_trained_pipeline_and_from_a_replaced_copy(trained_ner, tmp_path):
    nlp = spacy.load(trained_ner)
    result = run("export-allennlp", str(trained_ner), str(tmp_path / "elmo"))
    assert result.exit_code == 0, result.output
    assert_same_weights(tmp_path / "elmo", nlp.get_pipe("elmo").bilm)

    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])
    (copy,) = [node.layers[0] for node in nlp.get_pipe("ner").model.walk() if node.name == "elmo_layers"]
    copy_bilm = get_bilm(copy)
    with torch.no_grad():  # as if fine-tuned: the copy now differs from the elmo component's biLM
        list(copy_bilm.parameters())[-1].add_(1.0)
    nlp.to_disk(tmp_path / "replaced")
    result = run("export-allennlp", str(tmp_path / "replaced"), str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "several biLMs (elmo, ner): choose one with --component" in result.output
    result = run("export-allennlp", str(tmp_path / "replaced"), str(tmp_path / "ner"), "--component", "ner")
    assert result.exit_code == 0, result.output
    assert_same_weights(tmp_path / "ner", copy_bilm)
    assert not numpy.array_equal(
        embed_layers(copy_bilm, SENTENCES)[0], embed_layers(nlp.get_pipe("elmo").bilm, SENTENCES)[0]
    )
    result = run("export-allennlp", str(tmp_path / "replaced"), str(tmp_path / "x"), "--component", "tagger")
    assert result.exit_code == 1
    assert "component 'tagger' holds no biLM; those that do: elmo, ner" in result.output
