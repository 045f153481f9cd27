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
  ``cats_micro_f`` is then correct / total (accuracy).

The rows of every task are summed per source document where the Docs name one
(``user_data[key]`` for a key of ``GROUP_KEYS``: a Brown file whose paragraphs are the Docs, a
CoNLL-2003 news story whose sentences are), so that the paired tests resample whole documents:
the paragraphs of one file, or the sentences of one story sharing its entities, are not
independent. Docs that name none (a tweet, a Brown sentence of the POS corpus) count alone.
"""

from __future__ import annotations

from typing import Iterable, List, Tuple

from spacy.scorer import MISSING_VALUES
from spacy.training import Example

NER_FIELDS = ("tp", "fp", "fn")
TAGGER_FIELDS = ("correct", "total", "predicted")
TEXTCAT_FIELDS = ("correct", "total")
# the user_data keys naming a Doc's source document: a Brown file (the genre corpus), a
# CoNLL-2003 document (datasets.conll.DOCUMENT_KEY)
GROUP_KEYS = ("brown_file", "conll_document")


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


def group_of(example: Example, index: int) -> tuple:
    """The source document of an example's Doc (its first ``GROUP_KEYS`` entry), or the Doc
    itself (by ``index``) when it names none."""
    user_data = example.reference.user_data
    for key in GROUP_KEYS:
        if key in user_data:
            return (key, user_data[key])
    return ("doc", index)


def grouped(rows: List[Tuple[int, ...]], examples: List[Example]) -> List[Tuple[int, ...]]:
    """Rows summed per source document (``group_of``), in order of first appearance."""
    sums: dict = {}
    for index, (row, example) in enumerate(zip(rows, examples)):
        key = group_of(example, index)
        total = sums.get(key)
        sums[key] = row if total is None else tuple(a + b for a, b in zip(total, row))
    return list(sums.values())


def counts_of(task: str, examples: Iterable[Example]) -> List[Tuple[int, ...]]:
    """One row of counts per source document (``grouped``), in order: NER's for ``task ==
    "ner"``, the text classifier's for ``"textcat"``, else the tagger's."""
    count = {"ner": ner_counts, "textcat": textcat_counts}.get(task, tagger_counts)
    examples = list(examples)
    return grouped([count(example) for example in examples], examples)


def fields_of(task: str) -> Tuple[str, ...]:
    return {"ner": NER_FIELDS, "textcat": TEXTCAT_FIELDS}.get(task, TAGGER_FIELDS)
