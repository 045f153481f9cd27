"""The result file of ``spacy-elmo embed`` and its parts folder (docs/embed.md). The result holds
a dataset per sentence key with a hash of its tokens, ``sentence_to_index``, and the manifest as a
root attribute, without which a file is never written into. While a run goes, each finished group
is its own HDF5 file in the parts folder, written atomically. Shard K of N writes its parts, then
``done-K-of-N``; the shard that finds all N joins (under a lock) the parts and an earlier output's
valid datasets into a temporary file that replaces ``OUTPUT`` in one rename, reserving its disk
space first (HDF5 handles failed writes badly). The folder records the manifest and N: other
settings or shard counts are refused."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
from pathlib import Path
from typing import BinaryIO, Optional, Union

import h5py
import numpy

from ..durable import (
    create_temporary,
    io_error_reason,
    remove_leftover_temporaries,
    sync_folder,
    write_atomically,
)
from ..formats.hdf5_arrays import hdf5_image, named_damage, open_hdf5
from ..formats.regular_files import special_file_kind
from ..nn.precision import DEFAULT_PRECISION
from .output_lock import OutputBusy, OutputLock, UnsafeLockFile, open_lock_file

PathLike = Union[str, Path]
SENTENCE_INDEX = "sentence_to_index"
MARKER_ATTR = "spacy_elmo_embed"
TOKENS_ATTR = "spacy_elmo_tokens"
FORMAT_VERSION = 2
_MANIFEST = "manifest.json"
_PART_NAME = re.compile(r"part-([0-9]+)-([0-9]+)\.hdf5")  # shard, number
_JOIN_LOCK = "join.lock"
_SHARDS_KEY = "n_shards"  # in the parts folder's manifest only: the output does not depend on it
_JOIN_MARGIN = 1 << 20  # bytes reserved for the joined file beyond its datasets and index


class EmbedError(ValueError):
    """A run that cannot go on as asked; the message says what to do."""


def parts_dir(output: PathLike) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".parts")


def read_output_hashes(path: Path, manifest: dict) -> dict[str, str]:
    """The token hash of each sentence stored in the output, once its manifest is ``manifest``."""
    try:
        handle = open_hdf5(path)
    except ValueError as err:
        raise EmbedError(f"{err}; move it away to start over") from err
    with handle:
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
        return stored_hashes(handle, path)


def stored_hashes(handle: h5py.File, where: Path) -> dict[str, str]:
    """The token hash of each sentence's dataset (in the output or in a part)."""
    with named_damage(str(where)):
        return {
            key: str(dataset.attrs.get(TOKENS_ATTR, ""))
            for key, dataset in handle.items()
            if key != SENTENCE_INDEX and isinstance(dataset, h5py.Dataset)
        }


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


