"""The result file of ``spacy-elmo embed`` (docs/embed.md): a dataset per sentence key with a hash of
its tokens, ``sentence_to_index``, and the manifest as a root attribute, without which a file is
never written into."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Union

import h5py

from ..durable import (
    file_kind,
)
from ..formats.hdf5_arrays import check_hdf5_safe, open_safe_hdf5
from ..nn.precision import DEFAULT_PRECISION

PathLike = Union[str, Path]
SENTENCE_INDEX = "sentence_to_index"
MARKER_ATTR = "spacy_elmo_embed"
TOKENS_ATTR = "spacy_elmo_tokens"
FORMAT_VERSION = 2


class EmbedError(ValueError):
    """A run that cannot go on as asked; the message says what to do."""


def parts_dir(output: PathLike) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".parts")


def check_output_kind(path: Path) -> None:
    """Refuse an output that is not a file, which HDF5 would answer with a page of messages."""
    try:
        facts = os.stat(path)
    except OSError:
        return  # nothing there (or unreachable): creating the output says what is wrong
    if not stat.S_ISREG(facts.st_mode):
        hint = f" (e.g. {path / 'vectors.hdf5'})" if stat.S_ISDIR(facts.st_mode) else ""
        raise EmbedError(
            f"the output {path} is {file_kind(facts.st_mode)}, not an HDF5 file: give the path of a file to write{hint}"
        )


def open_output_file(path: Path, manifest: dict) -> h5py.File:

    def unreadable(err: OSError) -> Exception:
        return EmbedError(f"{path} exists but cannot be read as HDF5 ({err}); move it away to start over")

    return open_safe_hdf5(path, unreadable, lambda handle: _check_ours(handle, path, manifest))


def _check_ours(handle: h5py.File, path: Path, manifest: dict) -> None:
    found = handle.attrs.get(MARKER_ATTR)
    if found is None:
        raise EmbedError(
            f"{path} is an HDF5 file that spacy-elmo embed did not write (no {MARKER_ATTR!r} attribute); "
            "refusing to write into it: choose another output file"
        )
    try:
        recorded = json.loads(found)
    except ValueError as err:
        raise EmbedError(
            f"{path}: the {MARKER_ATTR!r} attribute is not JSON; move the file away to start over"
        ) from err
    check_manifest(recorded, manifest, path)


def check_manifest(found: object, expected: dict, where: Path) -> None:
    """Refuse a result or parts folder written with other weights or settings."""
    if found == expected:
        return
    if not isinstance(found, dict) or found.get("format") != expected["format"]:
        raise EmbedError(f"{where} has another layout version; delete it to start over, or choose another output file")
    differences = []
    if found.get("weights") != expected["weights"]:
        differences.append("the weights")
    old, new = found.get("settings") or {}, expected["settings"]
    names = list(new) + [name for name in old if name not in new]
    # settings recorded only when they are not their default (files written before they existed resume)
    unrecorded = {"precision": DEFAULT_PRECISION}
    old, new = {**unrecorded, **old}, {**unrecorded, **new}
    differences += [
        f"{name} ({old.get(name)!r}, now {new.get(name)!r})" for name in names if old.get(name) != new.get(name)
    ]
    output = where if where.suffix != ".parts" else where.with_name(where.name[: -len(".parts")])
    raise EmbedError(
        f"{where} was written with other {', '.join(differences) or 'settings'}; its vectors would not match "
        f"new ones. To start over delete {output} and {parts_dir(output)}, or choose another output file"
    )


def read_sentence_index(output: PathLike) -> dict[str, str]:
    with h5py.File(output, "r") as handle:
        check_hdf5_safe(handle, output)
        raw = handle[SENTENCE_INDEX][0]
    return json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
