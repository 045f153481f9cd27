"""The crash-safe, sharded HDF5 store behind ``spacy-elmo embed``: parts, manifest, join.

Layout of the result: one float32 dataset per sentence, named by its key (see
:mod:`spacy_elmo.corpora.keyed_sentences`), shaped ``(L+1, n_tokens, 2P)`` for ``layers="all"``
and ``(n_tokens, 2P)`` otherwise; plus ``sentence_to_index``, a one-element string dataset
holding the JSON map from sentence text to key. The root attribute ``spacy_elmo_embed`` (JSON)
marks the file as ours and records the manifest: a hash of the weights and the settings that
change the vectors (see :mod:`.corpus`); each dataset's attribute ``spacy_elmo_tokens`` is a
hash of the sentence's tokens.

Crash safety: while a run is under way, every finished group goes into its own small HDF5 file
in ``OUTPUT.parts/``, built in memory, written under a temporary name, flushed to disk and only
then renamed into place; a kill, a crash or a full disk at any moment therefore loses at most
the group in flight, and never touches what is already there. At the end the parts (and the
still valid datasets of an earlier ``OUTPUT``) are joined into a temporary file that replaces
``OUTPUT`` in one rename, and the folder is removed. ``OUTPUT`` is thus always either the
previous complete result or the new one.

Resuming: the driver forms the same groups on a rerun and skips every sentence stored with the
same tokens. A sentence whose tokens changed (an edited line) is computed again; sentences no
longer in the input are dropped at the join. Another manifest (other weights or settings) is
refused, with the message saying how to start over (delete ``OUTPUT`` and ``OUTPUT.parts``, or
choose another output file); so is an existing HDF5 file without the ``spacy_elmo_embed``
attribute, which this store never writes into.

Shards: each shard ``k`` of ``n`` writes and resumes its own parts and, when done, leaves
``done-K-of-N`` in the folder; the shard that finds all ``n`` of them joins the parts (an
exclusive lock makes sure only one does), so the result is the same single file. Nothing but
the file system is shared. The folder records ``n``: a shard of another count is refused.

One run per output and shard: a run locks ``OUTPUT.embed-K.lock`` for its whole length
(:mod:`.run_lock`), and the join checks every dataset's token hash against the sentences whose
index it writes, so vectors of another run can never end up under this run's sentences.

A full disk: parts are built in memory and written as plain bytes; the join reserves the space
it needs before HDF5 writes into the file (HDF5 handles failed writes badly, up to crashing the
process). Whatever fails, the command stops with one line naming the file, and removes its
temporary files; the finished parts stay for the next run.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import h5py
import numpy

from ..durable import io_error_reason, sync_file, sync_folder, write_bytes_atomically
from ..formats.hdf5_arrays import H5PY_DAMAGE, check_hdf5_safe, hdf5_image, open_safe_hdf5
from .output_lock import OutputBusy, OutputLock

PathLike = Union[str, Path]
SENTENCE_INDEX = "sentence_to_index"
MARKER_ATTR = "spacy_elmo_embed"
TOKENS_ATTR = "spacy_elmo_tokens"
FORMAT_VERSION = 2
_OLD_OPTIONS_ATTR = "spacy_elmo_embed_options"  # files from before the fingerprints
_MANIFEST = "manifest.json"
_PART_PREFIX, _PART_SUFFIX = "part-", ".hdf5"
_JOIN_LOCK = "join.lock"
_SHARDS_KEY = "n_shards"  # in the parts folder's manifest only: the output does not depend on it
_JOIN_MARGIN = 1 << 20  # bytes reserved for the joined file beyond its datasets and index


class EmbedError(ValueError):
    """A run that cannot go on as asked; the message says what to do."""


def parts_dir(output: PathLike) -> Path:
    """The folder holding a run's finished batches until they are joined into ``output``."""
    output = Path(output)
    return output.with_name(output.name + ".parts")


