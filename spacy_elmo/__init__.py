"""spacy-elmo: ELMo contextual word representations for spaCy pipelines."""

from .embedding import Embedder, embed, embed_layers, mix_layers
from .nn import BiLM, BiLMConfig

__version__ = "0.1.0"
__all__ = ["BiLM", "BiLMConfig", "Embedder", "embed", "embed_layers", "mix_layers", "__version__"]
