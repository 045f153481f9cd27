"""``spacy_elmo.ElmoStandalone.v1``: a component's own biLM copy, in place of an ELMo listener.

``nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])`` gives ``ner`` its own copy of
the upstream biLM, so the component keeps working after being sourced into another pipeline or
after the ``elmo`` component is removed or retrained. spaCy asks the upstream model for two
hooks, both defined here: :func:`replace_listener_cfg` rewrites the listener's config block and
:func:`replace_listener` builds the node that replaces the listener. The learned layer mix that
follows the listener stays where it is, with its weights. The path ``model.tok2vec`` (the
spacy-transformers habit) also works; other paths are refused with the listener's path.
"""

from __future__ import annotations

import copy
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.shims.shim import Shim
from thinc.types import Floats2d, Floats3d

from .doc_layers import get_bilm
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
    # A copy gets its weights from replace_listeners or a saved pipeline, never at random.
    if get_bilm(model.layers[0]) is None:
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

    spaCy writes the block at the path the caller named. The listener sits inside the
    component's ``ElmoTok2Vec`` (``model.tok2vec.elmo`` in the shipped configs); given the
    spacy-transformers habit ``model.tok2vec`` instead, the whole tok2vec block is returned with
    only the listener's block replaced, so the saved config still matches the model. Any other
    path is refused before anything changes, naming the listener's path.
    """
    found = list(_listener_blocks(tok2vec_cfg))
    if len(found) != 1:
        raise ValueError(
            f"replace_listeners for an elmo component needs exactly one {LISTENER_ARCHITECTURE} "
            f"block in the component's [model.tok2vec] config, found {len(found)}"
        )
    location, listener_cfg = found[0]
    new_cfg: Dict[str, Any] = {"@architectures": STANDALONE_ARCHITECTURE, "bilm": _plain(elmo_model_cfg)}
    for key in SHARED_SETTINGS:
        if key in listener_cfg:
            new_cfg[key] = _plain(listener_cfg[key])
    request = _replace_listeners_request()
    if request is None:  # not called by spaCy's replace_listeners: the block alone
        return new_cfg
    path, tok2vec_name, pipe_name = request
    listener_path = ".".join([TOK2VEC_PATH, *map(str, location)])
    if path == listener_path:
        return new_cfg
    if path == TOK2VEC_PATH:
        return _with_block(tok2vec_cfg, location, new_cfg)
    raise ValueError(
        f"replace_listeners: the ELMo listener of '{pipe_name}' is at '{listener_path}', not "
        f"'{path}': call nlp.replace_listeners('{tok2vec_name}', '{pipe_name}', ['{listener_path}'])"
    )


TOK2VEC_PATH = "model.tok2vec"  # where spaCy takes the tok2vec_cfg it passes to the hook from


def _replace_listeners_request() -> Optional[Tuple[str, str, str]]:
    """(listener path, tok2vec name, component name) of the ``Language.replace_listeners`` call
    that asked for this block, or ``None`` when there is none.

    spaCy passes the hook no path, but the right block depends on it, and a block written at
    the wrong path gives a pipeline that saves and then fails to load; the caller's frame holds
    the path. Without it (another caller, another spaCy) the block alone is returned, as before.
    """
    frame = sys._getframe(1)
    for _ in range(4):
        frame = frame.f_back
        if frame is None:
            return None
        names = frame.f_locals
        if frame.f_code.co_name == "replace_listeners" and isinstance(names.get("listener_path"), str):
            return names["listener_path"], str(names.get("tok2vec_name")), str(names.get("pipe_name"))
    return None


def _with_block(cfg: Dict[str, Any], location: Tuple[Any, ...], block: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of ``cfg`` with the block at ``location`` (keys and list indices) replaced."""
    if not location:
        return block
    copied = _plain(cfg)
    parent = copied
    for key in location[:-1]:
        parent = parent[key]
    parent[location[-1]] = block
    return copied


def _listener_blocks(cfg: Any, location: Tuple[Any, ...] = ()) -> Iterator[Tuple[Tuple[Any, ...], Dict[str, Any]]]:
    """(location, block) of every ElmoListener.v1 block in a (nested) config section."""
    if isinstance(cfg, dict):
        if cfg.get("@architectures") == LISTENER_ARCHITECTURE:
            yield location, cfg
        for key, value in cfg.items():
            yield from _listener_blocks(value, location + (key,))
    elif isinstance(cfg, (list, tuple)):
        for index, value in enumerate(cfg):
            yield from _listener_blocks(value, location + (index,))


def _plain(value: Any) -> Any:
    """A deep copy with plain dicts, so the new block shares nothing with the upstream config."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return copy.deepcopy(value)


def replace_listener(bilm_copy: Model, listener: ElmoLayersListener, elmo_component: Any) -> Model:
    """The node that replaces ``listener``: :func:`elmo_layers_node` around ``bilm_copy``.

    spaCy passes ``elmo_component.model.copy()``, which deep-copies the torch module. Weights
    the component has not read yet are loaded first, so the copy is never an empty biLM.
    """
    if get_bilm(bilm_copy) is None:
        elmo_component._ensure_weights()  # loads pending weights, or says how to provide them
        bilm_copy = elmo_component.model.copy()
    for name in HOOK_ATTRS:  # the copy is no upstream: the hooks belong to the elmo component
        bilm_copy.attrs.pop(name, None)
    _renew_shim_ids(bilm_copy)
    return elmo_layers_node(bilm_copy, grad_factor=listener.grad_factor)


def _renew_shim_ids(model: Model) -> None:
    """``Model.copy`` deep-copies shims with their ids, and optimizers key torch parameters by
    shim id: a copy trained next to its original would otherwise share their optimizer state.
    """
    for node in model.walk():
        for shim in node.shims:
            with Shim.global_id_lock:
                Shim.global_id += 1
                shim.id = Shim.global_id
