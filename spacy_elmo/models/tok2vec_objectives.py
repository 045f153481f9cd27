"""Objectives for ``spacy pretrain`` (docs/training.md): spaCy's characters objective for any tok2vec
(spaCy's own wants one array per Doc, a ``ner``'s tok2vec gives one per batch), and
``spacy_elmo.PretrainElmo.v1``, whose heads predict the frozen biLM's vectors."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.ml.models.multi_task import build_masked_language_model, get_characters_loss
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import LayerNorm, Linear, Maxout, Model, MultiSoftmax, chain, concatenate
from thinc.types import Floats2d

from ..embedding.mix import mix_layers
from ..formats.resolve import messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM
from .doc_layers import build_bilm_model, get_bilm, set_bilm
from .feature_cache import FeatureCache, FeatureCacheStats, doc_key

if TYPE_CHECKING:
    from spacy.vocab import Vocab

TokenRows = Union[List[Floats2d], Floats2d]
PathLike = Union[str, Path]
ELMO_OBJECTIVE = "spacy_elmo.PretrainElmo.v1"
TARGETS = ("average", "layers", "mix")
#: Distances of a prediction to its target: ``1 - cos`` (0 for a zero target), mean squared, or both.
LOSSES = ("cosine", "l2", "cosine+l2")
EPSILON = 1e-8  # below this length a prediction counts as zero for the cosine


@registry.architectures("spacy_elmo.PretrainCharacters.v1")
def create_pretrain_characters(
    maxout_pieces: int = 3, hidden_size: int = 300, n_characters: int = 4
) -> Callable[["Vocab", Model], Model]:
    """The objective builder ``[pretraining.objective]`` names; spaCy's defaults as defaults."""

    def create_characters_objective(vocab: "Vocab", tok2vec: Model) -> Model:
        output_layer = chain(
            token_rows(),
            Maxout(nO=hidden_size, nP=maxout_pieces),
            LayerNorm(nI=hidden_size),
            MultiSoftmax((256,) * n_characters, nI=hidden_size),
        )
        model = build_masked_language_model(vocab, chain(tok2vec, output_layer))
        model.set_ref("tok2vec", tok2vec)
        model.set_ref("output_layer", output_layer)
        model.attrs["loss"] = partial(get_characters_loss, nr_char=n_characters)
        return model

    return create_characters_objective


def token_rows() -> Model[TokenRows, Floats2d]:
    """One row per token of the batch, from per-Doc arrays (concatenated) or one array."""
    return Model("token_rows", _token_rows_forward)


def _token_rows_forward(model: Model, X: TokenRows, is_train: bool) -> Tuple[Floats2d, Callable]:
    if not isinstance(X, list):
        if X.ndim != 2:
            raise ValueError(f"token_rows expects one 2-dimensional array or a list of them, got {X.ndim} dimensions")
        return X, lambda dY: dY
    lengths = model.ops.asarray1i([len(x) for x in X])
    rows = model.ops.flatten(X, pad=0)

    def backprop(dY: Floats2d) -> List[Floats2d]:
        return model.ops.unflatten(dY, lengths, pad=0)

    return rows, backprop


