"""``spacy package`` of a trained ELMo pipeline installs into a fresh venv and gives the same
entities there. Lean on purpose: the dependencies (spaCy, torch) come from the test's own
environment through a ``.pth`` file; spacy-elmo and the pipeline are installed from the wheel
and the sdist that were just built, so only what is in them can be imported.
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
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="venv layout assumed to be POSIX")
def test_spacy_package_installs_and_loads_in_fresh_venv(trained_ner, tmp_path):
    nlp = spacy.load(trained_ner)
    expected = [[[e.start, e.end, e.label_] for e in nlp(text).ents] for text in TEXTS]

    packages = tmp_path / "packages"
    packages.mkdir()
    run(
        [
            sys.executable,
            "-m",
            "spacy",
            "package",
            str(trained_ner),
            str(packages),
            "--name",
            "elmo_toy",
            "--version",
            "0.0.1",
            "--force",
        ],
        cwd=tmp_path,
    )
    (sdist,) = packages.glob("en_elmo_toy-0.0.1/dist/*.tar.gz")

    # Build from a clean copy: no stale build/ directory of the checkout can leak into the wheel.
    source = tmp_path / "source"
    shutil.copytree(REPO_ROOT / "spacy_elmo", source / "spacy_elmo", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("spacy_elmo-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.namelist()
    assert "spacy_elmo/py.typed" in shipped  # the type hints ship (PEP 561)
    assert any(".dist-info/" in name and name.endswith("LICENSE") for name in shipped)

    venv = tmp_path / "fresh"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    (site / "_shared_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(wheel),
            str(sdist),
        ],
        cwd=tmp_path,
    )

    got = json.loads(run([str(python), "-c", CHECK, json.dumps(TEXTS)], cwd=tmp_path))
    assert got == expected
    assert any(got)
