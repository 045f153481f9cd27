"""The ``elmo`` pipeline component: runs the biLM, annotates Docs, feeds its listeners.

Modelled on spaCy's ``Tok2Vec``: downstream components (``ner``, ``tagger``) hold
``spacy_elmo.ElmoListener.v1`` layers that receive this component's output during ``nlp.update``
and read ``doc._.elmo_layers`` at prediction time, each with its own mix of the layers. The
biLM only changes if some listener has ``grad_factor > 0``. Its settings: docs/component.md.
"""

from inspect import signature
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate
from thinc.types import Floats2d, Floats3d

from ..config import ARCHITECTURE_FIELDS, BiLMConfig
from ..embedding.mix import layer_weights_array, mix_layers
from ..models.doc_layers import build_bilm_model, get_bilm, random_bilm, set_bilm, set_precision
from ..models.feature_cache import FeatureCache, layers_through_cache
from ..models.listener import ElmoLayersListener
from ..models.scalar_mix import check_layer_count, checked_weights
from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION, check_precision
from .config_sizes import component_model_config, forget_weights_path, write_bilm_sizes
from .doc_attributes import install_extensions, set_vector_hooks
from .listener_copies import ListenerCopies
from .mixes import mix_node
from .weights import check_weights_path, is_random, load_bilm_weights, no_weights_message, saved_component_errors
from .wiring import explain_unlinked

#: The factory's ``spacy_elmo.BiLM.v1``: the original ELMo's sizes, then the layer's run settings.
DEFAULT_ELMO_MODEL: Dict[str, Any] = {
    "@architectures": "spacy_elmo.BiLM.v1",
    **{key: BiLMConfig().to_dict()[key] for key in ARCHITECTURE_FIELDS},
    **{
        name: parameter.default
        for name, parameter in signature(build_bilm_model).parameters.items()
        if name not in ARCHITECTURE_FIELDS
    },
}

PathLike = Union[str, Path]

install_extensions()


@Language.factory(
    "elmo",
    assigns=["doc._.elmo_layers", "doc._.elmo_vectors"],
    default_config={
        "model": DEFAULT_ELMO_MODEL,
        "weights": None,
        "layer_weights": None,
        "gamma": 1.0,
        "mix_from": None,
        "set_vector_hooks": True,
        "feature_cache_mb": 1024.0,
        "feature_cache_dir": None,
        "feature_cache_disk_mb": 10240.0,
        "precision": DEFAULT_PRECISION,
    },
)
def make_elmo(
    nlp: Language,
    name: str,
    model: Model[List[Doc], List[Floats3d]],
    weights: Optional[str],
    layer_weights: Optional[List[float]],
    gamma: float,
    mix_from: Optional[str],
    set_vector_hooks: bool,
    feature_cache_mb: float,
    feature_cache_dir: Optional[str],
    feature_cache_disk_mb: float,
    precision: str,
) -> "Elmo":
    """Contextual ELMo vectors on Docs, and ELMo features for downstream listeners."""
    return Elmo(
        nlp.vocab,
        model,
        name,
        weights=weights,
        layer_weights=layer_weights,
        gamma=gamma,
        mix_from=mix_from,
        set_vector_hooks=set_vector_hooks,
        feature_cache_mb=feature_cache_mb,
        feature_cache_dir=feature_cache_dir,
        feature_cache_disk_mb=feature_cache_disk_mb,
        precision=precision,
        nlp=nlp,
    )