@registry.architectures(ELMO_OBJECTIVE)
def create_pretrain_elmo(
    weights: Optional[str] = None,
    target: str = "average",
    layer_weights: Optional[List[float]] = None,
    loss: str = "cosine",
    hidden_size: int = 300,
    maxout_pieces: int = 3,
    cache_mb: float = 1024.0,
) -> Callable[["Vocab", Model], Model]:
    """The objective builder ``[pretraining.objective]`` names. The settings are checked when the
    config is resolved; ``weights`` only when ``spacy pretrain`` builds the objective, since
    ``spacy train`` resolves the same block and must run without the biLM."""
    check_target_settings(target, layer_weights, cache_mb)
    check_loss(loss, ELMO_OBJECTIVE)
    if hidden_size < 1 or maxout_pieces < 1:
        raise ValueError(
            f"{ELMO_OBJECTIVE}: hidden_size ({hidden_size}) and maxout_pieces ({maxout_pieces}) must be at least 1"
        )

    def create_elmo_objective(vocab: "Vocab", tok2vec: Model) -> Model:
        targets = ElmoTargets(weights, target, layer_weights, cache_mb)
        if targets.weights is None:
            targets.load()  # raises the error that says what to set
        heads = ElmoHeads(targets, hidden_size, maxout_pieces)
        model: Model = chain(tok2vec, token_rows(), heads)
        model.set_ref("tok2vec", tok2vec)
        model.set_ref("output_layer", heads)
        model.attrs["loss"] = partial(get_elmo_loss, targets=targets, loss=loss)
        return model

    return create_elmo_objective


def get_elmo_loss(ops: Any, docs: List, prediction: Floats2d, *, targets: ElmoTargets, loss: str) -> Tuple[float, Any]:
    """``spacy pretrain``'s objective function: the loss of the batch and its gradient."""
    target, weights = targets(docs)
    if prediction.shape != target.shape:
        raise ValueError(
            f"{ELMO_OBJECTIVE}: the model predicted {prediction.shape} for targets of shape {target.shape}: "
            "the tok2vec must give one row per token"
        )
    return vector_loss(loss, prediction, ops.asarray2f(target), ops.asarray1f(weights), targets.n_groups, ops.xp)


class ElmoHeads(Model):
    """One head per D-wide part of a target row, built when the biLM (read at ``initialize``) says how many."""

    def __init__(self, targets: ElmoTargets, hidden_size: int, maxout_pieces: int) -> None:
        init = partial(_init_heads, targets, hidden_size, maxout_pieces)
        super().__init__("elmo_heads", _heads_forward, init=init, dims={"nO": None})
        self.targets = targets

    def use_params(self, params):  # type: ignore[no-untyped-def]  # Model's, a context manager
        """``spacy pretrain`` saves inside this: refused while no text has reached the objective."""
        if not self.targets.docs_seen:
            raise ValueError(
                f"{ELMO_OBJECTIVE}: no text has reached the objective, so the tok2vec is untrained and is not "
                "saved: the pretraining corpus ([corpora.pretrain], --paths.raw_text) is empty or every text "
                "is outside its min_length and max_length (or --epoch-resume is at max_epochs)"
            )
        return super().use_params(params)


def _init_heads(targets: ElmoTargets, hidden_size: int, maxout_pieces: int, model: Model, X=None, Y=None) -> None:
    if not model.layers:
        heads = [
            chain(
                Maxout(nO=hidden_size, nP=maxout_pieces, normalize=True, dropout=0.0),
                Linear(nO=targets.layer_width, nI=hidden_size),
            )
            for _ in range(targets.n_groups)
        ]
        model.layers.append(concatenate(*heads))
    model.layers[0].initialize(X=X)
    model.set_dim("nO", targets.width, force=True)


def _heads_forward(model: Model, X: Floats2d, is_train: bool) -> Tuple[Floats2d, Callable]:
    if not model.layers:
        raise ValueError(f"{ELMO_OBJECTIVE}: initialize the objective before using it (its heads need the biLM)")
    return model.layers[0](X, is_train)


