"""The objective cannot peek: forward predictions ignore later tokens, backward ones earlier."""

from __future__ import annotations

import pytest
import torch

from spacy_elmo.nn import TINY_CONFIG, BiLM
from spacy_elmo.pretrain.data.step_inputs import PAD_TARGET, StepInputBuilder
from spacy_elmo.pretrain.language_model_objective import (
    LanguageModelObjective,
    directional_predictions,
    exact_direction_nll,
)
from spacy_elmo.pretrain.softmax import SoftmaxLoss, full_softmax_nll
from spacy_elmo.pretrain.vocab import SPECIALS, Vocabulary

WORDS = "the cat sat on a mat and dog ran".split()
# Longest first, so the model's internal length sort keeps the rows where they are.
SENTENCES = [["the", "cat", "sat", "on", "a", "mat"], ["a", "dog", "ran", "zebra"], ["cat"]]


@pytest.fixture
def model_and_batch():
    torch.manual_seed(0)
    vocab = Vocabulary(list(SPECIALS) + WORDS)
    model = BiLM(TINY_CONFIG, vocab=vocab.words).eval()
    return model, StepInputBuilder(vocab).encode(SENTENCES)


def per_position_nll(bilm, char_ids, lengths, targets):
    """Exact NLL at every predicting position, ``(batch, time - 1)`` per direction, 0 at padding.

    Column k of the forward result is the prediction made at position k (of token k+1);
    column k of the backward result is the one made at position k+1 (of token k).
    """
    states = bilm.contextualize(char_ids, lengths)
    valid = targets[:, 1:] != PAD_TARGET
    safe_next = targets[:, 1:].clamp(min=0)
    safe_prev = targets[:, :-1].clamp(min=0)
    batch, steps = safe_next.shape
    forward = full_softmax_nll(
        states.forward[-1][:, :-1].reshape(batch * steps, -1), bilm.softmax, safe_next.reshape(-1)
    )
    backward = full_softmax_nll(
        states.backward[-1][:, 1:].reshape(batch * steps, -1), bilm.softmax, safe_prev.reshape(-1)
    )
    zero = torch.zeros((), dtype=forward.dtype, device=forward.device)
    return (
        torch.where(valid, forward.reshape(batch, steps), zero),
        torch.where(valid, backward.reshape(batch, steps), zero),
    )


def token_vector_gradients(model, batch, pick, monkeypatch):
    """Gradient of ``pick(forward_nll, backward_nll)`` with respect to every token vector."""
    captured = []
    contextualize = model.contextualize

    def keeping(*args, **kwargs):
        states = contextualize(*args, **kwargs)
        states.token_vectors.retain_grad()
        captured.append(states.token_vectors)
        return states

    with monkeypatch.context() as patch:
        patch.setattr(model, "contextualize", keeping)
        forward, backward = per_position_nll(model, batch.char_ids, batch.lengths, batch.targets)
        pick(forward, backward).backward()
    return captured[0].grad  # (batch, time, P): rows in input order


@pytest.mark.parametrize("row", [0, 1])
def test_forward_loss_at_k_has_zero_gradient_from_tokens_after_k(model_and_batch, row, monkeypatch):
    model, batch = model_and_batch
    length = int(batch.lengths[row])
    for k in range(length - 1):  # forward position k predicts token k+1
        grad = token_vector_gradients(model, batch, lambda f, b, k=k: f[row, k], monkeypatch)
        assert torch.count_nonzero(grad[row, k + 1 :]) == 0, f"forward loss at {k} sees later tokens"
        assert torch.count_nonzero(grad[row, : k + 1]) > 0
        assert torch.count_nonzero(grad[torch.arange(len(SENTENCES)) != row]) == 0


@pytest.mark.parametrize("row", [0, 1])
def test_backward_loss_at_k_has_zero_gradient_from_tokens_before_k(model_and_batch, row, monkeypatch):
    model, batch = model_and_batch
    length = int(batch.lengths[row])
    for k in range(1, length):  # backward position k predicts token k-1 (column k-1)
        grad = token_vector_gradients(model, batch, lambda f, b, k=k: b[row, k - 1], monkeypatch)
        assert torch.count_nonzero(grad[row, :k]) == 0, f"backward loss at {k} sees earlier tokens"
        assert torch.count_nonzero(grad[row, k:length]) > 0