@dataclass
class PartStore:
    """The output file and its parts folder: what is stored, and writing more."""

    output: Path
    manifest: dict
    shard: int = 0
    n_shards: int = 1
    # key -> ((tokens hash, file), ...): usually one pair; more after an edit, until the join
    _found: dict[str, tuple[tuple[str, Path], ...]] = field(default_factory=dict)
    _next_part: int = 0

    def __post_init__(self) -> None:
        self.parts = parts_dir(self.output)
        self._lock: Optional[OutputLock] = None
        try:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            self._lock = OutputLock(self.output, self.shard, self.n_shards)
        except OutputBusy as err:
            raise EmbedError(str(err)) from None
        except OSError as err:
            raise EmbedError(f"cannot write beside {self.output} ({io_error_reason(err)})") from err
        try:
            if self.output.exists():
                self._read_output()
            if not self.parts.exists():
                self._create_parts()
            self._read_parts(own_cleanup=True)
            (self.parts / _done_name(self.shard, self.n_shards)).unlink(missing_ok=True)  # running again
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Let other runs of this shard start (the lock is also released if the process dies)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _add(self, key: str, digest: str, path: Path) -> None:
        kept = tuple(pair for pair in self._found.get(key, ()) if pair[0] != digest)
        self._found[key] = kept + ((digest, path),)

    # ----------------------------------------------------------------- reading what is there
    def _read_output(self) -> None:
        with _open_ours(self.output, self.manifest) as handle:
            for key, dataset in handle.items():
                if key != SENTENCE_INDEX and isinstance(dataset, h5py.Dataset):
                    self._add(key, str(dataset.attrs.get(TOKENS_ATTR, "")), self.output)

    def _read_parts(self, own_cleanup: bool = False) -> None:
        """Read every finished part; with ``own_cleanup`` also delete this shard's leftovers
        (a ``.tmp`` part of a run that stopped, a part damaged on disk): never another shard's,
        which may be running now."""
        manifest_path = self.parts / _MANIFEST
        try:
            found = json.loads(manifest_path.read_text(encoding="utf8"))
        except (OSError, ValueError) as err:
            raise EmbedError(
                f"{self.parts} holds no readable {_MANIFEST} ({err}); it was not written by spacy-elmo embed "
                f"or is damaged: delete {self.parts} to start over"
            ) from err
        self._check_parts_manifest(found)
        mine = f"{_PART_PREFIX}{self.shard:04d}-"
        for path in sorted(self.parts.iterdir()):
            if path.name.endswith(".tmp"):
                if own_cleanup and path.name.startswith(mine):
                    path.unlink(missing_ok=True)  # a part that was being written when the run stopped
                continue
            parsed = _part_number(path)
            if parsed is None:
                continue
            if parsed[0] == self.shard:
                self._next_part = max(self._next_part, parsed[1] + 1)
            try:
                with h5py.File(path, "r") as handle:
                    check_hdf5_safe(handle, path)
                    entries = {
                        key: str(dataset.attrs.get(TOKENS_ATTR, ""))
                        for key, dataset in handle.items()
                        if isinstance(dataset, h5py.Dataset)
                    }
            except H5PY_DAMAGE:
                if own_cleanup and parsed[0] == self.shard:
                    path.unlink(missing_ok=True)  # damaged on disk: its sentences are computed again
                continue
            for key, digest in entries.items():
                self._add(key, digest, path)

    def _check_parts_manifest(self, found: object) -> None:
        """The folder must hold parts of these settings, split into as many shards as this run's."""
        recorded = dict(found) if isinstance(found, dict) else found
        n_shards = recorded.pop(_SHARDS_KEY, None) if isinstance(recorded, dict) else None
        _check_manifest(recorded, self.manifest, self.parts)
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
        """Create the folder with its manifest in one rename, so it never exists without one."""
        staging = self.parts.with_name(f"{self.parts.name}.{os.getpid()}-{self.shard}.tmp")
        shutil.rmtree(staging, ignore_errors=True)  # left by a killed run of this process id
        manifest = json.dumps({**self.manifest, _SHARDS_KEY: self.n_shards}, sort_keys=True).encode()
        try:
            staging.mkdir()
            write_bytes_atomically(staging / _MANIFEST, manifest)
        except OSError as err:
            shutil.rmtree(staging, ignore_errors=True)
            raise EmbedError(
                f"could not create {self.parts} ({io_error_reason(err)}); nothing was embedded yet: "
                "free some space and run the same command again"
            ) from err
        try:
            os.rename(staging, self.parts)
        except OSError:  # another shard created it first: use that one
            shutil.rmtree(staging, ignore_errors=True)
            if not self.parts.is_dir():
                raise
        sync_folder(self.parts.parent)

    def has(self, key: str, digest: str) -> bool:
        return any(stored == digest for stored, _ in self._found.get(key, ()))

    # ----------------------------------------------------------------- writing
    def write_part(self, items: list[tuple[str, str, numpy.ndarray]]) -> None:
        """One finished group as its own file, renamed into place once it is on disk."""
        def fill(handle: h5py.File) -> None:
            for key, digest, array in items:
                dataset = handle.create_dataset(key, data=numpy.ascontiguousarray(array, dtype=numpy.float32))
                dataset.attrs[TOKENS_ATTR] = digest

        image = hdf5_image(fill)
        path = self.parts / f"{_PART_PREFIX}{self.shard:04d}-{self._next_part:08d}{_PART_SUFFIX}"
        try:
            write_bytes_atomically(path, image)
        except OSError as err:
            raise EmbedError(
                f"could not write {path} ({io_error_reason(err)}); the {len(self._found)} sentences "
                f"finished before are safe in {self.parts}: free some space and run the same command again"
            ) from err
        self._next_part += 1
        for key, digest, _ in items:
            self._add(key, digest, path)

    def finish(self, wanted: dict[str, str], sentence_to_index: dict[str, str]) -> tuple[bool, int]:
        """Mark this shard done; join if every shard is. Returns (joined, datasets dropped)."""
        if self.n_shards == 1:
            return True, self.join(wanted, sentence_to_index)
        done = self.parts / _done_name(self.shard, self.n_shards)
        try:
            write_bytes_atomically(done, b"")
        except OSError as err:
            raise EmbedError(
                f"could not write {done} ({io_error_reason(err)}); this shard's parts are kept in {self.parts}: "
                "free some space and run the same command again"
            ) from err
        if not all((self.parts / _done_name(k, self.n_shards)).exists() for k in range(self.n_shards)):
            return False, 0
        try:
            lock = open(self.parts / _JOIN_LOCK, "a")
        except FileNotFoundError:
            return False, 0  # another shard joined and removed the folder meanwhile
        with lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False, 0  # another shard is joining
            if not (self.parts / _MANIFEST).exists():
                return False, 0  # joined meanwhile
            self._found = {}
            if self.output.exists():
                self._read_output()
            self._read_parts()
            return True, self.join(wanted, sentence_to_index)

    def join(self, wanted: dict[str, str], sentence_to_index: dict[str, str]) -> int:
        """Write ``output`` from the stored datasets of the ``wanted`` keys; return how many
        stored datasets were left out because their key is gone from the input."""
        dropped = sum(1 for key in self._found if key not in wanted)
        sources = {key: dict(pairs) for key, pairs in self._found.items()}
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
        self._check_space(needed)
        staging = self.output.with_name(self.output.name + ".joining.tmp")
        try:
            self._write_joined(staging, by_source, wanted, index, needed)
        except BaseException as err:
            staging.unlink(missing_ok=True)
            if isinstance(err, EmbedError) or not isinstance(err, Exception):
                raise
            raise EmbedError(
                f"could not write {staging} while joining the parts into {self.output} ({io_error_reason(err)}); "
                f"every finished batch is kept in {self.parts}: free some space and run the same command again"
            ) from err
        os.replace(staging, self.output)
        sync_folder(self.output.parent)
        shutil.rmtree(self.parts, ignore_errors=True)
        return dropped

    def _write_joined(
        self, staging: Path, by_source: dict[Path, list[str]], wanted: dict[str, str], index: str, needed: int
    ) -> None:
        """The joined file at ``staging``, its space reserved first; every dataset copied must still
        carry the token hash of the sentence it is stored for."""
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
        """Claim the disk space of the joined file before HDF5 writes into it: another process
        filling the disk meanwhile then cannot make an HDF5 write fail (HDF5 gives the unused
        rest back when it closes the file). Skipped where the file system cannot reserve."""
        descriptor = os.open(staging, os.O_RDWR)
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
        """Refuse to start a join the disk cannot hold."""
        if needed > shutil.disk_usage(self.output.parent).free:
            raise self._no_room(needed)

    def _no_room(self, needed: int) -> EmbedError:
        free = shutil.disk_usage(self.output.parent).free
        return EmbedError(
            f"joining the parts into {self.output} needs about {needed / 1e6:.1f} MB but only "
            f"{free / 1e6:.1f} MB are free; every finished batch is kept in {self.parts}: "
            "free some space and run the same command again"
        )


