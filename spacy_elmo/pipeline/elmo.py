"""The ``elmo`` component, modelled on spaCy's ``Tok2Vec``: it runs the biLM, stores every layer on
the Docs and hands them to the listeners of later components (docs/component.md, docs/training.md)."""

import logging
import warnings
from inspect import Parameter, signature
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, get_torch_default_device, set_dropout_rate
from thinc.types import Floats2d, Floats3d

from ..config import ARCHITECTURE_FIELDS, BiLMConfig
from ..embedding.mix import layer_weights_array, mix_layers
from ..models.doc_layers import build_bilm_model, get_bilm, random_bilm, set_bilm, set_precision
from ..models.feature_cache import FeatureCache, layers_through_cache
from ..models.listener import ElmoLayersListener
from ..models.scalar_mix import check_layer_count, checked_weights
from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION, check_precision, running_precision
from .doc_attributes import install_extensions, set_vector_hooks
from .listener_copies import ListenerCopies
from .mixes import elmo_mix_nodes, mix_node
from .weights import (
    is_random,
    load_bilm_weights,
    no_weights_message,
    saved_component_errors,
    weights_config,
    write_bilm_sizes,
)

logger = logging.getLogger("spacy_elmo")

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
#: Where ``nlp.meta`` says which precision each ``elmo`` component runs.
META_KEY = "elmo_precision"

PathLike = Union[str, Path]

install_extensions()


