"""``spacy-elmo inspect``: each listener's learned layer weights and gamma, and the plot."""

import copy
import sys

import pytest
import spacy
import torch
from spacy.training import Example
from typer.testing import CliRunner

from spacy_elmo import BiLM
from spacy_elmo.cli import app
from spacy_elmo.config import TINY_CONFIG

from ..conftest import TINY_TAGGER_MODEL


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    torch.manual_seed(0)
    weights = tmp_path_factory.mktemp("bilm")
    BiLM(TINY_CONFIG).to_disk(weights)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    nlp.add_pipe("tagger", config={"model": copy.deepcopy(TINY_TAGGER_MODEL)})
    examples = [Example.from_dict(nlp.make_doc("the river bank"), {"tags": ["D", "N", "N"]})]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    path = tmp_path_factory.mktemp("pipeline")
    nlp.to_disk(path)
    return path


def test_prints_weights_and_gamma(pipeline_dir, tmp_path):
    plot = tmp_path / "mix.png"
    result = CliRunner().invoke(app, ["inspect", str(pipeline_dir), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "tagger (listens to 'elmo', grad_factor 0)" in result.output
    assert result.output.count("  layer ") == TINY_CONFIG.n_output_layers
    assert "gamma" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_one_line_saying_how_to_get_it(pipeline_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    result = CliRunner().invoke(app, ["inspect", str(pipeline_dir), "--plot", str(tmp_path / "mix.png")])
    assert result.exit_code == 1
    assert result.output == "Error: Plotting needs matplotlib: pip install matplotlib\n"
    assert not (tmp_path / "mix.png").exists()


def test_pipeline_without_listeners(tmp_path):
    spacy.blank("en").to_disk(tmp_path / "blank")
    result = CliRunner().invoke(app, ["inspect", str(tmp_path / "blank")])
    assert result.exit_code == 1
    assert "no component with an initialized ELMo listener" in result.output


def fake_installed_package(site, pipeline_dir, name="en_elmo_test_pkg", version="0.0.1"):
    """What ``spacy package`` + pip install leave: an importable package with a dist-info."""
    import shutil

    package = site / name
    shutil.copytree(pipeline_dir, package / f"{name}-{version}")
    (package / "meta.json").write_text(f'{{"lang": "en", "name": "{name[3:]}", "version": "{version}"}}')
    (package / "__init__.py").write_text(
        "from spacy.util import load_model_from_init_py\n\n"
        "def load(**overrides):\n    return load_model_from_init_py(__file__, **overrides)\n"
    )
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return name


def test_accepts_an_installed_package_name(pipeline_dir, tmp_path, monkeypatch):
    name = fake_installed_package(tmp_path, pipeline_dir)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path / name)  # no directory of that name where we run
    result = CliRunner().invoke(app, ["inspect", name])
    assert result.exit_code == 0, result.output
    assert "tagger (listens to 'elmo', grad_factor 0)" in result.output


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_neither_package_nor_directory(tmp_path, kind):
    target = tmp_path / "nothing_here"
    if kind == "file":
        target.write_text("x")
    result = CliRunner().invoke(app, ["inspect", str(target)])
    assert result.exit_code == 1
    expected = (
        "is a file, not a pipeline directory" if kind == "file" else "neither an installed package nor a directory"
    )
    assert expected in result.output
