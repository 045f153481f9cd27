"""A saved pipeline whose ``elmo`` files were damaged or tampered with is refused with one
``ValueError`` that names the pipeline directory and the component, never a deleted temporary
folder or a bare "Unpack failed"; weights beyond float32 and changed dictionaries of a code-point
biLM are refused there too."""

import json
import random
import shutil

import pytest
import spacy
import torch

from spacy_elmo.models.doc_layers import set_bilm

from ..conftest import MANY_LANGS_FIXTURES, random_tiny_bilm


@pytest.fixture(scope="module")
def saved_pipeline(tmp_path_factory, tiny_weights):
    path = tmp_path_factory.mktemp("saved") / "pipeline"
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    nlp.initialize()
    nlp.to_disk(path)
    return path


def damaged_copy(saved_pipeline, tmp_path, name, damage):
    copy = tmp_path / "copy"
    shutil.copytree(saved_pipeline, copy)
    target = copy / "elmo" / name
    target.write_bytes(damage(target.read_bytes()))
    return copy


def flip(position: int):
    def damage(data: bytes) -> bytes:
        changed = bytearray(data)
        changed[position % len(data)] ^= 0x10
        return bytes(changed)

    return damage


POSITIONS = random.Random(3).sample(range(100_000), 12)


@pytest.mark.parametrize(
    "name, damage",
    [
        *[("model", flip(position)) for position in POSITIONS],
        ("model", lambda data: data[: len(data) // 2]),
        ("model", lambda data: data[:7]),
        ("cfg", lambda data: data[:-3]),
    ],
    ids=[f"flip-{p}" for p in POSITIONS] + ["half", "seven-bytes", "cfg-cut"],
)
def test_a_damaged_component_names_the_pipeline_and_the_component(saved_pipeline, tmp_path, name, damage):
    copy = damaged_copy(saved_pipeline, tmp_path, name, damage)
    with pytest.raises(ValueError) as caught:
        spacy.load(copy)
    message = str(caught.value)
    assert message.startswith(f"{copy}: the pipeline's component 'elmo' cannot be loaded from {copy / 'elmo'}: "), (
        message
    )
    assert "/tmp/tmp" not in message and "\n" not in message


def test_weights_beyond_float32_in_a_saved_pipeline_are_refused(tmp_path):
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo")
    bilm = random_tiny_bilm(0).double()
    with torch.no_grad():
        bilm.backward_lstm.layers[1].projection_weight[0, 0] = 1e300
    set_bilm(elmo.model, bilm)
    nlp.to_disk(tmp_path / "pipeline")
    with pytest.raises(
        ValueError,
        match=r"component 'elmo' .*biLM/weights.hdf5: dataset 'backward_lstm.layers.1.projection_weight' "
        r"has 1 value.* in float32",
    ):
        spacy.load(tmp_path / "pipeline")


def test_a_tampered_dictionary_in_a_saved_code_point_pipeline_is_refused(tmp_path):
    """The packed biLM of an ELMoForManyLangs pipeline carries chars.json and words.json under
    its checksums: two ids swapped (valid JSON of the same length) are caught and named."""
    nlp = spacy.blank("de")
    elmo = nlp.add_pipe("elmo", config={"weights": str(MANY_LANGS_FIXTURES / "words_zip.model")})
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    assert spacy.load(tmp_path / "pipeline").get_pipe("elmo").bilm.lexicon.words == elmo.bilm.lexicon.words
    chars = dict(elmo.bilm.lexicon.chars)
    stored = json.dumps(chars, ensure_ascii=False).encode("utf8")
    first, second = (entry for entry, index in chars.items() if index in (10, 11))
    chars[first], chars[second] = chars[second], chars[first]
    model_file = tmp_path / "pipeline" / "elmo" / "model"
    data = model_file.read_bytes()
    assert data.count(stored) == 1
    model_file.write_bytes(data.replace(stored, json.dumps(chars, ensure_ascii=False).encode("utf8")))
    with pytest.raises(
        ValueError,
        match=r"pipeline: the pipeline's component 'elmo' cannot be loaded from .*: "
        r"biLM/chars.json does not match the SHA-256",
    ):
        spacy.load(tmp_path / "pipeline")
