"""The pipeline's config describes the biLM actually inside it.

A config's ``spacy_elmo.BiLM.v1`` sizes only build a random biLM; loaded weights bring their
own. Left alone, ``nlp.config`` (and so ``config.cfg`` and ``spacy package``'s metadata) would
keep describing the random-init sizes (4096/512, 7 filters) while the biLM is, say, 64/16 with
5 filters. After weights are loaded the component writes their sizes into its config block, as
spacy-curated-transformers does for the transformer it loads; :class:`ReplaceListenerCfg` does
the same for the biLM copies that ``nlp.replace_listeners`` makes.
"""

from __future__ import annotations

from typing import Any, Dict, MutableMapping, Optional

from spacy.language import Language

from ..config import BiLMConfig
from ..models.standalone import replace_listener_cfg

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
    model_cfg = _component_config(nlp, component).get("model")
    return model_cfg if isinstance(model_cfg, MutableMapping) else None


def forget_weights_path(nlp: Optional[Language], component: object) -> None:
    """Set ``[components.NAME] weights`` to null: the component has taken the path and the
    pipeline carries the weights from now on, so a saved config never names a path that
    loading would check (and that may be gone by then)."""
    cfg = _component_config(nlp, component)
    if cfg.get("weights") is not None:
        cfg["weights"] = None


def _component_config(nlp: Optional[Language], component: object) -> MutableMapping[str, Any]:
    if nlp is not None:
        for name, pipe in nlp.components:
            if pipe is component:
                return nlp.get_pipe_config(name)
    return {}


class ReplaceListenerCfg:
    """The ``elmo`` model's ``replace_listener_cfg``: first reads the component's pending
    weights, so the ``bilm`` block of the standalone copy has the sizes of the weights it
    will hold.

    An object rather than a closure or bound method: it must pickle (with the pipeline), and
    Thinc deep-copies model attrs on ``Model.copy``, which must not copy the whole component.
    """

    def __init__(self, component: Any) -> None:
        self.component = component

    def __call__(self, elmo_model_cfg: Dict[str, Any], tok2vec_cfg: Dict[str, Any]) -> Dict[str, Any]:
        self.component._load_pending_weights()
        bilm = self.component.bilm
        if bilm is not None:
            write_bilm_sizes(elmo_model_cfg, bilm.config)
        return replace_listener_cfg(elmo_model_cfg, tok2vec_cfg)

    def __deepcopy__(self, memo: Dict[int, Any]) -> "ReplaceListenerCfg":
        return self
