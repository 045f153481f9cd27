"""The output vocabulary: ``<S>``, ``</S>``, ``<UNK>``, then words by decreasing frequency, the
order the sampled softmax's log-uniform sampler relies on."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Optional, Sequence, Union

from ..formats.native import word_list
from ..formats.regular_files import parse_json
from ..nn.words.char_ids import BOS_TOKEN, EOS_TOKEN
from .errors import ConfigError, InputError, InputNotFoundError, reading
from .output_folder import write_file

UNK_TOKEN = "<UNK>"
SPECIALS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


class Vocabulary:
    """A word list with O(1) lookups; unknown words map to ``<UNK>``."""

    def __init__(self, words: Sequence[str], counts: Optional[Sequence[int]] = None) -> None:
        words = word_list(list(words), "The vocabulary")
        missing = [s for s in SPECIALS if s not in words]
        if missing:
            raise ValueError(f"A vocabulary needs {SPECIALS}; missing {missing}")
        self.words = words
        self.counts = list(counts) if counts is not None else None
        self.index = {word: i for i, word in enumerate(words)}
        self.bos_id, self.eos_id, self.unk_id = (self.index[special] for special in SPECIALS)

    def __len__(self) -> int:
        return len(self.words)

    def framed_ids(self, sentence: Sequence[str]) -> list[int]:
        """Ids of ``<S> w1 ... wn </S>``, the targets of both directions."""
        get, unk = self.index.get, self.unk_id
        return [self.bos_id, *(get(word, unk) for word in sentence), self.eos_id]

    def digest(self) -> str:
        """What a checkpoint records of the words it predicts."""
        return hashlib.sha256(json.dumps(self.words, ensure_ascii=False).encode("utf8")).hexdigest()

    def to_disk(self, path: Union[str, Path]) -> None:
        write_file(Path(path), json.dumps(self.words, ensure_ascii=False).encode("utf8"))

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "Vocabulary":
        """A JSON list or bilm-tf's word per line (after a tab: ignored); missing specials go in front."""
        path = Path(path)
        if not path.is_file():
            raise InputNotFoundError(f"Vocabulary file not found: {path}")
        with reading(path):
            raw = path.read_bytes()
        try:
            if path.suffix == ".json":
                words = word_list(parse_json(raw, str(path), "word list"), str(path))
            else:
                lines = raw.decode("utf-8").splitlines()
                words = word_list([line.split("\t")[0] for line in lines if line.strip()], str(path), "word lines")
        except UnicodeDecodeError as err:
            raise InputError(f"{path}: the word list is not UTF-8 text (binary data at byte {err.start})") from None
        except ValueError as err:
            raise InputError(str(err)) from None
        return cls([s for s in SPECIALS if s not in words] + words)


class WordCounter:
    """Counts words in bounded memory: beyond ``max_types`` distinct words the rarest are dropped."""

    def __init__(self, max_types: int = 5_000_000) -> None:
        self.counts: Counter[str] = Counter()
        self.max_types = max_types
        self.sentences = 0
        self.tokens = 0
        self.pruned_below = 0

    def add(self, sentence: Sequence[str]) -> None:
        self.counts.update(sentence)
        self.sentences += 1
        self.tokens += len(sentence)
        if len(self.counts) > self.max_types:
            while len(self.counts) > self.max_types // 2:
                self.pruned_below += 1
                self.counts = Counter({w: c for w, c in self.counts.items() if c > self.pruned_below})


def build_vocabulary(counter: WordCounter, size: int, min_count: int = 1) -> Vocabulary:
    """The ``size`` most frequent words (ties broken alphabetically), specials included."""
    if size <= len(SPECIALS):
        raise ConfigError(f"vocab.size must be larger than {len(SPECIALS)}, not {size}")
    ranked = sorted(
        ((w, c) for w, c in counter.counts.items() if c >= min_count and w not in SPECIALS),
        key=lambda item: (-item[1], item[0]),
    )[: size - len(SPECIALS)]
    covered = sum(c for _, c in ranked)
    counts = [counter.sentences, counter.sentences, counter.tokens - covered] + [c for _, c in ranked]
    return Vocabulary(list(SPECIALS) + [w for w, _ in ranked], counts)


def with_counts(vocab: Vocabulary, counter: WordCounter) -> Vocabulary:
    """So a given word list's output layer starts from unigram frequencies (zeros train worse early)."""
    counts = [counter.counts.get(word, 0) if word not in SPECIALS else 0 for word in vocab.words]
    covered = sum(counts)
    counts[vocab.bos_id] = counts[vocab.eos_id] = counter.sentences
    counts[vocab.unk_id] = counter.tokens - covered
    return Vocabulary(vocab.words, counts)
