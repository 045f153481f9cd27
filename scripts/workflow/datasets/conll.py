"""CoNLL-2003 English NER -> spaCy DocBin files (the ``preprocess-conll`` step).

Input: the three files of the shared task (``train.txt``, ``valid.txt``, ``test.txt`` in
``assets/conll2003``), one ``token POS chunk NER`` line per token (space-separated; the POS and
chunk columns are automatic and not read), an empty line after each sentence, and a
``-DOCSTART-`` line before each document. The tags are BIO2 over the types PER, LOC, ORG and MISC.

Output (in ``corpus/conll`` by default), one Doc per sentence with ``doc.ents`` from the tags and
its document's name (``train-0042``: split and number in file order) in
``user_data["conll_document"]``, so that the evaluation can count per document (the sentences of
one news story share its entities):

* ``train.spacy``: the whole training split (the ``conll-full`` workflow);
* ``train_small.spacy``: the low-resource training set, a fixed subsample of whole training
  documents (``sample_documents``: the documents shuffled with ``--seed``, taken until they hold
  ``--small-sentences`` sentences), drawn before any score is seen;
* ``unlabeled.spacy`` and ``unlabeled.txt``: the rest of the training split (the documents
  outside ``train_small``), labels removed: Docs with no entity annotation, and the same
  sentences as text, one per line with the tokens separated by spaces (the pretraining text's
  format);
* ``dev.spacy`` (the whole ``valid.txt``) and ``test.spacy`` (the whole ``test.txt``);
* ``stats.json``: documents, sentences, tokens and entities per output, and the sample rule.

Malformed input is an error naming the file and the line (the fetch step checks the files'
checksums, so this guards a user's own files): a line without four space-separated fields, a tag
that is not ``O``/``B-TYPE``/``I-TYPE`` of the four types, or an ``I-`` tag that continues no
entity of its type (BIO2 has none).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

from . import left_out, output

LABELS = ("LOC", "MISC", "ORG", "PER")
FILES = {"train": "train.txt", "dev": "valid.txt", "test": "test.txt"}
DOCUMENT_KEY = "conll_document"  # the user_data key naming a Doc's document (doc_counts groups by it)
DOCBIN_ATTRS = ("ORTH", "ENT_IOB", "ENT_TYPE")
DOCSTART = "-DOCSTART-"
SAMPLE_RULE = "training documents shuffled with random.Random(seed), taken in that order until they hold n sentences"

Sentence = List[Tuple[str, str]]


class ConllFormatError(ValueError):
    """A line of a CoNLL file that is not what the format says, with the file and line."""


@dataclass
class Document:
    """One news story: its name and its sentences as (token, BIO tag) lists."""

    name: str
    sentences: List[Sentence] = field(default_factory=list)


def _tag(tag: str, previous: str, where: str) -> str:
    if tag == "O":
        return tag
    prefix, _, label = tag.partition("-")
    if prefix not in ("B", "I") or label not in LABELS:
        raise ConllFormatError(f"{where}: tag {tag!r} is not O, B-TYPE or I-TYPE with TYPE one of {', '.join(LABELS)}")
    if prefix == "I" and previous[2:] != label:
        raise ConllFormatError(f"{where}: {tag} continues no {label} entity (BIO2 starts each one with B-)")
    return tag


def read_documents(path: Path, split: str) -> Iterator[Document]:
    """The documents of one CoNLL file, named ``SPLIT-NNNN`` in file order (from 0). Sentences
    before the first ``-DOCSTART-`` line form a document of their own; documents without a
    sentence are skipped."""
    number = 0
    document = Document(f"{split}-{number:04d}")
    sentence: Sentence = []
    previous = "O"
    with open(path, encoding="utf-8") as lines:
        for line_number, raw in enumerate(lines, 1):
            line = raw.rstrip("\r\n")
            where = f"{path}, line {line_number}"
            if not line.strip():
                if sentence:
                    document.sentences.append(sentence)
                sentence, previous = [], "O"
                continue
            if line.startswith(DOCSTART):
                if sentence:
                    document.sentences.append(sentence)
                    sentence, previous = [], "O"
                if document.sentences:
                    yield document
                    number += 1
                document = Document(f"{split}-{number:04d}")
                continue
            fields = line.split(" ")
            if len(fields) != 4 or not all(fields):
                raise ConllFormatError(
                    f"{where}: expected 4 space-separated fields (token POS chunk NER), got {line!r}"
                )
            previous = _tag(fields[3], previous, where)
            sentence.append((fields[0], previous))
    if sentence:
        document.sentences.append(sentence)
    if document.sentences:
        yield document


def sample_documents(documents: Sequence[Document], n_sentences: int, seed: int) -> List[int]:
    """Indices (in file order) of whole documents holding at least ``n_sentences`` sentences, or
    all of them if they hold fewer: the documents shuffled with ``random.Random(seed)`` and taken
    in that order until the count is reached (the last one taken may pass it)."""
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    chosen, total = [], 0
    for index in order:
        if total >= n_sentences:
            break
        chosen.append(index)
        total += len(documents[index].sentences)
    return sorted(chosen)


def make_doc(vocab, sentence: Sentence, document: str, labeled: bool = True):
    """One sentence as a Doc (a space after every token but the last); ``labeled`` False leaves
    its entity annotation missing."""
    from spacy.tokens import Doc

    words = [word for word, _ in sentence]
    spaces = [True] * len(words)
    spaces[-1] = False
    doc = Doc(vocab, words=words, spaces=spaces, ents=[tag for _, tag in sentence] if labeled else None)
    doc.user_data[DOCUMENT_KEY] = document
    return doc


def write_docbin(docs: Sequence, path: Path) -> None:
    """The Docs with their document names (plain strings in user_data: nothing pickled)."""
    from spacy.tokens import DocBin

    path.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, attrs=list(DOCBIN_ATTRS), store_user_data=True).to_disk(path)


def describe(documents: Sequence[Document]) -> dict:
    """Document, sentence, token and entity counts (entities per type) of some documents."""
    labels: Counter = Counter()
    for document in documents:
        for sentence in document.sentences:
            labels.update(tag[2:] for _, tag in sentence if tag.startswith("B-"))
    return {
        "documents": len(documents),
        "sentences": sum(len(d.sentences) for d in documents),
        "tokens": sum(len(s) for d in documents for s in d.sentences),
        "entities": sum(labels.values()),
        "labels": dict(sorted(labels.items())),
    }


OUTPUTS = ("train", "train_small", "unlabeled", "dev", "test")
DATASET = "conll2003"  # its name in project.yml's assets and in the leave_out variable


def write_left_out(output_dir: Path) -> None:
    """The outputs' files, empty, and the marker: the dataset was left out (``left_out``)."""
    from wasabi import msg

    for part in OUTPUTS:
        write_docbin([], output_dir / f"{part}.spacy")
    (output_dir / "unlabeled.txt").write_text("", encoding="utf-8")
    left_out.mark(output_dir, DATASET)
    output.finish_stats({"left_out": DATASET, "splits": {}}, Counter(), output_dir, "Problems")
    msg.info(f"CoNLL-2003 left out (leave_out names {DATASET}): {output_dir} holds empty corpora and {left_out.MARKER}")


