"""A pipeline from ``spacy package``, as a wheel, installs on a clean machine beside the wheel
of ``make wheel`` (no index has spacy-elmo) and gives the same entities there. Both wheels go
``--no-deps`` into a fresh venv made with ``--system-site-packages`` that reuses this test's
packages (spaCy, torch), so only what the wheels hold of spacy-elmo and the pipeline is imported.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import spacy

REPO_ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["Alice works at Acme in Paris .", "Yesterday Bob flew to Lima for Globex ."]

CHECK = """
import json, sys
import spacy, spacy_elmo
assert spacy_elmo.__file__.startswith(sys.prefix), spacy_elmo.__file__
nlp = spacy.load("en_elmo_toy")
docs = [nlp(text) for text in json.loads(sys.argv[1])]
print(json.dumps([[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs]))
"""


def run(args, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(args, capture_output=True, text=True, env=env, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("make") is None, reason="POSIX venv, make")
def test_packaged_pipeline_installs_beside_the_spacy_elmo_wheel(trained_ner, tmp_path):
    nlp = spacy.load(trained_ner)
    expected = [[[e.start, e.end, e.label_] for e in nlp(text).ents] for text in TEXTS]

    packages, wheels = tmp_path / "packages", tmp_path / "wheels"
    packages.mkdir()
    name = ["--name", "elmo_toy", "--version", "0.0.1", "--force"]
    run([sys.executable, "-m", "spacy", "package", str(trained_ner), str(packages), *name], cwd=tmp_path)
    (sdist,) = packages.glob("en_elmo_toy-0.0.1/dist/*.tar.gz")  # --build wheel needs the build package
    wheel_of = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    run([*wheel_of, str(sdist)], cwd=tmp_path)
    (pipeline_wheel,) = wheels.glob("en_elmo_toy-*.whl")
    with zipfile.ZipFile(pipeline_wheel) as archive:
        meta = json.loads(archive.read("en_elmo_toy/meta.json"))
    assert any(r.startswith("spacy-elmo>=0.1.0") for r in meta["requirements"])  # why the wheel must come along

    # `make wheel` in a clean copy: no stale build/ of the checkout can leak into the wheel
    source = tmp_path / "source"
    shutil.copytree(REPO_ROOT / "spacy_elmo", source / "spacy_elmo", ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("pyproject.toml", "README.md", "LICENSE", "Makefile"):
        shutil.copy(REPO_ROOT / file, source / file)
    run(["make", "-s", "-C", str(source), "wheel", f"PY={sys.executable}", f"DIST={wheels}"])
    (wheel,) = wheels.glob("spacy_elmo-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.namelist()
    assert "spacy_elmo/py.typed" in shipped  # the type hints ship (PEP 561)
    assert any(".dist-info/" in name and name.endswith("LICENSE") for name in shipped)

    venv = tmp_path / "clean"
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    if sys.prefix != sys.base_prefix:  # this test runs in a venv: its packages are not the system's
        site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
        Path(site, "_test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = ["-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation"]
    run([sys.executable, *install, str(wheel), str(pipeline_wheel)], cwd=tmp_path)

    got = json.loads(run([str(python), "-c", CHECK, json.dumps(TEXTS)], cwd=tmp_path))
    assert got == expected
    assert any(got)
