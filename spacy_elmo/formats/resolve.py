"""Which biLM files a path holds: the path rules of every loader (docs/weights.md). Errors are
worded by a table (:data:`MESSAGES`) that a caller may lead with its option's name."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Union

from .elmoformanylangs import CHAR_DIC, ENCODER, TOKEN_EMBEDDER, is_elmoformanylangs_dir
from .native import CONFIG_FILE, WEIGHTS_FILE, is_model_dir

PathLike = Union[str, Path]
OPTIONS_FILE = "options.json"
HDF5_SUFFIXES = (".hdf5", ".h5")

#: Problem -> (exception type, template with the fields of :func:`find_weights`).
Messages = Mapping[str, tuple[type[Exception], str]]


def _no_bilm_in(missing: str) -> str:
    return (
        "{path} holds no biLM weights: missing " + missing + " (expected a spacy-elmo model "
        "directory with {config} + {weights}, or {options} + one .hdf5)"
    )


MESSAGES: Messages = {
    "missing": (FileNotFoundError, "No biLM weights at {path}: it does not exist"),
    "not_hdf5": (
        ValueError,
        "{path} is neither a directory nor an options .json, and not an .hdf5 weights file: pass a "
        "spacy-elmo model directory, an AllenNLP directory ({options} + one .hdf5), or the .hdf5 or "
        "the options .json with the other beside it",
    ),
    "no_options_beside": (FileNotFoundError, "No options file for {path}: missing {options} in {parent}"),
    "incomplete_model_dir": (FileNotFoundError, "biLM model directory {path} has {config} but is missing {weights}"),
    "incomplete_elmoformanylangs": (
        FileNotFoundError,
        "{path} looks like an ELMoForManyLangs model directory but is missing {missing} (unzip the whole download)",
    ),
    "empty_dir": (FileNotFoundError, _no_bilm_in("{options} and a weights .hdf5 file")),
    "no_options": (FileNotFoundError, _no_bilm_in("{options}")),
    "no_weights": (FileNotFoundError, "No weights for {path}: missing a weights .hdf5 file in {parent}"),
    "several_weights": (
        ValueError,
        "Which weights for {path}? {parent} holds several .hdf5 files ({found}), none named "
        "{weights}: exactly one is needed, or pass the weights file's path",
    ),
    "spacy_pipeline": (
        ValueError,
        "{path} is a trained spaCy pipeline, not biLM weights: reuse its elmo component with "
        '[components.elmo] source = "{path}", or export its biLM with `spacy-elmo '
        "export-allennlp {path} OUT_DIR` and pass OUT_DIR",
    ),
    "pretraining_run": (
        ValueError,
        "{path} is a pretraining output folder: pass the biLM it wrote, {path}/model-best (or model-last)",
    ),
    "training_run": (
        ValueError,
        "{path} is a spacy train output folder: its pipelines are {path}/model-best and model-last; "
        'reuse one\'s elmo component with [components.elmo] source = "{path}/model-best", or export '
        "its biLM with `spacy-elmo export-allennlp {path}/model-best OUT_DIR` and pass OUT_DIR",
    ),
}


def messages_for(label: str, messages: Messages = MESSAGES) -> Messages:
    """``messages`` led by ``label``, the option that gave the path (e.g. ``"--init-from"``)."""
    lead = label.replace("{", "{{").replace("}", "}}")
    return {problem: (kind, f"{lead}: {template}") for problem, (kind, template) in messages.items()}


class _Unusable(Exception):
    """Internal: why a path holds no biLM, before it is worded for the caller."""

    def __init__(self, problem: str, found: str = "none", missing: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.found = found
        self.missing = missing


def find_weights(path: PathLike, *, messages: Messages = MESSAGES) -> Optional[tuple[Path, Path]]:
    """AllenNLP's (options, weights) files for ``path``, or None for a model directory read whole."""
    path = Path(path)
    try:
        return _locate(path)
    except _Unusable as unusable:
        kind, template = messages.get(unusable.problem) or MESSAGES[unusable.problem]
        fields = dict(
            path=path,
            parent=path if path.is_dir() else path.parent,
            found=unusable.found,
            missing=unusable.missing,
            options=OPTIONS_FILE,
            config=CONFIG_FILE,
            weights=WEIGHTS_FILE,
        )
        raise kind(template.format(**fields)) from None


def _locate(path: Path) -> Optional[tuple[Path, Path]]:
    if not path.exists():
        raise _Unusable("missing")
    if path.is_dir():
        if is_model_dir(path) or is_elmoformanylangs_dir(path):
            return None
        return _options_in(path), _weights_in(path)
    suffix = path.suffix.lower()
    if suffix in HDF5_SUFFIXES:
        return _options_beside(path), path
    if suffix == ".json":
        return path, _weights_in(path.parent)
    raise _Unusable("not_hdf5")


def _options_in(directory: Path) -> Path:
    options = directory / OPTIONS_FILE
    if options.is_file():
        return options
    if (directory / "config.cfg").is_file() and (directory / "meta.json").is_file():
        raise _Unusable("spacy_pipeline")  # a folder that is no biLM but holds one
    if (directory / "model-best").is_dir():
        raise _Unusable("pretraining_run" if is_model_dir(directory / "model-best") else "training_run")
    weights = _hdf5_files(directory)
    found = ", ".join(p.name for p in weights) or "none"
    theirs = [name for name in (CHAR_DIC, TOKEN_EMBEDDER, ENCODER) if (directory / name).is_file()]
    if (directory / CONFIG_FILE).is_file() and theirs:
        missing = [name for name in (TOKEN_EMBEDDER, ENCODER) if name not in theirs]
        raise _Unusable("incomplete_elmoformanylangs", found, ", ".join(missing))
    if (directory / CONFIG_FILE).is_file():
        raise _Unusable("incomplete_model_dir", found)
    raise _Unusable("no_options" if weights else "empty_dir", found)


def _weights_in(directory: Path) -> Path:
    """``weights.hdf5`` when the directory has one, else its only .hdf5 file."""
    preferred = directory / WEIGHTS_FILE
    if preferred.is_file():
        return preferred
    weights = _hdf5_files(directory)
    if len(weights) != 1:
        raise _Unusable("several_weights" if weights else "no_weights", ", ".join(p.name for p in weights) or "none")
    return weights[0]


def _hdf5_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix.lower() in HDF5_SUFFIXES and p.is_file())


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
    raise _Unusable("no_options_beside")
