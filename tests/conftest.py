"""Shared test setup: one torch thread (the CI machine has two cores), fixture locations,
the tiny random biLM and the tiny listening tagger that tests in several folders use."""

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import torch

torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]
ALLENNLP_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "allennlp-elmo"
#: ELMoForManyLangs models written by their code, and their layers (README.md there).
MANY_LANGS_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "elmoformanylangs"
MANY_LANGS_MODELS = ("char_legacy", "words_zip")


#: Test files whose tests form one long chain (the later ones read the outputs of the first):
#: collected first, so that under pytest-xdist (`make test`: -n 2, each file on one worker) the
#: chain starts at once and the other worker runs the rest meanwhile, not after it.
LONG_CHAINS = ("tests/project/test_workflow.py::",)


def pytest_collection_modifyitems(config, items) -> None:
    """The files of :data:`LONG_CHAINS` first; otherwise the collection order (a stable sort)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_CHAINS))


def many_langs_reference(name: str) -> tuple[list, list]:
    """The fixture sentences and, per sentence, ELMoForManyLangs' float64 layers for model ``name``."""
    import numpy

    sentences = json.loads((MANY_LANGS_FIXTURES / "sentences.json").read_text(encoding="utf-8"))
    with numpy.load(MANY_LANGS_FIXTURES / f"{name}.layers.npz", allow_pickle=False) as arrays:
        layers = [arrays[f"s{index}"] for index in range(len(sentences))]
    return sentences, layers


@pytest.fixture(scope="session")
def allennlp_fixtures() -> Path:
    """The AllenNLP/bilm-tf reference files; tests using them skip in a user's clone."""
    if not (ALLENNLP_FIXTURES / "lm_weights.hdf5").is_file():
        pytest.skip(f"AllenNLP reference fixtures not found at {ALLENNLP_FIXTURES}")
    return ALLENNLP_FIXTURES


#: The exactness contract (docs/reliability.md): a sentence's layers in any batch, or through the
#: word cache, agree with the sentence alone within this fraction of each layer's largest
#: magnitude (at least 1); every layer is within FLOAT64_BOUND of a float64 run.
BATCH_BOUND = 1e-5
FLOAT64_BOUND = 1e-5


def relative_difference(expected, got) -> float:
    """The largest difference of any layer of any sentence over that layer's largest magnitude (at least 1)."""
    import numpy

    worst = 0.0
    for want, have in zip(expected, got):
        assert want.shape == have.shape, (want.shape, have.shape)
        for layer in range(want.shape[0]):
            scale = max(1.0, float(numpy.abs(want[layer]).max(initial=0.0)))
            worst = max(worst, float(numpy.abs(want[layer] - have[layer]).max(initial=0.0)) / scale)
    return worst


def random_tiny_bilm(seed: int = 0, scale: float = 0.2):
    """A tiny biLM with random weights of ``scale``, large enough that context visibly changes
    the vectors (the default initialisation barely mixes a tiny model's inputs)."""
    from spacy_elmo.nn import TINY_CONFIG, BiLM

    torch.manual_seed(seed)
    bilm = BiLM(TINY_CONFIG)
    with torch.no_grad():
        for param in bilm.parameters():
            param.normal_(0.0, scale)
    return bilm.eval()


def without_checksums(model_dir: Path) -> Path:
    """Drop the checksums from a model directory's config.json, as models written before them
    lack them: then hand edits of its files reach the structural checks behind the checksums."""
    config = model_dir / "config.json"
    meta = json.loads(config.read_text(encoding="utf8"))
    meta.pop("sha256", None)
    config.write_text(json.dumps(meta), encoding="utf8")
    return model_dir


@contextmanager
def full_disk_for(monkeypatch, suffix: str) -> Iterator[None]:
    """Within the block, opening a file whose path ends with ``suffix`` for writing fails with
    ENOSPC, as on a full disk (files written by HDF5's own C code are not affected). A temporary
    file of ``spacy_elmo.durable`` (``NAME.<16 hex>.tmp``) counts as ``NAME.tmp`` here."""
    import builtins
    import errno
    import re

    real_open = builtins.open

    def full_disk(path, mode="r", *args, **kwargs):
        name = re.sub(r"\.[0-9a-f]{16}\.tmp$", ".tmp", str(path))
        if name.endswith(suffix) and any(flag in mode for flag in "wax"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full_disk)
    try:
        yield
    finally:
        monkeypatch.setattr(builtins, "open", real_open)


def run_on_small_tmpfs(tmp_path: Path, size: str, script: str, *args: str, timeout: float = 120.0):
    """Run ``python -c script MOUNT *args`` with a ``size`` tmpfs mounted at MOUNT (in a user and
    mount namespace: a real full disk, without root); skips the test where that is impossible."""
    import shutil
    import subprocess
    import sys

    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespaces here")
    mount = tmp_path / "mnt"
    mount.mkdir()
    shell = f'mount -t tmpfs -o size={size} tmpfs "$1" && shift && exec "$@"'
    command = [unshare, "-rm", "sh", "-c", shell, "sh", str(mount), sys.executable, "-c", script, str(mount), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if "mount:" in result.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    return result


#: A small tagger whose tok2vec listens to ``elmo``: the cheapest pipeline with a listener.
TINY_TAGGER_MODEL = {
    "@architectures": "spacy.Tagger.v2",
    "tok2vec": {
        "@architectures": "spacy_elmo.ElmoTok2Vec.v1",
        "elmo": {"@architectures": "spacy_elmo.ElmoListener.v1", "upstream": "elmo"},
        "embed": {
            "@architectures": "spacy.MultiHashEmbed.v2",
            "width": 8,
            "attrs": ["NORM"],
            "rows": [100],
            "include_static_vectors": False,
        },
        "encode": {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": 8,
            "depth": 1,
            "window_size": 1,
            "maxout_pieces": 2,
        },
    },
}
