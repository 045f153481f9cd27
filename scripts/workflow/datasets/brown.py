"""Brown corpus -> spaCy DocBin files for POS tagging (the ``preprocess`` step).

Input: the 500 Brown files (``ca01`` .. ``cr09``, one sentence per non-blank
line, ``word/tag`` tokens, Latin-1) in ``assets/brown``.

Output (in ``corpus/pos`` by default), one Doc per sentence:

* ``train.spacy``, ``dev.spacy``, ``test.spacy``
* ``train_<N>.spacy`` with the first N training sentences (``--limit-train``)
* ``stats.json``: sentence/word counts and UPOS distribution per split

``token.tag_`` and ``token.pos_`` both hold the token's Universal POS tag (UPOS, see
``brown_upos``): spaCy's ``tagger`` learns ``tag_``, and the project's taggers are meant to
predict UPOS, not the ~470 raw Brown tag strings. The raw Brown tags are not kept.

Split rule (document level, deterministic, stratified over the 15 genres):
the files are sorted by name and numbered k = 0..499; file k goes to *dev*
if k % 10 == 8, to *test* if k % 10 == 9, and to *train* otherwise, i.e.
400 / 50 / 50 files (80/10/10).

The PTB-style quote tokens ````` and ``''`` are written as ``"``, the form
spaCy's tokenizer produces (UPOS PUNCT).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from . import output
from .brown_upos import brown_to_upos, sentence_upos

BROWN_FILE_RE = re.compile(r"^c[a-r]\d\d$")
SPLITS = ("train", "dev", "test")
DOCBIN_ATTRS = ("ORTH", "TAG", "POS", "SENT_START")
QUOTE_WORDS = {"``": '"', "''": '"'}

Sentence = List[Tuple[str, str]]


def brown_files(brown_dir: Path) -> List[Path]:
    """The corpus files of a Brown directory, sorted by name."""
    return sorted(
        (p for p in Path(brown_dir).iterdir() if p.is_file() and BROWN_FILE_RE.match(p.name)),
        key=lambda p: p.name,
    )


def split_of(index: int) -> str:
    """Split of the index-th file (0-based, in name order)."""
    if index % 10 == 8:
        return "dev"
    if index % 10 == 9:
        return "test"
    return "train"


def files_by_split(brown_dir: Path) -> Dict[str, List[Path]]:
    result: Dict[str, List[Path]] = {s: [] for s in SPLITS}
    for i, path in enumerate(brown_files(brown_dir)):
        result[split_of(i)].append(path)
    return result


def normalize_word(word: str) -> str:
    return QUOTE_WORDS.get(word, word)


def read_brown_file(path: Path, problems: Optional[Counter] = None) -> Iterator[Sentence]:
    """Yield the sentences of one Brown file as (word, tag) lists.

    A token without a ``/`` is skipped and counted in ``problems``.
    """
    for paragraph in read_brown_paragraphs(path, problems):
        yield from paragraph


def read_brown_paragraphs(path: Path, problems: Optional[Counter] = None) -> Iterator[List[Sentence]]:
    """Yield the paragraphs of one Brown file (blank lines part them), each a list of sentences."""
    text = Path(path).read_bytes().decode("latin-1")
    paragraph: List[Sentence] = []
    for line in text.splitlines():
        if not line.strip():
            if paragraph:
                yield paragraph
            paragraph = []
            continue
        sentence = _parse_sentence(line, problems)
        if sentence:
            paragraph.append(sentence)
    if paragraph:
        yield paragraph


def _parse_sentence(line: str, problems: Optional[Counter]) -> Sentence:
    sentence: Sentence = []
    for token in line.split():
        word, sep, tag = token.rpartition("/")
        if not sep or not word or not tag:
            if problems is not None:
                problems["token without word/tag"] += 1
            continue
        sentence.append((normalize_word(word), tag.lower()))
    return sentence


def iter_split_sentences(
    brown_dir: Path, splits: Sequence[str], problems: Optional[Counter] = None
) -> Iterator[Sentence]:
    """Sentences of the given splits, in file-name order."""
    wanted = set(splits)
    for i, path in enumerate(brown_files(brown_dir)):
        if split_of(i) in wanted:
            yield from read_brown_file(path, problems)


def make_doc(vocab, sentence: Sentence):
    """One sentence as a Doc with UPOS in both ``tag_`` (what the tagger learns) and ``pos_``."""
    from spacy.tokens import Doc

    words = [w for w, _ in sentence]
    upos = sentence_upos(t for _, t in sentence)
    spaces = [True] * len(words)
    spaces[-1] = False
    sent_starts = [True] + [False] * (len(words) - 1)
    return Doc(vocab, words=words, spaces=spaces, tags=upos, pos=upos, sent_starts=sent_starts)


def write_docbin(docs, path: Path) -> None:
    output.write_docbin(docs, path, DOCBIN_ATTRS)


def convert(brown_dir: Path, output_dir: Path, limit_train: Sequence[int] = ()) -> dict:
    """Convert the corpus; returns the statistics written to stats.json."""
    from spacy.vocab import Vocab
    from wasabi import msg

    brown_dir, output_dir = Path(brown_dir), Path(output_dir)
    if not brown_dir.is_dir():
        msg.fail(f"Brown directory not found: {brown_dir}", exits=1)
    groups = files_by_split(brown_dir)
    n_files = sum(len(v) for v in groups.values())
    if n_files == 0:
        msg.fail(f"No Brown files (ca01 .. cr09) in {brown_dir}", exits=1)
    vocab = Vocab()  # no Language: DocBins only store strings
    problems: Counter = Counter()
    stats: dict = {"split_rule": "file k (sorted by name): k%10==8 dev, k%10==9 test, else train", "splits": {}}
    unmapped: Counter = Counter()
    for split in SPLITS:
        docs = []
        upos_counts: Counter = Counter()
        n_words = 0
        for path in groups[split]:
            for sentence in read_brown_file(path, problems):
                for _, tag in sentence:
                    try:
                        brown_to_upos(tag)
                    except KeyError:
                        unmapped[tag] += 1
                if unmapped:
                    continue
                doc = make_doc(vocab, sentence)
                upos_counts.update(t.pos_ for t in doc)
                n_words += len(doc)
                docs.append(doc)
        if unmapped:
            msg.fail(f"Unmapped Brown tags: {dict(unmapped.most_common(20))}", exits=1)
        write_docbin(docs, output_dir / f"{split}.spacy")
        stats["splits"][split] = {
            "files": len(groups[split]),
            "sentences": len(docs),
            "words": n_words,
            "upos": dict(upos_counts.most_common()),
        }
        msg.good(
            f"{split}: {len(groups[split])} files, {len(docs)} sentences, "
            f"{n_words} words -> {output_dir / (split + '.spacy')}"
        )
        if split == "train":
            output.write_train_subsets(
                docs, output_dir, limit_train, DOCBIN_ATTRS, stats, _subset_stats, unit="sentences"
            )
    return output.finish_stats(stats, problems, output_dir, "Skipped malformed tokens")


def _subset_stats(docs: Sequence) -> dict:
    return {"sentences": len(docs), "words": sum(len(doc) for doc in docs)}
