"""Score each trained setting's pipeline(s) on the test split of its task (the ``evaluate`` step).

An optional setting is scored only if it was trained, and a setting whose training folder says
its dataset was left out (``datasets.left_out``) is not scored. A setting's pipelines are
``TRAINING_DIR/SETTING/model-best`` or, for settings trained once per seed,
``TRAINING_DIR/SETTING/seed{N}/model-best``. The first word of a setting's name says its test
split and task (``SPLITS``): ``conll*`` on ``--conll-test`` (CoNLL-2003), ``ner*`` on
``--ner-test`` (WNUT-16), both NER; ``textcat*`` on ``--textcat-test``; the others on
``--tagger-test``. A cross-validated setting (``tweets*``: ``SETTING/fold{K}/seed{N}/model-best``)
is scored fold by fold on ``--tweets-test`` with ``{fold}`` replaced by K, into
``SETTING.fold{K}.seed{N}.json``.

Each pipeline is scored by spaCy's own ``Language.evaluate`` on the test corpus read as
``python -m spacy evaluate`` reads it, and its scores are written to
``METRICS_DIR/SETTING.json`` (``SETTING.seed{N}.json``) with three more keys: ``model``,
``test_data`` and ``model_sha256``. Beside it, ``SETTING[.seed{N}].docs.json`` holds the
per-document counts of the same predictions (``doc_counts``: NER ``tp, fp, fn``; tagger
``correct, total, predicted``; textcat ``correct, total`` summed per source file), one row per
test document in corpus order, for the paired tests of ``paired_stats``. A pipeline whose two files already hold its current checksum
and test file is not scored again, so a rerun after a failure goes on where it stopped.

With a ``precision`` (``"bfloat16"``, ``"int8"``; the ``evaluate-precision`` step), each pipeline
is loaded with its ``elmo`` component's ``precision`` overridden and its files are written under
the name ``SETTING@PRECISION`` (``ner-elmo@int8.seed0.json``), beside the float32 ones it is
compared with; both files also record the precision asked for and the one that ran
(``elmo_precision``: float32 where the CPU lacks the instructions).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

from wasabi import msg

from ..checksums import sha256_of_path
from .doc_counts import counts_of, fields_of
from .pipeline_price import precision_override

SEED_DIR = re.compile(r"seed(\d+)$")
FOLD_DIR = re.compile(r"fold(\d+)$")
FOLD = "{fold}"  # in a test file's path: the fold's number (cross-validated settings)
#: ``SETTING@PRECISION``: a setting's pipelines run with another precision (never ``@bilmN``)
PRECISION_MARK = "@"


def precision_name(setting: str, precision: Optional[str]) -> str:
    """``ner-elmo@int8`` for ``("ner-elmo", "int8")``; the setting itself for no precision."""
    return setting if precision is None else f"{setting}{PRECISION_MARK}{precision}"


def _seeded(base: Path) -> List[Tuple[int, Path]]:
    """``[(seed, BASE/seedN)]`` of the seed folders holding a model-best, by seed."""
    return sorted(
        (int(m.group(1)), p)
        for p in base.glob("seed*")
        if (m := SEED_DIR.search(p.name)) and (p / "model-best").is_dir()
    )


def pipelines_of(training_dir: Path, setting: str) -> List[Tuple[str, Path]]:
    """``[(metrics file stem, model dir)]`` for one setting; an error if there is none. A
    cross-validated setting's pipelines are ``SETTING/fold{K}/seed{N}/model-best``, stems
    ``SETTING.fold{K}.seed{N}``."""
    base = training_dir / setting
    folds = sorted((int(m.group(1)), p) for p in base.glob("fold*") if (m := FOLD_DIR.search(p.name)) and p.is_dir())
    if folds:
        found = [
            (f"{setting}.fold{fold}.seed{seed}", path / "model-best")
            for fold, folder in folds
            for seed, path in _seeded(folder)
        ]
        if not found:
            raise FileNotFoundError(
                f"no trained pipeline for setting {setting!r}: expected {base}/fold<K>/seed<N>/model-best"
            )
        return found
    seeded = sorted(
        (int(m.group(1)), p)
        for p in base.glob("seed*")
        if (m := SEED_DIR.search(p.name)) and (p / "model-best").is_dir()
    )
    if (base / "model-best").is_dir():
        if seeded:  # the setting changed between one run and one run per seed
            raise FileNotFoundError(
                f"{base} holds both model-best and seed<N>/model-best: remove the one from the earlier configuration"
            )
        return [(setting, base / "model-best")]
    if not seeded:
        raise FileNotFoundError(
            f"no trained pipeline for setting {setting!r}: expected {base}/model-best or {base}/seed<N>/model-best"
        )
    return [(f"{setting}.seed{seed}", path / "model-best") for seed, path in seeded]


#: the first word of a setting's name: ``(its test split's option, the task it is counted as)``
SPLITS = {
    "conll": ("conll", "ner"),
    "tweets": ("tweets", "ner"),
    "ner": ("ner", "ner"),
    "textcat": ("textcat", "textcat"),
    "tagger": ("tagger", "tagger"),
}


def split_of(setting: str) -> str:
    """The test split (``--SPLIT-test``) of a setting: its name's first word where ``SPLITS`` knows
    it, else ``tagger``."""
    first = setting.split("-", 1)[0]
    return SPLITS[first][0] if first in SPLITS else "tagger"


def task_of(setting: str) -> str:
    """What a setting's predictions are counted as: ``ner`` (CoNLL-2003 and WNUT-16),
    ``textcat`` or ``tagger``."""
    first = setting.split("-", 1)[0]
    return SPLITS[first][1] if first in SPLITS else "tagger"


def test_file_for(
    setting: str,
    ner_test: Optional[Path],
    tagger_test: Optional[Path],
    textcat_test: Optional[Path] = None,
    conll_test: Optional[Path] = None,
    tweets_test: Optional[Path] = None,
) -> Path:
    """The test split a setting is scored on (for a cross-validated one, the path with ``{fold}``
    in it); an error naming the option when it was not given."""
    split = split_of(setting)
    test_file = {"ner": ner_test, "textcat": textcat_test, "conll": conll_test, "tweets": tweets_test}.get(
        split, tagger_test
    )
    if test_file is None:
        raise FileNotFoundError(f"setting {setting!r} is scored on the {split} test split: give --{split}-test")
    return test_file


def docs_path(metrics_path: Path) -> Path:
    """``SETTING.seed0.json`` -> ``SETTING.seed0.docs.json``."""
    return metrics_path.with_name(metrics_path.name[: -len(".json")] + ".docs.json")


def is_current(metrics_path: Path, model_sha: str, test_data: Path, precision: Optional[str] = None) -> bool:
    """Whether both score files hold this model's checksum, this test file and this precision."""
    for path in (metrics_path, docs_path(metrics_path)):
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if stored.get("model_sha256") != model_sha or stored.get("test_data") != str(test_data):
            return False
        if stored.get("precision") != precision:
            return False
    return True


