"""What a run's saved data positions point into: its training files as they were.

A checkpoint remembers where each shard stopped as (file number, byte offset). If the files are
rewritten in place (same path, other content), those positions mean nothing: a resume would
silently skip or repeat text. So a run records every training file's name, size and SHA-256 in
its checkpoints, and ``--resume`` refuses to continue when any differs. Hashing reads the whole
text once per session, about a second per GB; rank 0 does it and tells the others.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional, Union

from ..corpora.files import list_corpus_files
from .distributed import Distributed, run_on_main

FileFingerprint = dict[str, object]  # {"file": relative name, "size": bytes, "sha256": hex}


def fingerprint_training_text(path: Union[str, Path]) -> list[FileFingerprint]:
    """Every file read from ``path`` (a file or a folder), in reading order."""
    root = Path(path)
    prints = []
    for file in list_corpus_files(root):
        digest = hashlib.sha256()
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        name = file.name if file == root else str(file.relative_to(root))
        prints.append({"file": name, "size": file.stat().st_size, "sha256": digest.hexdigest()})
    return prints


def shared_fingerprint(context: Distributed, path: Union[str, Path]) -> list[FileFingerprint]:
    """:func:`fingerprint_training_text` computed once, on rank 0, and given to every process."""
    value = run_on_main(context, lambda: fingerprint_training_text(path), lambda: None)
    return context.gather(value)[0]


def describe_change(recorded: list[FileFingerprint], current: list[FileFingerprint]) -> Optional[str]:
    """None when the text is the one recorded, else what differs first, in words."""
    if recorded == current:
        return None
    old = {str(item["file"]): item for item in recorded}
    new = {str(item["file"]): item for item in current}
    gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    if gone or added:
        parts = ([f"{', '.join(gone)} gone"] if gone else []) + ([f"{', '.join(added)} new"] if added else [])
        return "the training files are not the same: " + "; ".join(parts)
    for name in old:
        if old[name]["size"] != new[name]["size"]:
            return f"{name} changed size ({old[name]['size']:,} -> {new[name]['size']:,} bytes)"
        if old[name]["sha256"] != new[name]["sha256"]:
            return f"{name} has other content (same size, another SHA-256)"
    return "the training files are read in another order"
