"""``spacy_elmo.ElmoListener.v1``: a downstream component's view of the upstream ``elmo`` layers.

Works like spaCy's ``Tok2VecListener``: during ``nlp.update`` the ``elmo`` component runs the
biLM once per batch and hands every listener the layers and a backprop callback; at prediction
time the listener reads ``doc._.elmo_layers``. Each listener then applies its own mix
(:mod:`.scalar_mix`), so ``ner`` and ``tagger`` weigh the layers differently.
"""

from __future__ import annotations

import copy
import warnings
from typing import Callable, Iterable, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.types import Floats2d, Floats3d

from .scalar_mix import scalar_mix

LAYERS_ATTR = "elmo_layers"


@registry.architectures("spacy_elmo.ElmoListener.v1")
def build_elmo_listener(
    upstream: str = "*",
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    grad_factor: float = 0.0,
    fixed_layer_weights: Optional[List[float]] = None,
    mix_dropout: float = 0.0,
    weights_l2: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """ELMo features for a downstream component: the upstream layers, mixed by learned weights.

    upstream: the name of the ``elmo`` component to listen to, or ``"*"`` for any.
    grad_factor: scale of the gradient passed to the biLM; 0 keeps it frozen.
    The mix settings are :func:`~.scalar_mix.scalar_mix`'s.
    """
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
        """A copy without the link to the upstream component (its locks and caches cannot be
        copied) or a batch in flight: ``nlp.resume_training`` copies models for rehearsal."""
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
        """Store the upstream's layers for this batch; ``backprop`` is None when it is frozen."""
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop

    def set_upstream_dims(self, n_layers: int, width: int) -> None:
        self.set_dim("nL", n_layers, force=True)
        self.set_dim("nO", width, force=True)

    def attach(self, upstream_dims: Callable[[], Tuple[int, int]], component: Optional[str] = None) -> None:
        """Let the upstream component tell its dims on demand: it may load weights lazily."""
        self._upstream_dims = upstream_dims
        self._component = component

    def layer_dims(self) -> Tuple[int, int]:
        """(number of layers, width) of the upstream layers, asking the upstream if unknown."""
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
        return model._outputs, _scaled_backprop(model.grad_factor, model._backprop)
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
    """Warn once when prediction Docs carry no elmo layers: their features would be all zeros,
    and the component would run on a fraction of its input without an error."""
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


def _scaled_backprop(factor: float, upstream: Optional[Callable]) -> Callable:
    def backprop(d_layers: List[Floats3d]) -> List[Doc]:
        if upstream is not None and factor > 0:
            upstream([d * factor for d in d_layers] if factor != 1.0 else d_layers)
        return []

    return backprop


def no_backprop(d_layers: List[Floats3d]) -> List[Doc]:
    return []