def evaluate_pipeline(
    model: Path, test_data: Path, task: str, precision: Optional[str] = None
) -> Tuple[dict, List[Tuple[int, int, int]]]:
    """spaCy's scores of a pipeline on a test file, and the per-document counts behind them.

    Reads and scores as ``spacy evaluate`` does (fixed random seed, ``Corpus`` without gold
    preprocessing, ``nlp.evaluate``); the scorer keeps the scored examples so that the counts
    come from the very predictions that were scored. ``precision`` overrides the ``elmo``
    component's setting (``pipeline_price.precision_override``).
    """
    from spacy import util
    from spacy.scorer import Scorer
    from spacy.training import Corpus

    class KeepingScorer(Scorer):
        def score(self, examples, **kwargs):
            self.examples = list(examples)
            return super().score(self.examples, **kwargs)

    util.fix_random_seed()
    nlp = util.load_model(model, config=precision_override(model, precision))
    examples = list(Corpus(test_data, gold_preproc=False)(nlp))
    scorer = KeepingScorer(nlp=nlp)
    scores = nlp.evaluate(examples, scorer=scorer)
    return scores, counts_of(task, scorer.examples)


Job = Tuple[str, Path, Path, Optional[str]]


def jobs(
    settings: Sequence[str],
    training_dir: Path,
    ner_test: Optional[Path],
    tagger_test: Optional[Path],
    textcat_test: Optional[Path] = None,
    precisions: Sequence[str] = (),
    conll_test: Optional[Path] = None,
    tweets_test: Optional[Path] = None,
) -> Iterator[Job]:
    """``(metrics file stem, model dir, test file, precision)`` per pipeline of the settings: the
    pipelines as they are (precision None) or, given ``precisions``, each run in each of them
    (stems ``SETTING@PRECISION[.seedN]``; a ValueError for a pipeline without an elmo component)."""
    runs_at: List[Optional[str]] = list(precisions) or [None]
    for setting in settings:
        test_path = test_file_for(setting, ner_test, tagger_test, textcat_test, conll_test, tweets_test)
        for stem, model in pipelines_of(training_dir, setting):
            test_data = test_path
            fold = FOLD_DIR.search(model.parent.parent.name)
            if fold is not None:
                test_data = Path(str(test_path).replace(FOLD, fold.group(1)))
                if FOLD not in str(test_path) or not test_data.is_file():
                    raise FileNotFoundError(
                        f"{model}: the test split of fold {fold.group(1)} is {test_data}, which is not a file "
                        f"(a cross-validated setting's test path holds {FOLD})"
                    )
            for precision in runs_at:
                precision_override(model, precision)  # the check, before anything is scored
                yield precision_name(setting, precision) + stem[len(setting) :], model, test_data, precision


