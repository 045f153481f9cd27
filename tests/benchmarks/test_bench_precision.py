"""bench_precision's workflow size is the workflow's biLM config, not a copy of it."""

from __future__ import annotations

from thinc.api import Config

from benchmarks.bench_embed import SIZES
from benchmarks.bench_precision import WORKFLOW_BILM, size_settings, workflow_size
from spacy_elmo.config import BiLMConfig


def test_workflow_size_reads_the_pretraining_config():
    model = Config().from_disk(WORKFLOW_BILM)["model"]
    sizes = workflow_size()
    assert sizes["lstm_dim"] == model["lstm_dim"]
    assert sizes["projection_dim"] == model["projection_dim"]
    assert [list(f) for f in sizes["filters"]] == [list(f) for f in model["filters"]]
    config = BiLMConfig(**{**sizes, "filters": tuple(tuple(f) for f in sizes["filters"])})
    assert config.lstm_dim == model["lstm_dim"]


def test_published_sizes_pass_through():
    assert size_settings("original") == SIZES["original"]
    assert size_settings("workflow") == workflow_size()