def convert(input_dir: Path, output_dir: Path, small_sentences: int = 2000, seed: int = 0) -> dict:
    """Write the outputs listed in the module's docstring; returns what ``stats.json`` holds."""
    from spacy.vocab import Vocab
    from wasabi import msg

    input_dir, output_dir = Path(input_dir), Path(output_dir)
    missing = [str(input_dir / name) for name in FILES.values() if not (input_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"CoNLL-2003 file(s) not found: {', '.join(missing)} (run the fetch step)")
    splits: Dict[str, List[Document]] = {}
    for split, name in FILES.items():
        splits[split] = list(read_documents(input_dir / name, split))
        if not splits[split]:
            raise ConllFormatError(f"{input_dir / name}: no sentence")
    train = splits["train"]
    chosen = set(sample_documents(train, small_sentences, seed))
    parts: Dict[str, List[Document]] = {
        "train": train,
        "train_small": [d for i, d in enumerate(train) if i in chosen],
        "unlabeled": [d for i, d in enumerate(train) if i not in chosen],
        "dev": splits["dev"],
        "test": splits["test"],
    }
    vocab = Vocab()
    (output_dir / left_out.MARKER).unlink(missing_ok=True)
    stats: dict = {
        "sample_rule": SAMPLE_RULE,
        "small_sentences": small_sentences,
        "seed": seed,
        "train_small_documents": sorted(d.name for d in parts["train_small"]),
        "splits": {},
    }
    for part, documents in parts.items():
        labeled = part != "unlabeled"
        docs = [make_doc(vocab, s, d.name, labeled) for d in documents for s in d.sentences]
        write_docbin(docs, output_dir / f"{part}.spacy")
        counts = describe(documents)
        if not labeled:  # what the labels held is no part of what is written
            counts = {key: counts[key] for key in ("documents", "sentences", "tokens")}
        stats["splits"][part] = counts
        entities = f", {counts['entities']} entities" if labeled else ", no labels"
        msg.good(
            f"{part}: {counts['documents']} documents, {counts['sentences']} sentences, {counts['tokens']} tokens"
            f"{entities} -> {output_dir / (part + '.spacy')}"
        )
    text = output_dir / "unlabeled.txt"
    with open(text, "w", encoding="utf-8") as out:
        for document in parts["unlabeled"]:
            for sentence in document.sentences:
                out.write(" ".join(word for word, _ in sentence) + "\n")
    msg.good(f"unlabeled text: {stats['splits']['unlabeled']['sentences']} lines -> {text}")
    return output.finish_stats(stats, Counter(), output_dir, "Problems")