class PartStore:
    """Shard ``shard``'s view of the output and its parts, under the shard's lock until :meth:`close`."""

    def __init__(self, output: Path, manifest: dict, shard: int = 0, n_shards: int = 1) -> None:
        self.output, self.manifest, self.shard, self.n_shards = output, manifest, shard, n_shards
        self.parts = parts_dir(output)
        self._found: dict[str, dict[str, Path]] = {}  # key -> tokens hash -> file (two hashes after an edit)
        self._next_part = 0
        self._lock: Optional[OutputLock] = None
        kind = special_file_kind(output)  # HDF5 would answer with a page of messages
        if kind is not None:
            hint = f" (e.g. {output / 'vectors.hdf5'})" if kind == "a directory" else ""
            raise EmbedError(f"the output {output} is {kind}, not an HDF5 file: give the path of a file to write{hint}")
        try:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            self._lock = OutputLock(self.output, self.shard, self.n_shards)
        except (OutputBusy, UnsafeLockFile) as err:
            raise EmbedError(str(err)) from None
        except OSError as err:
            raise EmbedError(f"cannot write beside {self.output} ({io_error_reason(err)})") from err
        try:
            self._scan(own_cleanup=True)
            (self.parts / _done_name(self.shard, self.n_shards)).unlink(missing_ok=True)  # running again
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _add(self, hashes: dict[str, str], path: Path) -> None:
        for key, digest in hashes.items():
            self._found.setdefault(key, {})[digest] = path

    def _scan(self, own_cleanup: bool = False) -> None:
        """What the output and the parts hold; ``own_cleanup`` deletes this shard's leftovers
        (temporary files, damaged parts). A foreign output is refused before the folder is made."""
        self._found = {}
        if self.output.exists():
            self._add(read_output_hashes(self.output, self.manifest), self.output)
        if not self.parts.exists():
            self._create_parts()
        manifest_path = self.parts / _MANIFEST
        try:
            found = json.loads(manifest_path.read_text(encoding="utf8"))
        except (OSError, ValueError) as err:
            raise EmbedError(
                f"{self.parts} holds no readable {_MANIFEST} ({err}); it was not written by spacy-elmo embed "
                f"or is damaged: delete {self.parts} to start over"
            ) from err
        self._check_parts_manifest(found)
        if own_cleanup:
            remove_leftover_temporaries(self.parts, self._is_own_file)
        for path in sorted(self.parts.iterdir()):
            parsed = _PART_NAME.fullmatch(path.name)  # None for temporary files and the other files of the folder
            if parsed is None:
                continue
            own = int(parsed[1]) == self.shard
            if own:
                self._next_part = max(self._next_part, int(parsed[2]) + 1)
            try:
                with open_hdf5(path) as handle:
                    self._add(stored_hashes(handle, path), path)
            except ValueError:  # damaged, or reading other files
                if own_cleanup and own:
                    path.unlink(missing_ok=True)  # its sentences are computed again

    def _is_own_file(self, name: str) -> bool:
        parsed = _PART_NAME.fullmatch(name)
        return (parsed is not None and int(parsed[1]) == self.shard) or name == _done_name(self.shard, self.n_shards)

    def _check_parts_manifest(self, found: object) -> None:
        recorded = dict(found) if isinstance(found, dict) else found
        n_shards = recorded.pop(_SHARDS_KEY, None) if isinstance(recorded, dict) else None
        check_manifest(recorded, self.manifest, self.parts)
        if n_shards == self.n_shards:
            return
        if not isinstance(n_shards, int):
            raise EmbedError(
                f"{self.parts} was begun by an older spacy-elmo, which did not record its number of shards: "
                "delete it to start over"
            )
        begun = "without --shard" if n_shards == 1 else f"with --shard K/{n_shards}"
        this = "without --shard" if self.n_shards == 1 else f"with --shard {self.shard}/{self.n_shards}"
        raise EmbedError(
            f"{self.parts} was begun {begun}, and this run is {this}: parts split another way would never "
            f"be joined. Run every shard as it began, or delete {self.parts} to start over"
        )

    def _create_parts(self) -> None:
        """Create the folder with its manifest in one rename."""
        staging = self.parts.with_name(f"{self.parts.name}.{os.getpid()}-{self.shard}.tmp")
        shutil.rmtree(staging, ignore_errors=True)  # left by a killed run of this process id
        manifest = json.dumps({**self.manifest, _SHARDS_KEY: self.n_shards}, sort_keys=True).encode()
        try:
            staging.mkdir()
            write_atomically(staging / _MANIFEST, manifest)
        except OSError as err:
            shutil.rmtree(staging, ignore_errors=True)
            raise _no_space(
                f"could not create {self.parts} ({io_error_reason(err)})", "nothing was embedded yet"
            ) from err
        try:
            os.rename(staging, self.parts)
        except OSError:  # another shard created it first: use that one
            shutil.rmtree(staging, ignore_errors=True)
            if not self.parts.is_dir():
                raise
        sync_folder(self.parts.parent)

    def has(self, key: str, digest: str) -> bool:
        return digest in self._found.get(key, {})

    def write_part(self, items: list[tuple[str, str, numpy.ndarray]]) -> None:

        def fill(handle: h5py.File) -> None:
            for key, digest, array in items:
                dataset = handle.create_dataset(key, data=numpy.ascontiguousarray(array, dtype=numpy.float32))
                dataset.attrs[TOKENS_ATTR] = digest

        image = hdf5_image(fill)
        path = self.parts / f"part-{self.shard:04d}-{self._next_part:08d}.hdf5"
        try:
            write_atomically(path, image)
        except OSError as err:
            finished = f"the {len(self._found)} sentences finished before are safe in {self.parts}"
            raise _no_space(f"could not write {path} ({io_error_reason(err)})", finished) from err
        self._next_part += 1
        self._add({key: digest for key, digest, _ in items}, path)

    def finish(self, wanted: dict[str, str], sentence_to_index: dict[str, str]) -> tuple[bool, int]:
        """Mark this shard done; join if every shard is. Returns (joined, datasets dropped)."""
        if self.n_shards == 1:
            return True, self.join(wanted, sentence_to_index)
        done = self.parts / _done_name(self.shard, self.n_shards)
        try:
            write_atomically(done, b"")
        except OSError as err:
            kept = f"this shard's parts are kept in {self.parts}"
            raise _no_space(f"could not write {done} ({io_error_reason(err)})", kept) from err
        if not all((self.parts / _done_name(k, self.n_shards)).exists() for k in range(self.n_shards)):
            return False, 0
        try:
            lock = open_lock_file(self.parts / _JOIN_LOCK)
        except FileNotFoundError:
            return False, 0  # another shard joined and removed the folder meanwhile
        except UnsafeLockFile as err:
            raise EmbedError(str(err)) from None
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False, 0  # another shard is joining
            if not (self.parts / _MANIFEST).exists():
                return False, 0  # joined meanwhile
            self._scan()
            return True, self.join(wanted, sentence_to_index)

    def join(self, wanted: dict[str, str], sentence_to_index: dict[str, str]) -> int:
        """Write ``output``, every token hash checked; how many datasets were dropped with their key."""
        dropped, sources = sum(1 for key in self._found if key not in wanted), self._found
        missing = [key for key, digest in wanted.items() if digest not in sources.get(key, {})]
        if missing:
            raise EmbedError(
                f"{len(missing)} sentence(s) (first: {missing[0]!r}) have no vectors in {self.parts} for their "
                "current tokens: the input changed while shards ran, or a shard stopped; run every shard again"
            )
        unchanged = dropped == 0 and all(sources[key][digest] == self.output for key, digest in wanted.items())
        try:
            unchanged = unchanged and read_sentence_index(self.output) == sentence_to_index
        except (OSError, KeyError, ValueError):  # none yet, or not readable
            unchanged = False
        if unchanged:
            shutil.rmtree(self.parts, ignore_errors=True)
            return 0
        by_source: dict[Path, list[str]] = {}
        for key, digest in wanted.items():
            by_source.setdefault(sources[key][digest], []).append(key)
        index = json.dumps(sentence_to_index, ensure_ascii=False)
        needed = sum(source.stat().st_size for source in by_source) + len(index.encode("utf8")) + _JOIN_MARGIN
        remove_leftover_temporaries(self.output.parent, lambda target: target == self.output.name)
        if needed > shutil.disk_usage(self.output.parent).free:
            raise self._no_room(needed)
        staging = None
        try:
            handle, staging = create_temporary(self.output)
            with handle:
                self._write_joined(handle, staging, by_source, wanted, index, needed)
        except BaseException as err:
            if staging is not None:
                staging.unlink(missing_ok=True)
            if isinstance(err, EmbedError) or not isinstance(err, Exception):
                raise
            failed = f"could not write the joined file {self.output} ({io_error_reason(err)})"
            raise _no_space(failed, f"every finished batch is kept in {self.parts}") from err
        os.replace(staging, self.output)
        sync_folder(self.output.parent)
        shutil.rmtree(self.parts, ignore_errors=True)
        return dropped

    def _write_joined(
        self,
        handle: BinaryIO,
        staging: Path,
        by_source: dict[Path, list[str]],
        wanted: dict[str, str],
        index: str,
        needed: int,
    ) -> None:
        """The joined file at ``staging`` (open as ``handle``), its disk space claimed before HDF5 writes
        (where the file system can); every dataset copied must still carry its sentence's hash."""
        with h5py.File(staging, "w"):
            pass
        try:
            os.posix_fallocate(handle.fileno(), 0, needed)
        except OSError as err:
            if err.errno == errno.ENOSPC:
                raise self._no_room(needed) from err
            if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
        with h5py.File(staging, "r+") as target:
            for source, keys in by_source.items():
                with h5py.File(source, "r") as part:
                    for key in keys:
                        dataset = part.get(key)
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
        os.fsync(handle.fileno())

    def _no_room(self, needed: int) -> EmbedError:
        free = shutil.disk_usage(self.output.parent).free
        needs = f"joining the parts into {self.output} needs about {needed / 1e6:.1f} MB but only {free / 1e6:.1f} MB are free"
        return _no_space(needs, f"every finished batch is kept in {self.parts}")


def _no_space(failed: str, kept: str) -> EmbedError:
    return EmbedError(f"{failed}; {kept}: free some space and run the same command again")


def _done_name(shard: int, n_shards: int) -> str:
    return f"done-{shard:04d}-of-{n_shards:04d}"
