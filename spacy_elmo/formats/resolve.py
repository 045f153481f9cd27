"""Which biLM files a path holds, whichever of the supported layouts it is.

Accepted, in this order:

1. a spacy-elmo model directory (``config.json`` + ``weights.hdf5``);
2. an AllenNLP/bilm-tf directory: ``options.json`` and exactly one ``.hdf5`` file;
3. an ``.hdf5`` weight file with ``options.json`` (or ``<stem>_options.json``, as AllenNLP's
   downloads are named) in the same directory.

Anything else is refused with a message that names the path and what is missing. The wording
is a table (:data:`MESSAGES`) so that a caller speaking to other users (the ``elmo``
component) can pass its own; the search itself is the same for every caller. Loading what is
found is :func:`spacy_elmo.loading.load_bilm`'s job: this module reads no weights.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Union

from .native import CONFIG_FILE, WEIGHTS_FILE, is_model_dir

PathLike = Union[str, Path]
OPTIONS_FILE = "options.json"
HDF5_SUFFIXES = (".hdf5", ".h5")

#: Problem name -> (exception type, message template). A template may use ``{path}`` (the path
#: given), ``{parent}`` (the folder of a weight file), ``{found}`` (the .hdf5 files of a
#: directory, comma separated, or "none"), and ``{options}``, ``{config}``, ``{weights}`` (the
#: file names above). The problems:
#:
#: - ``missing``: nothing at the path;
#: - ``not_hdf5``: a file without an .hdf5/.h5 suffix;
#: - ``no_options_beside``: an .hdf5 file with no options file next to it;
#: - directories that are not model directories: ``incomplete_model_dir`` (``config.json``
#:   without ``weights.hdf5`` and no ``options.json``), ``empty_dir`` (neither ``options.json``
#:   nor any .hdf5), ``no_options`` (.hdf5 but no ``options.json``), ``no_weights``
#:   (``options.json`` but no .hdf5), ``several_weights`` (``options.json`` and 2+ .hdf5).
Messages = Mapping[str, tuple[type[Exception], str]]

_NOT_A_BILM_DIR = (
    FileNotFoundError,
    "{path} is not a biLM directory: it has neither {config} + {weights} (spacy-elmo) nor {options} (AllenNLP)",
)
_NOT_ONE_WEIGHT_FILE = (
    ValueError,
    "{path} must hold exactly one .hdf5 weight file next to {options}; found: {found}",
)

MESSAGES: Messages = {
    "missing": (FileNotFoundError, "No biLM weights at {path}"),
    "not_hdf5": (
        ValueError,
        "{path} is neither a model directory nor an .hdf5 weight file: pass a spacy-elmo model "
        "directory, an AllenNLP directory ({options} + one .hdf5) or an .hdf5 with {options} beside it",
    ),
    "no_options_beside": (FileNotFoundError, "No options file for {path}: expected {options} in {parent}"),
    "incomplete_model_dir": _NOT_A_BILM_DIR,
    "empty_dir": _NOT_A_BILM_DIR,
    "no_options": _NOT_A_BILM_DIR,
    "no_weights": _NOT_ONE_WEIGHT_FILE,
    "several_weights": _NOT_ONE_WEIGHT_FILE,
}


class _Unusable(Exception):
    """Internal: why a path holds no biLM, before it is worded for the caller."""

    def __init__(self, problem: str, **fields: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fields = fields


def find_weights(path: PathLike, *, messages: Messages = MESSAGES) -> Optional[tuple[Path, Path]]:
    """AllenNLP's (options, weights) files for ``path``, or None when ``path`` is a spacy-elmo
    model directory (see the module docstring for the layouts understood).

    ``messages`` words the errors (see :data:`MESSAGES` for the problems it must cover).
    """
    path = Path(path)
    try:
        return _locate(path)
    except _Unusable as unusable:
        kind, template = messages[unusable.problem]
        fields = dict(path=path, options=OPTIONS_FILE, config=CONFIG_FILE, weights=WEIGHTS_FILE)
        raise kind(template.format(**fields, **unusable.fields)) from None


def _locate(path: Path) -> Optional[tuple[Path, Path]]:
    """None for a spacy-elmo model directory, else AllenNLP's (options, weights) files."""
    if not path.exists():
        raise _Unusable("missing")
    if path.is_dir():
        if is_model_dir(path):
            return None
        return _allennlp_dir_files(path)
    if path.suffix.lower() in HDF5_SUFFIXES:
        return _options_beside(path), path
    raise _Unusable("not_hdf5")


def _allennlp_dir_files(directory: Path) -> tuple[Path, Path]:
    options = directory / OPTIONS_FILE
    weights = sorted(p for p in directory.iterdir() if p.suffix.lower() in HDF5_SUFFIXES and p.is_file())
    found = ", ".join(p.name for p in weights) or "none"
    if not options.is_file():
        if (directory / CONFIG_FILE).is_file():
            raise _Unusable("incomplete_model_dir", found=found)
        raise _Unusable("no_options" if weights else "empty_dir", found=found)
    if len(weights) != 1:
        raise _Unusable("several_weights" if weights else "no_weights", found=found)
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
    raise _Unusable("no_options_beside", parent=str(weight_file.parent))
