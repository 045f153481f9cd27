"""The pipeline's config describes the biLM actually inside it.

A config's ``spacy_elmo.BiLM.v1`` sizes only build a random biLM; loaded weights bring their
own. So once weights are loaded the component writes their sizes into its config block (as
spacy-curated-transformers does for the transformer it loads), and ``nlp.config``,
``config.cfg`` and ``spacy package``'s metadata describe the biLM that runs.
"""

from __future__ import annotations

from typing import Any, MutableMapping, Optional

from spacy.language import Language

from ..config import ARCHITECTURE_FIELDS, BiLMConfig


def write_bilm_sizes(model_cfg: MutableMapping[str, Any], config: BiLMConfig) -> None:
    """Set the sizes in a ``spacy_elmo.BiLM.v1`` config block to ``config``'s, in place."""
    sizes = config.to_dict()
    for key in ARCHITECTURE_FIELDS:
        model_cfg[key] = sizes[key]


def component_model_config(nlp: Optional[Language], component: object) -> Optional[MutableMapping[str, Any]]:
    """The live ``[components.NAME.model]`` block of ``component`` in ``nlp``'s config, or
    ``None`` when ``component`` is not (yet) one of ``nlp``'s components."""
    model_cfg = _component_config(nlp, component).get("model")
    return model_cfg if isinstance(model_cfg, MutableMapping) else None


def forget_weights_path(nlp: Optional[Language], component: object) -> None:
    """Set ``[components.NAME] weights`` to null once the pipeline carries the weights, so that
    a saved config never names a path that loading would check (and that may be gone)."""
    cfg = _component_config(nlp, component)
    if cfg.get("weights") is not None:
        cfg["weights"] = None


def _component_config(nlp: Optional[Language], component: object) -> MutableMapping[str, Any]:
    if nlp is not None:
        for name, pipe in nlp.components:
            if pipe is component:
                return nlp.get_pipe_config(name)
    return {}
