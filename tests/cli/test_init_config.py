"""``spacy-elmo init-config``: a complete training config wired like the shipped ones."""

import warnings
from pathlib import Path

import pytest
import spacy
from spacy.util import load_config
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.config import ARCHITECTURE_FIELDS, TINY_CONFIG
from spacy_elmo.models import ElmoLayersListener

from .conftest import CONFIGS, train_with_config


def init_config(*args: str):
    return CliRunner().invoke(app, ["init-config", *args])


@pytest.mark.parametrize("task", ["ner", "tagger"])
def test_single_task_config_is_the_shipped_one(task, tmp_path):
    """Apart from the corpus paths, the output is configs/{task}_elmo.cfg, key for key."""
    result = init_config(str(tmp_path / "c.cfg"), "--pipeline", task)
    assert result.exit_code == 0, result.output
    written = load_config(tmp_path / "c.cfg", interpolate=False)
    shipped = load_config(CONFIGS / f"{task}_elmo.cfg", interpolate=False)
    for config in (written, shipped):
        config["paths"]["train"] = config["paths"]["dev"] = None
    assert written == shipped


def test_gpu_settings_and_weights(tmp_path, tiny_weights):
    result = init_config(str(tmp_path / "c.cfg"), "--pipeline", "elmo,ner", "--gpu", "--weights", str(tiny_weights))
    assert result.exit_code == 0, result.output
    config = load_config(tmp_path / "c.cfg", interpolate=False)
    assert config["nlp"]["pipeline"] == ["elmo", "ner"]
    assert config["paths"]["elmo"] == str(tiny_weights.resolve())
    assert config["initialize"]["components"]["elmo"]["weights"] == "${paths.elmo}"
    model = config["components"]["elmo"]["model"]
    assert (model["batch_max_tokens"], model["word_cache_words"]) == (8192, 0)
    sizes = TINY_CONFIG.to_dict()
    assert {key: model[key] for key in ARCHITECTURE_FIELDS} == {key: sizes[key] for key in ARCHITECTURE_FIELDS}
    assert "--gpu-id 0" in (tmp_path / "c.cfg").read_text().splitlines()[1]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--pipeline", "ner,sentencizer"], "'sentencizer' is rule-based: it has no model that could read ELMo"),
        (["--pipeline", "tok2vec,ner"], "'tok2vec' is spaCy's shared embedding layer"),
        (["--pipeline", "lemmatizer"], "the trained one is 'trainable_lemmatizer'"),
        (["--pipeline", "nerr"], "'nerr' is not a spaCy component that init-config knows"),
        (["--pipeline", "ner,ner"], "names a component twice"),
        (["--pipeline", "elmo"], "needs at least one component that listens to ELMo"),
        (["--weights", "/no/such/weights"], "--weights: No biLM weights at /no/such/weights: it does not exist"),
    ],
)
def test_bad_arguments(tmp_path, args, message):
    result = init_config(str(tmp_path / "c.cfg"), *args)
    assert result.exit_code == 1
    assert message in result.output
    assert not (tmp_path / "c.cfg").exists()


def test_ner_tagger_config_validates_and_trains(tmp_path, tiny_weights, toy_corpus):
    from spacy.cli.debug_config import debug_config

    config_path = tmp_path / "ner_tagger.cfg"
    result = init_config(str(config_path), "--pipeline", "ner,tagger", "--weights", str(tiny_weights))
    assert result.exit_code == 0, result.output
    paths = {"paths.train": str(toy_corpus / "train.spacy"), "paths.dev": str(toy_corpus / "dev.spacy")}
    debug_config(config_path, overrides=paths)  # exits with an error message if invalid
    trained = train_with_config(
        config_path, tmp_path / "out", toy_corpus, {"training.max_steps": 4, "training.eval_frequency": 2}
    )
    nlp = spacy.load(trained)
    assert nlp.pipe_names == ["elmo", "ner", "tagger"]
    assert nlp.get_pipe("elmo").listening_components == ["ner", "tagger"]
    for name in ("ner", "tagger"):
        listener_blocks = [n for n in nlp.get_pipe(name).model.walk() if isinstance(n, ElmoLayersListener)]
        assert len(listener_blocks) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. a listener finding no ELMo layers
        doc = nlp("Alice works at Acme in Paris .")
    assert doc._.elmo_layers is not None and all(token.tag_ for token in doc)


def test_an_existing_file_needs_force(tmp_path):
    config = tmp_path / "c.cfg"
    config.write_text("mine")
    result = init_config(str(config), "--pipeline", "tagger")
    assert result.exit_code == 1
    assert "already exists: pass --force (-F) to overwrite it" in result.output
    assert config.read_text() == "mine"
    assert init_config(str(config), "--pipeline", "tagger", "--force").exit_code == 0
    assert "[components.tagger]" in config.read_text()


def test_a_created_folder_is_named(tmp_path):
    result = init_config(str(tmp_path / "new" / "deeper" / "c.cfg"))
    assert result.exit_code == 0, result.output
    assert f"Created the folder {tmp_path / 'new' / 'deeper'}" in result.output


def test_an_unwritable_place_is_one_error_line(tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("")
    result = init_config(str(tmp_path / "a_file" / "c.cfg"))  # its folder is a file
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"Error: cannot write {tmp_path / 'a_file' / 'c.cfg'}: File exists"]

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)  # a read-only folder, even for root
    result = init_config(str(tmp_path / "c.cfg"))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"Error: cannot write {tmp_path / 'c.cfg'}: Permission denied"]
