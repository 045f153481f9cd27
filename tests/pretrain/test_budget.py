"""The token budget, run.json (why a run stopped) and exact resumption with the recipe's
dropout between LSTM layers and learning-rate decay."""

import json
import logging

import torch

from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.output_folder import read_metrics

from .conftest import tiny_settings

FAST = {"training__eval_every": 1000, "training__checkpoint_every": 1000, "softmax__n_negatives": 16}


def run_json(out):
    return json.loads((out / "run.json").read_text())


def _tokens_per_step(corpus_dir, tmp_path, steps):
    settings, _ = tiny_settings(
        corpus_dir,
        training__max_steps=steps,
        training__eval_every=1,
        training__checkpoint_every=1000,
        softmax__n_negatives=16,
    )
    pretrain(settings, tmp_path / "every-step", progress=False)
    return [r["tokens"] for r in read_metrics(tmp_path / "every-step" / "metrics.jsonl")]


def test_max_tokens_stops_after_the_step_that_reaches_it(corpus_dir, tmp_path):
    tokens = _tokens_per_step(corpus_dir, tmp_path, 6)
    assert tokens == sorted(tokens) and len(set(tokens)) == 6
    for budget, step in ((tokens[3] - 1, 4), (tokens[3], 4), (tokens[3] + 1, 5)):
        out = tmp_path / f"budget-{budget}"
        settings, _ = tiny_settings(corpus_dir, training__max_steps=1000, training__max_tokens=budget, **FAST)
        result = pretrain(settings, out, progress=False)
        assert (result.step, result.tokens, result.stopped_by) == (step, tokens[step - 1], "max_tokens")
        record = json.loads((out / "run.json").read_text())
        assert record["stopped_by"] == "max_tokens" and record["steps"] == step and record["tokens"] == tokens[step - 1]
        assert record["max_tokens"] == budget and record["max_steps"] == 1000 and record["minutes"] > 0
        # Like max_steps: evaluated once, at the end, and a model exported.
        assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [step]
        assert (out / "model-last" / "weights.hdf5").is_file()
    # Both limits: whichever comes first.
    settings, _ = tiny_settings(corpus_dir, training__max_steps=2, training__max_tokens=tokens[4], **FAST)
    result = pretrain(settings, tmp_path / "steps-first", progress=False)
    assert (result.step, result.stopped_by) == (2, "max_steps")
    assert run_json(tmp_path / "steps-first")["stopped_by"] == "max_steps"
    # No step limit at all.
    settings, _ = tiny_settings(corpus_dir, training__max_steps=0, training__max_tokens=tokens[1], **FAST)
    assert pretrain(settings, tmp_path / "tokens-only", progress=False).step == 2


def test_the_time_guard_is_named_in_run_json_and_in_a_plain_line(corpus_dir, tmp_path, caplog):
    settings, _ = tiny_settings(
        corpus_dir, training__max_steps=100000, training__max_tokens=10**9, training__max_minutes=0.0005, **FAST
    )
    with caplog.at_level(logging.WARNING, logger="spacy_elmo.pretrain"):
        result = pretrain(settings, tmp_path / "out", progress=False)
    record = run_json(tmp_path / "out")
    assert result.stopped_by == record["stopped_by"] == "max_minutes"
    assert record["steps"] == result.step and 1 <= result.step < 100000 and record["max_minutes"] == 0.0005
    line = f"Stopped by the 0.0005-minute guard (max_minutes) at step {result.step:,} of 100,000 ({result.tokens:,} of 1,000,000,000 tokens)"
    assert line in caplog.messages


def test_resume_with_lstm_dropout_and_decay_matches_an_uninterrupted_run_exactly(corpus_dir, tmp_path):
    # Cut by the time guard at some step, then resumed without it: the schedule depends only on
    # the budget, so the weights and the evaluations must come out bit for bit the same.
    recipe = {
        "training__max_steps": 1000,
        "training__max_tokens": 6000,
        "training__warmup_steps": 3,
        "training__lr_decay": "cosine",
        "training__min_learning_rate": 0.001,
        "training__dropout": 0.2,
        "training__lstm_dropout": 0.3,
        "training__eval_every": 4,
        "training__checkpoint_every": 1000,
        "softmax__n_negatives": 16,
    }
    settings, _ = tiny_settings(corpus_dir, **recipe)
    straight = pretrain(settings, tmp_path / "straight", progress=False)
    assert straight.stopped_by == "max_tokens"
    cut_settings, _ = tiny_settings(corpus_dir, **recipe, training__max_minutes=0.0002)
    cut = pretrain(cut_settings, tmp_path / "cut", progress=False)
    assert cut.stopped_by == "max_minutes" and cut.step < straight.step
    resumed = pretrain(settings, tmp_path / "cut", resume=True, progress=False)
    assert (resumed.step, resumed.tokens, resumed.stopped_by) == (straight.step, straight.tokens, "max_tokens")
    expected = BiLM.from_disk(tmp_path / "straight" / "model-last").state_dict()
    got = BiLM.from_disk(tmp_path / "cut" / "model-last").state_dict()
    for name, tensor in expected.items():
        assert torch.equal(got[name], tensor), name
    by_step = {r["step"]: r for r in read_metrics(tmp_path / "cut" / "metrics.jsonl")}
    for record in read_metrics(tmp_path / "straight" / "metrics.jsonl"):
        other = by_step[record["step"]]
        for key in ("tokens", "dev_perplexity_forward", "dev_perplexity_backward", "learning_rate"):
            assert other[key] == record[key], (record["step"], key)
    rates = [r["learning_rate"] for r in read_metrics(tmp_path / "straight" / "metrics.jsonl")]
    assert rates == sorted(rates, reverse=True) and rates[-1] < 0.01
    assert run_json(tmp_path / "cut")["stopped_by"] == "max_tokens"


class _RecordingBar:
    """Stands in for the progress bar: keeps what the bar was told."""

    made: list = []

    def __init__(self, **kwargs):
        self.kwargs, self.position = kwargs, kwargs.get("initial", 0)
        _RecordingBar.made.append(self)

    def update(self, n):
        self.position += n

    def set_postfix(self, *args, **kwargs):
        pass

    def write(self, text):
        pass

    def close(self):
        pass


def test_the_progress_bar_counts_what_the_budget_counts(corpus_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("spacy_elmo.pretrain.train.progress_bar", _RecordingBar)
    _RecordingBar.made = []
    settings, _ = tiny_settings(corpus_dir, training__max_steps=1000, training__max_tokens=2000, **FAST)
    by_tokens = pretrain(settings, tmp_path / "tokens", progress=True)
    settings, _ = tiny_settings(corpus_dir, training__max_steps=3, training__max_tokens=0, **FAST)
    by_steps = pretrain(settings, tmp_path / "steps", progress=True)
    tokens_bar, steps_bar = _RecordingBar.made
    assert (tokens_bar.kwargs["total"], tokens_bar.kwargs["unit"]) == (2000, "tok")
    assert tokens_bar.position == by_tokens.tokens >= 2000
    assert (steps_bar.kwargs["total"], steps_bar.kwargs["unit"], steps_bar.position) == (3, "step", by_steps.step)