def check_target_settings(target: str, layer_weights: Optional[Sequence[float]], cache_mb: float) -> None:
    """An error naming the setting unless these are usable (the weights' count is checked on loading)."""
    if target not in TARGETS:
        raise ValueError(f"{ELMO_OBJECTIVE}: target must be one of {', '.join(map(repr, TARGETS))}, not {target!r}")
    if target == "mix":
        if layer_weights is None or len(layer_weights) == 0:
            raise ValueError(f'{ELMO_OBJECTIVE}: target = "mix" needs layer_weights (one weight per biLM layer)')
        values = numpy.asarray(layer_weights, dtype=numpy.float64)
        if not numpy.isfinite(values).all() or not values.any():
            raise ValueError(
                f"{ELMO_OBJECTIVE}: layer_weights must be finite and not all zero, not {list(layer_weights)}"
            )
    elif layer_weights is not None:
        raise ValueError(f'{ELMO_OBJECTIVE}: layer_weights is only used with target = "mix", not with {target!r}')
    if not cache_mb >= 0:
        raise ValueError(f"{ELMO_OBJECTIVE}: cache_mb must be 0 or more, not {cache_mb}")


class ElmoTargets:
    """Docs in, float32 ``(n_tokens, width)`` targets and ``(n_tokens,)`` weights out (0: whitespace).
    The frozen biLM lives here, outside the pretraining model: no optimizer sees it and ``spacy
    pretrain`` never saves it. Each Doc's target is kept for later epochs, in float16 where it fits."""

    def __init__(
        self,
        weights: Optional[PathLike],
        target: str = "average",
        layer_weights: Optional[Sequence[float]] = None,
        cache_mb: float = 1024.0,
    ) -> None:
        check_target_settings(target, layer_weights, cache_mb)
        self.weights = weights
        self.target = target
        self.layer_weights = None if layer_weights is None else [float(w) for w in layer_weights]
        self.cache = FeatureCache(cache_mb)
        self._layers: Optional[Model] = None  # a spacy_elmo.BiLM.v1 layer, once loaded
        self.docs_seen = 0

    @property
    def loaded(self) -> bool:
        return self._layers is not None

    def load(self) -> None:
        """Read the biLM (once): eval mode, no softmax, parameters without gradients."""
        if self._layers is not None:
            return
        if self.weights is None:
            raise ValueError(
                f"{ELMO_OBJECTIVE}: weights is not set: give the biLM to distil (the shipped configs: "
                "--paths.elmo PATH, a spacy-elmo model directory, an AllenNLP directory or an .hdf5 "
                "with options.json beside it)"
            )
        bilm = load_bilm(self.weights, messages=messages_for(f"{ELMO_OBJECTIVE} weights"), without_softmax=True)
        bilm.requires_grad_(False)
        n_layers = bilm.config.n_output_layers
        if self.layer_weights is not None and len(self.layer_weights) != n_layers:
            raise ValueError(
                f"{ELMO_OBJECTIVE}: layer_weights has {len(self.layer_weights)} values but the biLM at "
                f"{self.weights} has {n_layers} layers"
            )
        layers = build_bilm_model()  # sizes unused: the loaded biLM brings its own
        set_bilm(layers, bilm)
        self._layers = layers

    @property
    def bilm(self) -> BiLM:
        self.load()
        assert self._layers is not None  # load() sets it
        bilm = get_bilm(self._layers)
        assert bilm is not None
        return bilm

    @property
    def layer_width(self) -> int:
        """D: the width of one biLM layer (and of one head's output)."""
        return self.bilm.config.output_dim

    @property
    def n_groups(self) -> int:
        """How many D-wide parts a target row has: one per layer for "layers", else one."""
        return self.bilm.config.n_output_layers if self.target == "layers" else 1

    @property
    def width(self) -> int:
        return self.n_groups * self.layer_width

    @property
    def cache_stats(self) -> FeatureCacheStats:
        return self.cache.stats

    def __call__(self, docs: Sequence[Doc]) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The targets of every token of ``docs`` (Doc order) and their weights (0: whitespace)."""
        self.load()
        self.docs_seen += len(docs)
        keys = [doc_key(doc) for doc in docs]
        found: List[Optional[numpy.ndarray]] = [self.cache.get(key) for key in keys]
        missing = [i for i, stored in enumerate(found) if stored is None]
        if missing:
            assert self._layers is not None
            computed = self._layers.predict([docs[i] for i in missing])
            for i, doc_layers in zip(missing, computed):
                stored = compact(self.reduce(self._layers.ops.to_numpy(doc_layers)))
                self.cache.put(keys[i], stored)
                found[i] = stored
        if not docs:
            return numpy.zeros((0, self.width), dtype=numpy.float32), numpy.zeros((0,), dtype=numpy.float32)
        targets = numpy.concatenate([stored.astype(numpy.float32) for stored in found])  # type: ignore[union-attr]
        weights = numpy.concatenate([(doc.to_array("IS_SPACE") == 0).astype(numpy.float32) for doc in docs])
        return targets, weights

    def reduce(self, layers: numpy.ndarray) -> numpy.ndarray:
        """One Doc's ``(L+1, n, D)`` layers as its ``(n, width)`` float32 targets."""
        if self.target == "average":
            return layers.mean(axis=0, dtype=numpy.float32)
        if self.target == "mix":
            return mix_layers(layers, self.layer_weights)
        n_layers, n_tokens, width = layers.shape
        return numpy.ascontiguousarray(layers.transpose(1, 0, 2)).reshape(n_tokens, n_layers * width)


def compact(target: numpy.ndarray) -> numpy.ndarray:
    """``target`` in float16 where that keeps every value finite, else in float32."""
    with numpy.errstate(over="ignore"):
        half = target.astype(numpy.float16)
    return half if numpy.isfinite(half).all() else target.astype(numpy.float32)


def check_loss(name: str, architecture: str) -> None:
    """Raise a ValueError naming the ``loss`` setting of ``architecture`` for an unknown loss."""
    if name not in LOSSES:
        raise ValueError(f"{architecture}: loss must be one of {', '.join(map(repr, LOSSES))}, not {name!r}")


def vector_loss(name: str, prediction: Any, target: Any, weights: Any, n_groups: int, xp: Any) -> Tuple[float, Any]:
    """``(loss, d_prediction)`` for ``(N, G*D)`` predictions and targets (``G`` vectors, each with
    its own distance) and ``(N,)`` weights: the loss is the weighted sum over tokens, the gradient
    the weighted mean's, so that a step does not grow with the batch."""
    check_loss(name, "vector_loss")
    n_rows, width = prediction.shape
    if target.shape != prediction.shape or weights.shape != (n_rows,) or width % n_groups:
        raise ValueError(
            f"vector_loss: prediction {prediction.shape}, target {target.shape} and weights "
            f"{weights.shape} do not fit {n_groups} groups"
        )
    p = prediction.reshape(n_rows, n_groups, width // n_groups)
    t = target.reshape(n_rows, n_groups, width // n_groups)
    loss = xp.zeros((n_rows, n_groups), dtype="float32")
    grad = xp.zeros(p.shape, dtype="float32")
    if name in ("cosine", "cosine+l2"):  # 1 - cos and its gradient by p; zero for zero targets
        p_norm = xp.maximum(xp.sqrt((p**2).sum(axis=-1)), EPSILON)
        t_norm = xp.sqrt((t**2).sum(axis=-1))
        valid = t_norm > 0
        t_norm = xp.where(valid, t_norm, 1.0)
        cos = (p * t).sum(axis=-1) / (p_norm * t_norm)
        loss += xp.where(valid, 1.0 - cos, 0.0)
        grad -= (t / (p_norm * t_norm)[..., None] - cos[..., None] * p / (p_norm**2)[..., None]) * valid[..., None]
    if name in ("l2", "cosine+l2"):
        diff = p - t
        loss += (diff**2).mean(axis=-1)
        grad += 2.0 * diff / p.shape[-1]
    token_loss = loss.mean(axis=1)
    scale = weights / max(float(weights.sum()), 1.0) / n_groups
    d_prediction = (grad * scale[:, None, None]).reshape(n_rows, width).astype("float32")
    return float((weights * token_loss).sum()), d_prediction
