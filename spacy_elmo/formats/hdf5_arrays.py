"""Checked reads from HDF5 files: every failure names the file, the dataset and the shapes, and no
file that reads other files is opened (docs/reliability.md)."""

from __future__ import annotations

import io
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, Union

import h5py
import numpy

from .regular_files import open_regular_file

PathLike = Union[str, Path]


def open_hdf5(source: Union[PathLike, bytes], where: Optional[str] = None) -> h5py.File:
    """A file (or a file's bytes) opened read-only once :func:`check_hdf5_safe` accepts it; a file
    that is not HDF5, or is damaged, is one ``ValueError`` naming ``where``."""
    if isinstance(source, bytes):
        where, target, is_hdf5 = where or "HDF5 bytes", io.BytesIO(source), source.startswith(b"\x89HDF\r\n\x1a\n")
    else:
        open_regular_file(source, "HDF5 file").close()  # h5py would wait on a FIFO
        where, target, is_hdf5 = where or str(source), source, h5py.is_hdf5(source)
    if not is_hdf5:
        raise ValueError(f"{where} is not an HDF5 file")
    try:
        handle = h5py.File(target, "r")
    except OSError as err:
        raise ValueError(f"{where} could not be read as HDF5: {err}") from err
    try:
        with named_damage(where):
            check_hdf5_safe(handle, where)
    except BaseException:
        handle.close()
        raise
    return handle


def hdf5_image(write: Callable[[h5py.File], None]) -> bytes:
    """Built in memory: a full disk is then an ``OSError`` of a write, never a failed HDF5 write (a crash)."""
    name = f"in-memory-{uuid.uuid4().hex}.hdf5"  # HDF5 refuses two open files of one name, even in memory
    with h5py.File(name, "w", driver="core", backing_store=False) as handle:
        write(handle)
        handle.flush()
        return handle.id.get_file_image()


@contextmanager
def named_damage(where: str) -> Iterator[None]:
    """Every error of h5py reading a damaged file as one ``ValueError`` naming ``where``."""
    try:
        yield
    except (OSError, KeyError, RuntimeError, TypeError, IndexError, AttributeError, ValueError) as err:
        if isinstance(err, FileNotFoundError) or where in str(err):
            raise
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{where} is damaged: HDF5 could not read it ({type(err).__name__}: {detail})") from err


def check_hdf5_safe(handle: h5py.Group, path: PathLike) -> None:
    """Refuse a file that links to or stores data outside itself (every group once, by hard links)."""
    seen: set = set()
    pending: list[tuple[str, h5py.Group]] = [("", handle)]
    while pending:
        prefix, group = pending.pop()
        for name in group:
            where = f"{prefix}/{name}"
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                raise ValueError(f"{path}: {where!r} is an external link to {link.filename}:{link.path}; refused")
            if isinstance(link, h5py.SoftLink):
                raise ValueError(f"{path}: {where!r} is a soft link (to {link.path!r}); refused")
            item = group[name]
            if isinstance(item, h5py.Group):
                info = h5py.h5o.get_info(item.id)  # where it lives: the same for every hard link to it
                address = getattr(info, "token", None) or info.addr
                if address not in seen:
                    seen.add(address)
                    pending.append((where, item))
            elif isinstance(item, h5py.Dataset):
                if item.is_virtual:
                    raise ValueError(f"{path}: dataset {where!r} is a virtual dataset (data from other files); refused")
                if item.external:
                    raise ValueError(f"{path}: dataset {where!r} stores its data in external files; refused")


def read_weight_arrays(
    handle: h5py.File, where: str, shapes: Mapping[str, tuple[int, ...]], what: str, implied_by: str
) -> dict[str, numpy.ndarray]:
    """Exactly the datasets ``shapes`` names (as ``what`` implies) as finite float32 arrays; every
    shape is checked, and every dataset of the file accounted for, before any is read."""
    datasets = {}
    with named_damage(where):
        for name, shape in shapes.items():
            dataset = handle.get(name)
            if dataset is None:
                raise ValueError(f"{where}: dataset {name!r} is missing (expected shape {shape})")
            if not isinstance(dataset, h5py.Dataset):
                raise ValueError(f"{where}: {name!r} is a group, not a dataset")
            if tuple(dataset.shape) != tuple(shape):
                raise ValueError(
                    f"{where}: dataset {name!r} has shape {tuple(dataset.shape)}, but {implied_by} shape {tuple(shape)}"
                )
            datasets[name] = dataset
        found: list[str] = []
        handle.visititems(lambda name, item: found.append(name) if isinstance(item, h5py.Dataset) else None)
        extra = sorted(set(found) - set(shapes))  # a third LSTM layer where the config says two
        if extra:
            shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
            raise ValueError(f"{where} has datasets {what} does not use: {shown}; the file and {what} disagree")
        for name, dataset in datasets.items():
            if not numpy.issubdtype(dataset.dtype, numpy.floating):
                raise ValueError(f"{where}: dataset {name!r} has dtype {dataset.dtype}, not float")
        return {name: finite_float32(dataset[...], f"{where}: dataset {name!r}") for name, dataset in datasets.items()}


def finite_float32(stored: numpy.ndarray, what: str) -> numpy.ndarray:
    """``stored`` as float32, refused if any value is NaN or infinite after the cast."""
    with numpy.errstate(over="ignore"):
        array = stored.astype(numpy.float32, copy=False)
    finite = numpy.isfinite(array)
    if not finite.all():
        bad = int(array.size - numpy.count_nonzero(finite))
        first = tuple(int(i) for i in numpy.argwhere(~finite)[0])
        value = stored[first]
        beyond = f" in float32 (stored as {stored.dtype}: {float(value)!r})" if numpy.isfinite(value) else ""
        raise ValueError(
            f"{what} has {bad} value(s) that are NaN or infinite{beyond} "
            f"(the first at index {first}): such weights would give NaN vectors"
        )
    return array
