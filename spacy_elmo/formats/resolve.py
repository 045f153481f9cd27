"""One path in, a loaded :class:`BiLM` out, whichever of the supported layouts the path holds.

Accepted, in this order:

1. a spacy-elmo model directory (``config.json`` + ``weights.hdf5``);
2. an AllenNLP/bilm-tf directory: ``options.json`` and exactly one ``.hdf5`` file;
3. an ``.hdf5`` weight file with ``options.json`` (or ``<stem>_options.json``, as AllenNLP's
   downloads are named) in the same directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from ..nn.bilm import BiLM
from .native import is_model_dir

PathLike = Union[str, Path]
OPTIONS_FILE = "options.json"


def load_bilm(path: PathLike) -> BiLM:
    """Load the biLM at ``path`` (see the module docstring for the layouts understood)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No biLM weights at {path}")
    if path.is_dir():
        if is_model_dir(path):
            return BiLM.from_disk(path)
        return BiLM.from_allennlp(*_allennlp_dir_files(path))
    if path.suffix.lower() in (".hdf5", ".h5"):
        return BiLM.from_allennlp(_options_beside(path), path)
    raise ValueError(
        f"{path} is neither a model directory nor an .hdf5 weight file: pass a spacy-elmo model "
        "directory, an AllenNLP directory (options.json + one .hdf5) or an .hdf5 with options.json beside it"
    )


def _allennlp_dir_files(directory: Path) -> tuple[Path, Path]:
    options = directory / OPTIONS_FILE
    weights = sorted(p for p in directory.iterdir() if p.suffix.lower() in (".hdf5", ".h5") and p.is_file())
    if not options.is_file():
        raise FileNotFoundError(
            f"{directory} is not a biLM directory: it has neither config.json + weights.hdf5 "
            f"(spacy-elmo) nor {OPTIONS_FILE} (AllenNLP)"
        )
    if len(weights) != 1:
        found = ", ".join(p.name for p in weights) or "none"
        raise ValueError(f"{directory} must hold exactly one .hdf5 weight file next to {OPTIONS_FILE}; found: {found}")
    return options, weights[0]


def _options_beside(weight_file: Path) -> Path:
    candidates = [weight_file.parent / OPTIONS_FILE]
    stem = weight_file.stem
    for suffix in ("_weights", "_weight", "weights"):
        if stem.endswith(suffix):
            candidates.append(weight_file.parent / (stem[: -len(suffix)] + "_options.json"))
            candidates.append(weight_file.parent / (stem[: -len(suffix)] + "options.json"))
    candidates.append(weight_file.parent / (stem + "_options.json"))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"No options file for {weight_file}: expected {OPTIONS_FILE} in {weight_file.parent}"
    )
