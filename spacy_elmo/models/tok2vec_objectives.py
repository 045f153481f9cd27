"""``spacy_elmo.PretrainCharacters.v1``: spaCy's characters objective for ``spacy pretrain``, for
any tok2vec, including the one inside a ``ner`` or ``parser`` component.

Why it exists: the comparison users need before choosing ELMo is against spaCy's own
pretraining at the same cost, on their own NER or tagger config. spaCy's
``spacy.PretrainCharacters.v1`` (3.8) puts ``list2array`` in front of its output layer, so it
needs a tok2vec that returns one array per Doc. The ``tok2vec`` reference of spaCy's
transition-based models (``ner``, ``parser``) returns one array for the whole batch instead
(the tok2vec chained with ``list2array`` and the parser's projection), and ``spacy pretrain``
stops with "Provided 'x' array should be 2-dimensional". This objective is the same masked
language model and the same loss (predict the first and last ``n_characters`` UTF-8 bytes of
each token, from spaCy's own functions); only its first layer accepts both outputs: a list of
per-Doc arrays is concatenated in Doc order, one array is taken as it is. The weights
``spacy pretrain`` writes are then the reference named in ``[pretraining] layer``, which
``[initialize] init_tok2vec`` loads back at training time.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable, List, Tuple, Union

from spacy.ml.models.multi_task import build_masked_language_model, get_characters_loss
from spacy.util import registry
from thinc.api import LayerNorm, Maxout, Model, MultiSoftmax, chain
from thinc.types import Floats2d

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
