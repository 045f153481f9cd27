"""spacy-elmo: ELMo contextual word representations for spaCy pipelines."""
from .embed import embed, mix_layers
from .nn import BiLM, BiLMConfig

__version__ = "0.1.0"
__all__ = ["BiLM", "BiLMConfig", "embed", "mix_layers", "__version__"]
