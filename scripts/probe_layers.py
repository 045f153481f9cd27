"""A listener that feeds a task exactly one biLM layer: ELMo with fixed one-hot layer weights.

``spacy_elmo_project.ElmoSingleLayer.v1`` takes the arguments of ``spacy_elmo.ElmoListener.v1``
plus ``layer`` (0 = char-CNN, j = LSTM layer j) and outputs that layer unscaled, in place of
the learned softmax mix: the probe of "which layer serves which task". Importing this module
registers it; ``train_probes.py`` does that before training.
"""
from __future__ import annotations

from typing import Callable, List, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.types import Floats2d, Floats3d

from spacy_elmo.models.listener import ElmoLayersListener

ARCHITECTURE = "spacy_elmo_project.ElmoSingleLayer.v1"


@registry.architectures(ARCHITECTURE)
def build_single_layer_listener(
    layer: int,
    upstream: str = "*",
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    grad_factor: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """The upstream ``elmo`` layers, reduced to layer ``layer``.

    layer_norm and layer_dropout are accepted so a listener block can be switched to this
    architecture by changing ``@architectures`` alone; a single fixed layer has nothing to
    normalize across or drop.
    """
    if layer < 0:
        raise ValueError(f"layer must be 0 (char-CNN) or an LSTM layer number, not {layer}")
    return chain(ElmoLayersListener(upstream, grad_factor), select_layer(layer))


def select_layer(layer: int) -> Model[List[Floats3d], List[Floats2d]]:
    return Model("elmo_single_layer", _forward, attrs={"layer": layer})


def _forward(model: Model, X: List[Floats3d], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    layer = model.attrs["layer"]
    if X and layer >= X[0].shape[0]:
        raise ValueError(f"layer {layer} asked for, but the biLM has layers 0..{X[0].shape[0] - 1}")
    shapes = [x.shape for x in X]

    def backprop(dY: List[Floats2d]) -> List[Floats3d]:
        dX = []
        for shape, dy in zip(shapes, dY):
            d = model.ops.alloc3f(*shape)
            d[layer] = dy
            dX.append(d)
        return dX

    return [x[layer] for x in X], backprop