def _open_ours(path: Path, manifest: dict) -> h5py.File:
    """``path`` opened for reading, after checking it is an embedding file of these settings."""

    def unreadable(err: OSError) -> Exception:
        return EmbedError(f"{path} exists but cannot be read as HDF5 ({err}); move it away to start over")

    return open_safe_hdf5(path, unreadable, lambda handle: _check_ours(handle, path, manifest))


def _check_ours(handle: h5py.File, path: Path, manifest: dict) -> None:
    """Refuse a file that embed did not write, or wrote with other settings."""
    found = handle.attrs.get(MARKER_ATTR)
    if found is None:
        if _OLD_OPTIONS_ATTR in handle.attrs:
            raise EmbedError(
                f"{path} was written by an older spacy-elmo embed, which recorded neither the weights "
                f"nor the sentences' tokens, so it cannot be resumed safely: move it away (or delete it) to start over"
            )
        raise EmbedError(
            f"{path} is an HDF5 file that spacy-elmo embed did not write (no {MARKER_ATTR!r} attribute); "
            "refusing to write into it: choose another output file"
        )
    try:
        recorded = json.loads(found)
    except ValueError as err:
        raise EmbedError(f"{path}: the {MARKER_ATTR!r} attribute is not JSON; move the file away to start over") from err
    _check_manifest(recorded, manifest, path)


