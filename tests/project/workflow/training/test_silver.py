"""The silver step (scripts/workflow/training/silver.py): the teacher best on dev labels the
unlabeled documents; the silver holds its predictions exactly (no input annotation, no user
data), and the step reads nothing of the test split."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List

import numpy
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from scripts.workflow.training import silver

TEXTS = [
    "Mary saw the old bank in Paris .",
    "The river bank was green .",
    "Obama left Texas today .",
    "A new boat .",
    "Mary and Obama met in Texas .",
]


@Language.component("silver_test_big_user_data")
def big_user_data(doc: Doc) -> Doc:
    """Stands in for the elmo component, which keeps every biLM layer in ``doc.user_data``."""
    doc.user_data["layers"] = numpy.ones((3, len(doc), 64), dtype="float32")
    return doc


def make_teacher(path: Path, people: List[str], dev_f: float, tag: str) -> Path:
    """A rule-based stand-in for a trained pipeline: its entities and tags are known in advance,
    its meta.json holds the dev scores spacy train writes, weighted as its config says."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PER", "pattern": name} for name in people] + [{"label": "LOC", "pattern": "Texas"}])
    nlp.add_pipe("attribute_ruler").add([[{"TEXT": {"REGEX": ".*"}}]], {"TAG": tag})
    nlp.add_pipe("silver_test_big_user_data")
    nlp.config["training"]["score_weights"] = {"ents_f": 0.75, "ents_p": 0.25, "ents_r": 0.0, "tag_acc": None}
    nlp.meta["performance"] = {"ents_f": dev_f, "ents_p": dev_f - 0.1, "ents_r": 0.2, "tag_acc": None}
    path.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(path)
    return path


@pytest.fixture
def project(tmp_path):
    """A setting's seeds (seed 1 best on dev) and a test-score file that would pick seed 2."""
    setting = tmp_path / "training" / "ner-elmo"
    make_teacher(setting / "seed0" / "model-best", ["Mary"], 0.50, "A")
    make_teacher(setting / "seed1" / "model-best", ["Mary", "Obama"], 0.70, "B")
    make_teacher(setting / "seed2" / "model-best", ["Obama"], 0.60, "C")
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    for seed, f in ((0, 0.1), (1, 0.2), (2, 0.9)):
        (metrics / f"ner-elmo.seed{seed}.json").write_text(json.dumps({"ents_f": f}))
    nlp = spacy.blank("en")
    docs = []
    for text in TEXTS:  # gold annotation that the silver must not keep: every first word a GOLD entity
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(0, len(doc[0].text), label="GOLD")]
        for token in doc:
            token.tag_ = "GOLDTAG"
        docs.append(doc)
    (tmp_path / "corpus").mkdir()
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "corpus" / "train.spacy")
    DocBin(docs=docs[:2]).to_disk(tmp_path / "corpus" / "test.spacy")
    return tmp_path


def read(path: Path) -> List[Doc]:
    return list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))


def test_the_teacher_is_the_seed_best_on_dev_by_the_configs_weights(project):
    teacher = silver.choose_teacher(project / "training" / "ner-elmo")
    assert teacher.seed == 1 and teacher.model.endswith("seed1/model-best")
    assert teacher.dev_score == pytest.approx(0.75 * 0.70 + 0.25 * 0.60)
    alone = silver.choose_teacher(project / "training" / "ner-elmo" / "seed2" / "model-best")
    assert alone.seed is None and alone.dev_score == pytest.approx(0.75 * 0.6 + 0.25 * 0.5)


def test_a_tie_goes_to_the_lowest_seed(tmp_path):
    for seed in (3, 1, 2):
        make_teacher(tmp_path / f"seed{seed}" / "model-best", ["Mary"], 0.5, "A")
    assert silver.choose_teacher(tmp_path).seed == 1


def test_the_silver_holds_the_teachers_predictions_exactly(project):
    teacher = silver.choose_teacher(project / "training" / "ner-elmo")
    record = silver.label(teacher, project / "corpus" / "train.spacy", project / "silver", batch_size=2)
    docs = read(project / "silver" / silver.SILVER_FILE)
    expected = list(spacy.load(teacher.model).pipe(TEXTS))
    assert [d.text for d in docs] == TEXTS
    for doc, want in zip(docs, expected):
        assert [(e.start, e.end, e.label_) for e in doc.ents] == [(e.start, e.end, e.label_) for e in want.ents]
        assert [t.ent_iob_ for t in doc] == [t.ent_iob_ for t in want]
        assert [t.tag_ for t in doc] == ["B"] * len(doc)
        assert not doc.user_data  # no ELMo layers in the file, no trace of the input's
    assert [e.text for e in docs[0].ents] == ["Mary"] and [e.text for e in docs[4].ents] == ["Mary", "Obama", "Texas"]
    assert not any(e.label_ == "GOLD" for d in docs for e in d.ents)
    on_disk = json.loads((project / "silver" / silver.RECORD_FILE).read_text())
    assert on_disk == record and record["docs"] == 5 and record["words"] == sum(len(d) for d in docs)
    assert record["teacher"] == {"model": teacher.model, "seed": 1, "dev_score": teacher.dev_score}
    assert record["cpu_seconds"] >= 0 and record["wall_seconds"] >= 0


