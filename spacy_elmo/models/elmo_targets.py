"""What ``spacy_elmo.PretrainElmo.v1`` teaches a tok2vec: the frozen biLM's vectors per token
(``target``: their average, a given mix, or every layer), zero with weight 0 for whitespace.

The biLM is read when the objective is initialised, never when a config is resolved (``spacy
train`` resolves the same block without the file), and lives outside the pretraining model,
so no optimizer sees it and ``spacy pretrain`` never writes it. It is frozen, so each Doc's
target is kept for the next epochs, in float16 where it fits (its rounding is far below what a
tok2vec learns; the rounded target is used cached or not, so the budget changes nothing learned).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy
from spacy.tokens import Doc
from thinc.api import Model

from ..embedding.mix import mix_layers
from ..formats.resolve import messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM
from .doc_layers import build_bilm_model, get_bilm, set_bilm
from .feature_cache import FeatureCache, FeatureCacheStats, doc_key

TARGETS = ("average", "layers", "mix")
ARCHITECTURE = "spacy_elmo.PretrainElmo.v1"
#: How errors about the biLM's path start: the setting that gave it.
WEIGHTS_MESSAGES = messages_for(f"{ARCHITECTURE} weights")

PathLike = Union[str, Path]


def check_target_settings(target: str, layer_weights: Optional[Sequence[float]], cache_mb: float) -> None:
    """An error naming the setting unless ``target``, ``layer_weights`` and ``cache_mb`` are
    usable (their count against the biLM's layers is checked when it is loaded)."""
    if target not in TARGETS:
        raise ValueError(f"{ARCHITECTURE}: target must be one of {', '.join(map(repr, TARGETS))}, not {target!r}")
    if target == "mix":
        if layer_weights is None or len(layer_weights) == 0:
            raise ValueError(f'{ARCHITECTURE}: target = "mix" needs layer_weights (one weight per biLM layer)')
        values = numpy.asarray(layer_weights, dtype=numpy.float64)
        if not numpy.isfinite(values).all() or not values.any():
            raise ValueError(
                f"{ARCHITECTURE}: layer_weights must be finite and not all zero, not {list(layer_weights)}"
            )
    elif layer_weights is not None:
        raise ValueError(f'{ARCHITECTURE}: layer_weights is only used with target = "mix", not with {target!r}')
    if not cache_mb >= 0:
        raise ValueError(f"{ARCHITECTURE}: cache_mb must be 0 or more, not {cache_mb}")


class ElmoTargets:
    """Docs in, ``(targets, weights)`` out: float32 ``(n_tokens, width)`` and ``(n_tokens,)``."""

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
                f"{ARCHITECTURE}: weights is not set: give the biLM to distil (the shipped configs: "
                "--paths.elmo PATH, a spacy-elmo model directory, an AllenNLP directory or an .hdf5 "
                "with options.json beside it)"
            )
        bilm = load_bilm(self.weights, messages=WEIGHTS_MESSAGES, without_softmax=True)
        bilm.requires_grad_(False)
        n_layers = bilm.config.n_output_layers
        if self.layer_weights is not None and len(self.layer_weights) != n_layers:
            raise ValueError(
                f"{ARCHITECTURE}: layer_weights has {len(self.layer_weights)} values but the biLM at "
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
