"""Gold and silver in one training corpus: a teacher's predictions on unlabeled text (the silver)
beside the annotated documents (the gold), for ``spacy train``.

A slow, accurate pipeline (an ELMo one) labels text that nobody annotated, and a fast one (the
baseline's network) learns from the gold and those labels together. How much silver a training
pass sees is the one setting, chosen on the dev split; the reader is meant for
``[corpora.train]`` only, so dev and test scores stay on gold::

    [corpora.train]
    @readers = "spacy_elmo.GoldAndSilverCorpus.v1"
    path = ${paths.train}
    silver_path = "silver.spacy"
    silver_per_gold = 2.0
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, List, Optional

from spacy.training import Corpus, Example
from spacy.training.corpus import walk_corpus

if TYPE_CHECKING:
    from spacy.language import Language


class GoldAndSilverCorpus:
    """Every gold Example of ``gold`` and ``silver_per_gold`` silver Examples per gold one, drawn
    from ``silver`` without replacement, in a shuffled order. ``spacy train`` reads its training
    corpus once and reshuffles it each epoch, so one draw serves the whole training; a later call
    draws again. Seeded: the same calls give the same Examples in the same order."""

    def __init__(self, gold: Corpus, silver: Corpus, silver_per_gold: float, seed: Optional[int]) -> None:
        self.gold = gold
        self.silver = silver
        self.silver_per_gold = silver_per_gold
        # spacy train seeds Python's random with [training] seed just before it makes the reader
        self._rng = random.Random(random.getrandbits(64) if seed is None else seed)

    def __call__(self, nlp: Language) -> Iterator[Example]:
        gold = list(self.gold(nlp))
        wanted = round(self.silver_per_gold * len(gold))
        examples = gold + (self._draw_silver(nlp, wanted) if wanted else [])
        self._rng.shuffle(examples)
        return iter(examples)

    def _draw_silver(self, nlp: Language, wanted: int) -> List[Example]:
        """Examples of ``wanted`` silver documents; only the drawn ones are tokenized, as the
        silver is often many times what a training takes."""
        silver = self.silver
        docs = list(silver.read_docbin(nlp.vocab, walk_corpus(silver.path, ".spacy")))
        if not docs:
            raise ValueError(f"{silver.path}: the silver corpus holds no documents")
        drawn = docs if wanted >= len(docs) else self._rng.sample(docs, wanted)
        make = silver.make_examples_gold_preproc if silver.gold_preproc else silver.make_examples
        return [augmented for eg in make(nlp, drawn) for augmented in silver.augmenter(nlp, eg)]


def create_gold_and_silver_corpus(
    path: Optional[Path],
    silver_path: Optional[Path],
    silver_per_gold: float = 1.0,
    seed: Optional[int] = None,
    gold_preproc: bool = False,
    max_length: int = 0,
    limit: int = 0,
    augmenter: Optional[Callable] = None,
) -> GoldAndSilverCorpus:
    """``spacy_elmo.GoldAndSilverCorpus.v1``: the training reader of a student.

    path: the gold ``.spacy`` file or folder (as ``spacy.Corpus.v1``'s ``path``).
    silver_path: the teacher's predictions, ``.spacy`` (a folder of them works too).
    silver_per_gold: silver documents per gold document in what one call yields (0: gold only;
        a value beyond silver/gold takes all the silver every time).
    seed: the silver's draw and the mixed order; None (the default): the run's own, drawn from
        Python's random state, which ``spacy train`` has seeded with ``[training] seed``.
    gold_preproc, max_length, augmenter: as ``spacy.Corpus.v1``'s, for gold and silver alike;
    limit: gold documents read (0: all).
    """
    if path is None or silver_path is None:
        raise ValueError("spacy_elmo.GoldAndSilverCorpus.v1 needs both path (gold) and silver_path")
    if not silver_per_gold >= 0:
        raise ValueError(f"silver_per_gold must be 0 or more, got {silver_per_gold}")
    if not Path(silver_path).exists():
        raise ValueError(f"{silver_path}: silver corpus not found")
    if Path(silver_path).resolve() == Path(path).resolve():
        raise ValueError(f"{silver_path}: the silver corpus is the gold one (path)")
    gold = Corpus(path, limit=limit, gold_preproc=gold_preproc, max_length=max_length, augmenter=augmenter)
    silver = Corpus(silver_path, gold_preproc=gold_preproc, max_length=max_length, augmenter=augmenter)
    return GoldAndSilverCorpus(gold, silver, silver_per_gold, seed)
