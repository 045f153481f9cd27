"""Plain PyTorch modules of the biLM: no spaCy or Thinc imports here."""
from .bilm import BiLM, BiLMStates
from .config import TINY_CONFIG, BiLMConfig

__all__ = ["BiLM", "BiLMStates", "BiLMConfig", "TINY_CONFIG"]
