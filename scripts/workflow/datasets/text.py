"""Plain-text corpus for pretraining the ELMo bidirectional language model.

Sources, in this order:

1. the running text of the Brown TRAIN and DEV files (the split rule of
   ``brown``; the Brown TEST files are never used, so the POS
   test set stays unseen): one sentence per line, the corpus tokens joined
   by single spaces, tags stripped, PTB quotes ````/``''`` written as ``"``;
2. the State of the Union addresses (``assets/sotu/*.txt``, sorted by file
   name, i.e. chronologically): each address is tokenized with spaCy's
   English tokenizer rules and split into sentences after ``.``/``!``/``?``
   (plus any closing quotes or brackets); one sentence per line, tokens
   joined by single spaces.

Output: ``corpus/text/train.txt`` and ``corpus/text/dev.txt`` (UTF-8, one
sentence per line) and ``stats.json``. The held-out dev part is every 50th
line: output line n (0-based, counted over both sources) goes to dev.txt
when n % 50 == 49, to train.txt otherwise.

Lines longer than ``--max-sentence-words`` (default 150; 0: no limit) --
mostly flattened tables and long enumerations in the SOTU texts -- are cut
after the last ``;`` or ``:`` in the second half of the allowed length, or
else at the limit.

``--max-words N`` stops after the line that brings the total (train + dev)
to N words or more, for quick runs; as Brown comes first, a small cap gives
Brown text only.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Iterator, List, Optional, Sequence

from .brown import brown_files, iter_split_sentences

DEV_EVERY = 50
SENTENCE_END = {".", "!", "?"}
CLOSERS = {'"', "'", ")", "]", "}", "\u201d", "\u2019", "''"}


def english_tokenizer():
    """spaCy's English tokenizer, built from the language defaults.

    Built directly rather than through ``spacy.blank("en")`` so that this
    step does not load any pipeline plugins.
    """
    from spacy.lang.en import English
    from spacy.tokenizer import Tokenizer
    from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex
    from spacy.vocab import Vocab

    d = English.Defaults
    return Tokenizer(
        Vocab(),
        rules=d.tokenizer_exceptions,
        prefix_search=compile_prefix_regex(d.prefixes).search,
        suffix_search=compile_suffix_regex(d.suffixes).search,
        infix_finditer=compile_infix_regex(d.infixes).finditer,
        token_match=d.token_match,
        url_match=d.url_match,
    )


def split_sentences(tokens: Sequence[str]) -> Iterator[List[str]]:
    """Split a token list after sentence-final punctuation (and closers)."""
    sentence: List[str] = []
    i = 0
    while i < len(tokens):
        sentence.append(tokens[i])
        if tokens[i] in SENTENCE_END:
            while i + 1 < len(tokens) and (tokens[i + 1] in CLOSERS or tokens[i + 1] in SENTENCE_END):
                i += 1
                sentence.append(tokens[i])
            yield sentence
            sentence = []
        i += 1
    if sentence:
        yield sentence


def limit_length(tokens: Sequence[str], max_len: int) -> Iterator[List[str]]:
    """Cut an over-long token list into pieces of at most max_len tokens."""
    tokens = list(tokens)
    while max_len and len(tokens) > max_len:
        cut = max_len
        for j in range(max_len - 1, max_len // 2 - 1, -1):
            if tokens[j] in (";", ":"):
                cut = j + 1
                break
        yield tokens[:cut]
        tokens = tokens[cut:]
    if tokens:
        yield tokens


def sotu_lines(sotu_dir: Path, tokenizer) -> Iterator[str]:
    for path in sorted(Path(sotu_dir).glob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = " ".join(unicodedata.normalize("NFC", text).split())
        if not text:
            continue
        tokens = [t.text for t in tokenizer(text) if not t.is_space]
        for sentence in split_sentences(tokens):
            yield " ".join(sentence)


def brown_lines(brown_dir: Path) -> Iterator[str]:
    for sentence in iter_split_sentences(brown_dir, ("train", "dev")):
        yield " ".join(word for word, _ in sentence)


def _limited(lines: Iterator[str], max_len: int) -> Iterator[str]:
    for line in lines:
        for piece in limit_length(line.split(), max_len):
            yield " ".join(piece)


def build(
    sotu_dir: Optional[Path],
    brown_dir: Optional[Path],
    output_dir: Path,
    max_words: int = 0,
    max_sentence_words: int = 150,
) -> dict:
    from wasabi import msg

    output_dir = Path(output_dir)
    sources = []
    if brown_dir is not None:
        if not Path(brown_dir).is_dir() or not brown_files(brown_dir):
            msg.fail(f"No Brown files in {brown_dir}", exits=1)
        sources.append(("brown", brown_lines(brown_dir)))
    if sotu_dir is not None:
        if not Path(sotu_dir).is_dir() or not any(Path(sotu_dir).glob("*.txt")):
            msg.fail(f"No .txt files in {sotu_dir}", exits=1)
        sources.append(("sotu", sotu_lines(sotu_dir, english_tokenizer())))
    if not sources:
        msg.fail("Nothing to do: give --sotu-dir and/or --brown-dir", exits=1)
    output_dir.mkdir(parents=True, exist_ok=True)
    counts = {s: {"lines": 0, "words": 0} for s in ("train", "dev")}
    by_source = {name: {"lines": 0, "words": 0} for name, _ in sources}
    n = 0
    total_words = 0
    capped = False
    with (
        open(output_dir / "train.txt", "w", encoding="utf-8", newline="\n") as train,
        open(output_dir / "dev.txt", "w", encoding="utf-8", newline="\n") as dev,
    ):
        for name, lines in sources:
            for line in _limited(lines, max_sentence_words):
                n_words = len(line.split())
                split = "dev" if n % DEV_EVERY == DEV_EVERY - 1 else "train"
                (dev if split == "dev" else train).write(line + "\n")
                counts[split]["lines"] += 1
                counts[split]["words"] += n_words
                by_source[name]["lines"] += 1
                by_source[name]["words"] += n_words
                total_words += n_words
                n += 1
                if max_words and total_words >= max_words:
                    capped = True
                    break
            msg.good(f"{name}: {by_source[name]['lines']} lines, {by_source[name]['words']} words")
            if capped:
                msg.info(f"Stopped at --max-words {max_words}")
                break
    for split in ("train", "dev"):
        msg.good(
            f"{split}: {counts[split]['lines']} lines, {counts[split]['words']} words "
            f"-> {output_dir / (split + '.txt')}"
        )
    stats = {
        "dev_rule": f"line n: n % {DEV_EVERY} == {DEV_EVERY - 1} -> dev",
        "max_words": max_words,
        "max_sentence_words": max_sentence_words,
        "splits": counts,
        "sources": by_source,
    }
    (output_dir / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats
