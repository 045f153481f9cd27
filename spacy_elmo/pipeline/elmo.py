"""The ``elmo`` component, modelled on spaCy's ``Tok2Vec``: it runs the biLM, stores every layer on
the Docs and hands them to the listeners of later components (docs/component.md, docs/training.md).
Its Doc attributes and vector hooks are stored on the Doc, so that they survive ``Doc.to_bytes`` and
``nlp.pipe(n_process=...)``; the hooks do not."""

import copy
import logging
import warnings
from contextlib import contextmanager
from inspect import Parameter, signature
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span, Token
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, get_array_module, get_torch_default_device, set_dropout_rate
from thinc.types import Floats1d, Floats2d, Floats3d

from ..config import ARCHITECTURE_FIELDS, BiLMConfig
from ..embedding.mix import layer_weights_array, mix_layers
from ..models.doc_layers import build_bilm_model, get_bilm, random_bilm, set_bilm, set_precision
from ..models.feature_cache import FeatureCache, layers_through_cache
from ..models.listener import ElmoLayersListener, listener_block, replace_listener_cfg, standalone_copy, with_block
from ..models.scalar_mix import check_layer_count, checked_weights
from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION, check_precision, running_precision
from .mixes import elmo_mix_nodes
from .weights import RANDOM_WEIGHTS, is_random, load_bilm_weights, weights_config, write_bilm_sizes

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

PathLike = Union[str, Path]


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
        """The factory's settings (docs/component.md); ``nlp``: whose config and meta it keeps true."""
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
        self._training = False  # from the first update on, dev predictions use the feature cache too
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
        """The biLM's ``sizes`` into the component's config, the precision that runs into ``nlp.meta`` and the log."""
        running = self.running_precision
        if running != self._logged_precision:
            asked = "" if running == self.precision else f" (precision = '{self.precision}' cannot run here)"
            logger.info("The '%s' component runs the biLM in %s%s", self.name, running, asked)
            self._logged_precision = running
        nlp = self._nlp
        names = [name for name, pipe in nlp.components if pipe is self] if nlp is not None else []
        if nlp is None or not names:  # not (yet) one of the pipeline's components
            return
        nlp.meta.setdefault("elmo_precision", {})[names[0]] = running
        cfg = nlp.get_pipe_config(names[0])
        if cfg.get("weights") is not None:
            cfg["weights"] = None  # the saved pipeline carries them: a saved config never names the path
        if sizes is not None and isinstance(cfg.get("model"), dict):
            write_bilm_sizes(cfg["model"], sizes)

    def _ensure_weights(self, required: bool = True) -> None:
        if self._pending_weights is not None:
            self.load_weights(self._pending_weights)
        if required and self.bilm is None:
            raise ValueError(_no_weights_message(self.name))

    @property
    def listener_map(self) -> Dict[str, List[ElmoLayersListener]]:
        return self._listener_map

    @listener_map.setter
    def listener_map(self, value: Dict[str, List[ElmoLayersListener]]) -> None:
        # spaCy resets it before it links the pipeline again (a component added, removed, renamed;
        # loading): the config is made true, mix_from found again, unlinked listeners learn why.
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
        """Each Doc's ``(L+1, n_tokens, D)`` layers, no gradient (``use_cache``: the frozen-feature cache)."""
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
        if self._mix_component is None:
            raise ValueError(
                f"The '{self.name}' component has mix_from = '{self.mix_from}', but no component of that name "
                "follows it in the pipeline"
            )
        mixes = [mix for _, mix in elmo_mix_nodes(self._mix_component.model)]
        if len(mixes) != 1:
            raise ValueError(
                f"mix_from = '{self.mix_from}' needs a component with exactly one ELMo listener (or biLM copy) "
                f"in its model; '{self.mix_from}' has {len(mixes)}"
            )
        if not mixes[0].has_param("gamma"):
            raise ValueError(
                f"mix_from = '{self.mix_from}': the '{self.mix_from}' component's ELMo mix is not initialized yet; "
                "call nlp.initialize() (or train the pipeline) first"
            )
        return mixes[0]

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
        others = [(n, c) for n, c in pipeline if isinstance(c, TrainablePipe) and not isinstance(c, Elmo)]
        deaf = [name for name, component in others if not elmo_mix_nodes(component.model)]
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
        return _saved_component_errors(self.name, path)

    def _loaded(self, path: Optional[PathLike]) -> "Elmo":
        """The saved weights, not the factory's path; the config's precision, not the one saved in the attrs."""
        set_precision(self.model, self.precision)
        if self.bilm is not None:
            self._pending_weights = None
            self.bilm.source = str(path) if path is not None else f"the serialized component '{self.name}'"
        self._weights_changed()
        return self


TOK2VEC_PATH = "model.tok2vec"  # where spaCy takes the tok2vec config it gives the first hook from


class ListenerCopies:
    """The ``nlp.replace_listeners`` hooks (an object that pickles, and that Thinc's deepcopy keeps).
    spaCy writes the first's block at a path that hook is not told: the second looks where it landed.
    At the listener's path it stays; at ``model.tok2vec`` (the spacy-transformers habit) only the
    listener's block inside the tok2vec is replaced; anywhere else the config is put back, refused."""

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
        nlp = self.component._nlp
        configs = {} if nlp is None else {name: nlp.get_pipe_config(name) for name in nlp.component_names}
        for name, pipe_cfg in configs.items():
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


