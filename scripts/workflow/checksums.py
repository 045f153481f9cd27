"""SHA-256 of a file or a folder: what identifies an archive, a run's inputs or a scored model,
so that a step reruns only what changed."""

import hashlib
from pathlib import Path


def sha256_of_path(path: Path) -> str:
    """SHA-256 of a file, or of a folder's files (sorted relative names and contents)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if file != path:
            digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
