"""The silver step: a trained pipeline (the teacher) labels text nobody annotated, for a student.

The teacher is an ELMo pipeline (the student then learns ELMo's predictions at the baseline's
speed) or, for the self-training control, the baseline itself. Given a setting's folder of seeds
(``seed{N}/model-best``), the teacher is the seed best on the dev split: its ``meta.json``
performance (the dev scores ``spacy train`` kept for model-best) weighted as its config's
``[training.score_weights]`` weight them, which is how ``spacy train`` chose model-best. One
labelling per setting, not one per seed: a user labels with the best model they have, and the
student's seeds then vary the student alone, as the baseline's seeds do. No test score is read.

Each text reaches the teacher as spaCy's training and evaluation show a text to a pipeline
(``spacy.training.Corpus``): tokenized again from its text, or, where the file does not know its
spaces, as its words. So nothing of the input's annotation survives, and the silver holds the
teacher's predictions and nothing else. Those are written with spaCy's ``DocBin`` without user
data: ``spacy apply`` keeps user data, which for an ELMo teacher holds every biLM layer of every
token (the ``elmo`` component's ``doc._.elmo_layers``), and keeps a preset entity that its NER
would respect.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from .spacy_pretrain import process_cpu_seconds

SILVER_FILE = "silver.spacy"
RECORD_FILE = "silver.json"
SEED_FOLDER = re.compile(r"^seed(\d+)$")


@dataclass(frozen=True)
class Teacher:
    model: str
    seed: Optional[int]  # None: a pipeline given itself, not picked from a setting's seeds
    dev_score: float


def dev_score(model_dir: Path) -> float:
    """The weighted dev score ``spacy train`` kept in ``model_dir``'s ``meta.json``."""
    from thinc.api import Config

    meta_path = model_dir / "meta.json"
    try:
        performance = json.loads(meta_path.read_text(encoding="utf-8"))["performance"]
        weights = Config().from_disk(model_dir / "config.cfg", interpolate=False)["training"]["score_weights"]
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"{model_dir}: no dev scores of a trained pipeline ({type(e).__name__}: {e})") from None
    scores = [(weight, performance.get(name)) for name, weight in weights.items() if weight]
    if not scores or any(not isinstance(value, (int, float)) for _, value in scores):
        raise ValueError(f"{meta_path}: no dev score for every weighted score of its config ({sorted(weights)})")
    return float(sum(weight * value for weight, value in scores))


def choose_teacher(path: Path) -> Teacher:
    """``path`` itself when it is a pipeline, else the seed of the setting folder ``path`` whose
    model-best is best on dev (the lowest seed on a tie)."""
    if (path / "meta.json").is_file():
        return Teacher(str(path), None, dev_score(path))
    seeds = sorted((int(m[1]), p / "model-best") for p in path.glob("seed*") if (m := SEED_FOLDER.match(p.name)))
    if not seeds:
        raise ValueError(f"{path}: neither a pipeline (meta.json) nor a setting's seed*/model-best folders")
    scored = [(dev_score(model), -seed, seed, model) for seed, model in seeds]
    best = max(scored)
    return Teacher(str(best[3]), best[2], best[0])


def texts_as_spacy_shows_them(nlp: Any, docs: Iterator[Any]) -> Iterator[Any]:
    """Unannotated Docs of the texts of ``docs``, as ``spacy.training.Corpus`` makes a
    pipeline's input from a reference Doc."""
    from spacy.tokens import Doc

    for doc in docs:
        if doc.has_unknown_spaces:
            yield Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])
        else:
            yield nlp.make_doc(doc.text)


def left_out_dataset(teacher: Path, unlabeled: Path) -> Optional[str]:
    """The dataset left out (project.yml's leave_out) that the teacher or the text was built on."""
    from ..datasets.left_out import left_out

    return left_out(unlabeled) or left_out(teacher)


def write_left_out(output_dir: Path, dataset: str) -> None:
    """What a labelling of a left-out dataset leaves: the marker and an empty silver (so the
    students' steps find their input, and train nothing), no record (so no report row)."""
    from spacy.tokens import DocBin

    from ..datasets.left_out import mark

    mark(output_dir, dataset)
    DocBin().to_disk(output_dir / SILVER_FILE)
    (output_dir / RECORD_FILE).unlink(missing_ok=True)


def label(
    teacher: Teacher, unlabeled: Path, output_dir: Path, skip: int = 0, limit: int = 0, batch_size: int = 0
) -> dict:
    """The teacher's predictions on the documents of ``unlabeled`` (a ``.spacy`` file) after its
    first ``skip`` (the gold ones, where they lead the file), at most ``limit`` (0: all), into
    ``output_dir/silver.spacy``; ``silver.json`` records the teacher, the text and the CPU
    seconds of this labelling (loading the teacher included). Returns that record."""
    import itertools

    import spacy
    from spacy.tokens import DocBin
    from tqdm import tqdm

    from spacy_elmo.corpora.files import read_docbin

    if unlabeled.suffix != ".spacy" or not unlabeled.is_file():
        raise ValueError(f"{unlabeled}: expected a .spacy file of the unlabeled documents")
    cpu_start, wall_start = process_cpu_seconds(), time.perf_counter()
    nlp = spacy.load(teacher.model)
    docs = itertools.islice(read_docbin(unlabeled, nlp.vocab), skip, skip + limit if limit else None)
    silver = DocBin(store_user_data=False)
    words = 0
    inputs = texts_as_spacy_shows_them(nlp, docs)
    for doc in tqdm(nlp.pipe(inputs, batch_size=batch_size or None), desc="labelling", unit="doc", mininterval=5):
        silver.add(doc)
        words += len(doc)
    if not len(silver):
        raise ValueError(f"{unlabeled}: no documents after the first {skip}")
    from ..datasets.left_out import MARKER

    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / MARKER).unlink(missing_ok=True)
    silver.to_disk(output_dir / SILVER_FILE)
    record = {
        "teacher": asdict(teacher),
        "unlabeled": str(unlabeled),
        "skip": skip,
        "limit": limit,
        "docs": len(silver),
        "words": words,
        "cpu_seconds": round(process_cpu_seconds() - cpu_start, 1),
        "wall_seconds": round(time.perf_counter() - wall_start, 1),
    }
    (output_dir / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record
