"""The ``elmo`` component's ``nlp.replace_listeners`` hooks: each listener becomes its component's
own biLM copy (:mod:`spacy_elmo.models.standalone`).

spaCy writes the block that ``replace_listener_cfg`` returns at the path its caller named, then
asks ``replace_listener`` for each listener's replacement. The right block depends on that path,
which the first hook is not told: the listener sits inside the component's ``ElmoTok2Vec``
(``model.tok2vec.elmo`` in the shipped configs). So the second hook looks where the block
landed. At the listener's path it stays; at ``model.tok2vec`` (the spacy-transformers habit)
the tok2vec block comes back with only the listener's block replaced, so that the saved config
still builds the model; anywhere else the config is put back and the call refused.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Iterable, Optional, Tuple

from spacy.language import Language
from thinc.api import Model

from ..models.listener import ElmoLayersListener
from ..models.standalone import listener_block, replace_listener_cfg, standalone_copy, with_block
from .weights import write_bilm_sizes

TOK2VEC_PATH = "model.tok2vec"  # where spaCy takes the tok2vec config it gives the first hook from


class ListenerCopies:
    """Both hooks of one ``elmo`` component. One object, not closures: it pickles with the
    pipeline, and it is not copied when Thinc deep-copies the model's attrs."""

    def __init__(self, component: Any) -> None:
        self.component = component
        self._written: Optional[Tuple[str, Dict[str, Any], Dict[str, Any], Dict[str, Any]]] = None

    def __deepcopy__(self, memo: Dict[int, Any]) -> "ListenerCopies":
        return self

    def config(self, elmo_model_cfg: Dict[str, Any], tok2vec_cfg: Dict[str, Any]) -> Dict[str, Any]:
        """``replace_listener_cfg``: the standalone block, with the sizes of the weights it will hold."""
        self.component._ensure_weights()
        write_bilm_sizes(elmo_model_cfg, self.component.bilm.config)
        block = replace_listener_cfg(elmo_model_cfg, tok2vec_cfg)
        self._written = None
        for name, pipe_cfg in _pipe_configs(self.component._nlp):
            model_cfg = pipe_cfg.get("model")
            if isinstance(model_cfg, dict) and model_cfg.get("tok2vec") is tok2vec_cfg:
                self._written = (name, pipe_cfg, copy.deepcopy(pipe_cfg), block)
        return block

    def node(self, bilm_copy: Model, listener: ElmoLayersListener, elmo_component: Any) -> Model:
        """``replace_listener``: the listener's replacement around ``bilm_copy``."""
        self._settle_config()
        return standalone_copy(bilm_copy, listener.grad_factor)

    def _settle_config(self) -> None:
        if self._written is None:  # another pipeline's config, or none: the block stays as written
            return
        name, live, before, block = self._written
        self._written = None
        location, _ = listener_block(before["model"]["tok2vec"])
        listener_path = ".".join([TOK2VEC_PATH, *map(str, location)])
        path = _path_to(live, block)
        if path == TOK2VEC_PATH:
            live["model"]["tok2vec"] = with_block(before["model"]["tok2vec"], location, block)
        elif path is not None and path != listener_path:
            live.clear()
            live.update(before)
            raise ValueError(
                f"replace_listeners: the ELMo listener of '{name}' is at '{listener_path}', not '{path}': "
                f"call nlp.replace_listeners('{self.component.name}', '{name}', ['{listener_path}'])"
            )


def _pipe_configs(nlp: Optional[Language]) -> Iterable[Tuple[str, Dict[str, Any]]]:
    return [] if nlp is None else [(name, nlp.get_pipe_config(name)) for name in nlp.component_names]


def _path_to(cfg: Any, target: object, path: Tuple[Any, ...] = ()) -> Optional[str]:
    """The dotted path of the object ``target`` inside ``cfg``, or ``None``."""
    if cfg is target:
        return ".".join(map(str, path))
    items = cfg.items() if isinstance(cfg, dict) else enumerate(cfg) if isinstance(cfg, (list, tuple)) else ()
    for key, value in items:
        found = _path_to(value, target, path + (key,))
        if found is not None:
            return found
    return None
