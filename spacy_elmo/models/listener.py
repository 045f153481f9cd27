"""A component's ELMo features: ``spacy_elmo.ElmoListener.v1`` reads the upstream ``elmo`` component's
layers (in ``nlp.update`` it hands over the batch's layers and a backprop callback, at prediction
the listener reads ``doc._.elmo_layers``), and ``spacy_elmo.ElmoStandalone.v1`` runs the component's
own biLM copy, which ``nlp.replace_listeners`` puts in the listener's place; each mixes the layers
its own way (docs/training.md). ``spacy_elmo.ElmoTok2Vec.v1`` joins these features to a task's own."""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, with_array
from thinc.shims.shim import Shim
from thinc.types import Floats2d, Floats3d

from .doc_layers import get_bilm
from .scalar_mix import scalar_mix

LAYERS_ATTR = "elmo_layers"
LISTENER_ARCHITECTURE = "spacy_elmo.ElmoListener.v1"
STANDALONE_ARCHITECTURE = "spacy_elmo.ElmoStandalone.v1"
# The listener arguments that ElmoStandalone.v1 shares; ``upstream`` has no meaning there.
SHARED_SETTINGS = ("layer_norm", "layer_dropout", "grad_factor", "fixed_layer_weights", "mix_dropout", "weights_l2")
HOOK_ATTRS = ("replace_listener", "replace_listener_cfg")

Location = Tuple[Any, ...]  # keys and list indices from a config section down to a block


