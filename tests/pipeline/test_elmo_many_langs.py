"""ELMoForManyLangs models in spaCy pipelines for other languages: the ``elmo`` component's
layers equal theirs, ``init-config --lang``, ``spacy train`` (frozen and fine-tuned), ``inspect``,
``replace_listeners``, saving and loading, and ``spacy-elmo embed``."""

import json
import random

import h5py
import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from typer.testing import CliRunner

from spacy_elmo.cli import app

from ..conftest import MANY_LANGS_FIXTURES, many_langs_reference
from .conftest import train_with_config

TOLERANCE = 1e-5
WORDS_MODEL = MANY_LANGS_FIXTURES / "words_zip.model"
CHAR_MODEL = MANY_LANGS_FIXTURES / "char_legacy.model"


def usable(sentences, layers):
    """The fixture sentences spaCy can hold as Docs (no empty token), with their layers."""
    return [(sentence, layer) for sentence, layer in zip(sentences, layers) if all(sentence)]


@pytest.mark.parametrize("name,lang", [("char_legacy", "de"), ("words_zip", "xx")])
def test_the_component_on_a_blank_pipeline_gives_their_layers(name, lang):
    nlp = spacy.blank(lang)
    nlp.add_pipe("elmo", config={"weights": str(MANY_LANGS_FIXTURES / f"{name}.model")})
    for words, theirs in usable(*many_langs_reference(name)):
        doc = nlp(Doc(nlp.vocab, words=words))
        assert doc._.elmo_layers.shape == theirs.shape
        assert numpy.abs(doc._.elmo_layers - theirs).max() < TOLERANCE


GERMAN = [
    "Die Größe der Straße ist überraschend .",
    "Der Hund läuft über die Brücke .",
    "Ein Mädchen sieht den Hund !",
    "Zoë und Noël essen Crêpes .",
    "北京 大学 很 大 。",
]


@pytest.fixture(scope="module")
def german_corpus(tmp_path_factory):
    nlp = spacy.blank("de")
    path = tmp_path_factory.mktemp("german")
    rng = random.Random(0)
    for split, n in (("train", 24), ("dev", 6)):
        docs = []
        for _ in range(n):
            doc = nlp(rng.choice(GERMAN))
            for token in doc:
                token.tag_ = "PUNCT" if token.is_punct else ("NOUN" if token.text[:1].isupper() else "X")
            docs.append(doc)
        DocBin(docs=docs).to_disk(path / f"{split}.spacy")
    return path


@pytest.fixture(scope="module")
def trained_german(tmp_path_factory, german_corpus):
    """init-config --lang de with the word-table model, then a few steps of spacy train."""
    out = tmp_path_factory.mktemp("trained_german")
    result = CliRunner().invoke(
        app, ["init-config", str(out / "de.cfg"), "--pipeline", "tagger", "--lang", "de", "--weights", str(WORDS_MODEL)]
    )
    assert result.exit_code == 0, result.output
    return train_with_config(
        out / "de.cfg", out / "training", german_corpus, {"training.max_steps": 4, "training.eval_frequency": 2}
    )


def test_init_config_refuses_a_language_spacy_lacks(tmp_path):
    result = CliRunner().invoke(app, ["init-config", str(tmp_path / "c.cfg"), "--lang", "zz"])
    assert result.exit_code == 1 and "--lang zz" in result.output
    assert not (tmp_path / "c.cfg").exists()


def test_a_trained_german_pipeline_keeps_their_layers_through_save_load_and_replace_listeners(trained_german, tmp_path):
    nlp = spacy.load(trained_german)
    assert nlp.lang == "de" and nlp.pipe_names == ["elmo", "tagger"]
    words_and_layers = usable(*many_langs_reference("words_zip"))
    docs = [nlp(Doc(nlp.vocab, words=words)) for words, _ in words_and_layers]
    for doc, (_, theirs) in zip(docs, words_and_layers):
        assert numpy.abs(doc._.elmo_layers - theirs).max() < TOLERANCE
    tags = [[t.tag_ for t in doc] for doc in docs]
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec.elmo"])
    nlp.remove_pipe("elmo")
    nlp.to_disk(tmp_path / "standalone")
    reloaded = spacy.load(tmp_path / "standalone")
    assert [[t.tag_ for t in reloaded(Doc(reloaded.vocab, words=w))] for w, _ in words_and_layers] == tags


def test_inspect_reads_the_german_pipeline(trained_german):
    result = CliRunner().invoke(app, ["inspect", str(trained_german)])
    assert result.exit_code == 0, result.output
    assert "tagger (listens to 'elmo', grad_factor 0)" in result.output
    assert result.output.count("  layer ") == 4  # the word-table model has 3 LSTM layers


def test_fine_tuning_a_code_point_model(tmp_path, german_corpus):
    """grad_factor > 0 runs the biLM under autograd (Thinc's torch wrapper, their encoding)."""
    result = CliRunner().invoke(
        app,
        ["init-config", str(tmp_path / "c.cfg"), "--pipeline", "tagger", "--lang", "de", "--weights", str(CHAR_MODEL)],
    )
    assert result.exit_code == 0, result.output
    trained = train_with_config(
        tmp_path / "c.cfg",
        tmp_path / "out",
        german_corpus,
        {
            "training.max_steps": 2,
            "training.eval_frequency": 2,
            "components.tagger.model.tok2vec.elmo.grad_factor": 1.0,
        },
    )
    nlp = spacy.load(trained)
    from spacy_elmo.loading import load_bilm

    original = load_bilm(CHAR_MODEL).state_dict()
    tuned = nlp.get_pipe("elmo").bilm.state_dict()
    assert any(not numpy.array_equal(original[k].numpy(), tuned[k].numpy()) for k in original)
    assert nlp.get_pipe("elmo").bilm.lexicon is not None


def test_embed_cli_with_their_directory(tmp_path):
    sentences, theirs = many_langs_reference("words_zip")
    records = [{"text": " ".join(s), "tokens": s} for s, _ in usable(sentences, theirs)]
    source = tmp_path / "input.jsonl"
    source.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["embed", str(source), str(tmp_path / "out.hdf5"), "--weights", str(WORDS_MODEL), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    with h5py.File(tmp_path / "out.hdf5", "r") as handle:
        for key, (_, layers) in enumerate(usable(sentences, theirs)):
            assert numpy.abs(handle[str(key)][...] - layers).max() < TOLERANCE
