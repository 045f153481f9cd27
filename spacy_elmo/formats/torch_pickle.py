"""``torch.save`` state dicts (zip, or the legacy stream of ELMoForManyLangs' models), walked
without running or allocating anything before ``torch.load(weights_only=True)`` reads the very
handle that was checked (docs/reliability.md). A tensor is ``_rebuild_tensor_v2(storage, offset,
size, stride, ...)``, its storage the persistent id ``("storage", <Type>Storage, key, location,
numel[, view])``; the legacy stream is five pickles (magic, protocol, system facts, the object,
the storage keys), then each storage after an 8-byte element count."""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import tarfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Mapping, NamedTuple, Optional, Union

import numpy

from .regular_files import open_regular_file
from .torch_zip import ZIP_MAGIC, open_torch_zip

PathLike = Union[str, Path]

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
#: Bytes per element of the storage types a state dict may name.
STORAGE_BYTES = {
    "DoubleStorage": 8,
    "FloatStorage": 4,
    "HalfStorage": 2,
    "BFloat16Storage": 2,
    "LongStorage": 8,
    "IntStorage": 4,
    "ShortStorage": 2,
    "CharStorage": 1,
    "ByteStorage": 1,
    "BoolStorage": 1,
}
FLOAT_STORAGES = ("DoubleStorage", "FloatStorage", "HalfStorage", "BFloat16Storage")
#: The pickles of a state dict are small (a published model's: 3 kB); its data is elsewhere.
MAX_PICKLE_BYTES = 4 << 20
_DAMAGE = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    struct.error,
)


# Tuples, not classes with a ``__dict__``: a pickle's BUILD opcode cannot rewrite them.
class StoredTensor(NamedTuple):
    """What the pickle says about one tensor: its shape and storage type (``FloatStorage``)."""

    shape: tuple[int, ...]
    storage_type: str


class _StorageType(NamedTuple):
    name: str


class _Storage(NamedTuple):
    key: str
    kind: str
    numel: int

    @property
    def nbytes(self) -> int:
        return self.numel * STORAGE_BYTES[self.kind]


class _Refused(Exception):
    """Internal: the pickle holds something a state dict of tensors does not."""


def _stand_in_tensor(storage: Any, offset: Any, size: Any, stride: Any, *rest: Any) -> StoredTensor:
    """``_rebuild_tensor_v2``'s arguments, checked to lie inside their storage; nothing built."""
    if (
        not isinstance(storage, _Storage)
        or not all(isinstance(v, tuple) and all(type(n) is int and n >= 0 for n in v) for v in (size, stride))
        or type(offset) is not int
        or offset < 0
        or len(size) != len(stride)
        or len(rest) not in (2, 3)
    ):
        raise _Refused("a tensor with a malformed storage, offset, size or stride")
    if 0 not in size and offset + sum((n - 1) * step for n, step in zip(size, stride)) >= storage.numel:
        raise _Refused(f"a tensor of shape {size} that reaches past its storage of {storage.numel} elements")
    return StoredTensor(tuple(size), storage.kind)


#: The opcodes torch's weights-only unpickler reads: refusing the others, both read the same bytes.
_TORCH_OPCODES = tuple(
    getattr(pickle, name)
    for name in (
        "APPEND APPENDS BINFLOAT BINGET BININT BININT1 BININT2 BINPERSID BINPUT BINUNICODE BUILD EMPTY_DICT EMPTY_LIST "
        "EMPTY_SET EMPTY_TUPLE GLOBAL LONG1 LONG_BINGET LONG_BINPUT MARK NEWFALSE NEWOBJ NEWTRUE NONE PROTO REDUCE "
        "SETITEM SETITEMS SHORT_BINSTRING STOP TUPLE TUPLE1 TUPLE2 TUPLE3"
    ).split()
)


class _Opcodes(dict):
    def __missing__(self, code: int) -> Any:
        raise pickle.UnpicklingError(f"pickle opcode {code:#04x}, which torch's weights-only reader refuses")


class _Plain(pickle._Unpickler):  # Python's: the C one sizes its memo by the largest index named
    """Unpickles plain values only (the legacy stream's header and key list)."""

    stack: list[Any]  # the unpickler's value stack, set by load()
    dispatch = _Opcodes({op[0]: pickle._Unpickler.dispatch[op[0]] for op in _TORCH_OPCODES})

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"the name {module}.{name}")

    def load_build(self) -> None:
        """Sets attributes: only torch's ``_metadata`` of a state dict, which is dropped."""
        state = self.stack.pop()
        if type(self.stack[-1]) is not collections.OrderedDict or not isinstance(state, dict):
            raise _Refused(f"a BUILD (an attribute update) of a {type(self.stack[-1]).__name__}")

    dispatch[pickle.BUILD[0]] = load_build


class _ShapeReader(_Plain):
    """Unpickles a state dict into :class:`StoredTensor` records; any other name is refused."""

    def __init__(self, file: BinaryIO, pid_length: int) -> None:
        super().__init__(file)
        self.pid_length = pid_length  # 5 in the zip container; 6 (a view, None) in the legacy one
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _stand_in_tensor
        if module == "torch" and name in STORAGE_BYTES:
            return _StorageType(name)
        raise _Refused(f"the name {module}.{name}")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (type(pid) is tuple and len(pid) == self.pid_length and pid[0] == "storage"):
            raise _Refused("a persistent object that is not a storage")
        kind, key, numel = pid[1], pid[2], pid[4]
        if not isinstance(kind, _StorageType) or type(key) is not str or type(numel) is not int or numel < 0:
            raise _Refused("a storage with a malformed type, key or size")
        if len(pid) == 6 and pid[5] is not None:  # the legacy container's view
            raise _Refused("a storage view")
        storage = _Storage(key, kind.name, numel)
        if self.storages.setdefault(storage.key, storage) != storage:
            raise _Refused(f"storage {storage.key!r} described twice, differently")
        return storage


