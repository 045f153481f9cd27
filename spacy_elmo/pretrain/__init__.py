"""Pretraining a biLM on raw text: corpus streaming, vocabulary, objective, training loop.

The entry point is :func:`pretrain` (what ``spacy-elmo pretrain`` runs); configs are read with
:func:`load_config` and checked by :func:`settings_from_config`.
"""
from .settings import PretrainSettings, load_config, settings_from_config
from .errors import PretrainError
from .train import RunResult, pretrain

__all__ = ["PretrainError", "PretrainSettings", "RunResult", "load_config", "pretrain", "settings_from_config"]