@registry.architectures(LISTENER_ARCHITECTURE)
def build_elmo_listener(
    upstream: str = "*",
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    grad_factor: float = 0.0,
    fixed_layer_weights: Optional[List[float]] = None,
    mix_dropout: float = 0.0,
    weights_l2: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """``upstream``: the elmo component (``"*"``: any); ``grad_factor`` scales the biLM's gradient (0: frozen)."""
    return chain(
        ElmoLayersListener(upstream, grad_factor),
        scalar_mix(layer_norm, layer_dropout, fixed_layer_weights, mix_dropout, weights_l2),
    )


class ElmoLayersListener(Model):
    """Receives ``(L+1, n, D)`` layers per Doc from the upstream ``elmo`` component."""

    name = "elmo-listener"

    def __init__(self, upstream_name: str, grad_factor: float = 0.0) -> None:
        if grad_factor < 0:
            raise ValueError(f"grad_factor must not be negative, not {grad_factor}")
        dims: dict[str, Optional[int]] = {"nL": None, "nO": None}
        Model.__init__(self, name=self.name, forward=forward, init=_init, dims=dims, attrs={"grad_factor": grad_factor})
        self.upstream_name = upstream_name
        self._batch_id: Optional[int] = None
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[Callable] = None
        self._upstream_dims: Optional[Callable[[], Tuple[int, int]]] = None
        self._component: Optional[str] = None  # the listening component, once attached
        self._init_batch_id: Optional[int] = None  # the sample Docs of initialize: no warning
        self._warned = False
        self.wiring_error: Optional[str] = None  # why no elmo component feeds it, as the pipeline showed

    def __deepcopy__(self, memo: dict) -> "ElmoLayersListener":
        """A copy without the upstream link (its locks cannot be copied) or a batch in flight:
        ``nlp.resume_training`` copies models for rehearsal."""
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        for name in [name for cls in type(self).__mro__ for name in getattr(cls, "__slots__", ())]:
            if hasattr(self, name):  # Thinc's Model keeps its own state in slots
                object.__setattr__(copied, name, copy.deepcopy(getattr(self, name), memo))
        detached = {"_batch_id": None, "_outputs": None, "_backprop": None, "_upstream_dims": None}
        for key, value in self.__dict__.items():
            copied.__dict__[key] = detached[key] if key in detached else copy.deepcopy(value, memo)
        return copied

    @property
    def grad_factor(self) -> float:
        return float(self.attrs["grad_factor"])

    @classmethod
    def get_batch_id(cls, docs: Iterable[Doc]) -> int:
        """A content hash of a batch, to catch a listener fed another batch than its upstream's."""
        return sum(int(doc.to_array("ORTH").sum()) for doc in docs)  # uint64: wraps, never fails

    def receive(self, batch_id: int, outputs: List[Floats3d], backprop: Optional[Callable]) -> None:
        """The upstream's layers for this batch; ``backprop`` is None when it is frozen."""
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop

    def set_upstream_dims(self, n_layers: int, width: int) -> None:
        self.set_dim("nL", n_layers, force=True)
        self.set_dim("nO", width, force=True)

    def attach(self, upstream_dims: Callable[[], Tuple[int, int]], component: Optional[str] = None) -> None:
        """Ask the upstream for its dims on demand: it may load weights lazily."""
        self._upstream_dims = upstream_dims
        self._component = component

    def layer_dims(self) -> Tuple[int, int]:
        if self.maybe_get_dim("nO") is None and self._upstream_dims is not None:
            self.set_upstream_dims(*self._upstream_dims())
        if self.maybe_get_dim("nO") is None:
            upstream = "elmo" if self.upstream_name == "*" else self.upstream_name
            raise ValueError(
                self.wiring_error
                or f"The ELMo listener (upstream = '{self.upstream_name}') is linked to no elmo component: "
                f"the pipeline has none before the listening component. Add one first, e.g. "
                f"nlp.add_pipe('elmo', name='{upstream}', first=True, config={{'weights': PATH}})"
            )
        return self.get_dim("nL"), self.get_dim("nO")


def forward(model: ElmoLayersListener, docs: List[Doc], is_train: bool):
    if is_train and model._batch_id is not None:
        batch_id = model.get_batch_id(docs)
        if batch_id != model._batch_id:
            raise ValueError(
                f"The ELMo listener got a batch ({batch_id}) other than the one the upstream "
                f"elmo component processed ({model._batch_id}): run both in the same nlp.update"
            )
        return model._outputs, scaled_backprop(model.grad_factor, model._backprop)
    if is_train:  # a frozen elmo component in the training config must annotate the Docs
        if any(getattr(doc._, LAYERS_ATTR, None) is None and len(doc) for doc in docs):
            raise ValueError(
                model.wiring_error
                or "The ELMo listener found no elmo layers on the training Docs: a frozen elmo "
                "component must also be listed in [training] annotating_components"
            )
    else:
        _warn_if_unannotated(model, docs)
    return [_doc_layers(model, doc) for doc in docs], no_backprop


def _init(model: ElmoLayersListener, X: Optional[List[Doc]] = None, Y: Optional[object] = None) -> None:
    model._init_batch_id = model.get_batch_id(X) if X else None


def _warn_if_unannotated(model: ElmoLayersListener, docs: List[Doc]) -> None:
    """Warn once when prediction Docs carry no elmo layers: their features would be all zeros."""
    if model._warned or (model._init_batch_id is not None and model.get_batch_id(docs) == model._init_batch_id):
        return
    has_layers = Doc.has_extension(LAYERS_ATTR)
    missing = sum(1 for doc in docs if len(doc) and (not has_layers or getattr(doc._, LAYERS_ATTR) is None))
    if not missing:
        return
    model._warned = True
    who = f"of '{model._component}'" if model._component else f"(upstream '{model.upstream_name}')"
    upstream = "elmo" if model.upstream_name == "*" else model.upstream_name
    warnings.warn(
        f"The ELMo listener {who} found no elmo layers on {missing} of {len(docs)} Docs and uses "
        "all-zero ELMo features for them: the elmo component did not run before it (disabled, "
        "excluded or removed?). Keep it enabled, or give this component its own biLM copy with "
        f'nlp.replace_listeners("{upstream}", "{model._component or "COMPONENT"}", '
        '["model.tok2vec.elmo"]). Warned once.',
        UserWarning,
        stacklevel=3,
    )


def _doc_layers(model: ElmoLayersListener, doc: Doc) -> Floats3d:
    layers = getattr(doc._, LAYERS_ATTR, None) if Doc.has_extension(LAYERS_ATTR) else None
    if layers is not None:
        return layers
    n_layers, width = model.layer_dims()  # a Doc the elmo component has not seen: zeros
    return model.ops.alloc3f(n_layers, len(doc), width)


def scaled_backprop(factor: float, upstream: Optional[Callable]) -> Callable:
    def backprop(d_layers: List[Floats3d]) -> List[Doc]:
        if upstream is not None and factor > 0:
            upstream([d * factor for d in d_layers] if factor != 1.0 else d_layers)
        return []

    return backprop


def no_backprop(d_layers: List[Floats3d]) -> List[Doc]:
    return []


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
    """The listener's features from the component's own ``bilm`` (a ``spacy_elmo.BiLM.v1``)."""
    return chain(
        elmo_layers_node(bilm, grad_factor),
        scalar_mix(layer_norm, layer_dropout, fixed_layer_weights, mix_dropout, weights_l2),
    )


def elmo_layers_node(
    bilm: Model[List[Doc], List[Floats3d]], grad_factor: float = 0.0
) -> Model[List[Doc], List[Floats3d]]:
    if grad_factor < 0:
        raise ValueError(f"grad_factor must not be negative, not {grad_factor}")
    return Model(
        "elmo_layers", _copy_forward, init=_copy_init, layers=[bilm], attrs={"grad_factor": float(grad_factor)}
    )


def _copy_init(model: Model, X: Optional[List[Doc]] = None, Y: Optional[object] = None) -> None:
    if get_bilm(model.layers[0]) is None:  # never a random biLM in place of the copied one
        raise ValueError(
            f"This component's biLM copy ({STANDALONE_ARCHITECTURE}) has no weights: it gets them from "
            "nlp.replace_listeners or with its saved pipeline. To train it again, source the component "
            "([components.NAME] source = PIPELINE), or give it a spacy_elmo.ElmoListener.v1 and an elmo "
            "component"
        )
    model.layers[0].initialize()


def _copy_forward(model: Model, docs: List[Doc], is_train: bool) -> tuple[List[Floats3d], Callable]:
    bilm = model.layers[0]
    factor = float(model.attrs["grad_factor"])
    if not is_train or factor == 0.0:
        return bilm.predict(docs), no_backprop
    layers, backprop_bilm = bilm.begin_update(docs)
    return layers, scaled_backprop(factor, backprop_bilm)


def standalone_copy(bilm_copy: Model, grad_factor: float) -> Model:
    """The node in a listener's place around ``bilm_copy`` (from ``Model.copy``): no hooks (it is no
    upstream), and shim ids of its own, as optimizers key torch parameters by shim id."""
    for name in HOOK_ATTRS:
        bilm_copy.attrs.pop(name, None)
    for node in bilm_copy.walk():
        for shim in node.shims:
            with Shim.global_id_lock:
                Shim.global_id += 1
                shim.id = Shim.global_id
    return elmo_layers_node(bilm_copy, grad_factor)


def replace_listener_cfg(elmo_model_cfg: Dict[str, Any], tok2vec_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The block in place of the listener's: the elmo model's block as ``bilm``, the listener's mix settings."""
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


@registry.architectures("spacy_elmo.ElmoTok2Vec.v1")
def build_elmo_tok2vec(
    embed: Model[List[Doc], List[Floats2d]],
    encode: Model[List[Floats2d], List[Floats2d]],
    elmo: Optional[Model[List[Doc], List[Floats2d]]] = None,
    maxout_pieces: int = 3,
    elmo_output: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """ELMo's recipe for a task model (docs/training.md): the mixed ELMo vector joins the task's own
    embedding, a Maxout layer projects the pair to the encoder's width, then the encoder runs; with
    ``elmo = null`` the same network is the fair baseline; ``elmo_output`` joins the encoder's output."""
    if not encode.has_dim("nO"):
        raise ValueError("The encoder of spacy_elmo.ElmoTok2Vec.v1 must declare its width (nO)")
    width = encode.get_dim("nO")
    features = embed if elmo is None else concatenate(elmo, embed)

    def project() -> Model[List[Floats2d], List[Floats2d]]:
        return with_array(Maxout(width, nP=maxout_pieces, normalize=True))

    model = chain(features, project(), encode)
    if elmo_output is not None:
        model = chain(concatenate(model, elmo_output), project())
    model.set_dim("nO", width)
    for name, ref in (("embed", embed), ("encode", encode), ("elmo", elmo), ("elmo_output", elmo_output)):
        if ref is not None:
            model.set_ref(name, ref)
    model.name = "elmo_tok2vec" if elmo is not None or elmo_output is not None else "tok2vec"
    return model
