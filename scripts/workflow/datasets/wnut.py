"""WNUT-16 NER training set -> spaCy DocBin files (the ``preprocess`` step).

Input: ``assets/wnut16/ner.txt``, one ``token<TAB>BIO-tag`` per line and an
empty (or whitespace-only) line after each tweet.

Output (in ``corpus/ner`` by default), one Doc per tweet with ``doc.ents``
set from the BIO tags (labels: the 10 WNUT types, kept as written:
company, facility, geo-loc, movie, musicartist, other, person, product,
sportsteam, tvshow):

* ``train.spacy``, ``dev.spacy``, ``test.spacy``
* ``train_<N>.spacy`` with the first N training tweets (``--limit-train``)
* ``stats.json``: tweet/token/entity counts per split

Split rule (deterministic, 70/10/20, interleaved so that every part of the
file is represented): tweets are numbered i = 0, 1, ... in file order;
tweet i goes to *dev* if i % 10 == 7, to *test* if i % 10 is 8 or 9, and to
*train* otherwise.

Cross-validation (``--folds K``, the ``tweets`` workflow) writes instead
``fold{k}/{train,dev,test}.spacy`` for k = 0 .. K-1 and ``stats.json``: fold k's
*test* split is the tweets with i % K == k, so every tweet is tested in exactly
one fold; the other tweets, in file order, go to *dev* when their position j
among them has j % 8 == 7 and to *train* otherwise. With K = 5 that is 70/10/20
of the file per fold, the proportions of the single split (``cv_split_of``).

Malformed input is repaired or skipped, counted, and reported as a warning:
a line without a tab is split on its last run of whitespace; a line whose
tag is missing or not O/B-TYPE/I-TYPE, or with more than two fields, is
read with tag O (the token is kept); an unknown entity type becomes O; an
I- tag that does not continue an entity of the same type starts one (B-);
whitespace inside a token becomes ``_``.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from . import output

WNUT_LABELS = (
    "company",
    "facility",
    "geo-loc",
    "movie",
    "musicartist",
    "other",
    "person",
    "product",
    "sportsteam",
    "tvshow",
)
SPLITS = ("train", "dev", "test")
DOCBIN_ATTRS = ("ORTH", "ENT_IOB", "ENT_TYPE")
SPLIT_RULE = "tweet i (file order): i%10==7 dev, i%10 in (8,9) test, else train"

Sentence = List[Tuple[str, str]]


CV_DEV_EVERY = 8  # of the tweets outside a fold's test split, every 8th is dev
CV_SPLIT_RULE = "fold k: test i%K==k; of the others (position j in file order) dev j%8==7, else train"


def cv_split_of(index: int, fold: int, n_folds: int, rest_position: int) -> str:
    """Where tweet ``index`` goes in ``fold`` of ``n_folds``; ``rest_position`` counts the tweets
    before it (in file order) outside the fold's test split."""
    if index % n_folds == fold:
        return "test"
    return "dev" if rest_position % CV_DEV_EVERY == CV_DEV_EVERY - 1 else "train"


def split_of(index: int) -> str:
    rest = index % 10
    if rest == 7:
        return "dev"
    if rest >= 8:
        return "test"
    return "train"


def _parse_line(line: str, problems: Counter) -> Tuple[str, str]:
    fields = line.split("\t")
    if len(fields) == 1:
        parts = line.rsplit(None, 1)
        problems["line without tab"] += 1
        fields = parts if len(parts) == 2 else [line.strip(), "O"]
    elif len(fields) > 2:
        problems["line with more than two fields"] += 1
        fields = [fields[0], "O"]
    word, tag = fields[0].strip(), fields[1].strip()
    if not word:
        problems["empty token"] += 1
        word = "_"
    if re.search(r"\s", word):
        problems["whitespace inside token"] += 1
        word = re.sub(r"\s+", "_", word)
    if tag != "O":
        prefix, _, label = tag.partition("-")
        if prefix not in ("B", "I") or not label:
            problems["invalid tag"] += 1
            tag = "O"
        elif label not in WNUT_LABELS:
            problems[f"unknown entity type {label!r}"] += 1
            tag = "O"
    return word, tag


def _repair_bio(tags: List[str], problems: Counter) -> List[str]:
    fixed = []
    prev = "O"
    for tag in tags:
        if tag.startswith("I-") and prev[2:] != tag[2:]:
            problems["I- tag without B-"] += 1
            tag = "B-" + tag[2:]
        fixed.append(tag)
        prev = tag
    return fixed


