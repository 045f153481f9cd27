"""The config blocks of every trainable spaCy component that can read ELMo features.

Each block holds what differs from the factory's own defaults (spaCy fills in the rest, and
its models are spaCy's own); :mod:`.training_config` adds the ``spacy_elmo.ElmoTok2Vec.v1``
tok2vec. ``textcat`` and ``textcat_multilabel`` pool the token vectors (mean and max,
``spacy.TextCatReduce.v1``) instead of adding a bag-of-words model, so that the comparison with
and without ELMo is one of token vectors alone.
"""

from __future__ import annotations

from typing import Any, Dict, Optional


def _pooled_textcat(exclusive_classes: bool) -> Dict[str, Any]:
    return {
        "model": {
            "@architectures": "spacy.TextCatReduce.v1",
            "exclusive_classes": exclusive_classes,
            "use_reduce_first": False,
            "use_reduce_last": False,
            "use_reduce_max": True,
            "use_reduce_mean": True,
        }
    }


#: factory -> its settings beyond spaCy's defaults
TASK_MODELS: Dict[str, Dict[str, Any]] = {
    "ner": {},
    "tagger": {},
    "parser": {"model": {"hidden_width": 128, "maxout_pieces": 3}},
    "textcat": _pooled_textcat(True),
    "textcat_multilabel": _pooled_textcat(False),
    "spancat": {},
    "morphologizer": {"label_smoothing": 0.05},
    "senter": {},
    "trainable_lemmatizer": {},
}

#: The listener's ``layer_norm`` per component: for ``ner`` and ``tagger`` as the project's dev
#: split chose it (configs/*_elmo.cfg say how); the listener's default elsewhere.
LAYER_NORM: Dict[str, bool] = {"ner": True}

_RULE_BASED = "is rule-based: it has no model that could read ELMo features"

#: Why a known spaCy factory gets no ELMo listener.
_REFUSALS: Dict[str, str] = {
    "tok2vec": "is spaCy's shared embedding layer: the elmo component and each component's own "
    "ElmoTok2Vec take its place, so list the components that should read ELMo",
    "lemmatizer": "is the rule-based (lookup table) lemmatizer; the trained one is 'trainable_lemmatizer'",
    "entity_linker": "needs a knowledge base that init-config cannot build: give its "
    "model.tok2vec a spacy_elmo.ElmoTok2Vec.v1 by hand",
    "span_finder": "has no ELMo config here yet: give its model.tok2vec a spacy_elmo.ElmoTok2Vec.v1 by hand",
    "transformer": "is a transformer: it does not read ELMo features",
    "curated_transformer": "is a transformer: it does not read ELMo features",
    **dict.fromkeys(
        (
            "sentencizer",
            "entity_ruler",
            "span_ruler",
            "attribute_ruler",
            "doc_cleaner",
            "merge_entities",
            "merge_noun_chunks",
            "merge_subtokens",
            "token_splitter",
        ),
        _RULE_BASED,
    ),
}


def refusal(factory: str) -> Optional[str]:
    """Why ``factory`` cannot be given an ELMo listener here, or ``None`` if it can."""
    if factory in TASK_MODELS:
        return None
    return f"'{factory}' {_REFUSALS.get(factory, 'is not a spaCy component that init-config knows')}"
