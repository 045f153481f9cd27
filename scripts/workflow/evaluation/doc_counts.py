"""Per-document counts behind spaCy's NER and tagger scores, for paired tests over documents.

spaCy reports corpus-level scores only; ``paired_stats`` needs each test document's
share. These functions count, per scored ``Example``, with the same rules as spaCy's scorers,
so that the counts summed over the documents give spaCy's ``ents_f`` and ``tag_acc`` back:

* NER (``spacy.scorer.get_ner_prf``): ``tp, fp, fn``; an entity matches on exact span and
  label; a predicted entity over gold tokens with missing annotation counts neither way; a
  document without entity annotation counts nothing.
* tagger (``Scorer.score_token_attr``): ``correct, total, predicted``: predicted tokens that
  align to exactly one gold token with a tag (whitespace tokens skipped) are ``predicted``,
  those whose tag equals the gold one ``correct``; gold tokens with a tag are ``total``.
  spaCy's ``tag_acc`` is ``2 correct / (total + predicted)``, i.e. correct / total when the
  tokenization matches the gold one.
"""
from __future__ import annotations

from typing import Iterable, List, Tuple

from spacy.scorer import MISSING_VALUES
from spacy.training import Example

NER_FIELDS = ("tp", "fp", "fn")
TAGGER_FIELDS = ("correct", "total", "predicted")


def ner_counts(example: Example) -> Tuple[int, int, int]:
    """``(tp, fp, fn)`` of one document."""
    gold_doc, pred_doc = example.reference, example.predicted
    if not gold_doc.has_annotation("ENT_IOB"):
        return 0, 0, 0
    golds = {(ent.label_, ent.start, ent.end) for ent in gold_doc.ents}
    align = example.alignment.x2y
    tp = fp = 0
    for ent in pred_doc.ents:
        indices = align[ent.start:ent.end]
        if not len(indices):
            continue
        if any(token.ent_iob == 0 for token in gold_doc[indices[0]:indices[-1] + 1]):
            continue  # over unannotated gold tokens: neither right nor wrong
        key = (ent.label_, int(indices[0]), int(indices[-1]) + 1)
        if key in golds:
            tp += 1
            golds.remove(key)
        else:
            fp += 1
    return tp, fp, len(golds)


def tagger_counts(example: Example, attr: str = "tag") -> Tuple[int, int, int]:
    """``(correct, total, predicted)`` of one document on a token attribute (``tag``).

    Sets of ``(gold token, value)`` as spaCy builds them: two predicted tokens inside one gold
    token with the same value count once.
    """
    gold_doc, pred_doc = example.reference, example.predicted
    gold_values, missing = set(), set()
    for i, token in enumerate(gold_doc):
        value = getattr(token, attr)
        if value in MISSING_VALUES:
            missing.add(i)
        else:
            gold_values.add((i, value))
    x2y = example.alignment.x2y
    predicted_values = set()
    for token in pred_doc:
        if token.orth_.isspace() or x2y.lengths[token.i] != 1:
            continue
        gold_i = int(x2y[token.i][0])
        if gold_i not in missing:
            predicted_values.add((gold_i, getattr(token, attr)))
    return len(predicted_values & gold_values), len(gold_values), len(predicted_values)


def counts_of(task: str, examples: Iterable[Example]) -> List[Tuple[int, int, int]]:
    """One row of counts per example, in order: NER for ``task == "ner"``, else the tagger's."""
    count = ner_counts if task == "ner" else tagger_counts
    return [count(example) for example in examples]


def fields_of(task: str) -> Tuple[str, ...]:
    return NER_FIELDS if task == "ner" else TAGGER_FIELDS
