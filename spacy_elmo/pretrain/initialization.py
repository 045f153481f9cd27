"""The model pretraining starts from: fresh, or a byte-encoded biLM (``--init-from``) whose output
layer is rebuilt when the vocabulary differs."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Optional, Union

import torch

from ..config import BYTE_ENCODING, BiLMConfig
from ..formats.resolve import messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM
from .errors import InputError, reading
from .vocab import Vocabulary

logger = logging.getLogger("spacy_elmo.pretrain")

INIT_FROM_MESSAGES = messages_for("--init-from")


def load_existing_model(path: Union[str, Path]) -> BiLM:
    try:
        with reading(path):
            model = load_bilm(path, messages=INIT_FROM_MESSAGES)
    except ValueError as err:  # the weight readers' errors name the file
        raise InputError(str(err)) from err
    if model.config.char_encoding != BYTE_ENCODING:
        raise InputError(
            f"--init-from: {path} holds a {model.config.char_encoding} biLM (ELMoForManyLangs'); "
            "pretraining continues byte-encoded biLMs only"
        )
    return model


def fresh_model(config: BiLMConfig, vocab: Vocabulary, seed: int) -> BiLM:
    """The output bias starts at the log unigram distribution (when counts are known), not uniform."""
    torch.manual_seed(seed)
    model = BiLM(config.replace(vocab_size=0), vocab=vocab.words)
    _init_output_layer(model, vocab)
    return model


def with_vocabulary(model: BiLM, vocab: Vocabulary, seed: int) -> BiLM:
    if model.vocab == vocab.words and model.softmax is not None:
        return model
    if model.softmax is not None:
        logger.warning(
            "The initial model's vocabulary differs from the training vocabulary: its output layer is replaced"
        )
    torch.manual_seed(seed)
    rebuilt = BiLM(model.config.replace(vocab_size=0), vocab=vocab.words)
    own = {k: v for k, v in model.state_dict().items() if not k.startswith("softmax.")}
    missing, unexpected = rebuilt.load_state_dict(own, strict=False)
    assert not unexpected and all(k.startswith("softmax.") for k in missing), (missing, unexpected)
    _init_output_layer(rebuilt, vocab)
    return rebuilt


def _init_output_layer(model: BiLM, vocab: Vocabulary) -> None:
    if model.softmax is None or vocab.counts is None:
        return
    log_total = math.log(max(1, sum(vocab.counts)))
    with torch.no_grad():
        bias = torch.tensor([math.log(c) - log_total if c > 0 else -20.0 for c in vocab.counts])
        model.softmax.bias.copy_(bias)


def vocabulary_of(model: BiLM) -> Optional[Vocabulary]:
    if model.vocab is None or model.softmax is None:
        return None
    try:
        return Vocabulary(model.vocab)
    except ValueError:
        return None
