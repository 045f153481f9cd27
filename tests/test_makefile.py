"""``make install`` takes torch's CPU build from PyTorch's CPU wheel index when that answers,
else from pip's configured index (this machine's, say, which has the CPU wheel as a local
file), and says which happened. Run with a stand-in python that records the pip calls."""

import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def stand_in_python(tmp_path: Path) -> Path:
    """A venv python without torch whose ``pip`` calls are only logged."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "python"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-c" ] && [ "$2" = "import torch" ]; then exit 1; fi\n'
        f'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$@" >> {tmp_path / "pip.log"}; exit 0; fi\n'
        'case "$2" in *"print(\'torch:\'"*) echo "torch: 2.13.0+cpu (CPU build)"; exit 0;; esac\n'
        f'exec {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    return venv


def make_torch(tmp_path: Path, index: str) -> str:
    venv = stand_in_python(tmp_path)
    result = subprocess.run(
        ["make", "-s", "-C", str(REPO_ROOT), "torch", f"VENV={venv}", f"TORCH_CPU_INDEX={index}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_unreachable_index_falls_back_and_says_so(tmp_path):
    out = make_torch(tmp_path, "http://127.0.0.1:9/whl/cpu")
    assert "did not answer: installing torch==2.13.0 from pip's configured index" in out
    assert (tmp_path / "pip.log").read_text().split("\n")[0] == "-m pip install torch==2.13.0"
    assert "torch: 2.13.0+cpu (CPU build)" in out


def test_reachable_index_is_used(tmp_path):
    (tmp_path / "index" / "torch").mkdir(parents=True)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path / "index"), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = f"http://127.0.0.1:{server.server_address[1]}"
        out = make_torch(tmp_path, index)
    finally:
        server.shutdown()
    assert f"from PyTorch's CPU wheel index ({index})" in out
    assert (tmp_path / "pip.log").read_text().split("\n")[0] == f"-m pip install --index-url {index} torch==2.13.0"


def test_tests_run_after_the_lint_and_type_checks(tmp_path):
    """``make test`` runs ``make lint`` (ruff, the formatter's check, mypy) before pytest; a dry run."""
    venv = stand_in_python(tmp_path)
    result = subprocess.run(
        ["make", "-n", "-C", str(REPO_ROOT), "test", f"VENV={venv}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    py = f"{venv}/bin/python"
    expected = [
        f"{py} -m ruff check .",
        f"{py} -m ruff format --check .",
        f"{py} -m mypy spacy_elmo",
        f"{py} -m pytest tests -q -n 2",
    ]
    lines = result.stdout.splitlines()
    assert all(line in lines for line in expected), result.stdout
    assert [lines.index(line) for line in expected] == sorted(lines.index(line) for line in expected)
