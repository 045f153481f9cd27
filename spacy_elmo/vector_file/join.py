"""The result file of ``spacy-elmo embed`` (docs/embed.md): a dataset per sentence key with a hash of
its tokens, ``sentence_to_index``, and the manifest as a root attribute, without which a file is
never written into."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union

import h5py

from ..formats.hdf5_arrays import named_damage, open_hdf5
from ..formats.regular_files import special_file_kind
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
    kind = special_file_kind(path)
    if kind is not None:
        hint = f" (e.g. {path / 'vectors.hdf5'})" if kind == "a directory" else ""
        raise EmbedError(f"the output {path} is {kind}, not an HDF5 file: give the path of a file to write{hint}")


def read_output_hashes(path: Path, manifest: dict) -> dict[str, str]:
    """The token hash of each sentence stored in the output, once its manifest is ``manifest``."""
    try:
        handle = open_hdf5(path)
    except ValueError as err:
        raise EmbedError(f"{err}; move it away to start over") from err
    with handle:
        _check_ours(handle.attrs.get(MARKER_ATTR), path, manifest)
        return stored_hashes(handle, path)


def stored_hashes(handle: h5py.File, where: Path) -> dict[str, str]:
    """The token hash of each sentence's dataset (in the output or in a part)."""
    with named_damage(str(where)):
        return {
            key: str(dataset.attrs.get(TOKENS_ATTR, ""))
            for key, dataset in handle.items()
            if key != SENTENCE_INDEX and isinstance(dataset, h5py.Dataset)
        }


def _check_ours(found: Any, path: Path, manifest: dict) -> None:
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
    with open_hdf5(output) as handle:
        raw = handle[SENTENCE_INDEX][0]
    return json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
