"""The result of ``spacy-elmo embed`` (docs/embed.md: a dataset per sentence key with a hash of its
tokens, ``sentence_to_index``, the manifest as a root attribute) and the join that writes it: the
parts and an earlier output's valid datasets, every token hash checked, into a temporary file that
replaces ``OUTPUT`` in one rename. It reserves its disk space first: HDF5 handles failed writes badly."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import h5py

from ..durable import (
    file_kind,
    io_error_reason,
    new_temporary_file,
    remove_leftover_temporaries,
    sync_file,
    sync_folder,
)
from ..formats.hdf5_arrays import check_hdf5_safe, open_safe_hdf5
from ..nn.precision import DEFAULT_PRECISION

PathLike = Union[str, Path]
SENTENCE_INDEX = "sentence_to_index"
MARKER_ATTR = "spacy_elmo_embed"
TOKENS_ATTR = "spacy_elmo_tokens"
FORMAT_VERSION = 2
_JOIN_MARGIN = 1 << 20  # bytes reserved for the joined file beyond its datasets and index


class EmbedError(ValueError):
    """A run that cannot go on as asked; the message says what to do."""


def parts_dir(output: PathLike) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".parts")


@dataclass(frozen=True)
class Join:
    """Joining the parts folder ``parts`` into ``output``, for a run of ``manifest``."""

    output: Path
    parts: Path
    manifest: dict

    def run(
        self, found: dict[str, tuple[tuple[str, Path], ...]], wanted: dict[str, str], sentence_to_index: dict[str, str]
    ) -> int:
        """Write ``output`` from the stored datasets of the ``wanted`` keys (``found``: key ->
        ((tokens hash, file), ...)); return how many were left out because their key is gone."""
        dropped = sum(1 for key in found if key not in wanted)
        sources = {key: dict(pairs) for key, pairs in found.items()}
        missing = [key for key, digest in wanted.items() if digest not in sources.get(key, {})]
        if missing:
            raise EmbedError(
                f"{len(missing)} sentence(s) (first: {missing[0]!r}) have no vectors in {self.parts} for their "
                "current tokens: the input changed while shards ran, or a shard stopped; run every shard again"
            )
        current_output = all(sources[key][digest] == self.output for key, digest in wanted.items())
        if current_output and dropped == 0 and self._output_is_current(sentence_to_index):
            shutil.rmtree(self.parts, ignore_errors=True)
            return 0
        by_source: dict[Path, list[str]] = {}
        for key, digest in wanted.items():
            by_source.setdefault(sources[key][digest], []).append(key)
        index = json.dumps(sentence_to_index, ensure_ascii=False)
        needed = sum(source.stat().st_size for source in by_source) + len(index.encode("utf8")) + _JOIN_MARGIN
        remove_leftover_temporaries(self.output.parent, lambda target: target == self.output.name)
        self._check_space(needed)
        staging = None
        try:
            staging = new_temporary_file(self.output)
            self._write_joined(staging, by_source, wanted, index, needed)
        except BaseException as err:
            if staging is not None:
                staging.unlink(missing_ok=True)
            if isinstance(err, EmbedError) or not isinstance(err, Exception):
                raise
            raise EmbedError(
                f"could not write the joined file {self.output} ({io_error_reason(err)}); "
                f"every finished batch is kept in {self.parts}: free some space and run the same command again"
            ) from err
        os.replace(staging, self.output)
        sync_folder(self.output.parent)
        shutil.rmtree(self.parts, ignore_errors=True)
        return dropped

    def _write_joined(
        self, staging: Path, by_source: dict[Path, list[str]], wanted: dict[str, str], index: str, needed: int
    ) -> None:
        """The joined file at ``staging``; every dataset copied must still carry its sentence's hash."""
        with h5py.File(staging, "w"):
            pass
        self._reserve(staging, needed)
        with h5py.File(staging, "r+") as target:
            for source, keys in by_source.items():
                with h5py.File(source, "r") as handle:
                    for key in keys:
                        dataset = handle.get(key)
                        stored = None if dataset is None else str(dataset.attrs.get(TOKENS_ATTR, ""))
                        if stored != wanted[key]:
                            raise EmbedError(
                                f"{source} no longer holds this run's vectors of sentence {key!r}: another run "
                                f"wrote into {self.parts} meanwhile. {self.output} was not changed; run the same "
                                "command again (one run at a time)"
                            )
                        target.copy(dataset, target, name=key)
            dataset = target.create_dataset(SENTENCE_INDEX, (1,), dtype=h5py.string_dtype(encoding="utf-8"))
            dataset[0] = index
            target.attrs[MARKER_ATTR] = json.dumps(self.manifest, sort_keys=True)
        sync_file(staging)

    def _reserve(self, staging: Path, needed: int) -> None:
        """Claim the disk space before HDF5 writes (where the file system can reserve)."""
        descriptor = os.open(staging, os.O_RDWR | os.O_NOFOLLOW)
        try:
            os.posix_fallocate(descriptor, 0, needed)
        except OSError as err:
            if err.errno == errno.ENOSPC:
                raise self._no_room(needed) from err
            if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
        finally:
            os.close(descriptor)

    def _output_is_current(self, sentence_to_index: dict[str, str]) -> bool:
        if not self.output.exists():
            return False
        try:
            return read_sentence_index(self.output) == sentence_to_index
        except (OSError, KeyError, ValueError):
            return False

    def _check_space(self, needed: int) -> None:
        if needed > shutil.disk_usage(self.output.parent).free:
            raise self._no_room(needed)

    def _no_room(self, needed: int) -> EmbedError:
        free = shutil.disk_usage(self.output.parent).free
        return EmbedError(
            f"joining the parts into {self.output} needs about {needed / 1e6:.1f} MB but only "
            f"{free / 1e6:.1f} MB are free; every finished batch is kept in {self.parts}: "
            "free some space and run the same command again"
        )


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
