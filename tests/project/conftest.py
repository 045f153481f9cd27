"""Shared by the project's tests: running a command of the app (``python -m scripts``) in this process."""

from typing import Callable, Sequence

import pytest
import typer

from scripts.__main__ import app


def _run(argv: Sequence[str]) -> int:
    """The command's exit code: 0 when it returns, N on ``typer.Exit(N)``. What the command
    raises otherwise (``SystemExit`` from ``msg.fail``, a usage error) reaches the test."""
    result = typer.main.get_command(app).main(args=list(argv), standalone_mode=False)
    return 0 if result is None else int(result)


@pytest.fixture(scope="session")
def run_command() -> Callable[[Sequence[str]], int]:
    """``run_command(["fetch", "--root", ...])``: ``python -m scripts ARGS``, run in this process."""
    return _run


def _write_assets(path, assets: dict):
    """An asset list shaped like project.yml's ``assets``, from ``{name: {client, spec, archive,
    sha256, extract_to, members, strip}}``: each archive kept in assets/downloads/."""
    import srsly

    entries = [
        {
            "dest": f"assets/downloads/{asset['archive']}",
            "sha256": asset["sha256"],
            "description": name,
            "fetch": {"name": name, **{k: v for k, v in asset.items() if k not in ("archive", "sha256")}},
        }
        for name, asset in assets.items()
    ]
    srsly.write_yaml(path, {"assets": entries})
    return path


@pytest.fixture(scope="session")
def write_assets() -> Callable[..., object]:
    """``write_assets(path, {name: {...}})``: an asset list for the fetch command's ``--assets``."""
    return _write_assets


# -- a synthetic CoNLL-2003 corpus (the real one is never read by the tests) -----------------------

CONLL_ENTITIES = {
    "PER": ["Peter Blackburn", "Mary Smith", "Obama"],
    "LOC": ["Brussels", "New York", "Germany"],
    "ORG": ["European Commission", "Reuters"],
    "MISC": ["German", "British"],
}
CONLL_FILLER = ["the", "said", "on", "Thursday", "it", "would", "call", "for", "a", "boycott", "of", "lamb", "."]


def _conll_text(seed: int, n_documents: int, sentences: Sequence[int]) -> str:
    """CoNLL-2003's format: ``-DOCSTART- -X- -X- O``, then sentences of ``token POS chunk NER``
    lines (BIO2), a blank line after each; document k holds ``sentences[k % len(sentences)]``."""
    import random

    rng = random.Random(seed)
    lines = []
    for k in range(n_documents):
        lines += ["-DOCSTART- -X- -X- O", ""]
        for _ in range(sentences[k % len(sentences)]):
            label = rng.choice(sorted(CONLL_ENTITIES))
            entity = rng.choice(CONLL_ENTITIES[label]).split()
            tokens = [(w, "O") for w in rng.sample(CONLL_FILLER, 3)]
            tokens += [(w, ("B-" if i == 0 else "I-") + label) for i, w in enumerate(entity)]
            tokens += [(w, "O") for w in rng.sample(CONLL_FILLER, 2)]
            lines += [f"{w} NN I-NP {t}" for w, t in tokens] + [""]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def conll_text() -> Callable[..., str]:
    """``conll_text(seed, n_documents, sentences=(3, 1, 2))``: a synthetic CoNLL-2003 file."""

    def make(seed: int, n_documents: int, sentences: Sequence[int] = (3, 1, 2)) -> str:
        return _conll_text(seed, n_documents, sentences)

    return make