def _no_weights_message(name: str) -> str:
    return (
        f"The '{name}' component has no biLM weights: set [initialize.components.{name}] weights "
        f"(the shipped configs: --paths.elmo PATH) or add_pipe('{name}', config={{'weights': PATH}}), "
        "where PATH is a spacy-elmo model directory, an AllenNLP directory or an .hdf5 with "
        f'options.json beside it; weights = "{RANDOM_WEIGHTS}" gives a randomly initialised biLM '
        "(for tests: its features are noise)"
    )


@contextmanager
def _saved_component_errors(name: str, path: Optional[PathLike]) -> Iterator[None]:
    """A damaged saved component is one ``ValueError`` naming the pipeline and component (``path``: its folder)."""
    try:
        yield
    except (ValueError, KeyError, TypeError, IndexError, OSError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if path is None:
            raise ValueError(f"The serialized component {name!r} cannot be loaded: {detail}") from err
        folder = Path(path)
        raise ValueError(
            f"{folder.parent}: the pipeline's component {name!r} cannot be loaded from {folder}: {detail}"
        ) from err


def _unlinked_reason(upstream: str, name: str, index: int, names: List[str], elmo_names: List[str]) -> Optional[str]:
    """Why the listener of ``names[index]`` gets no layers (``None``: it does); it raises this when it needs them."""
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


# spaCy's W109 ("Unable to save user hooks") would come with every saved Doc, and from each
# n_process worker: the hooks it means are these, and set_vector_hooks puts them back.
warnings.filterwarnings("ignore", message=r"\[W109\]")


def install_extensions() -> None:
    """Register the extension attributes once per process (safe to call again)."""
    for name in ("elmo_layers", "elmo_vectors"):
        if not Doc.has_extension(name):
            Doc.set_extension(name, default=None)
    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", getter=span_vector)
    if not Span.has_extension("elmo"):
        Span.set_extension("elmo", getter=span_vector)
    if not Token.has_extension("elmo"):
        Token.set_extension("elmo", getter=token_vector)


def token_vector(token: Token) -> Optional[Floats1d]:
    vectors = token.doc._.elmo_vectors
    return None if vectors is None else vectors[token.i]


def span_vector(span: Union[Span, Doc]) -> Optional[Floats1d]:
    """The mean of the tokens' mixed vectors (zeros for an empty span)."""
    doc = span if isinstance(span, Doc) else span.doc
    vectors = doc._.elmo_vectors
    if vectors is None:
        return None
    start, end = (0, len(doc)) if isinstance(span, Doc) else (span.start, span.end)
    if end <= start:
        return get_array_module(vectors).zeros(vectors.shape[1], dtype=vectors.dtype)
    return vectors[start:end].mean(axis=0)


def set_vector_hooks(doc: Doc) -> None:
    """Route ``.vector``, ``.has_vector`` and ``.similarity`` of the Doc, its Spans and Tokens
    to the ELMo vectors. Docs from ``nlp.pipe(n_process>1)`` lose their hooks: call it again."""
    for hooks, vector in (
        (doc.user_hooks, span_vector),
        (doc.user_span_hooks, span_vector),
        (doc.user_token_hooks, token_vector),
    ):
        hooks["vector"] = vector
        hooks["has_vector"] = _has_vector
        hooks["similarity"] = cosine_similarity


def _has_vector(obj: Union[Doc, Span, Token]) -> bool:
    return (obj if isinstance(obj, Doc) else obj.doc)._.elmo_vectors is not None


def cosine_similarity(a: Union[Doc, Span, Token], b: Union[Doc, Span, Token]) -> float:
    """Cosine of the two objects' ELMo vectors (0.0 if either is all zeros), read from the Docs:
    a hooked object compared with an unhooked one still compares ELMo vectors."""
    u, v = _elmo_vector(a), _elmo_vector(b)
    if u.shape != v.shape:
        raise ValueError(
            f"similarity compares ELMo vectors, and these have different widths ({u.shape[0]} and "
            f"{v.shape[0]}): process both Docs with the same elmo component"
        )
    xp = get_array_module(u)
    norms = float(xp.linalg.norm(u)) * float(xp.linalg.norm(v))
    return 0.0 if norms == 0.0 else float(xp.dot(u, v)) / norms


def _elmo_vector(obj: object) -> Floats1d:
    doc = obj if isinstance(obj, Doc) else getattr(obj, "doc", None)
    vector = None
    if isinstance(doc, Doc) and doc._.elmo_vectors is not None:
        vector = token_vector(obj) if isinstance(obj, Token) else span_vector(obj)  # type: ignore[arg-type]
    if vector is None:
        raise ValueError(
            f"similarity compares ELMo vectors, and {type(obj).__name__} {str(obj)[:40]!r} has none: "
            "process its Doc with the pipeline that has the elmo component"
        )
    return vector


install_extensions()
