"""The students of ELMo's predictions in the report (scripts/workflow/report/silver.py): their
comparisons, the share of ELMo's gain they recover, their targets (met, or missed by how much),
the labelling's CPU time in the budget table, and the sentence on what to choose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

from scripts.workflow.report import silver
from scripts.workflow.report.build import ReportInputs, build
from scripts.workflow.report.headline import headline_section

from .test_distill import row, write_run

N_DOCS = 40
# correct tokens added per document to the baseline's: accuracy is linear in the counts, so the
# student (+3 of ELMo's +4) recovers exactly 75% of ELMo's gain
EXTRA = {"baseline": 0, "elmo": 4, "self-training": 1, "elmo-silver": 3, "elmo-distilled": 2}
WORDS_PER_SECOND = {"baseline": 10_000, "elmo": 3_000, "self-training": 9_800, "elmo-silver": 9_500}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("silver")
    metrics, prices = base / "metrics", base / "prices"
    metrics.mkdir()
    prices.mkdir()
    rng = numpy.random.default_rng(0)
    for seed in range(3):
        total = rng.integers(10, 20, size=N_DOCS)
        correct = total - 6 - rng.integers(0, 2, size=N_DOCS)
        for variant, extra in EXTRA.items():
            counts = numpy.stack([correct + extra, total, total], axis=1)
            write_run(metrics, f"tagger-small-{variant}.seed{seed}", "tagger", counts)
    for variant, speed in WORDS_PER_SECOND.items():
        price = {"words_per_cpu_second": speed, "peak_memory_mib": 300, "size_mib": 6.0, "seed": 0}
        (prices / f"tagger-small-{variant}.json").write_text(json.dumps(price))
    pretrain = base / "training" / "spacy-pretrain-tagger"
    pretrain.mkdir(parents=True)
    (pretrain / "run.json").write_text(json.dumps({"stopped_by": "cpu_seconds", "cpu_seconds": 80, "steps": 9}))
    labelled = []
    for teacher, seed, cpu in (("tagger-small-elmo", 2, 212.4), ("tagger-small-baseline", 0, 61.0)):
        folder = base / "corpus" / "silver" / teacher
        folder.mkdir(parents=True)
        record = {"teacher": {"model": f"training/{teacher}/seed{seed}/model-best", "seed": seed, "dev_score": 0.9}}
        record.update({"docs": 5000, "words": 112_345, "cpu_seconds": cpu})
        (folder / silver.RECORD_FILE).write_text(json.dumps(record))
        labelled.append(folder)
    step_times = base / "step_times.json"  # the runner's time of one labelling step wins over its record
    step_times.write_text(json.dumps({"label-silver-tagger-small-baseline": {"seconds": 70.0, "cpu_seconds": 66.0}}))
    inputs = ReportInputs(
        metrics_dir=metrics,
        training_dir=base / "training",
        bilm_dir=base / "no-bilm",
        spacy_pretrain_dirs=[pretrain],
        silver_dirs=labelled + [base / "corpus" / "silver" / "not-run"],
        price_dir=prices,
        step_times=step_times,
        output_dir=base / "reports",
        resamples=500,
        rounds=500,
    )
    report_md, section, _, results = build(inputs)
    return {"md": report_md, "section": section, "results": results}


def test_the_student_is_compared_with_baseline_control_elmo_and_distilled(report):
    rows = {(c["other"], c["baseline"]): c for c in report["results"]["comparisons"]}
    for reference, verdict in (
        ("baseline", "gain"),
        ("self-training", "gain"),
        ("elmo", "loss"),
        ("elmo-distilled", "gain"),
    ):
        comparison = rows[("tagger-small-elmo-silver", f"tagger-small-{reference}")]
        assert comparison["test"]["seeds"] == [[0, 0], [1, 1], [2, 2]] and comparison["verdict"] == verdict
        assert f"| tagger-small-elmo-silver vs tagger-small-{reference} |" in report["md"]
    assert rows[("tagger-small-self-training", "tagger-small-baseline")]["verdict"] == "gain"
    # ELMo's own targets are ELMo's, never a student's
    assert report["results"]["targets"][1]["setting"] == "tagger-small-elmo"


def test_the_share_and_every_target_of_the_student(report):
    students = report["results"]["silver"]
    (share,) = students["shares"]
    assert share["share"] == pytest.approx(0.75)
    assert "the student recovers 75% of ELMo's gain over the baseline" in share["text"]
    conll, tagger = students["targets"][:4], students["targets"][4:]
    assert [t["task"] for t in conll] == ["conll"] * 4 and all(t["met"] is None for t in conll)
    half, beats_baseline, beats_control, speed = tagger
    assert [t["met"] for t in tagger] == [True, True, True, True]
    assert "beats the self-training control with p < 0.05: **met**" in beats_control["text"]
    assert "runs within 10% of the baseline's words per CPU-second: **met** (9,500 against 10,000" in speed["text"]
    for text in [share["text"]] + [t["text"] for t in students["targets"]]:
        assert text in report["md"] and text in report["section"]
    assert "## ELMo's predictions as training data" in report["md"]


def test_the_labelling_cpu_time_is_in_the_budget_table(report):
    lines = [line for line in report["md"].splitlines() if line.startswith("| teacher labelling")]
    assert lines == [
        "| teacher labelling (tagger-small-elmo: seed 2, best on dev) | 212 s | end of its text | - "
        "| 112,345 words (5,000 documents) |",
        "| teacher labelling (tagger-small-baseline: seed 0, best on dev) | 66 s | end of its text | - "
        "| 112,345 words (5,000 documents) |",
    ]
    assert set(report["results"]["silver"]["labelling"]) == {"tagger-small-elmo", "tagger-small-baseline"}
    assert lines[0] in report["section"]


def test_the_choice_sentence_says_where_the_gain_is_elmos(report):
    sentence = report["results"]["silver"]["choice"]
    assert sentence.startswith("With ELMo's predictions as training data")
    assert "choose the ELMo-taught student for POS tagging (Brown) with the small training set" in sentence
    rows = [
        row("ner-elmo-silver", "ner-baseline", 1.0, 0.01),
        row("ner-elmo-silver", "ner-self-training", 0.2, 0.6),
        row("tagger-elmo-silver", "tagger-baseline", 0.3, 0.01),
        row("tagger-elmo-silver", "tagger-self-training", 0.2, 0.01),
        row("tagger-elmo-silver", "tagger-elmo-distilled", -0.2, 0.02),
        row("tagger-small-elmo-silver", "tagger-small-baseline", 0.1, 0.3),
    ]
    assert silver.choice_sentence(rows) == (
        "With ELMo's predictions as training data (the baseline's network and speed; the teacher's labelling "
        "costs CPU time once): the student's gain is not shown to be ELMo's (it does not beat self-training) "
        "for NER (WNUT-16 tweets) with the full training set (student - baseline: +1.00 points, p = 0.010; "
        "student - self-training: +0.20 points, p = 0.600); choose the distilled ELMo for POS tagging (Brown) "
        "with the full training set (student - baseline: +0.30 points, p = 0.010; student - self-training: "
        "+0.20 points, p = 0.010; student - distilled: -0.20 points, p = 0.020); the ELMo-taught student shows "
        "no gain over the baseline for POS tagging (Brown) with the small training set (student - baseline: "
        "+0.10 points, p = 0.300)."
    )
    assert silver.choice_sentence([row("ner-elmo", "ner-baseline", 2.0, 0.01)]) is None


def test_missed_targets_say_by_how_much():
    rows = [
        row("tagger-small-elmo", "tagger-small-baseline", 2.0, 0.01),
        row("tagger-small-elmo-silver", "tagger-small-baseline", 0.5, 0.04),
        row("tagger-small-elmo-silver", "tagger-small-self-training", -0.1, 0.7),
    ]
    shares = silver.share_rows(rows)
    settings = [
        {"name": "tagger-small-baseline", "words_per_cpu_second": 10_000.0},
        {"name": "tagger-small-elmo-silver", "words_per_cpu_second": 8_000.0},
    ]
    half, beats_baseline, beats_control, speed = silver.target_rows(rows, shares, settings)[4:]
    assert half["met"] is False and half["short_by"] == pytest.approx(0.25)
    assert "missed by 25 percentage points of the share, 0.50 points of the score (25%: +0.50 of +2.00" in half["text"]
    assert beats_baseline["met"] is True
    assert beats_control["met"] is False and beats_control["short_by"] == pytest.approx(0.1)
    assert speed["met"] is False and speed["short_by"] == pytest.approx(0.1)
    assert (
        "not met, 10 percentage points slower than allowed (8,000 against 10,000 words / CPU s, 0.80x)"
        in (speed["text"])
    )
    no_price = silver.target_rows(rows, shares, settings[:1])[7]
    assert no_price["met"] is None and "not measured" in no_price["text"]


def test_nothing_without_students_or_labelling():
    assert silver.silver_lines([row("ner-elmo", "ner-baseline", 1.0, 0.01)], [], {}) == (
        [],
        {"shares": [], "targets": [], "choice": None, "labelling": {}},
    )


def test_a_bad_labelling_record_is_an_error_naming_it(tmp_path):
    (tmp_path / silver.RECORD_FILE).write_text("[1, 2]")
    with pytest.raises(ValueError, match=f"{silver.RECORD_FILE}: expected the record of a label-silver run"):
        silver.read_labelling_records([tmp_path])
    (tmp_path / silver.RECORD_FILE).write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        silver.read_labelling_records([Path(tmp_path)])


def test_the_headline_quotes_each_student_against_baseline_and_control(report):
    section = headline_section(report["results"])
    rows = {(c["other"], c["baseline"]): c for c in report["results"]["comparisons"]}
    expected = [
        rows[("tagger-small-elmo-silver", "tagger-small-baseline")],
        rows[("tagger-small-elmo-silver", "tagger-small-self-training")],
    ]
    intervals = [
        f"{c['delta']:+.2f} ({100 * c['test']['ci95'][0]:+.2f} to {100 * c['test']['ci95'][1]:+.2f})" for c in expected
    ]
    (line,) = [
        line for line in section.splitlines() if line.startswith("| UPOS accuracy (Brown) |") and "| 75% |" in line
    ]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[3] == intervals[0] and cells[5] == intervals[1]
    assert cells[7:] == ["75%", "10,000", "9,500"]
    assert "ELMo's predictions as training data" in section
    without = {
        **report["results"],
        "comparisons": [c for c in report["results"]["comparisons"] if "silver" not in c["other"]],
    }
    assert "ELMo's predictions" not in headline_section(without)
