"""The pipeline's config describes the biLM actually inside it.

A config's ``spacy_elmo.BiLM.v1`` sizes only build a random biLM; loaded weights bring their
own. Left alone, ``nlp.config`` (and so ``config.cfg`` and ``spacy package``'s metadata) would
keep describing the random-init sizes (4096/512, 7 filters) while the biLM is, say, 64/16 with
5 filters. After weights are loaded the component writes their sizes into its config block, as
spacy-curated-transformers does for the transformer it loads.
"""
from __future__ import annotations

from typing import Any, MutableMapping, Optional

from spacy.language import Language

from ..config import BiLMConfig

#: The ``spacy_elmo.BiLM.v1`` arguments that describe the weights (the rest are run settings).
SIZE_KEYS = (
    "char_embed_dim",
    "filters",
    "n_highway",
    "activation",
    "lstm_dim",
    "projection_dim",
    "n_layers",
    "cell_clip",
    "proj_clip",
    "use_skip_connections",
)


def write_bilm_sizes(model_cfg: MutableMapping[str, Any], config: BiLMConfig) -> None:
    """Set the sizes in a ``spacy_elmo.BiLM.v1`` config block to ``config``'s, in place."""
    sizes = config.to_dict()
    for key in SIZE_KEYS:
        model_cfg[key] = sizes[key]


def component_model_config(nlp: Optional[Language], component: object) -> Optional[MutableMapping[str, Any]]:
    """The live ``[components.NAME.model]`` block of ``component`` in ``nlp``'s config, or
    ``None`` when ``component`` is not (or not yet) one of ``nlp``'s components."""
    if nlp is None:
        return None
    for name, pipe in nlp.components:
        if pipe is component:
            model_cfg = nlp.get_pipe_config(name).get("model")
            return model_cfg if isinstance(model_cfg, MutableMapping) else None
    return None
