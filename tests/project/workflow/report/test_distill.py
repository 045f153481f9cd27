"""The distilled settings in the report (scripts/workflow/report/distill.py and
user_choice.distilled_choice_sentence): their comparisons, the share of ELMo's gain they recover,
the distilled tok2vec's targets with how much a missed one misses by, and the sentence on what to choose."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest

from scripts.workflow.evaluation import paired_stats
from scripts.workflow.report import data as report_data
from scripts.workflow.report import distill, user_choice
from scripts.workflow.report.build import ReportInputs, build
from scripts.workflow.report.headline import headline_section

N_DOCS = 40


def write_run(metrics: Path, stem: str, task: str, counts: numpy.ndarray) -> None:
    """The scores JSON (main score from the counts) and the per-document counts beside it."""
    score = float(paired_stats.SCORES[task](counts.sum(axis=0)))
    provenance = {"model": f"/nowhere/{stem}", "test_data": f"corpus/{task}/test.spacy", "model_sha256": stem}
    scores = {"ents_f": score, "ents_per_type": {}} if task == "ner" else {"tag_acc": score}
    (metrics / f"{stem}.json").write_text(json.dumps({**scores, **provenance}))
    docs = {
        "task": task,
        "fields": list(paired_stats.FIELDS[task]),
        **provenance,
        "test_data_sha256": f"{task}-test",
        "counts": counts.tolist(),
    }
    (metrics / f"{stem}.docs.json").write_text(json.dumps(docs))


def with_more_found(counts: numpy.ndarray, every: int) -> numpy.ndarray:
    """NER counts with one more entity found (a false negative turned true positive) in every
    ``every``-th document that has one left."""
    better = counts.copy()
    found = numpy.minimum(better[:, 2], 1)
    found[numpy.arange(len(found)) % every != 0] = 0
    better[:, 0] += found
    better[:, 2] -= found
    return better


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """NER: ELMo finds one more entity per document, the distilled setting one in four documents
    (a share well below half), spaCy's pretraining nothing. Small tagger: ELMo +2 correct tokens per
    document, distilled and spaCy's pretraining +1 (exactly half of ELMo's gain: accuracy is
    linear in the counts)."""
    base = tmp_path_factory.mktemp("distill")
    metrics = base / "metrics"
    metrics.mkdir()
    rng = numpy.random.default_rng(0)
    for seed in range(3):
        gold = rng.integers(2, 5, size=N_DOCS)
        tp = numpy.minimum(gold - 1, rng.integers(0, 3, size=N_DOCS))
        ner = numpy.stack([tp, rng.integers(0, 2, size=N_DOCS), gold - tp], axis=1)
        write_run(metrics, f"conll-small-baseline.seed{seed}", "ner", ner)
        write_run(metrics, f"conll-small-spacy-pretrain.seed{seed}", "ner", ner)
        write_run(metrics, f"conll-small-elmo.seed{seed}", "ner", with_more_found(ner, 1))
        write_run(metrics, f"conll-small-elmo-distilled.seed{seed}", "ner", with_more_found(ner, 4))
        total = rng.integers(10, 20, size=N_DOCS)
        correct = total - 3 - rng.integers(0, 2, size=N_DOCS)
        for variant, extra in (("baseline", 0), ("spacy-pretrain", 1), ("elmo", 2), ("elmo-distilled", 1)):
            counts = numpy.stack([correct + extra, total, total], axis=1)
            write_run(metrics, f"tagger-small-{variant}.seed{seed}", "tagger", counts)
    inputs = ReportInputs(
        metrics_dir=metrics,
        training_dir=base / "training",
        bilm_dir=base / "no-bilm",
        output_dir=base / "reports",
        resamples=500,
        rounds=500,
    )
    report_md, section, _, results = build(inputs)
    return {"md": report_md, "section": section, "results": results}


def test_each_distilled_setting_is_compared_with_baseline_spacy_pretraining_and_elmo(report):
    rows = {(c["other"], c["baseline"]): c for c in report["results"]["comparisons"]}
    for task in ("conll-small", "tagger-small"):
        for reference in ("baseline", "spacy-pretrain", "elmo"):
            row = rows[(f"{task}-elmo-distilled", f"{task}-{reference}")]
            assert row["test"] is not None and row["test"]["seeds"] == [[0, 0], [1, 1], [2, 2]]
            assert f"| {task}-elmo-distilled vs {task}-{reference} |" in report["md"]
    # ELMo is better than its distillation, and the distilled NER beats the baseline
    assert rows[("conll-small-elmo-distilled", "conll-small-elmo")]["verdict"] == "loss"
    assert rows[("conll-small-elmo-distilled", "conll-small-baseline")]["verdict"] == "gain"
    small = rows[("tagger-small-elmo-distilled", "tagger-small-spacy-pretrain")]
    assert small["delta"] == pytest.approx(0.0, abs=1e-9) and small["verdict"] == "no significant difference"


def test_the_recovered_share_is_the_ratio_of_the_paired_differences(report):
    rows = {(c["other"], c["baseline"]): c for c in report["results"]["comparisons"]}
    shares = {s["setting"]: s for s in report["results"]["distillation"]["shares"]}
    tagger = shares["tagger-small-elmo-distilled"]
    assert tagger["share"] == pytest.approx(0.5)  # +1 of +2 tokens per document
    assert "distillation recovers 50% of ELMo's gain over the baseline" in tagger["text"]
    ner = shares["conll-small-elmo-distilled"]
    distilled_gain = rows[("conll-small-elmo-distilled", "conll-small-baseline")]["delta"]
    elmo_gain = rows[("conll-small-elmo", "conll-small-baseline")]["delta"]
    assert ner["share"] == pytest.approx(distilled_gain / elmo_gain) and 0.1 < ner["share"] < 0.45
    assert f"distillation recovers {ner['share']:.0%} of ELMo's gain" in ner["text"]
    for text in (tagger["text"], ner["text"]):
        assert text in report["md"] and text in report["section"]


def test_the_distilled_targets_say_what_is_met_and_by_how_much_one_is_missed(report):
    targets = report["results"]["distillation"]["targets"]
    assert [(t["task"], t["size"], t["met"]) for t in targets] == [
        ("conll", "small", True),  # beats the baseline
        ("conll", "small", True),  # beats spaCy's pretraining (the same runs as the baseline here)
        ("conll", "small", False),  # a quarter of the documents: well below half of ELMo's gain
    ]
    share = next(s for s in report["results"]["distillation"]["shares"] if s["setting"] == "conll-small-elmo-distilled")
    missed = targets[2]
    assert missed["short_by"] == pytest.approx(0.5 - share["share"])
    points = 0.5 * share["elmo_gain"] - share["distilled_gain"]
    assert (
        f"not met, missed by {(0.5 - share['share']) * 100:.0f} percentage points of the share, "
        f"{points:.2f} points of the score" in missed["text"]
    )
    assert (
        "## ELMo distilled into the baseline's tok2vec" in report["md"]
        and "Targets for the distilled tok2vec:" in report["md"]
    )
    for target in targets:
        assert target["text"] in report["md"] and target["text"] in report["section"]
    # the gain targets of one run still come from ELMo, not from its distillation
    assert report["results"]["targets"][0]["setting"] == "conll-small-elmo"


def test_the_headline_quotes_each_distilled_setting_against_the_baseline(report):
    results = report["results"]
    section = headline_section(results)
    rows = {(c["other"], c["baseline"]): c for c in results["comparisons"]}
    shares = {s["setting"]: s["share"] for s in results["distillation"]["shares"]}
    for task, label in (("conll-small", "NER F1 (CoNLL-2003 news)"), ("tagger-small", "UPOS accuracy (Brown)")):
        comparison = rows[(f"{task}-elmo-distilled", f"{task}-baseline")]
        low, high = (100 * bound for bound in comparison["test"]["ci95"])
        expected = f"{comparison['delta']:+.2f} ({low:+.2f} to {high:+.2f})"
        (line,) = [line for line in section.splitlines() if line.startswith(f"| {label} |") and expected in line]
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[5] == f"{shares[f'{task}-elmo-distilled']:.0%}"
        assert cells[-3:] == ["-", "-", "-"]  # no price folder: words/s not measured
    assert "50%" in section  # the small tagger keeps exactly half of ELMo's gain
    without = {
        **results,
        "comparisons": [c for c in results["comparisons"] if "distilled" not in c["other"]],
        "distillation": None,
    }
    assert "distilled" not in headline_section(without)


def row(other: str, baseline: str, delta: float, p: float) -> dict:
    verdict = "no significant difference" if p >= 0.05 else ("gain" if delta > 0 else "loss")
    return {
        "other": other,
        "baseline": baseline,
        "delta": delta,
        "test": SimpleNamespace(p_value=p),
        "verdict": verdict,
    }


def test_a_missed_significance_target_says_by_how_much():
    rows = [
        row("conll-small-elmo", "conll-small-baseline", 2.0, 0.01),
        row("conll-small-elmo-distilled", "conll-small-baseline", -0.4, 0.5),
        row("conll-small-elmo-distilled", "conll-small-spacy-pretrain", 0.7, 0.2),
    ]
    shares = distill.share_rows(rows)
    assert [s["share"] for s in shares] == [pytest.approx(-0.2)]
    tie = distill.target_rows([{**rows[1], "delta": -0.0}], [])[0]
    assert "missed by 0.00 points" in tie["text"] and tie["short_by"] == 0.0
    beats_baseline, beats_spacy, half = distill.target_rows(rows, shares)
    assert beats_baseline["met"] is False and beats_baseline["short_by"] == pytest.approx(0.4)
    assert "beats the baseline with p < 0.05: not met, missed by 0.40 points" in beats_baseline["text"]
    assert beats_spacy["met"] is False and beats_spacy["short_by"] is None
    assert "positive but not significant" in beats_spacy["text"]
    assert "p = 0.200" in beats_spacy["text"]
    # half of +2.0 is +1.0: -0.4 misses it by 1.40 points, 70 percentage points of the share
    assert half["short_by"] == pytest.approx(0.7)
    assert "missed by 70 percentage points of the share, 1.40 points of the score" in half["text"]


def test_no_share_without_a_gain_of_elmo():
    assert distill.recovered_share(1.0, 0.0) is None and distill.recovered_share(1.0, -1.0) is None
    assert distill.recovered_share(1.5, 2.0) == pytest.approx(0.75)
    rows = [
        row("conll-small-elmo", "conll-small-baseline", -0.5, 0.6),
        row("conll-small-elmo-distilled", "conll-small-baseline", 0.3, 0.7),
    ]
    (share,) = distill.share_rows(rows)
    assert share["share"] is None and "ELMo did not gain over the baseline" in share["text"]
    half = distill.target_rows(rows, [share])[2]
    assert half["met"] is None and "not measured" in half["text"]
    lines, kept = distill.distill_lines([row("conll-small-elmo", "conll-small-baseline", 1.0, 0.01)])
    assert lines == [] and kept == {"shares": [], "targets": [], "choice": None}


def test_the_distilled_setting_is_compared_after_the_known_variants():
    names = ["conll-small-baseline", "conll-small-elmo", "conll-small-spacy-pretrain", "conll-small-elmo-distilled"]
    assert report_data.comparisons(names) == [
        ("conll", "small", "conll-small-baseline", "conll-small-spacy-pretrain"),
        ("conll", "small", "conll-small-baseline", "conll-small-elmo"),
        ("conll", "small", "conll-small-spacy-pretrain", "conll-small-elmo"),
        ("conll", "small", "conll-small-baseline", "conll-small-elmo-distilled"),
        ("conll", "small", "conll-small-spacy-pretrain", "conll-small-elmo-distilled"),
        ("conll", "small", "conll-small-elmo", "conll-small-elmo-distilled"),
    ]


def test_the_choice_sentence_covers_the_distilled_option(report):
    rows = [
        row("conll-small-elmo-distilled", "conll-small-spacy-pretrain", 1.5, 0.01),
        row("conll-small-elmo-distilled", "conll-small-elmo", -2.0, 0.03),
        row("tagger-small-elmo-distilled", "tagger-small-spacy-pretrain", -0.1, 0.4),
        row("tagger-small-elmo-distilled", "tagger-small-elmo", 0.2, 0.02),
        row("conll-small-elmo", "conll-small-spacy-pretrain", 3.5, 0.001),  # ELMo's own choice: not this sentence's
    ]
    assert user_choice.distilled_choice_sentence(rows) == (
        "For a pipeline as fast as the baseline (no biLM at run time; distilling costs the biLM's pretraining "
        "and as much CPU time again), choose the distilled ELMo for NER (CoNLL-2003 news) with the small training "
        "set (distilled - spaCy's pretraining: +1.50 points, p = 0.010); the tests cannot choose between them "
        "for POS tagging (Brown) with the small training set (distilled - spaCy's pretraining: -0.10 points, "
        "p = 0.400). Where the biLM can run, ELMo against its distillation: choose ELMo for NER (CoNLL-2003 "
        "news) with the small training set (distilled - ELMo: -2.00 points, p = 0.030); the distilled ELMo is "
        "better still for POS tagging (Brown) with the small training set (distilled - ELMo: +0.20 points, "
        "p = 0.020)."
    )
    assert user_choice.distilled_choice_sentence(rows[-1:]) is None
    loss = row("conll-small-elmo-distilled", "conll-small-spacy-pretrain", -1.0, 0.01)
    assert "choose spaCy's pretraining for NER" in user_choice.distilled_choice_sentence([loss])
    # the report shows the sentence built from its own comparisons, first in the distillation section
    choice = report["results"]["distillation"]["choice"]
    assert choice.startswith("For a pipeline as fast as the baseline") and "choose the distilled ELMo for NER" in choice
    assert choice in report["md"] and choice in report["section"]
