"""``spacy_elmo.ElmoStandalone.v1``: a component's own biLM copy, in place of an ELMo listener.

``nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])`` gives ``ner`` its own copy of
the upstream biLM, so it keeps working once sourced elsewhere or once ``elmo`` is removed. The
layer mix that follows the listener stays, with its weights. The ``elmo`` component's hooks
(:mod:`spacy_elmo.pipeline.listener_copies`) build the copy and its config block from here.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.shims.shim import Shim
from thinc.types import Floats2d, Floats3d

from .doc_layers import get_bilm
from .listener import no_backprop
from .scalar_mix import scalar_mix

LISTENER_ARCHITECTURE = "spacy_elmo.ElmoListener.v1"
STANDALONE_ARCHITECTURE = "spacy_elmo.ElmoStandalone.v1"
# The listener arguments that ElmoStandalone.v1 shares; ``upstream`` has no meaning there.
SHARED_SETTINGS = ("layer_norm", "layer_dropout", "grad_factor", "fixed_layer_weights", "mix_dropout", "weights_l2")
HOOK_ATTRS = ("replace_listener", "replace_listener_cfg")

Location = Tuple[Any, ...]  # keys and list indices from a config section down to a block


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
    """ELMo features from the component's own ``bilm`` (``spacy_elmo.BiLM.v1``), mixed; the other
    arguments are ``spacy_elmo.ElmoListener.v1``'s."""
    return chain(
        elmo_layers_node(bilm, grad_factor),
        scalar_mix(layer_norm, layer_dropout, fixed_layer_weights, mix_dropout, weights_l2),
    )


def elmo_layers_node(
    bilm: Model[List[Doc], List[Floats3d]], grad_factor: float = 0.0
) -> Model[List[Doc], List[Floats3d]]:
    """Every biLM layer of every token, from the ``bilm`` child; the gradient scaled by ``grad_factor``."""
    if grad_factor < 0:
        raise ValueError(f"grad_factor must not be negative, not {grad_factor}")
    return Model("elmo_layers", _forward, init=_init, layers=[bilm], attrs={"grad_factor": float(grad_factor)})


def _init(model: Model, X: Optional[List[Doc]] = None, Y: Optional[object] = None) -> None:
    if get_bilm(model.layers[0]) is None:  # never a random biLM in place of the copied one
        raise ValueError(
            f"This component's biLM copy ({STANDALONE_ARCHITECTURE}) has no weights: it gets them from "
            "nlp.replace_listeners or with its saved pipeline. To train it again, source the component "
            "([components.NAME] source = PIPELINE), or give it a spacy_elmo.ElmoListener.v1 and an elmo "
            "component"
        )
    model.layers[0].initialize()


def _forward(model: Model, docs: List[Doc], is_train: bool) -> tuple[List[Floats3d], Callable]:
    bilm = model.layers[0]
    factor = float(model.attrs["grad_factor"])
    if not is_train or factor == 0.0:
        return bilm.predict(docs), no_backprop
    layers, backprop_bilm = bilm.begin_update(docs)

    def backprop(d_layers: List[Floats3d]) -> List[Doc]:
        backprop_bilm([d * factor for d in d_layers] if factor != 1.0 else d_layers)
        return []

    return layers, backprop


def standalone_copy(bilm_copy: Model, grad_factor: float) -> Model:
    """The node that takes a listener's place around ``bilm_copy`` (from ``Model.copy``): it
    gets no hooks (it is no upstream) and shim ids of its own, since optimizers key torch
    parameters by shim id and a copy trained beside its original must not share their state."""
    for name in HOOK_ATTRS:
        bilm_copy.attrs.pop(name, None)
    for node in bilm_copy.walk():
        for shim in node.shims:
            with Shim.global_id_lock:
                Shim.global_id += 1
                shim.id = Shim.global_id
    return elmo_layers_node(bilm_copy, grad_factor)


def replace_listener_cfg(elmo_model_cfg: Dict[str, Any], tok2vec_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The block that takes the place of the one listener block in ``tok2vec_cfg``: the elmo
    model's block as ``bilm`` and the listener's own mix settings."""
    _, listener_cfg = listener_block(tok2vec_cfg)
    block = {"@architectures": STANDALONE_ARCHITECTURE, "bilm": elmo_model_cfg}
    block.update({key: listener_cfg[key] for key in SHARED_SETTINGS if key in listener_cfg})
    return copy.deepcopy(block)  # shares nothing with the configs it came from


def listener_block(tok2vec_cfg: Dict[str, Any]) -> Tuple[Location, Dict[str, Any]]:
    """Where the one ``spacy_elmo.ElmoListener.v1`` block of ``tok2vec_cfg`` sits, and the block."""
    found = list(_listener_blocks(tok2vec_cfg))
    if len(found) != 1:
        raise ValueError(
            f"replace_listeners for an elmo component needs exactly one {LISTENER_ARCHITECTURE} "
            f"block in the component's [model.tok2vec] config, found {len(found)}"
        )
    return found[0]


def _listener_blocks(cfg: Any, location: Location = ()) -> Iterator[Tuple[Location, Dict[str, Any]]]:
    if isinstance(cfg, dict):
        if cfg.get("@architectures") == LISTENER_ARCHITECTURE:
            yield location, cfg
        for key, value in cfg.items():
            yield from _listener_blocks(value, location + (key,))
    elif isinstance(cfg, (list, tuple)):
        for index, value in enumerate(cfg):
            yield from _listener_blocks(value, location + (index,))


def with_block(cfg: Dict[str, Any], location: Location, block: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of ``cfg`` with the block at ``location`` replaced."""
    if not location:
        return block
    copied = copy.deepcopy(cfg)
    parent = copied
    for key in location[:-1]:
        parent = parent[key]
    parent[location[-1]] = block
    return copied
