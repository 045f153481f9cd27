"""A generated corpus with structure a small LM can learn: agreement, word order, templates.

Unigram perplexity is around 25; a model that learns the grammar gets well under 10.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterator

DETERMINERS = ["the", "a", "this", "every"]
ADJECTIVES = ["big", "small", "red", "old", "quiet", "happy"]
NOUNS = [("cat", "cats"), ("dog", "dogs"), ("bird", "birds"), ("farmer", "farmers"), ("child", "children")]
VERBS = [("sees", "see"), ("chases", "chase"), ("likes", "like"), ("follows", "follow")]
PLACES = ["garden", "house", "river", "field"]


def sentence(rng: random.Random) -> list[str]:
    plural = rng.random() < 0.4
    det = rng.choice(["the", "some"] if plural else DETERMINERS)
    words = [det]
    if rng.random() < 0.5:
        words.append(rng.choice(ADJECTIVES))
    noun = rng.choice(NOUNS)
    words.append(noun[1] if plural else noun[0])
    verb = rng.choice(VERBS)
    words.append(verb[1] if plural else verb[0])
    words += [rng.choice(DETERMINERS), rng.choice(NOUNS)[0]]
    if rng.random() < 0.5:
        words += ["in", "the", rng.choice(PLACES)]
    words.append(".")
    return [w.capitalize() if i == 0 else w for i, w in enumerate(words)]


def sentences(n: int, seed: int = 0) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(n):
        yield " ".join(sentence(rng))


def write_corpus(path: Path, n: int, seed: int = 0) -> Path:
    path.write_text("\n".join(sentences(n, seed)) + "\n", encoding="utf8")
    return path
