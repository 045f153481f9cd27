"""Checked reads from HDF5 files: every failure names the file, the dataset and the shapes.

HDF5 can make a file read bytes from elsewhere: external links (another file's object), soft
links (a path that may point anywhere in the file, or nowhere), datasets with external raw
storage (bytes of any readable file) and virtual datasets (slices of other files). A weights
file from the internet has no use for any of them, and their bytes would end up in a saved
pipeline, so every file this package reads is refused if it holds one (:func:`check_hdf5_safe`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Union

import h5py
import numpy

PathLike = Union[str, Path]


def open_hdf5(path: PathLike) -> h5py.File:
    """Open an HDF5 file for reading, with a clear error if it is missing or not HDF5."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Weight file not found: {path}")
    if not h5py.is_hdf5(path):
        raise ValueError(f"{path} is not an HDF5 file (expected a weights .hdf5 file)")
    return open_safe_hdf5(path, lambda err: ValueError(f"{path} could not be read as HDF5: {err}"))


def open_safe_hdf5(
    path: PathLike,
    unreadable: Callable[[OSError], Exception],
    check: Optional[Callable[[h5py.File], None]] = None,
) -> h5py.File:
    """``path`` opened read-only after :func:`check_hdf5_safe` and ``check`` accepted it.

    ``unreadable(err)`` is the error raised when h5py cannot open the file; if a check fails,
    the handle is closed before the error propagates.
    """
    try:
        handle = h5py.File(path, "r")
    except OSError as err:
        raise unreadable(err) from err
    try:
        check_hdf5_safe(handle, path)
        if check is not None:
            check(handle)
    except BaseException:
        handle.close()
        raise
    return handle


def check_hdf5_safe(handle: h5py.Group, path: PathLike) -> None:
    """Raise ``ValueError`` if the file links to or stores data outside itself (see above),
    or uses soft links. Walks every group once, following hard links only."""
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
                address = _address(item)
                if address not in seen:
                    seen.add(address)
                    pending.append((where, item))
            elif isinstance(item, h5py.Dataset):
                if item.is_virtual:
                    raise ValueError(f"{path}: dataset {where!r} is a virtual dataset (data from other files); refused")
                if item.external:
                    raise ValueError(f"{path}: dataset {where!r} stores its data in external files; refused")


def check_shape(handle: h5py.File, name: str, shape: tuple[int, ...]) -> h5py.Dataset:
    """The dataset ``name``, which must exist with exactly ``shape`` (nothing is read yet)."""
    if name not in handle:
        raise ValueError(f"{handle.filename}: dataset {name!r} is missing (expected shape {shape})")
    dataset = handle[name]
    if not isinstance(dataset, h5py.Dataset):
        raise ValueError(f"{handle.filename}: {name!r} is a group, not a dataset")
    if tuple(dataset.shape) != tuple(shape):
        raise ValueError(
            f"{handle.filename}: dataset {name!r} has shape {tuple(dataset.shape)}, "
            f"but the options imply shape {tuple(shape)}"
        )
    return dataset


def read_array(handle: h5py.File, name: str, shape: tuple[int, ...]) -> numpy.ndarray:
    """The dataset ``name`` as a finite float numpy array, which must have exactly ``shape``."""
    dataset = check_shape(handle, name, shape)
    if not numpy.issubdtype(dataset.dtype, numpy.floating):
        raise ValueError(f"{handle.filename}: dataset {name!r} has dtype {dataset.dtype}, not float")
    array = dataset[...]
    check_finite(array, f"{handle.filename}: dataset {name!r}")
    return array


def check_finite(array: numpy.ndarray, what: str) -> None:
    """Refuse NaN and infinite weights; ``what`` names the array (file and name) in the error."""
    finite = numpy.isfinite(array)
    if not finite.all():
        bad = int(array.size - numpy.count_nonzero(finite))
        first = tuple(int(i) for i in numpy.argwhere(~finite)[0])
        raise ValueError(
            f"{what} has {bad} value(s) that are NaN or infinite "
            f"(the first at index {first}): such weights would give NaN vectors"
        )


def _address(item: h5py.HLObject) -> object:
    """Where an object lives in its file (the same for every hard link to it)."""
    info = h5py.h5o.get_info(item.id)
    return getattr(info, "token", None) or info.addr


def check_no_unused(handle: h5py.File, used: set[str], what: str) -> None:
    """Refuse datasets the options/config do not account for (e.g. a third LSTM layer when the
    options say two): they mean the file and its options disagree."""
    found: list[str] = []
    handle.visititems(lambda name, item: found.append(name) if isinstance(item, h5py.Dataset) else None)
    extra = sorted(set(found) - used)
    if extra:
        shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
        raise ValueError(f"{handle.filename} has datasets {what} does not use: {shown}; the file and {what} disagree")