class Elmo(TrainablePipe):
    """Runs the biLM over sentences (or windows) and stores all its layers on each Doc."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], List[Floats3d]],
        name: str,
        *,
        weights: Optional[PathLike],
        layer_weights: Optional[Sequence[float]],
        gamma: float,
        mix_from: Optional[str],
        set_vector_hooks: bool,
        feature_cache_mb: float,
        feature_cache_dir: Optional[PathLike],
        feature_cache_disk_mb: float,
        precision: str,
        nlp: Optional[Language],
    ) -> None:
        """The settings are the factory's (:func:`make_elmo`, docs/component.md)."""
        self.vocab = vocab
        self.model = model
        self.precision = check_precision(precision, f"the '{name}' component's precision")
        set_precision(model, self.precision)
        hooks = ListenerCopies(self)  # what nlp.replace_listeners asks the upstream model for
        model.attrs["replace_listener"] = hooks.node
        model.attrs["replace_listener_cfg"] = hooks.config
        # The pipeline whose config this component keeps true to its weights (not a weak
        # reference: that would make the pipeline unpicklable).
        self._nlp = nlp
        self.name = name
        self.listener_map = {}
        self.cfg: Dict[str, Any] = {}
        self.layer_weights = checked_weights(f"The '{name}' component's layer_weights", layer_weights)
        self.gamma = float(gamma)
        self.mix_from = mix_from
        self._mix_component: Optional[Any] = None  # found when spaCy links the pipeline
        self.set_vector_hooks = set_vector_hooks
        if weights is not None and not is_random(weights):
            check_weights_path(weights)
        self._pending_weights: Optional[PathLike] = weights
        self.feature_cache: Optional[FeatureCache] = None
        if feature_cache_mb > 0 or feature_cache_dir is not None:
            self.feature_cache = FeatureCache(feature_cache_mb, feature_cache_dir, feature_cache_disk_mb)
        # From the first update on, predictions (a training run's dev evaluations) use the
        # feature cache too; plain inference never fills it.
        self._training = False

    @property
    def bilm(self) -> Optional[BiLM]:
        """The torch biLM (``None`` before weights are loaded or the model is initialized)."""
        return get_bilm(self.model)

    def load_weights(self, path: PathLike) -> None:
        """Replace the biLM by the one stored at ``path`` (``"random"``: a random one of the
        configured sizes)."""
        set_bilm(self.model, random_bilm(self.model) if is_random(path) else load_bilm_weights(path))
        self._pending_weights = None
        self._weights_changed()

    def _weights_changed(self) -> None:
        """Tell the cache, the listeners and the pipeline's config of the biLM now in place."""
        if self.feature_cache is not None:
            self.feature_cache.clear()
        bilm = self.bilm
        if bilm is None:
            return
        for listener in self.listeners:
            listener.set_upstream_dims(*self._layer_dims())
        model_cfg = component_model_config(self._nlp, self)
        if model_cfg is not None:
            write_bilm_sizes(model_cfg, bilm.config)
        check_layer_count(
            f"The '{self.name}' component's layer_weights", self.layer_weights, bilm.config.n_output_layers
        )

    def _load_pending_weights(self) -> None:
        if self._pending_weights is not None:
            self.load_weights(self._pending_weights)

    def _ensure_weights(self) -> None:
        self._load_pending_weights()
        if self.bilm is None:
            raise ValueError(no_weights_message(self.name))

    @property
    def listener_map(self) -> Dict[str, List[ElmoLayersListener]]:
        return self._listener_map

    @listener_map.setter
    def listener_map(self, value: Dict[str, List[ElmoLayersListener]]) -> None:
        # spaCy resets the map before it links the pipeline again (a component added, removed,
        # renamed; loading): the mix_from component is found again, and each listener that
        # stays unlinked learns why.
        self._listener_map = value
        self._mix_component = None
        nlp = getattr(self, "_nlp", None)
        if nlp is not None and any(c is self for _, c in nlp.pipeline):
            forget_weights_path(nlp, self)
            explain_unlinked(nlp.pipeline, [name for name, c in nlp.pipeline if isinstance(c, Elmo)])

    @property
    def listeners(self) -> List[ElmoLayersListener]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: ElmoLayersListener, component_name: str) -> None:
        if listener not in self.listener_map.setdefault(component_name, []):
            self.listener_map[component_name].append(listener)
        listener.attach(self._layer_dims, component_name)
        if self.model.has_dim("nO"):
            listener.set_upstream_dims(*self._layer_dims())

    def remove_listener(self, listener: ElmoLayersListener, component_name: str) -> bool:
        if listener not in self.listener_map.get(component_name, []):
            return False
        self.listener_map[component_name].remove(listener)
        if not self.listener_map[component_name]:
            del self.listener_map[component_name]
        return True

    def find_listeners(self, component: Any) -> None:
        """Register the ELMo listeners inside a later component's model (spaCy calls this)."""
        if self.mix_from is not None and getattr(component, "name", None) == self.mix_from:
            self._mix_component = component
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, ElmoLayersListener) and node.upstream_name in ("*", self.name):
                    self.add_listener(node, component.name)

    def _layer_dims(self) -> Tuple[int, int]:
        """(L+1, D) of the biLM; reads pending weights if a listener needs them first."""
        if not self.model.has_dim("nO"):
            self._ensure_weights()
        return self.model.get_dim("nL"), self.model.get_dim("nO")

    @property
    def _fine_tuned(self) -> bool:
        return any(listener.grad_factor > 0 for listener in self.listeners)

    def compute_layers(self, docs: Sequence[Doc], use_cache: bool = False) -> List[Floats3d]:
        """All biLM layers for each Doc, (L+1, n_tokens, D), with no gradient: where inference
        runs the biLM, for prediction and frozen training alike (``use_cache``: through the
        frozen-feature cache)."""
        self._ensure_weights()
        docs = list(docs)
        if not use_cache or self.feature_cache is None or self._fine_tuned:
            return self.model.predict(docs)
        return layers_through_cache(self.model, self.bilm, docs, self.feature_cache)

    def predict(self, docs: Iterable[Doc]) -> List[Floats3d]:
        return self.compute_layers(list(docs), use_cache=self._training)

    def set_annotations(self, docs: Sequence[Doc], layers: List[Floats3d]) -> None:
        if self.mix_from is not None:  # the whole batch at once, as the component mixes it
            vectors = list(self.learned_mix().predict(list(layers)))
        else:
            xp = self.model.ops.xp
            weights = layer_weights_array(self.layer_weights, self.model.get_dim("nL"), xp)
            vectors = [mix_layers(doc_layers, weights, self.gamma, xp) for doc_layers in layers]
        for doc, doc_layers, doc_vectors in zip(docs, layers, vectors):
            doc._.elmo_layers, doc._.elmo_vectors = doc_layers, doc_vectors
            if self.set_vector_hooks:
                set_vector_hooks(doc)

    def learned_mix(self) -> Model[List[Floats3d], List[Floats2d]]:
        """The ``spacy_elmo.scalar_mix.v1`` node of the ``mix_from`` component."""
        return mix_node(self._mix_component, self.name, self.mix_from)

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Run the biLM on the batch and hand the layers to the listeners. Frozen (every
        listener at grad_factor 0), no gradient is computed; otherwise the listeners' gradients
        are summed and passed back once the last fine-tuning listener has reported."""
        losses = {} if losses is None else losses
        examples = list(examples)
        validate_examples(examples, "Elmo.update")
        losses.setdefault(self.name, 0.0)
        if not self.listeners:
            return losses
        docs = [eg.predicted for eg in examples]
        batch_id = ElmoLayersListener.get_batch_id(docs)
        self._training = True
        if not self._fine_tuned:
            layers = self.compute_layers(docs, use_cache=True)
            for listener in self.listeners:
                listener.receive(batch_id, layers, None)
            return losses
        self._ensure_weights()
        set_dropout_rate(self.model, drop)
        layers, backprop_layers = self.model.begin_update(docs)
        d_layers = [self.model.ops.alloc3f(*x.shape) for x in layers]
        waiting = sum(1 for listener in self.listeners if listener.grad_factor > 0)

        def accumulate(one_d_layers: List[Floats3d]) -> List[Doc]:
            nonlocal waiting
            for total, d in zip(d_layers, one_d_layers):
                total += d
                losses[self.name] += float((d**2).sum())  # type: ignore[call-overload]  # thinc types no argless 3d sum()
            waiting -= 1
            if waiting == 0:
                backprop_layers(d_layers)
                if sgd is not None:
                    self.finish_update(sgd)
            return []

        for listener in self.listeners:
            listener.receive(batch_id, layers, accumulate if listener.grad_factor > 0 else None)
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """Step the biLM only when it is fine-tuned: a frozen biLM stays bit-identical."""
        if self._fine_tuned:
            self.model.finish_update(sgd)

    def get_loss(self, examples: Iterable[Example], scores: Any) -> None:
        pass

    def add_label(self, label: str) -> int:
        raise NotImplementedError

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        weights: Optional[PathLike] = None,
    ) -> None:
        """Load ``weights`` (``[initialize.components.elmo]``; ``"random"``: a random biLM), else
        the factory's, else keep the biLM already there; with none it is an error."""
        if self.feature_cache is not None:
            self.feature_cache.clear()
        if nlp is not None:
            self._nlp = nlp
        if weights is not None:
            if not is_random(weights):
                check_weights_path(weights)
            self._pending_weights = weights
        self._ensure_weights()
        self.model.initialize()
        if self.mix_from is not None and self._mix_component is None:
            self.learned_mix()  # says which component is missing
        self._weights_changed()

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        self._load_pending_weights()
        return super().to_bytes(exclude=exclude)

    def to_disk(self, path: PathLike, *, exclude: Iterable[str] = tuple()) -> None:
        self._load_pending_weights()
        super().to_disk(path, exclude=exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        with self._reading(None):
            super().from_bytes(bytes_data, exclude=exclude)
        return self._loaded()

    def from_disk(self, path: PathLike, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        with self._reading(path):
            super().from_disk(path, exclude=exclude)
        return self._loaded()

    def _reading(self, path: Optional[PathLike]) -> ContextManager[None]:
        """Forget the sizes (the serialized biLM brings its own); errors name this component."""
        for dim in ("nL", "nO"):
            self.model.set_dim(dim, None, force=True)  # type: ignore[arg-type]
        return saved_component_errors(self.name, path)

    def _loaded(self) -> "Elmo":
        """A serialized component carries its weights: the factory's path is not read. The
        precision is the config's (the serialized model's attrs hold the one it was saved with)."""
        set_precision(self.model, self.precision)
        if self.bilm is not None:
            self._pending_weights = None
        self._weights_changed()
        return self
