"""Finding and loading a biLM from whatever path a user gives the ``elmo`` component.

Accepted: a spacy-elmo model directory (``BiLM.to_disk`` or the pretraining command), an
AllenNLP/bilm-tf directory with ``options.json`` and exactly one ``.hdf5``, or the ``.hdf5``
file itself with ``options.json`` beside it. Every failure names the path and what is missing,
because "file not found" deep inside h5py is no help to someone who mistyped a directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from ..formats.native import CONFIG_FILE, WEIGHTS_FILE, is_model_dir
from ..nn.bilm import BiLM

PathLike = Union[str, Path]

OPTIONS_FILE = "options.json"
HDF5_SUFFIXES = (".hdf5", ".h5")


def load_bilm_weights(path: PathLike) -> BiLM:
    """The biLM stored at ``path``, in eval mode, without its output softmax.

    The softmax only serves pretraining; dropping it keeps pipelines small.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"ELMo weights not found: {path} does not exist")
    if path.is_file():
        bilm = _load_hdf5_file(path)
    elif is_model_dir(path):
        bilm = BiLM.from_disk(path)
    else:
        bilm = _load_allennlp_dir(path)
    return without_softmax(bilm)


def without_softmax(bilm: BiLM) -> BiLM:
    """The same biLM with no output softmax (and no vocabulary); a copy only when needed."""
    if bilm.softmax is None:
        return bilm.eval()
    stripped = BiLM(bilm.config.replace(vocab_size=0))
    state = {name: t for name, t in bilm.state_dict().items() if not name.startswith("softmax.")}
    stripped.load_state_dict(state)
    return stripped.to(device=bilm.device, dtype=bilm.dtype).eval()


def _load_hdf5_file(path: Path) -> BiLM:
    if path.suffix.lower() not in HDF5_SUFFIXES:
        raise ValueError(
            f"ELMo weights path {path} is a file but not an .hdf5 weights file; pass a model "
            f"directory, an AllenNLP directory, or the .hdf5 file with {OPTIONS_FILE} beside it"
        )
    options = path.parent / OPTIONS_FILE
    if not options.is_file():
        raise FileNotFoundError(f"ELMo weights {path}: missing {OPTIONS_FILE} in {path.parent}")
    return BiLM.from_allennlp(options, path)


def _load_allennlp_dir(path: Path) -> BiLM:
    options = path / OPTIONS_FILE
    weight_files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in HDF5_SUFFIXES)
    if (path / CONFIG_FILE).is_file() and not (path / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"ELMo model directory {path} has {CONFIG_FILE} but is missing {WEIGHTS_FILE}")
    missing = []
    if not options.is_file():
        missing.append(OPTIONS_FILE)
    if not weight_files:
        missing.append("a weights .hdf5 file")
    if missing:
        raise FileNotFoundError(
            f"{path} holds no ELMo weights: missing {' and '.join(missing)} (expected a spacy-elmo "
            f"model directory with {CONFIG_FILE} + {WEIGHTS_FILE}, or {OPTIONS_FILE} + one .hdf5)"
        )
    if len(weight_files) > 1:
        names = ", ".join(p.name for p in weight_files)
        raise ValueError(f"{path} holds several .hdf5 files ({names}): pass the weights file's path instead")
    return BiLM.from_allennlp(options, weight_files[0])
