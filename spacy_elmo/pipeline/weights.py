"""Finding and loading a biLM from whatever path a user gives the ``elmo`` component.

Accepted: a spacy-elmo model directory (``BiLM.to_disk`` or the pretraining command), an
AllenNLP/bilm-tf directory with ``options.json`` and exactly one ``.hdf5``, or the ``.hdf5``
file itself with ``options.json`` beside it. The search is
:func:`~spacy_elmo.formats.resolve.find_weights`' (through :func:`spacy_elmo.loading.load_bilm`);
this module keeps the component's own error wording. Every failure names the path and what is
missing, because "file not found" deep inside h5py is no help to someone who mistyped a directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from ..formats.resolve import HDF5_SUFFIXES, OPTIONS_FILE, Messages  # noqa: F401 (re-exported)
from ..loading import load_bilm
from ..nn.bilm import BiLM

PathLike = Union[str, Path]


def _no_weights_in_dir(missing: str) -> str:
    return (
        "{path} holds no ELMo weights: missing " + missing + " (expected a spacy-elmo "
        "model directory with {config} + {weights}, or {options} + one .hdf5)"
    )


#: The component's wording of :data:`spacy_elmo.formats.resolve.MESSAGES`' problems.
COMPONENT_MESSAGES: Messages = {
    "missing": (FileNotFoundError, "ELMo weights not found: {path} does not exist"),
    "not_hdf5": (
        ValueError,
        "ELMo weights path {path} is a file but not an .hdf5 weights file; pass a model "
        "directory, an AllenNLP directory, or the .hdf5 file with {options} beside it",
    ),
    "no_options_beside": (FileNotFoundError, "ELMo weights {path}: missing {options} in {parent}"),
    "incomplete_model_dir": (FileNotFoundError, "ELMo model directory {path} has {config} but is missing {weights}"),
    "empty_dir": (FileNotFoundError, _no_weights_in_dir("{options} and a weights .hdf5 file")),
    "no_options": (FileNotFoundError, _no_weights_in_dir("{options}")),
    "no_weights": (FileNotFoundError, _no_weights_in_dir("a weights .hdf5 file")),
    "several_weights": (ValueError, "{path} holds several .hdf5 files ({found}): pass the weights file's path instead"),
}


def load_bilm_weights(path: PathLike) -> BiLM:
    """The biLM stored at ``path``, in eval mode, without its output softmax.

    The softmax only serves pretraining; dropping it keeps pipelines small.
    """
    return without_softmax(load_bilm(Path(path).expanduser(), messages=COMPONENT_MESSAGES))


def without_softmax(bilm: BiLM) -> BiLM:
    """The same biLM with no output softmax (and no vocabulary); a copy only when needed."""
    if bilm.softmax is None:
        return bilm.eval()
    stripped = BiLM(bilm.config.replace(vocab_size=0))
    state = {name: t for name, t in bilm.state_dict().items() if not name.startswith("softmax.")}
    stripped.load_state_dict(state)
    return stripped.to(device=bilm.device, dtype=bilm.dtype).eval()
