"""A damaged ELMoForManyLangs directory gives one error naming the file (and line or key); the
``.pkl`` files are checked before torch reads them, and torch only ever with ``weights_only``."""

import json
import logging
import pickle
import shutil

import pytest
import torch

from spacy_elmo.formats import torch_pickle
from spacy_elmo.formats.elmoformanylangs import read_elmoformanylangs
from spacy_elmo.loading import load_bilm

from ..conftest import MANY_LANGS_FIXTURES


@pytest.fixture(params=["char_legacy", "words_zip"])
def copy(tmp_path, request):
    target = tmp_path / "de.model"
    shutil.copytree(MANY_LANGS_FIXTURES / f"{request.param}.model", target)
    return target


def model_config_file(directory):
    return next(p for p in directory.glob("cnn_*.json"))


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def fails(directory, kind, *fragments):
    with pytest.raises(kind) as error:
        load_bilm(directory)
    for fragment in fragments:
        assert str(fragment) in str(error.value), str(error.value)
    return str(error.value)


def test_trainer_config_problems_name_config_json(copy):
    (copy / "config.json").write_text("{not json")
    fails(copy, ValueError, copy / "config.json")
    (copy / "config.json").write_text(json.dumps({"seed": 1}))
    fails(copy, ValueError, copy / "config.json", "config_path")
    (copy / "config.json").write_text(json.dumps({"config_path": "/elsewhere/cnn_9_9.json"}))
    fails(copy, FileNotFoundError, copy / "config.json", "cnn_9_9.json")


def test_the_model_config_is_found_by_base_name_inside_the_directory_only(copy, tmp_path):
    name = model_config_file(copy).name
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"encoder": {}, "token_embedder": {}}))
    (copy / "config.json").write_text(json.dumps({"config_path": str(tmp_path / "gone" / name)}))
    assert load_bilm(copy).config.char_encoding == "code_points"
    # An absolute path to an existing file elsewhere is not read; its base name inside is.
    shutil.copy(outside, tmp_path / name)
    (copy / "config.json").write_text(json.dumps({"config_path": str(tmp_path / name)}))
    assert load_bilm(copy).config.char_encoding == "code_points"
    (copy / "config.json").write_text(json.dumps({"config_path": "../" + name}))
    assert load_bilm(copy).config.char_encoding == "code_points"  # ../ leaves it: base name used


def test_a_bundled_config_name_falls_back_to_their_bundled_values(copy, caplog):
    model_config_file(copy).unlink()
    (copy / "config.json").write_text(json.dumps({"config_path": "/home/x/cnn_50_100_512_4096_sample.json"}))
    with caplog.at_level(logging.WARNING):  # their values are the published size: 7 filters
        fails(copy, ValueError, copy / "token_embedder.pkl", "tensors missing", "convolutions.6.weight")
    assert "bundled" in caplog.text


@pytest.mark.parametrize(
    "change,fragment",
    [
        (lambda c: c["encoder"].pop("dim"), "the required field encoder.dim is missing"),
        (lambda c: c["encoder"].update(name="lstm"), "'elmo'"),
        (lambda c: c["token_embedder"].update(name="lstm"), "'cnn'"),
        (lambda c: c["token_embedder"].update(char_dim=0), "char_dim 0"),
        (lambda c: c["token_embedder"].update(activation="gelu"), "activation"),
        (lambda c: c["token_embedder"].update(filters=[[1, "4"]]), "token_embedder.filters must be a list"),
        (lambda c: c["token_embedder"].update(max_characters_per_token=5), "max_characters_per_token"),
        (lambda c: c["encoder"].update(cell_clip="big"), "encoder.cell_clip must be a number or null"),
        (lambda c: c.pop("encoder"), "the required field encoder is missing"),
    ],
)
def test_model_config_problems_name_the_file_and_key(copy, change, fragment):
    path = model_config_file(copy)
    edit_json(path, change)
    fails(copy, ValueError, path, fragment)


