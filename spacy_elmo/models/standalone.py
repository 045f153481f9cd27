"""``spacy_elmo.ElmoStandalone.v1``: a component's own biLM copy, in place of an ELMo listener.

``nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])`` gives ``ner`` its own copy of
the upstream biLM, so the component keeps working after being sourced into another pipeline or
after the ``elmo`` component is removed or retrained. spaCy asks the upstream model for two
hooks, both defined here: :func:`replace_listener_cfg` rewrites the listener's config block and
:func:`replace_listener` builds the node that replaces the listener. The learned layer mix that
follows the listener stays where it is, with its weights.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Iterator, List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.shims.shim import Shim
from thinc.types import Floats2d, Floats3d

from .bilm import get_bilm
from .listener import ElmoLayersListener
from .scalar_mix import scalar_mix

LISTENER_ARCHITECTURE = "spacy_elmo.ElmoListener.v1"
STANDALONE_ARCHITECTURE = "spacy_elmo.ElmoStandalone.v1"
# The listener arguments that ElmoStandalone.v1 shares; ``upstream`` has no meaning there.
SHARED_SETTINGS = ("layer_norm", "layer_dropout", "grad_factor", "fixed_layer_weights", "mix_dropout", "weights_l2")
HOOK_ATTRS = ("replace_listener", "replace_listener_cfg")


@registry.architectures(STANDALONE_ARCHITECTURE)
def build_elmo_standalone(
    bilm: Model[List[Doc], List[Floats3d]],
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    grad_factor: float = 0.0,
    fixed_layer_weights: Optional[List[float]] = None,
    mix_dropout: float = 0.0,
    weights_l2: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """ELMo features computed by the component's own ``bilm`` (``spacy_elmo.BiLM.v1``), mixed.

    The other arguments mean what they mean for ``spacy_elmo.ElmoListener.v1``; with
    ``grad_factor = 0`` the biLM copy is never changed by training.
    """
    return chain(
        ElmoLayers(bilm, grad_factor),
        scalar_mix(layer_norm, layer_dropout, fixed_layer_weights, mix_dropout, weights_l2),
    )


def ElmoLayers(bilm: Model[List[Doc], List[Floats3d]], grad_factor: float = 0.0) -> Model[List[Doc], List[Floats3d]]:
    """Every biLM layer of every token, from the ``bilm`` child; the gradient scaled by ``grad_factor``."""
    if grad_factor < 0:
        raise ValueError(f"grad_factor must not be negative, not {grad_factor}")
    return Model("elmo_layers", _forward, init=_init, layers=[bilm], attrs={"grad_factor": float(grad_factor)})


def _init(model: Model, X: Optional[List[Doc]] = None, Y: Optional[object] = None) -> None:
    # The biLM's own init only builds a random module when it holds none.
    model.layers[0].initialize()


def _forward(model: Model, docs: List[Doc], is_train: bool) -> tuple[List[Floats3d], Callable]:
    bilm = model.layers[0]
    factor = float(model.attrs["grad_factor"])
    if not is_train or factor == 0.0:
        # Frozen: no autograd graph, and no gradient can reach the biLM copy.
        return bilm.predict(docs), _no_backprop
    layers, backprop_bilm = bilm.begin_update(docs)

    def backprop(d_layers: List[Floats3d]) -> List[Doc]:
        backprop_bilm([d * factor for d in d_layers] if factor != 1.0 else d_layers)
        return []

    return layers, backprop


def _no_backprop(d_layers: List[Floats3d]) -> List[Doc]:
    return []


# ---------------------------------------------------------------------- replace_listeners hooks
def replace_listener_cfg(elmo_model_cfg: Dict[str, Any], tok2vec_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The config block that takes the listener's place: the elmo model's block as ``bilm`` and
    the listener's own mix settings, so the saved config rebuilds the replaced model.
    """
    blocks = list(_listener_blocks(tok2vec_cfg))
    if len(blocks) != 1:
        raise ValueError(
            f"replace_listeners for an elmo component needs exactly one {LISTENER_ARCHITECTURE} "
            f"block in the component's [model.tok2vec] config, found {len(blocks)}"
        )
    listener_cfg = blocks[0]
    new_cfg: Dict[str, Any] = {"@architectures": STANDALONE_ARCHITECTURE, "bilm": _plain(elmo_model_cfg)}
    for key in SHARED_SETTINGS:
        if key in listener_cfg:
            new_cfg[key] = _plain(listener_cfg[key])
    return new_cfg


def _listener_blocks(cfg: Any) -> Iterator[Dict[str, Any]]:
    """Every ElmoListener.v1 block in a (nested) config section."""
    if isinstance(cfg, dict):
        if cfg.get("@architectures") == LISTENER_ARCHITECTURE:
            yield cfg
        for value in cfg.values():
            yield from _listener_blocks(value)
    elif isinstance(cfg, (list, tuple)):
        for value in cfg:
            yield from _listener_blocks(value)


def _plain(value: Any) -> Any:
    """A deep copy with plain dicts, so the new block shares nothing with the upstream config."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return copy.deepcopy(value)


def replace_listener(bilm_copy: Model, listener: ElmoLayersListener, elmo_component: Any) -> Model:
    """The node that replaces ``listener``: :func:`ElmoLayers` around ``bilm_copy``.

    spaCy passes ``elmo_component.model.copy()``, which deep-copies the torch module. Weights
    the component has not read yet are loaded first, so the copy is never an empty biLM.
    """
    if get_bilm(bilm_copy) is None:
        elmo_component._ensure_weights()  # loads pending weights, or says how to provide them
        bilm_copy = elmo_component.model.copy()
    for name in HOOK_ATTRS:  # the copy is no upstream: the hooks belong to the elmo component
        bilm_copy.attrs.pop(name, None)
    _renew_shim_ids(bilm_copy)
    return ElmoLayers(bilm_copy, grad_factor=listener.grad_factor)


def _renew_shim_ids(model: Model) -> None:
    """``Model.copy`` deep-copies shims with their ids, and optimizers key torch parameters by
    shim id: a copy trained next to its original would otherwise share their optimizer state.
    """
    for node in model.walk():
        for shim in node.shims:
            with Shim.global_id_lock:
                Shim.global_id += 1
                shim.id = Shim.global_id
