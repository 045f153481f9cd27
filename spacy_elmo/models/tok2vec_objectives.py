"""Objectives for ``spacy pretrain``.

``spacy_elmo.PretrainCharacters.v1`` is spaCy's characters objective for any tok2vec: spaCy's
own needs one array per Doc, and the tok2vec of a ``ner`` or ``parser`` gives one per batch.
``spacy_elmo.PretrainElmo.v1`` distils the frozen biLM into the tok2vec: heads like those of
spaCy's vectors objective (one per layer for ``target = "layers"``) predict its vectors
(:mod:`.elmo_targets`) under the losses of :mod:`.vector_losses`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple, Union

from spacy.ml.models.multi_task import build_masked_language_model, get_characters_loss
from spacy.util import registry
from thinc.api import LayerNorm, Linear, Maxout, Model, MultiSoftmax, chain, concatenate
from thinc.types import Floats2d

from .elmo_targets import ARCHITECTURE as ELMO_OBJECTIVE
from .elmo_targets import ElmoTargets, check_target_settings
from .vector_losses import check_loss, vector_loss

if TYPE_CHECKING:
    from spacy.vocab import Vocab

TokenRows = Union[List[Floats2d], Floats2d]


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
    """Token rows -> predicted targets: one head per D-wide part of a target row, built at
    ``initialize``, when the biLM (loaded then) says how many and how wide."""

    def __init__(self, targets: ElmoTargets, hidden_size: int, maxout_pieces: int) -> None:
        init = partial(_init_heads, targets, hidden_size, maxout_pieces)
        super().__init__("elmo_heads", _heads_forward, init=init, dims={"nO": None})
        self.targets = targets

    def use_params(self, params):  # type: ignore[no-untyped-def]  # Model's, a context manager
        """``spacy pretrain`` saves the tok2vec inside this: refused while no text has reached the
        objective, as the tok2vec would be saved untrained."""
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
