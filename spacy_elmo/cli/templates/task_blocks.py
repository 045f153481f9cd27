"""The config blocks of every trainable spaCy component that can read ELMo features.

Each block names the component's factory and a model whose ``tok2vec`` slot takes
``spacy_elmo.ElmoTok2Vec.v1`` (written by :mod:`.training_config`); spaCy fills the rest.
The models are spaCy's own architectures, as ``spacy init config`` writes them, except that
``textcat`` and ``textcat_multilabel`` pool the token vectors (mean and max,
``spacy.TextCatReduce.v1``) instead of adding a bag-of-words model: the comparison with and
without ELMo is then a comparison of token vectors alone.

A component that cannot take ELMo features is refused with the reason (:func:`refusal`).
"""

from __future__ import annotations

from typing import Dict, Optional

_TAGGER_MODEL = """
[components.$name.model]
@architectures = "spacy.Tagger.v2"
nO = null
normalize = false
"""


def _parser_model(state_type: str, hidden_width: int, maxout_pieces: int) -> str:
    return f"""
[components.$name.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "{state_type}"
extra_state_tokens = false
hidden_width = {hidden_width}
maxout_pieces = {maxout_pieces}
use_upper = true
nO = null
"""


def _textcat_model(exclusive_classes: bool) -> str:
    return f"""
[components.$name.model]
@architectures = "spacy.TextCatReduce.v1"
exclusive_classes = {str(exclusive_classes).lower()}
use_reduce_first = false
use_reduce_last = false
use_reduce_max = true
use_reduce_mean = true
nO = null
"""


#: factory -> its component block and model block (``$name``: the component's name).
TASK_MODELS: Dict[str, str] = {
    "ner": """
[components.$name]
factory = "ner"
moves = null
update_with_oracle_cut_size = 100
incorrect_spans_key = null
"""
    + _parser_model("ner", 64, 2),
    "tagger": """
[components.$name]
factory = "tagger"
label_smoothing = 0.0
overwrite = false
neg_prefix = "!"
"""
    + _TAGGER_MODEL,
    "parser": """
[components.$name]
factory = "parser"
moves = null
update_with_oracle_cut_size = 100
learn_tokens = false
min_action_freq = 30
"""
    + _parser_model("parser", 128, 3),
    "textcat": """
[components.$name]
factory = "textcat"
threshold = 0.0
"""
    + _textcat_model(True),
    "textcat_multilabel": """
[components.$name]
factory = "textcat_multilabel"
threshold = 0.5
"""
    + _textcat_model(False),
    "spancat": """
[components.$name]
factory = "spancat"
max_positive = null
spans_key = "sc"
threshold = 0.5

[components.$name.suggester]
@misc = "spacy.ngram_suggester.v1"
sizes = [1, 2, 3]

[components.$name.model]
@architectures = "spacy.SpanCategorizer.v1"

[components.$name.model.reducer]
@layers = "spacy.mean_max_reducer.v1"
hidden_size = 128

[components.$name.model.scorer]
@layers = "spacy.LinearLogistic.v1"
nO = null
nI = null
""",
    "morphologizer": """
[components.$name]
factory = "morphologizer"
label_smoothing = 0.05
overwrite = true
extend = false
"""
    + _TAGGER_MODEL,
    "senter": """
[components.$name]
factory = "senter"
overwrite = false
"""
    + _TAGGER_MODEL,
    "trainable_lemmatizer": """
[components.$name]
factory = "trainable_lemmatizer"
backoff = "orth"
min_tree_freq = 3
overwrite = false
top_k = 1
"""
    + _TAGGER_MODEL,
}

#: The listener's ``layer_norm`` per component: for ``ner`` and ``tagger`` as the project's dev
#: split chose it (configs/*_elmo.cfg say how); the listener's default elsewhere.
LAYER_NORM: Dict[str, str] = {"ner": "true"}

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
}
for _factory in (
    "sentencizer",
    "entity_ruler",
    "span_ruler",
    "attribute_ruler",
    "doc_cleaner",
    "merge_entities",
    "merge_noun_chunks",
    "merge_subtokens",
    "token_splitter",
):
    _REFUSALS[_factory] = _RULE_BASED


def refusal(factory: str) -> Optional[str]:
    """Why ``factory`` cannot be given an ELMo listener here, or ``None`` if it can."""
    if factory in TASK_MODELS:
        return None
    reason = _REFUSALS.get(factory, "is not a spaCy component that init-config knows")
    return f"'{factory}' {reason}"
