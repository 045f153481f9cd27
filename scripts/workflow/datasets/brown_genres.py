"""Brown corpus -> genre classification: one Doc per paragraph, labelled with its file's genre.

The 500 Brown files are samples of 15 genres, named by the second letter of the file name
(``ca01`` is press reportage, ``cr09`` humour). Each paragraph (blank lines part them) becomes
one Doc whose ``cats`` hold the 15 genres, exactly one of them 1.0; its sentences are marked
(``sent_starts``) and ``user_data["brown_file"]`` names the file, so that the evaluation can
resample whole files: paragraphs of one file share topic and author.

Split rule: by file, the POS corpus's rule (``brown.split_of``): file k of the sorted names goes
to dev if k % 10 == 8, to test if k % 10 == 9, else to train. No file is in two splits, every
genre has a test file, and the pretraining text (Brown train and dev files, SOTU) never holds
a test paragraph.

Size: a split may keep at most N paragraphs of each file (``per_file``), chosen evenly spaced
through the file; this bounds the CPU time of the workflow while every file stays represented.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Dict, List, Mapping, Sequence

from . import output
from .brown import Sentence, brown_files, read_brown_paragraphs, split_of

#: The genre of each file-name letter, in the corpus manual's order.
GENRES: Dict[str, str] = {
    "a": "press_reportage",
    "b": "press_editorial",
    "c": "press_reviews",
    "d": "religion",
    "e": "skill_hobbies",
    "f": "popular_lore",
    "g": "belles_lettres",
    "h": "miscellaneous",
    "j": "learned",
    "k": "general_fiction",
    "l": "mystery",
    "m": "science_fiction",
    "n": "adventure",
    "p": "romance",
    "r": "humor",
}
FILE_KEY = "brown_file"  # the user_data key naming a Doc's file
SPLITS = ("train", "dev", "test")
DOCBIN_ATTRS = ("ORTH", "SENT_START")


def genre_of(file_name: str) -> str:
    """``"ca01"`` -> ``"press_reportage"``."""
    return GENRES[file_name[1]]


def evenly_spaced(n_items: int, limit: int) -> List[int]:
    """``limit`` indices spread over ``range(n_items)`` (all of them when ``limit`` is 0 or more
    than there are)."""
    if limit <= 0 or limit >= n_items:
        return list(range(n_items))
    return [(i * n_items) // limit for i in range(limit)]


def make_doc(vocab, paragraph: Sequence[Sentence], file_name: str):
    """One paragraph as a Doc: its words, its sentence starts, its file's genre in ``cats``."""
    from spacy.tokens import Doc

    words = [word for sentence in paragraph for word, _ in sentence]
    sent_starts = [i == 0 for sentence in paragraph for i in range(len(sentence))]
    spaces = [True] * len(words)
    spaces[-1] = False
    doc = Doc(vocab, words=words, spaces=spaces, sent_starts=sent_starts)
    genre = genre_of(file_name)
    doc.cats = {name: float(name == genre) for name in GENRES.values()}
    doc.user_data[FILE_KEY] = file_name
    return doc


def write_docbin(docs: Sequence, path: Path) -> None:
    """Unlike the other converters' output, the file name in user_data is kept (a plain string)."""
    from spacy.tokens import DocBin

    path.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, attrs=list(DOCBIN_ATTRS), store_user_data=True).to_disk(path)


def convert(brown_dir: Path, output_dir: Path, per_file: Mapping[str, int]) -> dict:
    """Write ``{train,dev,test}.spacy`` and ``stats.json``; ``per_file``: split -> most
    paragraphs kept per file (0: all). Returns the statistics."""
    from spacy.vocab import Vocab
    from wasabi import msg

    brown_dir, output_dir = Path(brown_dir), Path(output_dir)
    files = brown_files(brown_dir) if brown_dir.is_dir() else []
    if not files:
        msg.fail(f"No Brown files (ca01 .. cr09) in {brown_dir}", exits=1)
    vocab = Vocab()
    problems: Counter = Counter()
    docs: Dict[str, list] = {split: [] for split in SPLITS}
    stats: dict = {
        "split_rule": "by file, k (sorted by name): k%10==8 dev, k%10==9 test, else train",
        "per_file": dict(per_file),
        "genres": list(GENRES.values()),
        "splits": {},
    }
    for index, path in enumerate(files):
        split = split_of(index)
        paragraphs = list(read_brown_paragraphs(path, problems))
        for i in evenly_spaced(len(paragraphs), per_file.get(split, 0)):
            docs[split].append(make_doc(vocab, paragraphs[i], path.name))
    for split in SPLITS:
        write_docbin(docs[split], output_dir / f"{split}.spacy")
        genres = Counter(max(doc.cats, key=doc.cats.get) for doc in docs[split])
        stats["splits"][split] = {
            "files": len({doc.user_data[FILE_KEY] for doc in docs[split]}),
            "paragraphs": len(docs[split]),
            "words": sum(len(doc) for doc in docs[split]),
            "genres": {genre: genres[genre] for genre in GENRES.values()},
        }
        counts = stats["splits"][split]
        msg.good(
            f"{split}: {counts['files']} files, {counts['paragraphs']} paragraphs, "
            f"{counts['words']} words -> {output_dir / (split + '.spacy')}"
        )
    return output.finish_stats(stats, problems, output_dir, "Skipped malformed tokens")
