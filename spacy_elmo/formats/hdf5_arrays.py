"""Checked reads from HDF5 files: every failure names the file, the dataset and the shapes."""
from __future__ import annotations

from pathlib import Path
from typing import Union

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
    try:
        return h5py.File(path, "r")
    except OSError as err:
        raise ValueError(f"{path} could not be read as HDF5: {err}") from err


def read_array(handle: h5py.File, name: str, shape: tuple[int, ...]) -> numpy.ndarray:
    """The dataset ``name`` as a numpy array, which must have exactly ``shape``."""
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
    array = dataset[...]
    if not numpy.issubdtype(array.dtype, numpy.floating):
        raise ValueError(f"{handle.filename}: dataset {name!r} has dtype {array.dtype}, not float")
    return array
