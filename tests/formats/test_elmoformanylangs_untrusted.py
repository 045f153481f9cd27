"""An ELMoForManyLangs folder from elsewhere: its dictionaries and configs are read only as
regular files of a bounded size, and JSON nested too deeply is one error naming the file."""

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap

import pytest

from spacy_elmo.formats import elmoformanylangs
from spacy_elmo.loading import load_bilm

from ..conftest import MANY_LANGS_FIXTURES

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX only")


@pytest.fixture(params=["char_legacy", "words_zip"])
def copy(tmp_path, request):
    target = tmp_path / "de.model"
    shutil.copytree(MANY_LANGS_FIXTURES / f"{request.param}.model", target)
    return target


def _limited_memory() -> None:  # in the child: a runaway read ends in MemoryError, not the OOM killer
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def load_in_a_child(directory) -> str:
    """The one error loading ``directory`` gives, from a child process with 2 GiB of address
    space and 60 s: a reader that follows /dev/zero or waits on a FIFO fails there, not here."""
    code = textwrap.dedent("""
        import sys
        from spacy_elmo.formats.elmoformanylangs import read_elmoformanylangs
        try:
            read_elmoformanylangs(sys.argv[1])
        except ValueError as err:
            print(err)
    """)
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(directory)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited_memory,
            env=environment,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {directory} still ran after 60 s (blocked on a special file?)")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize(
    "model, dictionary, kind",
    [
        ("char_legacy", "char.dic", "link to /dev/zero"),  # was read until memory ran out
        ("words_zip", "word.dic", "FIFO"),  # waited for a writer forever
    ],
)
def test_a_dictionary_that_is_no_regular_file_is_refused(tmp_path, model, dictionary, kind):
    folder = tmp_path / "de.model"
    shutil.copytree(MANY_LANGS_FIXTURES / f"{model}.model", folder)
    path = folder / dictionary
    path.unlink()
    if kind == "FIFO":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    expected = "a FIFO (named pipe)" if kind == "FIFO" else "a character device"
    assert load_in_a_child(folder) == f"{path}: the model's dictionary must be a regular file, but it is {expected}"


def test_a_dictionary_over_the_size_bound_is_refused(copy, monkeypatch):
    size = (copy / "char.dic").stat().st_size
    monkeypatch.setattr(elmoformanylangs, "MAX_DICTIONARY_BYTES", size - 1)
    with pytest.raises(ValueError, match=f"char.dic: the model's dictionary is {size} bytes, more than the {size - 1}"):
        load_bilm(copy)


@pytest.mark.parametrize("which", ["config.json", "model config"])
def test_deeply_nested_json_is_one_error_naming_the_file(copy, which):
    path = copy / "config.json" if which == "config.json" else next(copy.glob("cnn_*.json"))
    for depth in (100_000, 30):  # past Python's recursion limit, and past ours
        path.write_text('{"a": ' + "[" * depth + "]" * depth + "}")
        with pytest.raises(ValueError) as error:
            load_bilm(copy)
        what = "trainer's config" if which == "config.json" else "model config"
        assert str(error.value) == f"{path}: the {what} is nested more than 16 deep"
        assert error.value.__cause__ is None and (error.value.__suppress_context__ or error.value.__context__ is None)


def test_json_nested_as_deeply_as_theirs_is_read(copy):
    path = next(copy.glob("cnn_*.json"))
    settings = json.loads(path.read_text())
    settings["extra"] = [[[[[[[[[[1]]]]]]]]]]  # 10 deep, as no config of theirs is; still fine
    path.write_text(json.dumps(settings))
    assert load_bilm(copy).config.char_encoding == "code_points"


def test_a_model_config_that_is_a_fifo_is_named(copy):
    path = next(copy.glob("cnn_*.json"))
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ValueError, match=f"{path}: the model config must be a regular file, but it is a FIFO"):
        load_bilm(copy)
