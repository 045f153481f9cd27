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
* textcat with exclusive classes (``Scorer.score_cats``): ``correct, total``: Docs with a gold
  category, and those whose highest-scoring predicted category is the gold one; spaCy's
  ``cats_micro_f`` is then correct / total (accuracy). The rows are summed per source document
  (``user_data[GROUP_KEY]``, e.g. a Brown file whose paragraphs are the Docs), so that the
  paired tests resample whole documents: paragraphs of one file are not independent.
"""

from __future__ import annotations

from typing import Iterable, List, Tuple

from spacy.scorer import MISSING_VALUES
from spacy.training import Example

NER_FIELDS = ("tp", "fp", "fn")
TAGGER_FIELDS = ("correct", "total", "predicted")
TEXTCAT_FIELDS = ("correct", "total")
GROUP_KEY = "brown_file"  # the user_data key naming a Doc's source document


def ner_counts(example: Example) -> Tuple[int, int, int]:
    """``(tp, fp, fn)`` of one document."""
    gold_doc, pred_doc = example.reference, example.predicted
    if not gold_doc.has_annotation("ENT_IOB"):
        return 0, 0, 0
    golds = {(ent.label_, ent.start, ent.end) for ent in gold_doc.ents}
    align = example.alignment.x2y
    tp = fp = 0
    for ent in pred_doc.ents:
        indices = align[ent.start : ent.end]
        if not len(indices):
            continue
        if any(token.ent_iob == 0 for token in gold_doc[indices[0] : indices[-1] + 1]):
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


def textcat_counts(example: Example) -> Tuple[int, int]:
    """``(correct, total)`` of one Doc with exclusive categories."""
    gold, predicted = example.reference.cats, example.predicted.cats
    if not gold:
        return 0, 0
    gold_label = max(gold.items(), key=lambda item: item[1])[0]
    labels = set(gold)
    predicted = {label: score for label, score in predicted.items() if label in labels}
    if not predicted:
        return 0, 1
    return int(max(predicted.items(), key=lambda item: item[1])[0] == gold_label), 1


def grouped(rows: List[Tuple[int, ...]], examples: List[Example]) -> List[Tuple[int, ...]]:
    """Rows summed per source document (``GROUP_KEY``), in order of first appearance; a Doc
    without one is its own group."""
    sums: dict = {}
    for index, (row, example) in enumerate(zip(rows, examples)):
        key = example.reference.user_data.get(GROUP_KEY, ("doc", index))
        total = sums.get(key)
        sums[key] = row if total is None else tuple(a + b for a, b in zip(total, row))
    return list(sums.values())


def counts_of(task: str, examples: Iterable[Example]) -> List[Tuple[int, ...]]:
    """One row of counts per example, in order: NER for ``task == "ner"``, the text classifier's
    per source document for ``"textcat"``, else the tagger's."""
    if task == "textcat":
        examples = list(examples)
        return grouped([textcat_counts(example) for example in examples], examples)
    count = ner_counts if task == "ner" else tagger_counts
    return [count(example) for example in examples]


def fields_of(task: str) -> Tuple[str, ...]:
    return {"ner": NER_FIELDS, "textcat": TEXTCAT_FIELDS}.get(task, TAGGER_FIELDS)