def stored_tensors(path: PathLike, handle: Optional[BinaryIO] = None) -> dict[str, StoredTensor]:
    """Every tensor's shape and type, nothing allocated; ``handle``: the open file the caller reads next."""
    path = Path(path)
    if handle is None:
        with open_regular_file(path, "torch.save file") as opened:
            return stored_tensors(path, opened)
    handle.seek(0)
    size = os.fstat(handle.fileno()).st_size
    try:
        is_zip = handle.read(len(ZIP_MAGIC)) == ZIP_MAGIC
        handle.seek(0)
        result = _zip_tensors(handle, size) if is_zip else _legacy_tensors(handle, size)
    except _Refused as refused:
        raise ValueError(f"{path} is not a plain state dict of tensors: it holds {refused}") from None
    except _DAMAGE as err:
        raise ValueError(f"{path} is not a readable torch.save file: {err}") from None
    if not isinstance(result, dict) or not all(
        isinstance(k, str) and isinstance(v, StoredTensor) for k, v in result.items()
    ):
        raise ValueError(f"{path} is not a state dict (a mapping of names to tensors)")
    return dict(result)


def _zip_tensors(handle: BinaryIO, size: int) -> Any:
    archive, folder = open_torch_zip(handle, size)
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        pickle_name = folder + "data.pkl"
        if pickle_name not in members:
            raise ValueError(f"no {pickle_name} in the archive")
        if members[pickle_name].file_size > MAX_PICKLE_BYTES:
            raise ValueError(f"{pickle_name} is {members[pickle_name].file_size} bytes, more than {MAX_PICKLE_BYTES}")
        reader = _ShapeReader(io.BytesIO(archive.read(pickle_name)), pid_length=5)
        result = reader.load()
    for storage in reader.storages.values():  # members tile the file: together they fit in it
        entry = members.get(f"{folder}data/{storage.key}")
        if entry is None or entry.file_size != storage.nbytes:
            held = "none" if entry is None else f"{entry.file_size}"
            raise ValueError(
                f"storage {storage.key!r} needs {storage.nbytes} bytes, but the archive holds {held} for it"
            )
    return result


def _legacy_tensors(handle: BinaryIO, size: int) -> Any:
    try:  # torch's legacy reader tries a tar archive first
        tarfile.TarInfo.frombuf(handle.read(tarfile.BLOCKSIZE), tarfile.ENCODING, "surrogateescape")
    except tarfile.HeaderError:
        handle.seek(0)
    else:
        raise ValueError("a tar archive (torch's container before 0.4), which torch.load would read instead")
    head = io.BytesIO(handle.read(min(size, MAX_PICKLE_BYTES)))
    try:
        magic = _Plain(head).load()
    except _DAMAGE + (_Refused,):
        magic = None
    if magic != LEGACY_MAGIC:
        raise ValueError("no torch.save magic number (neither a zip archive nor a legacy torch file)")
    if _Plain(head).load() != LEGACY_PROTOCOL:
        raise ValueError("an unknown legacy protocol version")
    _Plain(head).load()  # system facts (byte order, type sizes)
    reader = _ShapeReader(head, pid_length=6)
    result = reader.load()
    keys = _Plain(head).load()
    if (
        not isinstance(keys, list)
        or not all(type(key) is str for key in keys)
        or len(set(keys)) != len(keys)
        or set(keys) != set(reader.storages)
    ):
        raise ValueError("the storage key list does not match the storages the object uses")
    position = head.tell()
    needed = sum(8 + storage.nbytes for storage in reader.storages.values())
    if needed != size - position:
        raise ValueError(f"its storages need {needed} bytes after the pickles, but {size - position} bytes follow")
    for key in keys:  # torch reads them in this order, each after its element count
        storage = reader.storages[key]
        handle.seek(position)
        if struct.unpack("<q", handle.read(8))[0] != storage.numel:
            raise ValueError(f"storage {key!r} of {storage.numel} elements is not at byte {position}")
        position += 8 + storage.nbytes
    return result


def read_state_dict(
    path: PathLike, expected: Mapping[str, tuple[int, ...]], convert: Callable[[numpy.ndarray, str], numpy.ndarray]
) -> dict[str, numpy.ndarray]:
    """Exactly the tensors of ``expected`` (names and shapes checked first), each through ``convert``."""
    import torch

    path = Path(path)
    with open_regular_file(path, "weights file") as handle:
        found = stored_tensors(path, handle)
        missing, unused = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        if missing or unused:
            raise ValueError(
                f"{path}: tensors missing: {missing or 'none'}; tensors the config does not use: {unused or 'none'}"
            )
        for name, shape in expected.items():
            if found[name].shape != tuple(shape):
                raise ValueError(
                    f"{path}: tensor {name!r} has shape {found[name].shape}, but the config implies {tuple(shape)}"
                )
            if found[name].storage_type not in FLOAT_STORAGES:
                raise ValueError(f"{path}: tensor {name!r} is a {found[name].storage_type}, not floating point")
        handle.seek(0)
        try:
            state = torch.load(handle, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises many kinds here; all mean "not a file we read"
            raise ValueError(f"{path} could not be read by torch.load(weights_only=True): {err}") from None
    arrays = {}
    for name in expected:
        tensor = state[name]
        array = tensor.detach().to(torch.float32 if tensor.element_size() < 4 else tensor.dtype).numpy()
        arrays[name] = convert(array, f"{path}: tensor {name!r}")
    return arrays
