"""The frozen-feature cache: a frozen biLM's layers per Doc, computed once and reused every epoch
(docs/performance.md). Entries are never evicted: training revisits every Doc each epoch, so an
LRU would drop each entry just before its next use. A killed process cannot remove its spill
folder (``spacy-elmo-features-HOST-PID-*``): the next cache in that folder removes it."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable, List, Optional, Sequence, Union

import numpy
from spacy.tokens import Doc

MB = 1024 * 1024
SPILL_PREFIX = "spacy-elmo-features-"


def _host_tag() -> str:
    """This host's name as it appears in spill folder names (no dashes, so names parse)."""
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname()) or "host"


def _process_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


def remove_stale_spill_dirs(folder: Path) -> None:
    """Delete the spill folders in ``folder`` left by processes of this host that are gone."""
    if not folder.is_dir():
        return
    prefix = f"{SPILL_PREFIX}{_host_tag()}-"
    for path in folder.iterdir():
        if not (path.name.startswith(prefix) and path.is_dir() and not path.is_symlink()):
            continue
        pid_text = path.name[len(prefix) :].split("-", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _process_running(int(pid_text)):
            shutil.rmtree(path, ignore_errors=True)


def doc_key(doc: Doc, extra: bytes = b"") -> bytes:
    """What the biLM's output for ``doc`` depends on: its token texts and sentence starts."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(extra)
    digest.update(len(doc).to_bytes(8, "little"))
    for token in doc:
        text = token.text.encode("utf8")
        digest.update(len(text).to_bytes(4, "little"))
        digest.update(text)
    if doc.has_annotation("SENT_START"):
        digest.update(b"S")
        digest.update(numpy.ascontiguousarray(doc.to_array("SENT_START")).tobytes())
    return digest.digest()


@dataclass
class FeatureCacheStats:
    hits: int = 0
    misses: int = 0
    memory_entries: int = 0
    memory_bytes: int = 0
    disk_entries: int = 0
    disk_bytes: int = 0
    not_stored: int = 0

    @property
    def hit_rate(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


class FeatureCache:
    """Arrays by key, copied in and out, bound to the weights' version: in memory up to
    ``max_memory_mb``, then up to ``max_disk_mb`` in a private folder in ``disk_dir`` (removed
    when the cache is cleared or collected; ``None``: nothing beyond memory)."""

    def __init__(
        self,
        max_memory_mb: float,
        disk_dir: Optional[Union[str, Path]] = None,
        max_disk_mb: float = 10240.0,
    ) -> None:
        if max_memory_mb < 0 or max_disk_mb < 0:
            raise ValueError(f"cache budgets must not be negative: {max_memory_mb} MB, {max_disk_mb} MB")
        self.max_memory_bytes = int(max_memory_mb * MB)
        self.max_disk_bytes = int(max_disk_mb * MB) if disk_dir is not None else 0
        self.disk_dir = None if disk_dir is None else Path(disk_dir)
        if self.disk_dir is not None:
            remove_stale_spill_dirs(self.disk_dir)
        self.stats = FeatureCacheStats()
        self._memory: dict[bytes, numpy.ndarray] = {}
        self._disk: dict[bytes, int] = {}
        self._spill_dir: Optional[Path] = None
        self._remove_spill_dir: Optional[weakref.finalize] = None
        self._version: Optional[Hashable] = None
        self._pins: tuple = ()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._memory) + len(self._disk)

    def bind(self, version: Hashable, pins: Sequence = ()) -> None:
        """Serve entries for the weights' ``version`` only, keeping ``pins`` (whose addresses it holds) alive."""
        with self._lock:
            if version != self._version:
                self.clear()
                self._version = version
                self._pins = tuple(pins)

    def clear(self) -> None:
        """Drop every entry (memory and disk) and forget the version; counters are kept."""
        with self._lock:
            self._memory.clear()
            self._disk.clear()
            self._version = None
            self._pins = ()
            if self._remove_spill_dir is not None:
                self._remove_spill_dir()
                self._remove_spill_dir = None
                self._spill_dir = None
            self.stats.memory_entries = self.stats.memory_bytes = 0
            self.stats.disk_entries = self.stats.disk_bytes = 0

    def get(self, key: bytes) -> Optional[numpy.ndarray]:
        with self._lock:
            value = self._memory.get(key)
            if value is not None:
                self.stats.hits += 1
                return value.copy()
            if key in self._disk:
                self.stats.hits += 1
                return numpy.load(self._file(key), allow_pickle=False)
            self.stats.misses += 1
            return None

    def put(self, key: bytes, value: numpy.ndarray) -> bool:
        """Store a copy of ``value`` if a budget has room (False if not)."""
        with self._lock:
            if key in self._memory or key in self._disk:
                return True
            size = int(value.nbytes)
            if self.stats.memory_bytes + size <= self.max_memory_bytes:
                self._memory[key] = numpy.array(value, copy=True)
                self.stats.memory_bytes += size
                self.stats.memory_entries += 1
                return True
            if self.stats.disk_bytes + size <= self.max_disk_bytes:
                self._write(key, value)
                self._disk[key] = size
                self.stats.disk_bytes += size
                self.stats.disk_entries += 1
                return True
            self.stats.not_stored += 1
            return False

    def _file(self, key: bytes) -> Path:
        assert self._spill_dir is not None
        return self._spill_dir / f"{key.hex()}.npy"

    def _write(self, key: bytes, value: numpy.ndarray) -> None:
        if self._spill_dir is None:
            assert self.disk_dir is not None
            self.disk_dir.mkdir(parents=True, exist_ok=True)
            self._spill_dir = Path(
                tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{_host_tag()}-{os.getpid()}-", dir=self.disk_dir)
            )
            self._remove_spill_dir = weakref.finalize(self, shutil.rmtree, self._spill_dir, True)
        path = self._file(key)
        partial = path.with_suffix(".partial.npy")
        numpy.save(partial, numpy.ascontiguousarray(value), allow_pickle=False)
        os.replace(partial, path)


def layers_through_cache(model: Any, bilm: Any, docs: List[Doc], cache: FeatureCache) -> List[Any]:
    """Every Doc's layers from ``model`` (a ``spacy_elmo.BiLM.v1`` holding ``bilm``), cached ones first."""
    version = bilm.weights_version()
    if version is None:  # weights whose changes cannot be detected: never cache
        return model.predict(docs)
    cache.bind((version, model.attrs.get("precision")), pins=[bilm])
    extra = str(model.attrs["max_tokens"]).encode()
    keys = [doc_key(doc, extra) for doc in docs]
    found = [cache.get(key) for key in keys]
    missing = [i for i, layers in enumerate(found) if layers is None]
    computed = model.predict([docs[i] for i in missing]) if missing else []
    ops = model.ops
    outputs = [ops.asarray3f(layers) if layers is not None else None for layers in found]
    for i, layers in zip(missing, computed):
        cache.put(keys[i], ops.to_numpy(layers))
        outputs[i] = layers
    return outputs