def remove_stale_scores(metrics_dir: Path, settings: Sequence[str], current: set) -> None:
    """Delete a setting's score files whose pipeline is gone (e.g. one run became one per
    seed), so that the report never mixes them with the current ones."""
    for setting in settings:
        paths = (
            list(metrics_dir.glob(f"{setting}.json"))
            + list(metrics_dir.glob(f"{setting}.docs.json"))
            + list(metrics_dir.glob(f"{setting}.seed*.json"))
            + list(metrics_dir.glob(f"{setting}.fold*.json"))
        )
        for path in paths:
            stem = path.name[: -len(".docs.json")] if path.name.endswith(".docs.json") else path.stem
            if stem not in current:
                msg.warn(f"Removing the scores of a pipeline that no longer exists: {path}")
                path.unlink()


def trained_settings(training_dir: Path, settings: Sequence[str], optional: Sequence[str]) -> List[str]:
    """The required settings, then those of the optional ones that were trained; without the
    settings whose dataset was left out (their training folder holds the marker)."""
    from ..datasets.left_out import left_out

    found = []
    for setting in list(settings) + list(optional):
        dataset = left_out(training_dir / setting)
        if dataset is not None:
            msg.info(f"Setting {setting!r}: {dataset} was left out, nothing to score")
            continue
        if setting not in settings:
            try:
                pipelines_of(training_dir, setting)
            except FileNotFoundError:
                msg.info(f"Optional setting {setting!r} was not trained: not scored")
                continue
        found.append(setting)
    return found


def score_one(
    stem: str,
    model: Path,
    test_data: Path,
    model_sha: str,
    metrics_dir: Path,
    counter: str = "",
    precision: Optional[str] = None,
) -> None:
    """Score one pipeline into ``STEM.json`` and ``STEM.docs.json``, and say so (``counter``:
    ``[i/n] `` in front); with a ``precision``, the one asked for and the one that ran go in too."""
    out = metrics_dir / f"{stem}.json"
    start = time.time()
    task = task_of(stem)
    scores, counts = evaluate_pipeline(model, test_data, task, precision)
    provenance = {"model": str(model), "test_data": str(test_data), "model_sha256": model_sha}
    if precision is not None:
        import torch

        from spacy_elmo.nn.precision import running_precision

        provenance.update(precision=precision, elmo_precision=running_precision(precision, torch.device("cpu")))
    docs = {
        "task": task,
        "fields": list(fields_of(task)),
        **provenance,
        "test_data_sha256": sha256_of_path(test_data),
        "counts": counts,
    }
    docs_path(out).write_text(json.dumps(docs) + "\n", encoding="utf-8")
    scores.update(provenance)
    out.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    main_score = scores.get("ents_f", scores.get("tag_acc", scores.get("pos_acc", scores.get("cats_micro_f"))))
    shown = f"{main_score * 100:.2f}" if isinstance(main_score, float) else "n/a"
    msg.good(f"{counter}{stem}: {shown} on {test_data.name} ({time.time() - start:.1f}s) -> {out}")
    sys.stdout.flush()  # a pool's child process prints as it finishes


def score_jobs(todo: Sequence[Job], metrics_dir: Path, n_jobs: int = 1) -> None:
    """Score each pipeline unless its files are current: ``STEM.json`` and ``STEM.docs.json``.

    ``n_jobs`` pipelines at a time, each in a fresh process (``parallel.pool``); each
    pipeline's scoring fixes spaCy's random seed itself, so the files are those of a serial run."""
    from ..parallel.pool import run_parallel

    runs = []
    for index, (stem, model, test_data, precision) in enumerate(todo, 1):
        out = metrics_dir / f"{stem}.json"
        model_sha = sha256_of_path(model)
        if is_current(out, model_sha, test_data, precision):
            msg.good(f"[{index}/{len(todo)}] {stem}: scored earlier ({out}), skipping")
            continue
        runs.append((stem, model, test_data, model_sha, metrics_dir, f"[{index}/{len(todo)}] ", precision))
    if n_jobs > 1 and len(runs) > 1:
        msg.info(f"Scoring {len(runs)} pipelines, {min(n_jobs, len(runs))} at a time")
    run_parallel(score_one, runs, n_jobs)
