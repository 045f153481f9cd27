"""Hostile ``torch.save`` files: each is refused by the checks, with one ``ValueError`` naming the
file and no traceback chained from zipfile or pickle, before ``torch.load`` allocates anything;
and what the checks read is what ``torch.load`` reads. Every file is built here, small."""

import io
import pickle
import shutil
import struct
import warnings
import zipfile
from pathlib import Path

import numpy
import pytest
import torch

from spacy_elmo.formats import torch_pickle
from spacy_elmo.formats.torch_pickle import LEGACY_MAGIC, LEGACY_PROTOCOL, read_state_dict, stored_tensors

from ..conftest import MANY_LANGS_FIXTURES, MANY_LANGS_MODELS


def saved_members(state: dict) -> list[tuple[str, bytes]]:
    """The members of ``torch.save(state)``'s zip archive, in order: (name, bytes)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    with zipfile.ZipFile(buffer) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def write_zip(path: Path, members, compressed=()) -> Path:
    """An archive of ``members`` as Python's zipfile writes it (torch reads those too);
    the names in ``compressed`` DEFLATE-compressed, their bytes given as (block, count)."""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as archive:
        warnings.simplefilter("ignore")  # zipfile warns of a name written twice
        for name, data in members:
            if name in compressed:
                info = zipfile.ZipInfo(name)
                info.compress_type = zipfile.ZIP_DEFLATED
                block, count = data
                with archive.open(info, "w") as member:
                    for _ in range(count):
                        member.write(block)
            else:
                archive.writestr(name, data)
    return path


def legacy_file(path: Path, object_pickle: bytes, keys=(), data: bytes = b"") -> Path:
    """A legacy container: magic, protocol and system pickles, ``object_pickle``, the key list
    and ``data`` (the storages, each after its 8-byte element count)."""
    out = io.BytesIO()
    for value in (LEGACY_MAGIC, LEGACY_PROTOCOL, {"little_endian": True}):
        pickle.dump(value, out, protocol=2)
    out.write(object_pickle)
    pickle.dump(list(keys), out, protocol=2)
    path.write_bytes(out.getvalue() + data)
    return path


# One float tensor "w" of 4 elements in storage "0", as torch 0.4 pickles it (protocol 2; the
# storage's persistent id ends with a view, None, which the zip container's lacks).
_STORAGE_PID = b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\n%sX\x03\x00\x00\x00cpuK\x04NtQ"
_TENSOR = (  # storage, offset 0, size (4,), stride (1,), no grad, no backward hooks
    b"ctorch._utils\n_rebuild_tensor_v2\n("
    + _STORAGE_PID
    + b"K\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR"
)
_ONE_TENSOR = b"\x80\x02}X\x01\x00\x00\x00w" + _TENSOR % b"X\x01\x00\x00\x000" + b"s."
_FOUR_FLOATS = struct.pack("<q", 4) + bytes(16)


def refused(path: Path, *fragments: str) -> str:
    """The one ValueError for ``path``: it names the file and chains nothing."""
    with pytest.raises(ValueError) as error:
        stored_tensors(path)
    message = str(error.value)
    assert str(path) in message and all(f in message for f in fragments), message
    assert error.value.__cause__ is None and (error.value.__suppress_context__ or error.value.__context__ is None), (
        "a chained traceback"
    )
    return message


def test_the_hand_built_legacy_file_is_read(tmp_path):
    """The builder above is right: without a twist, its file passes and torch reads it."""
    path = legacy_file(tmp_path / "plain.pkl", _ONE_TENSOR, ["0"], _FOUR_FLOATS)
    assert stored_tensors(path) == {"w": torch_pickle.StoredTensor((4,), "FloatStorage")}
    assert torch.load(path, weights_only=True)["w"].tolist() == [0.0] * 4


@pytest.mark.parametrize("name", MANY_LANGS_MODELS)
@pytest.mark.parametrize("file", ["token_embedder.pkl", "encoder.pkl"])
def test_published_containers_load_bit_identical(name, file):
    path = MANY_LANGS_FIXTURES / f"{name}.model" / file
    reference = torch.load(path, weights_only=True)
    arrays = read_state_dict(path, {k: tuple(v.shape) for k, v in reference.items()}, lambda array, what: array)
    assert arrays.keys() == reference.keys()
    for key, tensor in reference.items():
        assert arrays[key].dtype == numpy.float32 and arrays[key].tobytes() == tensor.numpy().tobytes(), key


# ------------------------------------------------------------------ compressed members
def test_a_compressed_storage_that_inflates_a_thousandfold_is_refused_before_torch_reads_it(tmp_path, monkeypatch):
    members = saved_members({"w": torch.zeros(4)})
    n = 1 << 24  # 64 MiB of float32 zeros, 65 kB compressed
    ((pickle_name, data_pkl),) = [(k, v) for k, v in members if k.endswith("data.pkl")]
    assert data_pkl.count(b"K\x04") == 2  # the storage's element count and the tensor's size
    forged = data_pkl.replace(b"K\x04", b"J" + struct.pack("<i", n))
    storage = next(k for k, _ in members if k.endswith("data/0"))
    members = [(k, forged if k == pickle_name else (bytes(1 << 20), 64) if k == storage else v) for k, v in members]
    path = write_zip(tmp_path / "bomb.pkl", members, compressed={storage})
    assert path.stat().st_size < 200_000
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load ran on a compressed member"))
    refused(path, "compressed member", "data/0")
    with pytest.raises(ValueError, match="compressed member"):
        read_state_dict(path, {"w": (n,)}, lambda array, what: array)


def test_storages_bigger_than_their_member_are_refused(tmp_path):
    members = saved_members({"w": torch.zeros(4)})
    members = [(k, v[:8] if k.endswith("data/0") else v) for k, v in members]
    refused(write_zip(tmp_path / "short.pkl", members), "storage '0' needs 16 bytes", "holds 8")


# ------------------------------------------------------------------ one reading only
def two_pickles(tmp_path: Path, second_name: str) -> Path:
    """torch.save's members plus a second object pickle under ``second_name``: a state dict
    whose tensor has another shape (or a tensor that would not pass the checks)."""
    members = saved_members({"w": torch.zeros(4)})
    folder = members[0][0].split("/")[0]
    other = dict(saved_members({"w": torch.zeros(2, 2)}))
    other_pickle = next(v for k, v in other.items() if k.endswith("data.pkl"))
    return write_zip(tmp_path / "two.pkl", members + [(f"{folder}/{second_name}", other_pickle)])


@pytest.mark.parametrize("second_name", ["data.pkl", "DATA.PKL", "Data.pkl"])
def test_a_second_object_pickle_under_the_same_name_ignoring_case_is_refused(tmp_path, second_name):
    path = two_pickles(tmp_path, second_name)
    refused(path, "twice")


def test_a_legacy_stream_with_a_zip_appended_is_refused(tmp_path):
    """zipfile finds the appended zip; torch reads the legacy stream, by its first bytes."""
    legacy = tmp_path / "legacy.pkl"
    torch.save({"w": torch.zeros(4)}, legacy, _use_new_zipfile_serialization=False)
    appended = io.BytesIO()
    torch.save({"w": torch.zeros(2, 2)}, appended)
    path = tmp_path / "both.pkl"
    path.write_bytes(legacy.read_bytes() + appended.getvalue())
    assert torch.load(path, weights_only=True)["w"].shape == (4,)  # what torch reads
    refused(path, "bytes after the pickles, but")


@pytest.mark.parametrize(
    "twist, fragment",
    [
        (lambda raw: raw + b"\0" * 100, "does not end with its end record"),
        (lambda raw: b"\0" * 100 + raw, "no torch.save magic number"),  # torch too reads it as legacy
        (lambda raw: raw[:-2] + b"\x05\x00" + b"hello", "does not end with its end record"),  # a comment
    ],
)
def test_bytes_around_a_zip_archive_are_refused(tmp_path, twist, fragment):
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buffer)
    path = tmp_path / "around.pkl"
    path.write_bytes(twist(buffer.getvalue()))
    refused(path, fragment)


def test_a_member_hidden_between_members_is_refused(tmp_path):
    """Bytes no directory entry accounts for: a reader that scans local headers would find more."""
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buffer)
    raw = buffer.getvalue()
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        second = archive.infolist()[1].header_offset
        cd_offset = archive.start_dir
    hidden = b"\0" * 64
    shifted = bytearray(raw[:second] + hidden + raw[second:])
    # Move every later offset in the directory and the end record by the bytes inserted.
    cd = cd_offset + len(hidden)
    at = cd
    while shifted[at : at + 4] == b"PK\x01\x02":
        name_length, extra_length, comment_length = struct.unpack("<HHH", shifted[at + 28 : at + 34])
        (offset,) = struct.unpack("<I", shifted[at + 42 : at + 46])
        if offset >= second:
            shifted[at + 42 : at + 46] = struct.pack("<I", offset + len(hidden))
        at += 46 + name_length + extra_length + comment_length
    shifted[-6:-2] = struct.pack("<I", cd)  # the end record's directory offset
    locator = len(shifted) - 22 - 20  # and the zip64 end record's, which torch writes too
    assert shifted[locator : locator + 4] == b"PK\x06\x07"
    (record,) = struct.unpack("<Q", shifted[locator + 8 : locator + 16])
    shifted[locator + 8 : locator + 16] = struct.pack("<Q", record + len(hidden))
    shifted[record + len(hidden) + 48 : record + len(hidden) + 56] = struct.pack("<Q", cd)
    path = tmp_path / "hidden.pkl"
    path.write_bytes(bytes(shifted))
    assert torch.load(path, weights_only=True)["w"].shape == (4,)  # still a file torch reads
    refused(path, "64 bytes unaccounted for")


@pytest.mark.parametrize(
    "records, fragment",
    [
        ("both", "end record disagrees with its directory"),  # miniz would list one entry fewer
        ("short", "two end records disagree"),
    ],
)
def test_an_entry_count_the_directory_does_not_have_is_refused(tmp_path, records, fragment):
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buffer)
    raw = bytearray(buffer.getvalue())
    (count,) = struct.unpack("<H", raw[-12:-10])
    raw[-14:-10] = struct.pack("<HH", count - 1, count - 1)  # the short end record's two counts
    if records == "both":
        (record,) = struct.unpack("<Q", raw[-42 + 8 : -42 + 16])  # the zip64 locator names the record
        raw[record + 24 : record + 40] = struct.pack("<QQ", count - 1, count - 1)
    path = tmp_path / "count.pkl"
    path.write_bytes(bytes(raw))
    refused(path, fragment)


# ------------------------------------------------------------------ one error each
def flip_bit(raw: bytes, at: int) -> bytes:
    return raw[:at] + bytes([raw[at] ^ 0x10]) + raw[at + 1 :]


def data_at(raw: bytes, member_suffix: str) -> int:
    """The offset of the first data byte of the zip member whose name ends so."""
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(member_suffix))
    name_length, extra_length = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
    return info.header_offset + 30 + name_length + extra_length


@pytest.mark.parametrize("member", ["data.pkl", "data/0"])
def test_one_flipped_bit_in_a_zip_member_is_found(tmp_path, member):
    """The object pickle's CRC (zipfile raised BadZipFile) and a storage's, which torch does
    not check: a flipped bit there loaded as another weight."""
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(4.0)}, buffer)
    path = tmp_path / "flipped.pkl"
    path.write_bytes(flip_bit(buffer.getvalue(), data_at(buffer.getvalue(), member) + 5))
    refused(path, "is damaged", "CRC")
    with pytest.raises(ValueError, match="CRC"):
        read_state_dict(path, {"w": (4,)}, lambda array, what: array)


def central_entry(raw: bytes, member_suffix: str) -> int:
    """The offset of the central directory entry of the member ending so."""
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        at = archive.start_dir
    while True:
        name_length, extra_length, comment_length = struct.unpack("<HHH", raw[at + 28 : at + 34])
        if raw[at + 46 : at + 46 + name_length].decode().endswith(member_suffix):
            return at
        at += 46 + name_length + extra_length + comment_length


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        (8, 0x809, "encrypted member"),  # flag bit 0 (zipfile: RuntimeError, a password needed)
        (10, 99, "compressed member"),  # an unknown method (zipfile: NotImplementedError)
        (8, 0x828, "zip flags 0x828"),  # bit 5, compressed patch data (zipfile: NotImplementedError)
    ],
)
def test_zip_features_torch_never_writes_are_refused(tmp_path, field, value, fragment):
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buffer)
    raw = bytearray(buffer.getvalue())
    at = central_entry(bytes(raw), "data.pkl")
    raw[at + field : at + field + 2] = struct.pack("<H", value)
    path = tmp_path / "feature.pkl"
    path.write_bytes(bytes(raw))
    refused(path, fragment)


def nested_key(depth: int) -> bytes:
    return b"X\x01\x00\x00\x000" + b"\x85" * depth  # "0" in `depth` tuples


def one_tensor_files(tmp_path: Path, object_pickle: bytes) -> list[Path]:
    """``object_pickle`` as the object of a legacy file and of a zip archive, each holding the
    bytes of one storage "0" of 4 float32 values."""
    legacy = legacy_file(tmp_path / "legacy.pkl", object_pickle, ["0"], _FOUR_FLOATS)
    zipped = object_pickle.replace(b"K\x04NtQ", b"K\x04tQ")  # the zip container's id has no view
    members = [(k, zipped if k.endswith("data.pkl") else v) for k, v in saved_members({"w": torch.zeros(4)})]
    return [legacy, write_zip(tmp_path / "zip.pkl", members)]


def test_a_huge_memo_index_allocates_nothing(tmp_path):
    """LONG_BINPUT at index 2**32 - 1: the C unpickler sized its memo for it (MemoryError, or
    64 GB where that much can be had); the state dict is otherwise plain, and read."""
    object_pickle = b"\x80\x02}r\xff\xff\xff\xffX\x01\x00\x00\x00w" + _TENSOR % b"X\x01\x00\x00\x000" + b"s."
    for path in one_tensor_files(tmp_path, object_pickle):
        arrays = read_state_dict(path, {"w": (4,)}, lambda array, what: array)
        assert arrays["w"].tolist() == torch.load(path, weights_only=True)["w"].tolist() == [0.0] * 4


@pytest.mark.parametrize(
    "object_pickle, fragment",
    [
        # a FRAME claiming 2**60 bytes, read from the file (MemoryError)
        (b"\x80\x04\x95" + struct.pack("<Q", 1 << 60) + b"}.", "not a readable torch.save file"),
        # BINBYTES8 claiming 2**40 bytes (MemoryError)
        (b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b".", "not a readable torch.save file"),
    ],
)
def test_huge_claims_in_a_legacy_pickle_give_one_value_error(tmp_path, object_pickle, fragment):
    refused(legacy_file(tmp_path / "claims.pkl", object_pickle, ["0"], _FOUR_FLOATS), fragment)


@pytest.mark.parametrize(
    "object_pickle, fragment",
    [
        # a storage key nested in 100000 tuples (RecursionError)
        (b"\x80\x02}X\x01\x00\x00\x00w" + _TENSOR % nested_key(100_000) + b"s.", "malformed type, key or size"),
        # BUILD on a tensor record (AttributeError: it has no __dict__)
        (
            b"\x80\x02}X\x01\x00\x00\x00w" + _TENSOR % b"X\x01\x00\x00\x000" + b"}X\x01\x00\x00\x00aK\x01sbs.",
            "a BUILD (an attribute update) of a StoredTensor",
        ),
        # APPEND to a dict (AttributeError)
        (b"\x80\x02}K\x01a.", "not a readable torch.save file"),
    ],
)
def test_hostile_object_pickles_give_one_value_error(tmp_path, object_pickle, fragment):
    for path in one_tensor_files(tmp_path, object_pickle):
        refused(path, fragment)


def test_the_legacy_storage_counts_must_match(tmp_path):
    path = legacy_file(tmp_path / "count.pkl", _ONE_TENSOR, ["0"], struct.pack("<q", 3) + bytes(16))
    refused(path, "storage '0' of 4 elements is not at byte")


def test_a_legacy_file_that_is_also_a_tar_archive_is_refused(tmp_path):
    """torch.load tries the pre-0.4 tar container first: a header block that parses as tar
    would make it read other pickles than the checks did."""
    import tarfile

    block = tarfile.TarInfo("x").tobuf(tarfile.USTAR_FORMAT)
    path = tmp_path / "tar.pkl"
    legacy_file(path, _ONE_TENSOR, ["0"], _FOUR_FLOATS)
    path.write_bytes(block + path.read_bytes())
    refused(path, "tar archive")


def test_their_metadata_build_is_the_only_one_accepted(tmp_path):
    """torch's state dicts set ``_metadata`` on the OrderedDict with BUILD: accepted, dropped."""
    path = tmp_path / "meta.pkl"
    torch.save(torch.nn.Linear(2, 3).state_dict(), path)
    assert set(stored_tensors(path)) == {"weight", "bias"}