def test_each_direction_predicts_every_word_and_one_boundary(model_and_batch):
    model, batch = model_and_batch
    states = model.contextualize(batch.char_ids, batch.lengths)
    forward_hidden, forward_targets, backward_hidden, backward_targets = directional_predictions(states, batch.targets)
    n_predictions = sum(len(s) + 1 for s in SENTENCES)
    assert batch.n_tokens == n_predictions
    assert forward_hidden.shape[0] == backward_hidden.shape[0] == n_predictions
    vocab = Vocabulary(list(SPECIALS) + WORDS)
    assert forward_targets[: len(SENTENCES[0]) + 1].tolist() == vocab.framed_ids(SENTENCES[0])[1:]
    assert backward_targets[: len(SENTENCES[0]) + 1].tolist() == vocab.framed_ids(SENTENCES[0])[:-1]
    assert vocab.unk_id in forward_targets.tolist()  # "zebra" is not in the vocabulary


def test_training_objective_equals_exact_nll_without_dropout_or_sampling(model_and_batch):
    model, batch = model_and_batch
    objective = LanguageModelObjective(model, SoftmaxLoss(len(model.vocab)), dropout=0.5).eval()
    sums = objective(batch.char_ids, batch.lengths, batch.targets)
    exact = exact_direction_nll(model, batch.char_ids, batch.lengths, batch.targets)
    forward, backward = per_position_nll(model, batch.char_ids, batch.lengths, batch.targets)
    torch.testing.assert_close(sums, exact)
    torch.testing.assert_close(exact, torch.stack([forward.sum(), backward.sum()]))
    objective.train()
    assert not torch.equal(objective(batch.char_ids, batch.lengths, batch.targets), sums)  # dropout is on


def test_lstm_dropout_acts_in_training_only_and_between_layers(model_and_batch):
    model, batch = model_and_batch
    objective = LanguageModelObjective(model, SoftmaxLoss(len(model.vocab)), lstm_dropout=0.5).eval()
    without = LanguageModelObjective(model, SoftmaxLoss(len(model.vocab))).eval()
    exact = without(batch.char_ids, batch.lengths, batch.targets)
    assert torch.equal(objective(batch.char_ids, batch.lengths, batch.targets), exact)  # bit-identical in eval mode
    objective.train()
    torch.manual_seed(0)
    dropped = objective(batch.char_ids, batch.lengths, batch.targets)
    assert not torch.equal(dropped, exact)
    torch.manual_seed(0)
    assert torch.equal(objective(batch.char_ids, batch.lengths, batch.targets), dropped)  # masks from torch's generator
    # The first layer's outputs do not see it: only the inputs of the layers above.
    torch.manual_seed(0)
    states = model.contextualize(batch.char_ids, batch.lengths, layer_dropout=0.5)
    plain = model.contextualize(batch.char_ids, batch.lengths)
    assert torch.equal(states.forward[0], plain.forward[0]) and torch.equal(states.backward[0], plain.backward[0])
    assert not torch.equal(states.forward[1], plain.forward[1])


def test_the_char_encoder_runs_once_per_distinct_word(monkeypatch):
    torch.manual_seed(0)
    vocab = Vocabulary(list(SPECIALS) + WORDS)
    model = BiLM(TINY_CONFIG, vocab=vocab.words)
    batch = StepInputBuilder(vocab).encode(SENTENCES + [["the", "the", "cat", "the"]])
    seen = []
    model.char_encoder.register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[0]))
    forward, backward = per_position_nll(model, batch.char_ids, batch.lengths, batch.targets)
    (forward.sum() + backward.sum()).backward()
    distinct = {
        tuple(row) for row, length in zip(batch.char_ids.tolist(), batch.lengths.tolist()) for row in row[:length]
    }
    assert seen == [len(distinct)] and len(distinct) < int(batch.lengths.sum())
    assert all(p.grad is not None for p in model.char_encoder.parameters())


def test_bfloat16_training_path_runs_and_stays_close_to_float32(model_and_batch, monkeypatch):
    """What ``system.precision = "bfloat16"`` runs on a GPU, exercised on the CPU."""
    from spacy_elmo.nn import bilm as bilm_module

    model, batch = model_and_batch
    objective = LanguageModelObjective(model, SoftmaxLoss(len(model.vocab)), dropout=0.0).eval()
    reference = objective(batch.char_ids, batch.lengths, batch.targets).detach()
    monkeypatch.setattr(bilm_module, "running_precision", lambda precision, device, training=False: precision)
    objective.precision = "bfloat16"
    low = objective(batch.char_ids, batch.lengths, batch.targets)
    low.sum().backward()
    assert low.dtype == torch.float32
    torch.testing.assert_close(low.detach(), reference, rtol=0.05, atol=0.0)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