def _check_manifest(found: object, expected: dict, where: Path) -> None:
    if found == expected:
        return
    if not isinstance(found, dict) or found.get("format") != expected["format"]:
        raise EmbedError(f"{where} has another layout version; delete it to start over, or choose another output file")
    differences = []
    if found.get("weights") != expected["weights"]:
        differences.append("the weights")
    old, new = found.get("settings") or {}, expected["settings"]
    differences += [f"{name} ({old.get(name)!r}, now {new[name]!r})" for name in new if old.get(name) != new[name]]
    output = where if where.suffix != ".parts" else where.with_name(where.name[: -len(".parts")])
    raise EmbedError(
        f"{where} was written with other {', '.join(differences) or 'settings'}; its vectors would not match "
        f"new ones. To start over delete {output} and {parts_dir(output)}, or choose another output file"
    )


def _part_number(path: Path) -> Optional[tuple[int, int]]:
    """(shard, number) of a part file ``part-SSSS-NNNNNNNN.hdf5``, or None for other files."""
    name = path.name
    if not (name.startswith(_PART_PREFIX) and name.endswith(_PART_SUFFIX)):
        return None
    shard, _, number = name[len(_PART_PREFIX) : -len(_PART_SUFFIX)].partition("-")
    return (int(shard), int(number)) if shard.isdigit() and number.isdigit() else None


def _done_name(shard: int, n_shards: int) -> str:
    return f"done-{shard:04d}-of-{n_shards:04d}"


def read_sentence_index(output: PathLike) -> dict[str, str]:
    """The ``sentence_to_index`` map of an embedding file."""
    with h5py.File(output, "r") as handle:
        check_hdf5_safe(handle, output)
        raw = handle[SENTENCE_INDEX][0]
    return json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