def test_sizes_that_disagree_with_the_tensors_name_the_file_and_tensor(copy):
    path = model_config_file(copy)
    edit_json(path, lambda c: c["encoder"].update(dim=c["encoder"]["dim"] + 1))
    fails(copy, ValueError, copy / "encoder.pkl", "forward_layer_0.input_linearity.weight", "shape")


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("a\t0\nb\t1\tx\n", "line 2"),
        ("a\t0\nb\tone\n", "line 2"),
        ("a\t0\n\nb\t1\n", "line 2"),
        ("a\t0\n", "lacks the entries <bow>"),
    ],
)
def test_dictionary_problems_name_the_file_and_line(copy, text, fragment):
    (copy / "char.dic").write_text(text, encoding="utf-8")
    fails(copy, ValueError, copy / "char.dic", fragment)


def test_dictionary_ids_outside_the_table_and_size_mismatches(copy):
    lines = (copy / "char.dic").read_text(encoding="utf-8").splitlines()
    (copy / "char.dic").write_text("\n".join(lines[:-1] + ["<eow>\t999"]) + "\n", encoding="utf-8")
    fails(copy, ValueError, copy / "char.dic", "999")
    (copy / "char.dic").write_text(
        "\n".join(["zz\t0"] + [f"{line.split(chr(9))[0]}\t{i + 1}" for i, line in enumerate(lines)]) + "\n",
        encoding="utf-8",
    )
    fails(copy, ValueError, copy / "token_embedder.pkl", "char_emb_layer.embedding.weight")
    (copy / "char.dic").write_bytes(b"\xff\xfe")
    fails(copy, ValueError, copy / "char.dic", "UTF-8")


def test_missing_files(copy):
    (copy / "char.dic").unlink()
    fails(copy, FileNotFoundError, copy / "char.dic")
    (copy / "encoder.pkl").unlink()
    fails(copy, FileNotFoundError, "ELMoForManyLangs", "encoder.pkl")


