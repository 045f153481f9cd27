"""State dicts written by ``torch.save``, read without running code, every shape checked first.

``torch.save`` writes one of two containers. The zip archive (torch 1.6 and later) holds the
object as ``<name>/data.pkl`` and each storage's bytes as ``<name>/data/<key>``. The legacy
stream (torch 1.5 and before: ELMoForManyLangs' published models are torch 0.4 files) is five
pickles in a row (a magic number, a protocol number, system facts, the object, the list of
storage keys), then the storages' bytes, each after an 8-byte count. In both, a tensor is the
call ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)``, its storage a
persistent id ``("storage", torch.<Type>Storage, key, location, numel[, view])``.

:func:`stored_tensors` walks the object's pickle with an unpickler that knows an ordered dict
and stand-ins for those two and refuses every other name: nothing is called, no tensor is
allocated, and it returns each tensor's shape and the bytes its storage claims, which must be
in the file. :func:`read_state_dict` compares that with the shapes the caller expects, and only
then lets ``torch.load(weights_only=True)`` read the data (a small file claiming a huge tensor
would otherwise make the legacy reader allocate it before noticing).
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Union

import numpy

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
MAX_PICKLE_BYTES = 64 << 20  # the object pickle of a state dict is small; its data is elsewhere


# Tuples, not classes with a ``__dict__``: a pickle's BUILD opcode cannot rewrite them.
class StoredTensor(NamedTuple):
    """What the pickle says about one tensor: its shape and element type (the storage type's
    name, e.g. ``FloatStorage``)."""

    shape: tuple[int, ...]
    storage_type: str


class _StorageType(NamedTuple):
    name: str


class _Storage(NamedTuple):
    key: str
    kind: str
    numel: int


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
    ):
        raise _Refused("a tensor with a malformed storage, offset, size or stride")
    if 0 not in size and offset + sum((n - 1) * step for n, step in zip(size, stride)) >= storage.numel:
        raise _Refused(f"a tensor of shape {size} that reaches past its storage of {storage.numel} elements")
    return StoredTensor(tuple(size), storage.kind)


class _ShapeReader(pickle.Unpickler):
    """Unpickles a state dict into :class:`StoredTensor` records; any other name is refused."""

    def __init__(self, file: io.BufferedIOBase) -> None:
        super().__init__(file)
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
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise _Refused("a persistent object that is not a storage")
        kind, key, numel = pid[1], pid[2], pid[4]
        if not isinstance(kind, _StorageType) or type(numel) is not int or numel < 0:
            raise _Refused("a storage with a malformed type or size")
        if len(pid) == 6 and pid[5] is not None:
            raise _Refused("a storage view")
        storage = _Storage(str(key), kind.name, numel)
        if self.storages.setdefault(storage.key, storage) != storage:
            raise _Refused(f"storage {storage.key!r} described twice, differently")
        return storage


class _Plain(pickle.Unpickler):
    """Unpickles plain values only (the legacy stream's header and key list)."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"the name {module}.{name}")


def stored_tensors(path: PathLike) -> dict[str, StoredTensor]:
    """The name, shape and type of every tensor of the state dict ``torch.save`` wrote to
    ``path`` (either container), read without allocating any; a ``ValueError`` naming the file
    says what else it holds, or which storage the file lacks the bytes of."""
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            result, reader = _zip_tensors(path)
        else:
            result, reader = _legacy_tensors(path)
    except _Refused as refused:
        raise ValueError(f"{path} is not a plain state dict of tensors: it holds {refused}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, struct.error) as err:
        raise ValueError(f"{path} is not a readable torch.save file: {err}") from None
    if not isinstance(result, dict) or not all(
        isinstance(k, str) and isinstance(v, StoredTensor) for k, v in result.items()
    ):
        raise ValueError(f"{path} is not a state dict (a mapping of names to tensors)")
    return dict(result)


def _zip_tensors(path: Path) -> tuple[Any, _ShapeReader]:
    with zipfile.ZipFile(path) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        objects = [name for name in infos if name.count("/") == 1 and name.endswith("/data.pkl")]
        if len(objects) != 1:
            raise ValueError(f"expected one <name>/data.pkl in the archive, found {len(objects)}")
        prefix = objects[0][: -len("data.pkl")]
        if infos[objects[0]].file_size > MAX_PICKLE_BYTES:
            raise ValueError(f"{objects[0]} claims {infos[objects[0]].file_size} bytes")
        reader = _ShapeReader(io.BytesIO(archive.read(objects[0])))
        result = reader.load()
        for storage in reader.storages.values():
            entry = infos.get(f"{prefix}data/{storage.key}")
            needed = storage.numel * STORAGE_BYTES[storage.kind]
            if entry is None or entry.file_size < needed:
                raise ValueError(f"storage {storage.key!r} needs {needed} bytes, which the archive does not hold")
    return result, reader


def _legacy_tensors(path: Path) -> tuple[Any, _ShapeReader]:
    size = path.stat().st_size
    with path.open("rb") as stream:
        if _Plain(stream).load() != LEGACY_MAGIC:
            raise ValueError("no torch.save magic number (neither a zip archive nor a legacy torch file)")
        if _Plain(stream).load() != LEGACY_PROTOCOL:
            raise ValueError("an unknown legacy protocol version")
        _Plain(stream).load()  # system facts (byte order, type sizes)
        reader = _ShapeReader(stream)
        result = reader.load()
        keys = _Plain(stream).load()
        data_bytes = size - stream.tell()
    if not isinstance(keys, list) or sorted(map(str, keys)) != sorted(reader.storages):
        raise ValueError("the storage key list does not match the storages the object uses")
    needed = sum(8 + s.numel * STORAGE_BYTES[s.kind] for s in reader.storages.values())
    if needed > data_bytes:
        raise ValueError(f"its tensors claim {needed} bytes of data, but only {data_bytes} follow")
    return result, reader


def read_state_dict(
    path: PathLike, expected: Mapping[str, tuple[int, ...]], convert: Callable[[numpy.ndarray, str], numpy.ndarray]
) -> dict[str, numpy.ndarray]:
    """The tensors of ``path`` as numpy float arrays: exactly the names and shapes of ``expected``
    (compared before any data is read), each as ``convert(array, what)`` returns it (e.g. cast to
    the model's dtype and checked to be finite there; ``what`` names the file and the tensor).
    Every problem is a ``ValueError`` naming the file and the tensor."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Weight file not found: {path}")
    found = stored_tensors(path)
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
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds here; all mean "not a file we read"
        raise ValueError(f"{path} could not be read by torch.load(weights_only=True): {err}") from err
    arrays = {}
    for name in expected:
        tensor = state[name]
        array = tensor.detach().to(torch.float32 if tensor.element_size() < 4 else tensor.dtype).numpy()
        arrays[name] = convert(array, f"{path}: tensor {name!r}")
    return arrays