def test_a_special_file_is_refused_without_reading_it(tmp_path):
    """(FIFOs too: tests/formats/test_regular_files.py; here a link to /dev/null, read as empty.)"""
    link = tmp_path / "null.pkl"
    link.symlink_to("/dev/null")
    with pytest.raises(
        ValueError, match="null.pkl: the torch.save file must be a regular file, but it is a character device"
    ):
        stored_tensors(link)
    with pytest.raises(ValueError, match="null.pkl: the weights file must be a regular file"):
        read_state_dict(link, {}, lambda array, what: array)
    with pytest.raises(FileNotFoundError, match="gone.pkl is missing"):
        read_state_dict(tmp_path / "gone.pkl", {}, lambda array, what: array)


def test_a_hostile_pickle_in_a_model_folder_is_one_cli_error_line(tmp_path):
    """``spacy-elmo embed --weights DIR`` prints one ``Error:`` line naming the file."""
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    folder = tmp_path / "de.model"
    shutil.copytree(MANY_LANGS_FIXTURES / "words_zip.model", folder)
    raw = (folder / "encoder.pkl").read_bytes()
    (folder / "encoder.pkl").write_bytes(flip_bit(raw, data_at(raw, "data.pkl") + 9))  # zipfile: Bad CRC-32
    source = tmp_path / "in.txt"
    source.write_text("ein Satz\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["embed", str(source), str(tmp_path / "out.hdf5"), "--weights", str(folder), "--no-progress"]
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and str(folder / "encoder.pkl") in lines[0], result.output
