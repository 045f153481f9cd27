"""The training run end to end: it learns, it logs, it writes loadable models, it refuses misuse."""

from __future__ import annotations

import json
import math

import pytest
import torch

from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import PretrainError, pretrain
from spacy_elmo.pretrain.output_folder import read_metrics

from .conftest import tiny_settings

REQUIRED_FIELDS = {"step", "tokens", "train_loss", "dev_perplexity_forward", "dev_perplexity_backward"}


def test_loss_goes_down_and_dev_perplexity_ends_far_below_vocab_size(trained_run):
    records = read_metrics(trained_run / "metrics.jsonl")
    assert [r["step"] for r in records] == [50, 100, 150]
    vocab_size = len(json.loads((trained_run / "vocab.json").read_text()))
    losses = [r["train_loss"] for r in records]
    assert losses[-1] < losses[0] < math.log(vocab_size) + 0.5
    last = records[-1]
    # The generated grammar has a perplexity around 4; a unigram model is near 25.
    assert last["dev_perplexity_forward"] < vocab_size / 4
    assert last["dev_perplexity_backward"] < vocab_size / 4
    assert last["dev_perplexity_forward"] < records[0]["dev_perplexity_forward"]


def test_metrics_have_the_required_fields(trained_run):
    for record in read_metrics(trained_run / "metrics.jsonl"):
        assert REQUIRED_FIELDS <= set(record)
        assert record["tokens"] > 0


def test_model_last_and_best_load_with_their_vocabulary(trained_run):
    for name in ("model-last", "model-best"):
        model = BiLM.from_disk(trained_run / name)
        assert model.vocab == json.loads((trained_run / "vocab.json").read_text())
        assert model.softmax is not None and model.softmax.out_features == len(model.vocab)
    best = min(read_metrics(trained_run / "metrics.jsonl"), key=lambda r: r["dev_perplexity"])
    assert best["dev_perplexity"] == pytest.approx(
        0.5 * (best["dev_perplexity_forward"] + best["dev_perplexity_backward"])
    )


def test_existing_run_is_not_overwritten_without_resume(corpus_dir, trained_run):
    settings, _ = tiny_settings(corpus_dir, training__max_steps=2)
    with pytest.raises(PretrainError, match="--resume"):
        pretrain(settings, trained_run, progress=False)


def test_resume_without_checkpoint_is_a_clear_error(corpus_dir, tmp_path):
    settings, _ = tiny_settings(corpus_dir, training__max_steps=2)
    with pytest.raises(PretrainError, match="no checkpoint"):
        pretrain(settings, tmp_path / "nothing", resume=True, progress=False)


def test_resume_can_extend_a_finished_run(corpus_dir, tmp_path):
    out = tmp_path / "out"
    settings, _ = tiny_settings(corpus_dir, training__max_steps=4, training__eval_every=2)
    pretrain(settings, out, progress=False)
    longer, _ = tiny_settings(corpus_dir, training__max_steps=6, training__eval_every=2)
    result = pretrain(longer, out, resume=True, progress=False)
    assert result.step == 6
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [2, 4, 6]


def test_init_from_our_model_and_from_allennlp_files(corpus_dir, trained_run, tmp_path):
    start = BiLM.from_disk(trained_run / "model-last")
    allennlp = tmp_path / "allennlp"
    allennlp.mkdir()
    start.to_allennlp(allennlp / "options.json", allennlp / "weights.hdf5")
    for source in (trained_run / "model-last", allennlp):
        out = tmp_path / f"from-{source.name}"
        settings, _ = tiny_settings(
            corpus_dir, training__max_steps=1, paths__init_from=str(source), training__learning_rate=0.0
        )
        pretrain(settings, out, progress=False)
        model = BiLM.from_disk(out / "model-last")
        # Learning rate 0: the weights are exactly the ones we started from. AllenNLP files carry
        # no vocabulary, so there the output layer is new (built for the corpus vocabulary).
        kept = (
            start.state_dict()
            if source.name == "model-last"
            else {k: v for k, v in start.state_dict().items() if not k.startswith("softmax.")}
        )
        for name, tensor in kept.items():
            assert torch.equal(model.state_dict()[name], tensor), name


def test_sampled_softmax_run_learns(corpus_dir, tmp_path):
    settings, _ = tiny_settings(corpus_dir, training__max_steps=60, training__eval_every=30, softmax__n_negatives=16)
    pretrain(settings, tmp_path / "out", progress=False)
    records = read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert records[-1]["dev_perplexity_forward"] < records[0]["dev_perplexity_forward"]
    assert records[-1]["dev_perplexity_forward"] < 15


def test_time_budget_ends_the_run_like_max_steps(corpus_dir, tmp_path):
    settings, _ = tiny_settings(
        corpus_dir, training__max_steps=100000, training__max_minutes=0.0005, training__eval_every=100000
    )
    result = pretrain(settings, tmp_path / "out", progress=False)
    assert 1 <= result.step < 100000 and result.stopped_by_signal is None
    [record] = read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert record["step"] == result.step and record["dev_perplexity_forward"] is not None
    assert (tmp_path / "out" / "model-last" / "weights.hdf5").is_file()