class Elmo(TrainablePipe):
    """Runs the biLM over sentences (or windows) and stores all its layers on each Doc."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], List[Floats3d]],
        name: str = "elmo",
        *,
        nlp: Optional[Language] = None,
        weights: Optional[PathLike] = None,
        layer_weights: Optional[Sequence[float]] = None,
        gamma: float = 1.0,
        mix_from: Optional[str] = None,
        set_vector_hooks: bool = True,
        feature_cache_mb: float = 1024.0,
        feature_cache_dir: Optional[PathLike] = None,
        feature_cache_disk_mb: float = 10240.0,
        precision: str = DEFAULT_PRECISION,
    ) -> None:
        """The settings are the factory's (docs/component.md#settings); ``nlp``: the pipeline
        whose config and meta this component keeps true to its biLM."""
        self.vocab = vocab
        self.model = model
        self.precision = check_precision(precision, f"the '{name}' component's precision")
        set_precision(model, self.precision)
        hooks = ListenerCopies(self)  # what nlp.replace_listeners asks the upstream model for
        model.attrs["replace_listener"] = hooks.node
        model.attrs["replace_listener_cfg"] = hooks.config
        self._nlp = nlp  # not a weak reference: that would make the pipeline unpicklable
        self.name = name
        self.listener_map = {}
        self.cfg: Dict[str, Any] = {}
        self.layer_weights = checked_weights(f"The '{name}' component's layer_weights", layer_weights)
        self.gamma = float(gamma)
        self.mix_from = mix_from
        self._mix_component: Optional[Any] = None  # found when spaCy links the pipeline
        self.set_vector_hooks = set_vector_hooks
        # Read on first use; their sizes at once, for the pipeline's config.
        self._pending_weights: Optional[PathLike] = weights
        self._pending_sizes = None if weights is None or is_random(weights) else weights_config(weights)
        self.feature_cache: Optional[FeatureCache] = None
        if feature_cache_mb > 0 or feature_cache_dir is not None:
            self.feature_cache = FeatureCache(feature_cache_mb, feature_cache_dir, feature_cache_disk_mb)
        # From the first update on, predictions (a training run's dev evaluations) use the
        # feature cache too; plain inference never fills it.
        self._training = False
        self._logged_precision: Optional[str] = None

    @property
    def bilm(self) -> Optional[BiLM]:
        """The torch biLM (``None`` before weights are loaded or the model is initialized)."""
        return get_bilm(self.model)

    @property
    def running_precision(self) -> str:
        """The precision prediction runs in: ``precision``, or float32 where the device lacks it."""
        bilm = self.bilm
        return running_precision(self.precision, bilm.device if bilm is not None else get_torch_default_device())

    def load_weights(self, path: PathLike) -> None:
        """Replace the biLM by the one stored at ``path`` (``"random"``: one of the configured sizes)."""
        set_bilm(self.model, random_bilm(self.model) if is_random(path) else load_bilm_weights(path))
        self._pending_weights = None
        self._weights_changed()

    def _weights_changed(self) -> None:
        """Tell the cache, the listeners, the pipeline's config and meta of the biLM now in place."""
        if self.feature_cache is not None:
            self.feature_cache.clear()
        bilm = self.bilm
        if bilm is None:
            return
        for listener in self.listeners:
            listener.set_upstream_dims(*self._layer_dims())
        self._describe(bilm.config)
        check_layer_count(
            f"The '{self.name}' component's layer_weights", self.layer_weights, bilm.config.n_output_layers
        )

    def _describe(self, sizes: Optional[BiLMConfig]) -> None:
        """Write ``sizes`` into the component's config block and the precision that runs into
        ``nlp.meta``; say once which precision runs."""
        running = self.running_precision
        if running != self._logged_precision:
            asked = "" if running == self.precision else f" (precision = '{self.precision}' cannot run here)"
            logger.info("The '%s' component runs the biLM in %s%s", self.name, running, asked)
            self._logged_precision = running
        nlp = self._nlp
        names = [name for name, pipe in nlp.components if pipe is self] if nlp is not None else []
        if nlp is None or not names:  # not (yet) one of the pipeline's components
            return
        nlp.meta.setdefault(META_KEY, {})[names[0]] = running
        cfg = nlp.get_pipe_config(names[0])
        if cfg.get("weights") is not None:
            cfg["weights"] = None  # the saved pipeline carries them: a saved config never names the path
        if sizes is not None and isinstance(cfg.get("model"), dict):
            write_bilm_sizes(cfg["model"], sizes)

    def _ensure_weights(self, required: bool = True) -> None:
        if self._pending_weights is not None:
            self.load_weights(self._pending_weights)
        if required and self.bilm is None:
            raise ValueError(no_weights_message(self.name))

    @property
    def listener_map(self) -> Dict[str, List[ElmoLayersListener]]:
        return self._listener_map

    @listener_map.setter
    def listener_map(self, value: Dict[str, List[ElmoLayersListener]]) -> None:
        # spaCy resets the map before it links the pipeline again (a component added, removed,
        # renamed; loading): then the config is made to describe the biLM, mix_from is found
        # again, and each listener that stays unlinked learns why.
        self._listener_map = value
        self._mix_component = None
        nlp = getattr(self, "_nlp", None)
        if nlp is None or not any(pipe is self for _, pipe in nlp.pipeline):
            return
        self._describe(self.bilm.config if self.bilm is not None else self._pending_sizes)
        elmo_names = [name for name, pipe in nlp.pipeline if isinstance(pipe, Elmo)]
        names = [name for name, _ in nlp.pipeline]
        for index, (name, component) in enumerate(nlp.pipeline):
            model = getattr(component, "model", None)
            for node in model.walk() if isinstance(model, Model) else ():
                if isinstance(node, ElmoLayersListener):
                    node.wiring_error = _unlinked_reason(node.upstream_name, name, index, names, elmo_names)

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
        """All biLM layers for each Doc, (L+1, n_tokens, D), with no gradient: for prediction and
        frozen training alike (``use_cache``: through the frozen-feature cache)."""
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
        """Hand the batch's layers to the listeners. Frozen (every listener at grad_factor 0), no
        gradient is computed; otherwise the listeners' gradients are summed and passed back once
        the last fine-tuning listener has reported."""
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
            self._pending_weights = weights
        self._ensure_weights()
        self.model.initialize()
        if self.mix_from is not None and self._mix_component is None:
            self.learned_mix()  # says which component is missing
        self._weights_changed()
        pipeline = self._nlp.pipeline if self._nlp is not None else []
        deaf = [n for n, c in pipeline if isinstance(c, TrainablePipe) and not isinstance(c, Elmo) and not _reads(c)]
        if deaf and not self.listeners:
            warnings.warn(
                f"The '{self.name}' component feeds no ELMo listener: {', '.join(deaf)} will train without "
                "ELMo features while the biLM runs for nothing (`spacy init config --pipeline elmo,...` wires "
                f"none). Write the config with `spacy-elmo init-config --pipeline {','.join(deaf)}` "
                "(docs/training.md)",
                UserWarning,
                stacklevel=2,
            )

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        self._ensure_weights(required=False)
        return super().to_bytes(exclude=exclude)

    def to_disk(self, path: PathLike, *, exclude: Iterable[str] = tuple()) -> None:
        self._ensure_weights(required=False)
        super().to_disk(path, exclude=exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        with self._reading(None):
            super().from_bytes(bytes_data, exclude=exclude)
        return self._loaded(None)

    def from_disk(self, path: PathLike, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        with self._reading(path):
            super().from_disk(path, exclude=exclude)
        return self._loaded(path)

    def _reading(self, path: Optional[PathLike]):
        """Forget the sizes (the serialized biLM brings its own); errors name this component."""
        for dim in ("nL", "nO"):
            self.model.set_dim(dim, None, force=True)  # type: ignore[arg-type]
        return saved_component_errors(self.name, path)

    def _loaded(self, path: Optional[PathLike]) -> "Elmo":
        """A serialized component carries its weights: the factory's path is not read. The
        precision is the config's (the serialized model's attrs hold the one it was saved with)."""
        set_precision(self.model, self.precision)
        if self.bilm is not None:
            self._pending_weights = None
            self.bilm.source = str(path) if path is not None else f"the serialized component '{self.name}'"
        self._weights_changed()
        return self


def _reads(component: Any) -> bool:
    return isinstance(getattr(component, "model", None), Model) and bool(elmo_mix_nodes(component.model))


def _unlinked_reason(upstream: str, name: str, index: int, names: List[str], elmo_names: List[str]) -> Optional[str]:
    """Why the listener of ``name`` (``index``-th in the pipeline ``names``) gets no ELMo layers:
    it raises this when it needs them (``None``: it is linked)."""
    order = ", ".join(names)
    wanted = [elmo for elmo in elmo_names if upstream in ("*", elmo)]
    if not wanted:
        return (
            f"The ELMo listener of '{name}' has upstream = '{upstream}', but the pipeline ({order}) has no "
            f"elmo component of that name: set upstream to {' or '.join(repr(e) for e in elmo_names)} (or '*')"
        )
    if all(names.index(elmo) > index for elmo in wanted):
        return (
            f"The ELMo listener of '{name}' listens to '{wanted[0]}' (upstream = '{upstream}'), but '{name}' "
            f"comes before '{wanted[0]}' in the pipeline ({order}): add '{wanted[0]}' before '{name}'"
        )
    return None


_SETTINGS = [p for p in signature(Elmo.__init__).parameters.values() if p.kind is Parameter.KEYWORD_ONLY]


@Language.factory(
    "elmo",
    assigns=["doc._.elmo_layers", "doc._.elmo_vectors"],
    default_config={"model": DEFAULT_ELMO_MODEL, **{p.name: p.default for p in _SETTINGS if p.name != "nlp"}},
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
) -> Elmo:
    """Contextual ELMo vectors on Docs, and ELMo features for downstream listeners."""
    settings = {key: value for key, value in locals().items() if key not in ("nlp", "name", "model")}
    return Elmo(nlp.vocab, model, name, nlp=nlp, **settings)
