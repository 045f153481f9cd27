"""Shared test setup: one torch thread (the CI machine has two cores), fixture locations."""
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]
ALLENNLP_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "allennlp-elmo"


@pytest.fixture(scope="session")
def allennlp_fixtures() -> Path:
    """The AllenNLP/bilm-tf reference files; tests using them skip in a user's clone."""
    if not (ALLENNLP_FIXTURES / "lm_weights.hdf5").is_file():
        pytest.skip(f"AllenNLP reference fixtures not found at {ALLENNLP_FIXTURES}")
    return ALLENNLP_FIXTURES
