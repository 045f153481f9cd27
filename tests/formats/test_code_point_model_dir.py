"""Our model directory holding a code-point model (ELMoForManyLangs'): its dictionaries,
``chars.json`` and ``words.json``, are covered by the checksums in ``config.json``, travel in a
packed model, are written complete or not at all with the other files, and a directory written
before the checksums existed still loads."""

import json

import numpy
import pytest

from spacy_elmo.formats.native import model_files, packed_model
from spacy_elmo.nn import BiLM

from ..conftest import MANY_LANGS_FIXTURES, full_disk_for, without_checksums


@pytest.fixture(scope="module")
def words_model() -> BiLM:
    return BiLM.from_elmoformanylangs(MANY_LANGS_FIXTURES / "words_zip.model")


@pytest.fixture
def ours(tmp_path, words_model):
    path = tmp_path / "ours"
    words_model.to_disk(path)
    return path


def swapped_ids(data: bytes) -> bytes:
    """The dictionary with the ids of two entries swapped: valid in every other respect."""
    entries = json.loads(data)
    first, second = list(entries)[:2]
    entries[first], entries[second] = entries[second], entries[first]
    return json.dumps(entries, ensure_ascii=False).encode("utf8")


def assert_same_model(copy: BiLM, original: BiLM) -> None:
    assert copy.config == original.config
    assert dict(copy.lexicon.chars) == dict(original.lexicon.chars)
    assert dict(copy.lexicon.words) == dict(original.lexicon.words)
    for name, array in original.state_arrays().items():
        numpy.testing.assert_array_equal(copy.state_arrays()[name], array)


def test_the_checksums_cover_the_dictionaries(ours):
    recorded = json.loads((ours / "config.json").read_text(encoding="utf8"))["sha256"]
    assert set(recorded) == {"config", "weights.hdf5", "chars.json", "words.json"}


@pytest.mark.parametrize("name", ["chars.json", "words.json"])
def test_a_changed_dictionary_is_refused(ours, name):
    (ours / name).write_bytes(swapped_ids((ours / name).read_bytes()))
    with pytest.raises(ValueError, match=f"ours/{name} does not match the SHA-256 recorded in config.json"):
        BiLM.from_disk(ours)
    BiLM.from_disk(without_checksums(ours))  # only the checksum tells this dictionary from the right one


def test_a_missing_dictionary_or_checksum_is_refused(ours):
    (ours / "words.json").unlink()
    with pytest.raises(ValueError, match="words.json is missing, but config.json records its checksum"):
        BiLM.from_disk(ours)
    meta = json.loads((ours / "config.json").read_text(encoding="utf8"))
    del meta["sha256"]["chars.json"], meta["sha256"]["words.json"]
    (ours / "config.json").write_text(json.dumps(meta), encoding="utf8")
    with pytest.raises(ValueError, match="config.json: 'sha256' lacks the checksum of chars.json, words.json"):
        BiLM.from_disk(ours)


def test_a_directory_written_before_the_checksums_still_loads(ours, words_model):
    assert_same_model(BiLM.from_disk(without_checksums(ours)), words_model)


@pytest.mark.parametrize("key", ["n_characters", "max_characters_per_token", "word_dim", "n_words"])
def test_a_code_point_config_json_missing_a_size_names_it(ours, key):
    meta = json.loads((without_checksums(ours) / "config.json").read_text(encoding="utf8"))
    del meta["config"][key]
    (ours / "config.json").write_text(json.dumps(meta), encoding="utf8")
    with pytest.raises(ValueError, match=f"config.json: invalid model config: missing setting\\(s\\) {key}"):
        BiLM.from_disk(ours)


def test_a_packed_model_carries_the_dictionaries_and_their_checksums(words_model):
    files = model_files(words_model.config, words_model.state_arrays(), words_model.vocab, words_model.lexicon)
    assert sorted(files) == ["chars.json", "config.json", "weights.hdf5", "words.json"]
    assert_same_model(BiLM.from_disk(packed_model(files, "biLM")), words_model)
    damaged = {**files, "chars.json": swapped_ids(files["chars.json"])}
    with pytest.raises(ValueError, match="biLM/chars.json does not match the SHA-256"):
        BiLM.from_disk(packed_model(damaged, "biLM"))


def test_a_full_disk_while_writing_a_dictionary_keeps_the_earlier_model(ours, monkeypatch):
    before = {path.name: path.read_bytes() for path in ours.iterdir()}
    other = BiLM.from_elmoformanylangs(MANY_LANGS_FIXTURES / "char_legacy.model")
    with full_disk_for(monkeypatch, "chars.json.tmp"):
        with pytest.raises(OSError, match="No space left on device"):
            other.to_disk(ours)
    assert {path.name: path.read_bytes() for path in ours.iterdir()} == before