def test_damaged_or_foreign_pickles_are_refused_before_torch_reads_them(copy, monkeypatch):
    def no_torch_load(*args, **kwargs):
        raise AssertionError("torch.load must not run on a file that failed the checks")

    monkeypatch.setattr(torch, "load", no_torch_load)
    data = (copy / "token_embedder.pkl").read_bytes()
    (copy / "token_embedder.pkl").write_bytes(data[: len(data) // 2])
    fails(copy, ValueError, copy / "token_embedder.pkl")
    (copy / "token_embedder.pkl").write_bytes(b"")
    fails(copy, ValueError, copy / "token_embedder.pkl")
    (copy / "token_embedder.pkl").write_text("hello", encoding="utf-8")
    fails(copy, ValueError, copy / "token_embedder.pkl")


class _Payload:
    def __reduce__(self):
        import os

        return (os.system, ("touch pwned",))


@pytest.mark.parametrize("legacy", [True, False])
def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path, monkeypatch, legacy):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pkl"
    torch.save({"weight": torch.zeros(2), "x": _Payload()}, path, _use_new_zipfile_serialization=not legacy)
    with pytest.raises(ValueError, match="system"):
        torch_pickle.stored_tensors(path)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("legacy", [True, False])
def test_a_small_file_claiming_a_huge_tensor_is_refused_before_allocating(tmp_path, legacy):
    path = tmp_path / "big.pkl"
    torch.save({"weight": torch.zeros(3)}, path, _use_new_zipfile_serialization=not legacy)
    raw = path.read_bytes()
    # The storage's element count, a pickled 3 (BININT1), becomes 2**31 - 1 (BININT).
    index = raw.find(b"K\x03", raw.find(b"cpu"))
    assert index > 0
    forged = raw[:index] + b"J\xff\xff\xff\x7f" + raw[index + 2 :]
    if legacy:
        path.write_bytes(forged)
    else:
        import zipfile

        with zipfile.ZipFile(path) as archive:
            entries = {info.filename: archive.read(info) for info in archive.infolist()}
        pickle_name = next(n for n in entries if n.endswith("data.pkl"))
        text = entries[pickle_name]
        at = text.find(b"K\x03", text.find(b"cpu"))
        entries[pickle_name] = text[:at] + b"J\xff\xff\xff\x7f" + text[at + 2 :]
        with zipfile.ZipFile(path, "w") as archive:
            for entry, content in entries.items():
                archive.writestr(entry, content)
    with pytest.raises(ValueError, match=r"85899345(88|96) bytes"):  # (2**31 - 1) float32 values (+ a count)
        torch_pickle.stored_tensors(path)


def test_non_float_tensors_and_nan_weights(tmp_path, copy):
    state = torch.load(copy / "token_embedder.pkl", weights_only=True)
    first = next(iter(state))
    state[first] = state[first].long()
    torch.save(state, copy / "token_embedder.pkl")
    fails(copy, ValueError, copy / "token_embedder.pkl", first, "not floating point")
    state[first] = state[first].float()
    state[first][1, 2] = float("nan")
    torch.save(state, copy / "token_embedder.pkl")
    fails(copy, ValueError, copy / "token_embedder.pkl", first, "NaN")


def test_a_float64_tensor_beyond_float32_is_refused(copy):
    """Checked after the cast to the model's float32, as weights in every other format are."""
    state = torch.load(copy / "encoder.pkl", weights_only=True)
    name = "backward_layer_0.state_projection.weight"
    state[name] = state[name].double()
    state[name][0, 1] = 1e300  # finite in float64, inf in float32
    torch.save(state, copy / "encoder.pkl")
    fails(
        copy,
        ValueError,
        copy / "encoder.pkl",
        f"tensor {name!r} has 1 value(s)",
        "in float32 (stored as float64: 1e+300)",
    )


@pytest.mark.parametrize(
    "change, fragment",
    [
        (lambda c: c["encoder"].update(cell_clip=float("nan")), "cell_clip must be a finite number"),
        (lambda c: c["token_embedder"].update(n_highway=10**7), "n_highway is 10000000, more than 64"),
        (lambda c: c["token_embedder"].update(max_characters_per_token=10**7), "max_characters_per_token is 10000000"),
    ],
)
def test_settings_our_config_refuses_name_the_model_config(copy, monkeypatch, change, fragment):
    """NaN settings and sizes that mean huge work: refused before any tensor is read."""
    path = model_config_file(copy)
    edit_json(path, change)
    monkeypatch.setattr(torch_pickle, "stored_tensors", lambda *args: pytest.fail("a tensor was looked at"))
    fails(copy, ValueError, path, fragment)


def test_a_state_dict_with_other_objects_is_no_state_dict(tmp_path):
    path = tmp_path / "mixed.pkl"
    torch.save({"weight": torch.zeros(2), "step": 3}, path)
    with pytest.raises(ValueError, match="not a state dict"):
        torch_pickle.stored_tensors(path)
    path.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(ValueError, match=str(path)):
        torch_pickle.stored_tensors(path)


def test_their_reader_quirks_are_kept(copy):
    """A line whose entry strip() removes stands for U+3000; a later line for an entry wins."""
    lines = (copy / "char.dic").read_text(encoding="utf-8").splitlines()
    first_char, first_id = lines[0].split("\t")
    lines[0] = f" \t{first_id}"
    second_char, second_id = lines[1].split("\t")
    lines.insert(1, f"{second_char}\t{first_id}")  # overridden by the next line
    (copy / "char.dic").write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    _, _, lexicon = read_elmoformanylangs(copy)
    assert lexicon.chars["\u3000"] == int(first_id) and first_char not in lexicon.chars
    assert lexicon.chars[second_char] == int(second_id)