def test_skip_leaves_out_the_gold_documents_and_limit_bounds_the_rest(project):
    teacher = silver.choose_teacher(project / "training" / "ner-elmo")
    silver.label(teacher, project / "corpus" / "train.spacy", project / "silver", skip=1, limit=3)
    assert [d.text for d in read(project / "silver" / silver.SILVER_FILE)] == TEXTS[1:4]
    silver.label(teacher, project / "corpus" / "train.spacy", project / "silver", skip=1, limit=9)
    assert [d.text for d in read(project / "silver" / silver.SILVER_FILE)] == TEXTS[1:]
    with pytest.raises(ValueError, match="train.spacy: no documents after the first 5"):
        silver.label(teacher, project / "corpus" / "train.spacy", project / "silver2", skip=5)


def test_words_of_a_file_without_spaces_are_kept(tmp_path, project):
    """As spaCy's Corpus does for such a file: the words themselves, not a new tokenization."""
    vocab = spacy.blank("en").vocab
    path = tmp_path / "words.spacy"
    DocBin(docs=[Doc(vocab, words=["Obama", "'s", "U.S.-based", "firm"])]).to_disk(path)
    assert read(path)[0].has_unknown_spaces
    silver.label(silver.choose_teacher(project / "training" / "ner-elmo"), path, tmp_path / "out")
    (doc,) = read(tmp_path / "out" / silver.SILVER_FILE)
    assert [t.text for t in doc] == ["Obama", "'s", "U.S.-based", "firm"] and doc.ents[0].text == "Obama"


def test_the_step_reads_nothing_of_the_test_split(project, monkeypatch):
    """Every file the step opens (Python's audit events), while a test-score file stands ready
    to pick another teacher: none is a test file or a score."""
    opened: List[str] = []
    recording = [True]

    def audit(event: str, args: tuple) -> None:
        if recording[0] and event == "open" and isinstance(args[0], (str, bytes, Path)):
            opened.append(str(Path(str(args[0])).resolve()))

    sys.addaudithook(audit)  # cannot be removed: the flag ends its recording
    monkeypatch.chdir(project)
    try:
        teacher = silver.choose_teacher(Path("training/ner-elmo"))
        silver.label(teacher, Path("corpus/train.spacy"), Path("silver"))
    finally:
        recording[0] = False
    assert any(path.endswith("seed1/model-best/meta.json") for path in opened)
    assert any(path.endswith("corpus/train.spacy") for path in opened)
    read_from_project = [p for p in opened if p.startswith(str(project.resolve()))]
    assert not [p for p in read_from_project if "test" in Path(p).name or "/metrics/" in p]


def test_command_errors_name_the_file(project, run_command, capsys):
    with pytest.raises(SystemExit) as stopped:
        run_command(
            ["label-silver", str(project / "training"), str(project / "corpus/train.spacy"), str(project / "o")]
        )
    assert stopped.value.code == 1
    assert "neither a pipeline (meta.json) nor a setting's seed*/model-best" in " ".join(
        capsys.readouterr().out.split()
    )
    with pytest.raises(SystemExit):
        run_command(["label-silver", str(project / "training/ner-elmo"), str(project / "corpus"), str(project / "o")])
    assert "corpus: expected a .spacy file of the unlabeled documents" in " ".join(capsys.readouterr().out.split())
    assert (
        run_command(
            [
                "label-silver",
                str(project / "training/ner-elmo"),
                str(project / "corpus/train.spacy"),
                str(project / "o"),
                "--skip",
                "3",
            ]
        )
        == 0
    )
    assert len(read(project / "o" / silver.SILVER_FILE)) == 2


def test_a_left_out_dataset_labels_nothing_and_its_students_train_nothing(project, run_command, tmp_path):
    """--vars.leave_out: the teacher's folder holds the marker (train-seeds wrote it): the step
    writes the marker and an empty silver, no record; a rerun with the data back labels again."""
    from scripts.workflow.datasets.left_out import left_out, mark
    from scripts.workflow.training.runs import train_seeds

    teacher, out = tmp_path / "conll-small-elmo", tmp_path / "silver"
    mark(teacher, "conll2003")
    assert run_command(["label-silver", str(teacher), str(project / "corpus/train.spacy"), str(out)]) == 0
    assert left_out(out) == "conll2003" and read(out / silver.SILVER_FILE) == []
    assert not (out / silver.RECORD_FILE).exists()
    student = tmp_path / "student"
    train_seeds(Path("configs/ner_silver.cfg"), student, [0], {"paths.train": str(out / silver.SILVER_FILE)})
    assert left_out(student) == "conll2003" and [p.name for p in student.iterdir()] == ["left_out.json"]
    teacher = project / "training" / "ner-elmo"
    assert run_command(["label-silver", str(teacher), str(project / "corpus/train.spacy"), str(out)]) == 0
    assert left_out(out) is None and len(read(out / silver.SILVER_FILE)) == 5
