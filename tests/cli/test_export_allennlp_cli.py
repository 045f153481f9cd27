"""``spacy-elmo export-allennlp`` into a folder where links wait at the temporary names: the
links' targets stay as they were and the exported files are regular files."""

from pathlib import Path

from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.nn import BiLM

from ..conftest import random_tiny_bilm


def test_links_at_the_temporary_names_of_an_export_change_nothing(tmp_path: Path):
    model_dir, out = tmp_path / "model", tmp_path / "export"
    random_tiny_bilm(1).to_disk(model_dir)
    out.mkdir()
    victims = []
    for name in ("options.json", "weights.hdf5"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("someone else's file\n")
        (out / f"{name}.tmp").symlink_to(victim)
        victims.append(victim)
    result = CliRunner().invoke(app, ["export-allennlp", str(model_dir), str(out)])
    assert result.exit_code == 0, result.output
    assert [victim.read_text() for victim in victims] == ["someone else's file\n"] * 2
    for name in ("options.json", "weights.hdf5"):
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    reference = tmp_path / "reference"
    BiLM.from_disk(model_dir).to_allennlp(reference / "options.json", reference / "weights.hdf5")
    exported = BiLM.from_allennlp(out / "options.json", out / "weights.hdf5").state_dict()
    expected = BiLM.from_allennlp(reference / "options.json", reference / "weights.hdf5").state_dict()
    assert all(exported[key].equal(expected[key]) for key in expected)
