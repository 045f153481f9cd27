"""``formats`` reads and writes plain data (a config and arrays named as in ``BiLM.state_dict()``):
it imports nothing of the package but the bottom layer (:mod:`spacy_elmo.config`, and
:mod:`spacy_elmo.durable` for its atomic writes), so it sits below ``spacy_elmo.nn``, and its bilm-tf mapping names every
entry of the model's state dict with the model's shape."""

import ast
from pathlib import Path

import numpy
import pytest

import spacy_elmo.formats
from spacy_elmo.formats import allennlp as allennlp_format
from spacy_elmo.nn import TINY_CONFIG, BiLM

FORMATS_DIR = Path(spacy_elmo.formats.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (relative ones as written, with their leading dots)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


@pytest.mark.parametrize("path", sorted(FORMATS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_formats_import_only_the_bottom_layer_from_the_package(path):
    from_package = {name for name in imported_modules(path) if name.startswith("..") or "spacy_elmo" in name}
    assert from_package <= {"..config", "..durable"}, f"{path.name} imports {from_package}"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"vocab_size": 7},
        {"n_layers": 1, "n_highway": 0},
        {"n_layers": 3, "n_highway": 2, "use_skip_connections": False},
    ],
)
def test_the_allennlp_mapping_covers_the_state_dict_exactly(changes):
    config = TINY_CONFIG.replace(**changes)
    shapes = allennlp_format.dataset_shapes(config)
    state = allennlp_format._state_from_file(config, lambda name: numpy.zeros(shapes[name], dtype=numpy.float32))
    assert {name: array.shape for name, array in state.items()} == BiLM.state_shapes(config)
    stored = allennlp_format._file_from_state(config, state)
    assert {name: array.shape for name, array in stored.items()} == shapes
