"""Pretraining a biLM on raw text: what ``spacy-elmo pretrain`` runs (:func:`pretrain`)."""

from .errors import PretrainError
from .settings import PretrainSettings, load_config, settings_from_config
from .train import RunResult, pretrain

__all__ = ["PretrainError", "PretrainSettings", "RunResult", "load_config", "pretrain", "settings_from_config"]