def read_wnut(path: Path, problems: Optional[Counter] = None) -> Iterator[Sentence]:
    """Yield the tweets of a WNUT file as (word, BIO tag) lists."""
    if problems is None:
        problems = Counter()
    sentence: Sentence = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\r\n")
            if not line.strip():
                if sentence:
                    yield _finish(sentence, problems)
                sentence = []
                continue
            sentence.append(_parse_line(line, problems))
    if sentence:
        yield _finish(sentence, problems)


def _finish(sentence: Sentence, problems: Counter) -> Sentence:
    tags = _repair_bio([t for _, t in sentence], problems)
    return [(w, t) for (w, _), t in zip(sentence, tags)]


def make_doc(vocab, sentence: Sentence):
    from spacy.tokens import Doc

    words = [w for w, _ in sentence]
    spaces = [True] * len(words)
    spaces[-1] = False
    return Doc(vocab, words=words, spaces=spaces, ents=[t for _, t in sentence])


def write_docbin(docs, path: Path) -> None:
    output.write_docbin(docs, path, DOCBIN_ATTRS)


def _split_stats(docs) -> dict:
    labels = Counter(ent.label_ for doc in docs for ent in doc.ents)
    return {
        "sentences": len(docs),
        "tokens": sum(len(d) for d in docs),
        "entities": sum(labels.values()),
        "labels": dict(sorted(labels.items())),
    }


def convert_folds(input_path: Path, output_dir: Path, n_folds: int) -> dict:
    """The cross-validation splits (``CV_SPLIT_RULE``): ``fold{k}/{train,dev,test}.spacy`` and
    ``stats.json``; returns the stats."""
    from spacy.vocab import Vocab
    from wasabi import msg

    input_path, output_dir = Path(input_path), Path(output_dir)
    if not input_path.is_file():
        msg.fail(f"WNUT file not found: {input_path}", exits=1)
    if n_folds < 2:
        raise ValueError(f"cross-validation needs 2 folds or more, got {n_folds}")
    problems: Counter = Counter()
    vocab = Vocab()
    docs = [make_doc(vocab, sentence) for sentence in read_wnut(input_path, problems)]
    if len(docs) < n_folds:
        msg.fail(f"{input_path}: {len(docs)} tweets, fewer than {n_folds} folds", exits=1)
    stats: dict = {"split_rule": CV_SPLIT_RULE, "folds": n_folds, "tweets": len(docs), "splits": {}}
    for fold in range(n_folds):
        parts: Dict[str, list] = {s: [] for s in SPLITS}
        rest = 0
        for index, doc in enumerate(docs):
            split = cv_split_of(index, fold, n_folds, rest)
            rest += split != "test"
            parts[split].append(doc)
        for split in SPLITS:
            write_docbin(parts[split], output_dir / f"fold{fold}" / f"{split}.spacy")
            stats["splits"][f"fold{fold}/{split}"] = _split_stats(parts[split])
        sizes = ", ".join(f"{split} {len(parts[split])}" for split in SPLITS)
        msg.good(f"fold {fold}: {sizes} tweets -> {output_dir / f'fold{fold}'}")
    return output.finish_stats(stats, problems, output_dir, "Repaired/skipped malformed input")


def convert(input_path: Path, output_dir: Path, limit_train: Sequence[int] = ()) -> dict:
    from spacy.vocab import Vocab
    from wasabi import msg

    input_path, output_dir = Path(input_path), Path(output_dir)
    if not input_path.is_file():
        msg.fail(f"WNUT file not found: {input_path}", exits=1)
    vocab = Vocab()
    problems: Counter = Counter()
    docs: Dict[str, list] = {s: [] for s in SPLITS}
    for i, sentence in enumerate(read_wnut(input_path, problems)):
        docs[split_of(i)].append(make_doc(vocab, sentence))
    total = sum(len(v) for v in docs.values())
    if total == 0:
        msg.fail(f"No sentences in {input_path}", exits=1)
    msg.info(f"WNUT-16: {total} tweets; split 70/10/20 by rule: {SPLIT_RULE}")
    stats: dict = {"split_rule": SPLIT_RULE, "splits": {}}
    for split in SPLITS:
        write_docbin(docs[split], output_dir / f"{split}.spacy")
        stats["splits"][split] = _split_stats(docs[split])
        s = stats["splits"][split]
        msg.good(
            f"{split}: {s['sentences']} tweets, {s['tokens']} tokens, "
            f"{s['entities']} entities -> {output_dir / (split + '.spacy')}"
        )
    output.write_train_subsets(docs["train"], output_dir, limit_train, DOCBIN_ATTRS, stats, _split_stats, unit="tweets")
    return output.finish_stats(stats, problems, output_dir, "Repaired/skipped malformed input")
