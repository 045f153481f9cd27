"""The report command (scripts/workflow/report/) on a small constructed metrics folder:
comparisons, verdicts, wording, plots."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest

from scripts.workflow.evaluation import paired_stats
from scripts.workflow.report import data as report_data
from scripts.workflow.report import rows as report_rows
from scripts.workflow.report import text as report_text
from scripts.workflow.report import user_choice

N_DOCS = 60
README = "# Project\n\nIntro.\n\n## Results\n\n<!-- results:start -->\nold\n<!-- results:end -->\n\nAfter.\n"


def write_run(
    metrics: Path, stem: str, task: str, counts: numpy.ndarray, with_docs: bool = True, model: str = ""
) -> None:
    """A scores JSON whose main score comes from the counts, and the counts beside it."""
    score = float(paired_stats.SCORES[task](counts.sum(axis=0)))
    provenance = {
        "model": model or f"/nowhere/{stem}",
        "test_data": f"corpus/{task}/test.spacy",
        "model_sha256": stem,
    }
    scores = (
        {"ents_f": score, "ents_per_type": {"PER": {"p": score, "r": score, "f": score}}}
        if task == "ner"
        else {"tag_acc": score}
    )
    (metrics / f"{stem}.json").write_text(json.dumps({**scores, **provenance}))
    if with_docs:
        docs = {
            "task": task,
            "fields": list(paired_stats.FIELDS[task]),
            **provenance,
            "test_data_sha256": f"{task}-test",
            "counts": counts.tolist(),
        }
        (metrics / f"{stem}.docs.json").write_text(json.dumps(docs))


def ner_counts(rng, extra_tp: int) -> numpy.ndarray:
    gold = rng.integers(1, 4, size=N_DOCS)
    tp = numpy.minimum(gold, rng.integers(0, 3, size=N_DOCS) + extra_tp)
    return numpy.stack([tp, rng.integers(0, 2, size=N_DOCS), gold - tp], axis=1)


def tagger_counts(rng, extra: int) -> numpy.ndarray:
    total = rng.integers(10, 20, size=N_DOCS)
    correct = total - rng.integers(1, 3, size=N_DOCS) - 1 + extra
    return numpy.stack([correct, total, total], axis=1)


@pytest.fixture(scope="module")
def metrics_folder(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("report")
    metrics = base / "metrics"
    metrics.mkdir()
    rng = numpy.random.default_rng(0)
    for seed in range(3):
        baseline = ner_counts(rng, 0)
        write_run(metrics, f"conll-small-baseline.seed{seed}", "ner", baseline)
        better = baseline.copy()  # one more entity found in every document that has one left
        found = numpy.minimum(better[:, 2], 1)
        better[:, 0] += found
        better[:, 2] -= found
        write_run(metrics, f"conll-small-elmo.seed{seed}", "ner", better)
        write_run(metrics, f"conll-small-elmo-adapted.seed{seed}", "ner", better)  # the same as conll-small-elmo
        write_run(metrics, f"conll-small-spacy-pretrain.seed{seed}", "ner", baseline)  # no better than none
    write_run(metrics, "ner-small-elmo.seed0", "ner", ner_counts(rng, 0))  # no baseline: no comparison
    tagger = tagger_counts(rng, 0)
    write_run(metrics, "tagger-baseline", "tagger", tagger)
    noisy = tagger.copy()
    noisy[::2, 0] += 1  # +1 on half of the documents, -1 on the other half
    noisy[1::2, 0] -= 1
    noisy[0, 0] += 1  # one token more in all: a difference, but well within the noise
    write_run(metrics, "tagger-elmo", "tagger", noisy)
    worse = tagger.copy()
    worse[:, 0] -= 1
    write_run(metrics, "tagger-elmo-published", "tagger", worse)
    write_run(metrics, "tagger-small-baseline", "tagger", tagger_counts(rng, 0))
    write_run(metrics, "tagger-small-elmo", "tagger", tagger_counts(rng, 1), with_docs=False)
    return metrics


def write_bilm(folder: Path, run: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(run))
    lines = [
        {
            "step": step,
            "tokens": step * 2000,
            "dev_perplexity_forward": 900 / step**0.5,
            "dev_perplexity_backward": 950 / step**0.5,
        }
        for step in (100, 200, 300)
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


SPACY_PRETRAIN_RUN = {
    "stopped_by": "cpu_seconds",
    "cpu_seconds_budget": 449.8,
    "max_steps": None,
    "cpu_seconds": 450.1,
    "wall_seconds": 700.0,
    "steps": 1234,
    "epochs": 2,
    "words": 3456789,
}
# two steps side by side (pretrain and a baseline), then spaCy's pretraining
STEP_TIMES = {
    "pretrain": {"seconds": 600.0, "cpu_seconds": 449.8, "started_unix": 1000.0},
    "train-conll-small-baseline": {"seconds": 500.0, "cpu_seconds": 480.0, "started_unix": 1000.0},
    "spacy-pretrain": {"seconds": 470.0, "cpu_seconds": 451.0, "started_unix": 1600.0},
}


@pytest.fixture(scope="module")
def built(metrics_folder, tmp_path_factory, run_command) -> dict:
    base = tmp_path_factory.mktemp("built")
    bilm = write_bilm(
        base / "bilm",
        {
            "stopped_by": "max_minutes",
            "steps": 300,
            "tokens": 600000,
            "max_steps": 2000,
            "max_tokens": 4000000,
            "max_minutes": 20,
            "minutes": 20.1,
        },
    )
    adapted = write_bilm(
        base / "bilm-adapted",
        {
            "stopped_by": "max_tokens",
            "steps": 300,
            "tokens": 600000,
            "max_steps": 0,
            "max_tokens": 600000,
            "minutes": 3.5,
        },
    )
    spacy_pretrain = base / "spacy-pretrain"
    spacy_pretrain.mkdir()
    (spacy_pretrain / "run.json").write_text(json.dumps(SPACY_PRETRAIN_RUN))
    step_times = base / "step_times.json"
    step_times.write_text(json.dumps(STEP_TIMES))
    readme = base / "README.md"
    readme.write_text(README)
    landing = base / "LANDING.md"
    landing.write_text("# Landing\n\n<!-- headline:start -->\nold\n<!-- headline:end -->\n\nMore.\n")
    out = base / "reports"
    assert (
        run_command(
            [
                "report",
                "--metrics-dir",
                str(metrics_folder),
                "--training-dir",
                str(base / "training"),
                "--bilm-dir",
                str(bilm),
                "--adapted-bilm-dir",
                str(adapted),
                "--spacy-pretrain-dir",
                str(spacy_pretrain),
                "--spacy-pretrain-dir",
                str(base / "not-run"),
                "--step-times",
                str(step_times),
                "--output-dir",
                str(out),
                "--command",
                "make all",
                f"--results-page={readme}",
                f"--readme={landing}",
                "--resamples",
                "1000",
                "--rounds",
                "1000",
            ]
        )
        == 0
    )
    text = readme.read_text()
    return {
        "out": out,
        "results": json.loads((out / "results.json").read_text()),
        "report": (out / "report.md").read_text(),
        "readme": text,
        "landing": landing.read_text(),
        "section": text.split("<!-- results:start -->")[1].split("<!-- results:end -->")[0],
    }


def test_comparisons_pair_settings_by_name():
    names = [
        "tagger-small-elmo",
        "conll-small-elmo-adapted",
        "conll-small-baseline",
        "conll-small-elmo",
        "conll-small-elmo-published",
        "ner-small-elmo",
        "tagger-baseline",
        "tagger-elmo-adapted",
        "tagger-small-baseline",
        "conll-small-extra",
        "probe-ner",
        "ner-small-baseline",
    ]
    assert report_data.comparisons(names) == [
        ("conll", "small", "conll-small-baseline", "conll-small-elmo"),
        ("conll", "small", "conll-small-baseline", "conll-small-elmo-adapted"),
        ("conll", "small", "conll-small-elmo", "conll-small-elmo-adapted"),
        ("conll", "small", "conll-small-baseline", "conll-small-elmo-published"),
        ("conll", "small", "conll-small-baseline", "conll-small-extra"),  # a new variant needs no code
        ("ner", "small", "ner-small-baseline", "ner-small-elmo"),
        ("tagger", "full", "tagger-baseline", "tagger-elmo-adapted"),  # no tagger-elmo: vs baseline only
        ("tagger", "small", "tagger-small-baseline", "tagger-small-elmo"),
    ]


def test_verdicts_follow_the_paired_tests(built):
    rows = {(c["other"], c["baseline"]): c for c in built["results"]["comparisons"]}
    assert list(rows) == [
        ("conll-small-spacy-pretrain", "conll-small-baseline"),
        ("conll-small-elmo", "conll-small-baseline"),
        ("conll-small-elmo", "conll-small-spacy-pretrain"),
        ("conll-small-elmo-adapted", "conll-small-baseline"),
        ("conll-small-elmo-adapted", "conll-small-elmo"),
        ("tagger-elmo", "tagger-baseline"),
        ("tagger-elmo-published", "tagger-baseline"),
        ("tagger-small-elmo", "tagger-small-baseline"),
    ]
    gain = rows[("conll-small-elmo", "conll-small-baseline")]
    assert gain["verdict"] == "gain" and gain["test"]["p_value"] < 0.05 and gain["test"]["ci95"][0] > 0
    assert gain["test"]["seeds"] == [[0, 0], [1, 1], [2, 2]] and gain["test"]["n_docs"] == N_DOCS
    assert gain["delta"] == pytest.approx(100 * gain["test"]["difference"])
    same = rows[("conll-small-elmo-adapted", "conll-small-elmo")]
    assert same["verdict"] == "no significant difference" and same["delta"] == 0 and same["test"]["p_value"] == 1
    noisy = rows[("tagger-elmo", "tagger-baseline")]
    assert noisy["verdict"] == "no significant difference" and noisy["test"]["p_value"] > 0.05
    assert noisy["delta"] > 0
    assert noisy["test"]["ci95"][0] < 0 < noisy["test"]["ci95"][1]
    assert rows[("tagger-elmo-published", "tagger-baseline")]["verdict"] == "loss"
    untested = rows[("tagger-small-elmo", "tagger-small-baseline")]
    assert untested["verdict"] == "not tested" and untested["test"] is None
    assert "no per-document counts for tagger-small-elmo" in untested["not_tested"]
    assert untested["delta"] > 0  # the means differ, but no gain is claimed without a test


def test_readme_claims_a_gain_only_where_p_is_below_005(built):
    section = built["section"]
    lines = {
        line.split(":")[0] + ":" + line.split(":")[1]: line for line in section.splitlines() if line.startswith("- ")
    }
    ner = [line for line in section.splitlines() if line.startswith("- NER (CoNLL-2003 news), small")]
    assert "no significant difference between conll-small-spacy-pretrain and conll-small-baseline" in ner[0]
    assert "**gain**: conll-small-elmo beats conll-small-baseline" in ner[1]
    assert "**gain**: conll-small-elmo beats conll-small-spacy-pretrain" in ner[2]
    ner = ner[1:2] + ner[3:]
    assert "no significant difference between conll-small-elmo-adapted and conll-small-elmo" in ner[2]
    tagger = [line for line in section.splitlines() if line.startswith("- POS tagging (Brown)")]
    assert "no significant difference between tagger-elmo and tagger-baseline" in tagger[0]
    assert "**loss**: tagger-elmo-published is below tagger-baseline" in tagger[1]
    assert "not tested" in tagger[2] and "no gain is claimed" in tagger[2]
    for line in tagger[:1] + tagger[2:] + ner[2:3]:
        assert "gain**" not in line and "beats" not in line
    assert lines  # the claims are list items
    assert "| conll-small-elmo vs conll-small-baseline |" in section and "| gain |" in section
    assert "mean ± std over seeds" in section
    assert built["readme"].startswith("# Project\n\nIntro.\n\n## Results\n\n") and built["readme"].endswith(
        "<!-- results:end -->\n\nAfter.\n"
    )
    assert "\nold\n" not in built["readme"]


def test_time_guard_is_reported_loudly(built):
    warning = (
        "Pretraining of the biLM was cut by the time guard (20 min) at step 300 of 2,000, 600,000 of 4,000,000 tokens"
    )
    assert f"> **Warning:** {warning}" in built["report"]
    assert f"> **Warning:** {warning}" in built["section"]
    assert built["results"]["warnings"] == [warning + ": the biLM saw less text than its configuration asks for."]
    assert (
        "Domain adaptation of the biLM (bilm-adapted) ended at its token budget: 600,000 tokens in 300 steps"
        in built["section"]
    )
    assert built["results"]["adaptations"][0]["run"]["stopped_by"] == "max_tokens"


def test_figures_are_written(built):
    for name in (
        "scores.png",
        "differences.png",
        "ner_per_type.png",
        "bilm_perplexity.png",
        "bilm-adapted_perplexity.png",
    ):
        assert (built["out"] / name).stat().st_size > 1000, name
        assert name in built["report"]
    assert "differences.png" in built["section"]
    assert set(built["results"]["figures"]) >= {"scores", "differences", "bilm-adapted_perplexity"}


@pytest.mark.parametrize(
    "run, words, loud",
    [
        (
            {"stopped_by": "max_steps", "steps": 500, "tokens": 10000, "max_tokens": 0},
            "ran its 500 steps (10,000 tokens)",
            False,
        ),
        (
            {"stopped_by": "signal", "steps": 7, "tokens": 70, "max_steps": 10},
            "stopped by a signal at step 7 of 10",
            True,
        ),
        ({"stopped_by": "max_minutes", "steps": 7, "tokens": 70}, "cut by the time guard at step 7, 70 tokens", True),
        ({"stopped_by": "something"}, "ended (stopped_by: 'something')", False),
    ],
)
def test_describe_run(run, words, loud):
    sentence, warn = report_data.describe_run(run)
    assert words in sentence and warn is loud


def test_counts_that_disagree_with_the_scores_are_not_tested(metrics_folder, tmp_path):
    for path in metrics_folder.glob("tagger-*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    docs = json.loads((tmp_path / "tagger-elmo.docs.json").read_text())
    docs["counts"][0][0] -= 1
    (tmp_path / "tagger-elmo.docs.json").write_text(json.dumps(docs))
    rows = report_rows.comparison_rows(report_data.load_settings(tmp_path), resamples=10, rounds=10)
    row = next(r for r in rows if r["other"] == "tagger-elmo")
    assert row["verdict"] == "not tested" and "tagger-elmo.docs.json: the counts give tag_acc" in row["not_tested"]


def test_bad_json_names_the_file(tmp_path):
    (tmp_path / "conll-small-elmo.json").write_text("{not json")
    with pytest.raises(ValueError, match="conll-small-elmo.json: not valid JSON"):
        report_data.load_settings(tmp_path)


def test_targets_say_whether_and_by_how_much(built):
    targets = {(t["task"], t["size"]): t for t in built["results"]["targets"]}
    ner = targets[("conll", "small")]
    assert ner["met"] and ner["setting"] == "conll-small-elmo" and ner["short_by"] == 0.0
    tagger = targets[("tagger", "full")]  # the published weights' loss is not a candidate
    assert not tagger["met"] and tagger["setting"] == "tagger-elmo"
    assert tagger["short_by"] == pytest.approx(0.5 - tagger["delta"])
    assert f"not met, {tagger['short_by']:.2f} points short (tagger-elmo:" in built["section"]
    small = targets[("tagger", "small")]
    assert not small["met"] and small["setting"] is None and "not measured" in small["text"]
    assert "**met** (conll-small-elmo: +" in built["report"]


def test_report_stops_on_a_bad_file_naming_it(tmp_path, capsys, run_command):
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "conll-small-elmo.seed0.json").write_text("[1, 2]")
    with pytest.raises(SystemExit):
        run_command(
            [
                "report",
                "--metrics-dir",
                str(tmp_path / "metrics"),
                "--training-dir",
                str(tmp_path),
                "--bilm-dir",
                str(tmp_path / "bilm"),
                "--output-dir",
                str(tmp_path / "out"),
            ]
        )
    assert "conll-small-elmo.seed0.json: expected a JSON object" in " ".join(capsys.readouterr().out.split())


def test_elmo_is_also_compared_with_spacys_pretraining():
    names = [
        "conll-small-baseline",
        "conll-small-elmo",
        "conll-small-spacy-pretrain",
        "conll-small-elmo-adapted",
        "tagger-small-spacy-pretrain",
        "tagger-small-elmo",
    ]
    assert report_data.comparisons(names) == [
        ("conll", "small", "conll-small-baseline", "conll-small-spacy-pretrain"),
        ("conll", "small", "conll-small-baseline", "conll-small-elmo"),
        ("conll", "small", "conll-small-spacy-pretrain", "conll-small-elmo"),
        ("conll", "small", "conll-small-baseline", "conll-small-elmo-adapted"),
        ("conll", "small", "conll-small-elmo", "conll-small-elmo-adapted"),
        ("tagger", "small", "tagger-small-spacy-pretrain", "tagger-small-elmo"),  # no small baseline
    ]


def test_the_choice_follows_the_tests(built):
    """One sentence: choose ELMo only where it beats spaCy's pretraining with p < 0.05."""
    choice = built["results"]["choice"]
    rows = {(c["other"], c["baseline"]): c for c in built["results"]["comparisons"]}
    vs_spacy = rows[("conll-small-elmo", "conll-small-spacy-pretrain")]
    assert vs_spacy["verdict"] == "gain"
    assert choice == (
        "For the same pretraining CPU time, choose ELMo for NER (CoNLL-2003 news) with the small training set "
        f"(ELMo - spaCy's pretraining: {vs_spacy['delta']:+.2f} points, "
        f"p = {report_text.p_text(vs_spacy['test']['p_value'])})."
    )
    assert choice in built["section"] and choice in built["report"]
    assert built["results"]["targets"][0]["setting"] == "conll-small-elmo"  # spaCy's pretraining is no ELMo target


@pytest.mark.parametrize(
    "verdict, words",
    [
        ("loss", "choose spaCy's pretraining for POS tagging"),
        ("no significant difference", "the tests cannot choose between them"),
    ],
)
def test_no_choice_of_elmo_without_a_gain(verdict, words):
    row = {
        "other": "tagger-small-elmo",
        "baseline": "tagger-small-spacy-pretrain",
        "test": SimpleNamespace(p_value=0.01 if verdict == "loss" else 0.2),
        "delta": -1.0,
        "verdict": verdict,
    }
    sentence = user_choice.choice_sentence([row])
    assert words in sentence and "choose ELMo" not in sentence
    assert user_choice.choice_sentence([{**row, "baseline": "tagger-small-baseline"}]) is None


def test_budgets_and_elapsed_time_are_reported(built):
    runs = built["results"]["spacy_pretraining"]
    assert runs == {"spacy-pretrain": SPACY_PRETRAIN_RUN}  # the folder without run.json is skipped
    row = [line for line in built["report"].splitlines() if line.startswith("| spacy pretrain (spacy-pretrain)")]
    assert row == [
        "| spacy pretrain (spacy-pretrain) | 451 s | CPU-time budget (450 s; the process stopped "
        "at 450 s) | 1,234 | 3,456,789 words (in epoch 2) |"
    ]
    assert "| biLM (pretrain) | 450 s | time guard | 300 | 600,000 tokens |" in built["report"]
    # pretrain and the baseline ran side by side: 1,070 s from first start to last end, 1,570 s summed
    assert built["results"]["elapsed_seconds"] == pytest.approx(1070.0)
    assert built["results"]["cpu_seconds"] == pytest.approx(449.8 + 480.0 + 451.0)
    assert (
        "and 17.8 min from the first one's start to the last one's end (26.2 min of wall time summed"
        in built["section"]
    )


def test_without_step_times_the_report_says_they_are_missing(metrics_folder, tmp_path, run_command):
    """`spacy project run` records no step times: the report says so instead of failing, and the
    budget table takes the biLM's CPU time from its cpu_time.json and spaCy's from its run.json."""
    from scripts.workflow.process_times import ProcessTimes, write_cpu_record

    bilm = write_bilm(
        tmp_path / "bilm",
        {
            "stopped_by": "max_tokens",
            "steps": 300,
            "tokens": 600000,
            "max_steps": 0,
            "max_tokens": 600000,
            "minutes": 9.0,
        },
    )
    write_cpu_record(bilm / "cpu_time.json", ProcessTimes(0, 600.0, 430.2), ["python", "-m", "spacy_elmo"])
    spacy_pretrain = tmp_path / "spacy-pretrain"
    spacy_pretrain.mkdir()
    (spacy_pretrain / "run.json").write_text(
        json.dumps({**SPACY_PRETRAIN_RUN, "cpu_seconds_budget": 430.2, "cpu_seconds": 431.4})
    )
    out = tmp_path / "reports"
    assert (
        run_command(
            [
                "report",
                "--metrics-dir",
                str(metrics_folder),
                "--training-dir",
                str(tmp_path / "training"),
                "--bilm-dir",
                str(bilm),
                "--spacy-pretrain-dir",
                str(spacy_pretrain),
                "--step-times",
                str(tmp_path / "never-written.json"),
                "--output-dir",
                str(out),
                "--resamples",
                "200",
                "--rounds",
                "200",
            ]
        )
        == 0
    )
    report_md = (out / "report.md").read_text()
    results = json.loads((out / "results.json").read_text())
    assert report_md.count(report_text.TIMES_MISSING) == 2  # under the title and under "Time per step"
    assert results["step_times"] == {} and results["cpu_seconds"] is None
    assert "| biLM (pretrain) | 430 s | token budget | 300 | 600,000 tokens |" in report_md
    assert (
        "| spacy pretrain (spacy-pretrain) | 431 s | CPU-time budget (430 s; the process stopped at 431 s)" in report_md
    )


def test_the_textcat_report_says_when_step_times_are_missing(tmp_path):
    from scripts.workflow.report.textcat import TextcatReportInputs, build_textcat_report

    (tmp_path / "metrics").mkdir()
    inputs = TextcatReportInputs(
        metrics_dir=tmp_path / "metrics",
        output_dir=tmp_path / "out",
        corpus_stats=tmp_path / "stats.json",
        step_times=tmp_path / "none.json",
    )
    report_md, section, results = build_textcat_report(inputs)
    assert report_md.count(report_text.TIMES_MISSING) == 2 and results["step_times"] == {}
    (tmp_path / "times.json").write_text(
        json.dumps({"train-textcat-elmo": {"seconds": 90.0, "cpu_seconds": 80.0, "started_unix": 5.0}})
    )
    report_md, _, _ = build_textcat_report(
        TextcatReportInputs(
            metrics_dir=tmp_path / "metrics", output_dir=tmp_path / "out", step_times=tmp_path / "times.json"
        )
    )
    assert report_text.TIMES_MISSING not in report_md and "| train-textcat-elmo | 90 s | 80 s |" in report_md


def test_the_landing_page_gets_the_headline_and_nothing_else(built):
    landing = built["landing"]
    assert landing.startswith("# Landing\n\n<!-- headline:start -->\nRun of ") and landing.endswith("\n\nMore.\n")
    assert "\nold\n" not in landing and "<!-- results:start -->" not in landing
    headline = landing.split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0]
    compared = [
        c
        for c in built["results"]["comparisons"]
        if c["other"].endswith("-elmo") and c["baseline"].endswith("-baseline")
    ]
    first_table = next(block for block in headline.split("\n\n") if block.startswith("| "))
    rows = first_table.splitlines()[2:]  # after header and rule
    assert len(rows) == len(compared) > 0
    for row, comparison in zip(rows, compared):
        # no price step in this run: the words/s of baseline and ELMo are "-"
        assert row.endswith("| - | - |")
        untested = row.endswith("| n/a | n/a | n/a | - | - |")
        assert (f"{comparison['delta']:+.2f} (" in row) if comparison["test"] else untested


def test_without_settings_on_other_biLMs_nothing_is_pooled(built):
    """Before the robustness workflow: no pooled section, and the headline as it was."""
    assert built["results"]["pooled"] == [] and built["results"]["robustness_cpu_seconds"] is None
    for text in (built["report"], built["section"], built["landing"]):
        assert "Over biLMs" not in text and "Over 3 biLMs" not in text and "One biLM" not in text
    headline = built["landing"].split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0]
    tables = [block for block in headline.split("\n\n") if block.startswith("| ")]
    # the comparisons of one run, and the paper's row beside the CoNLL-2003 one
    assert len(tables) == 2 and tables[1].startswith("| CoNLL-2003 test F1 |")
    assert "biLMs x seeds" not in headline


def test_the_papers_row_stands_beside_ours(built):
    """CoNLL-2003 is the paper's benchmark: its row (90.15 -> 92.22, as the paper states +2.06)
    beside ours, with the text each biLM read; our whole-training-split row only once the conll-full
    workflow has run."""
    headline = built["landing"].split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0]
    table = next(block for block in headline.split("\n\n") if block.startswith("| CoNLL-2003 test F1 |"))
    paper, ours = table.splitlines()[2:]
    assert "| 90.15 | 92.22 ± 0.10 | +2.06 |" in paper and "800M words" in paper
    assert ours.startswith("| this project (conll-small-elmo) | low-resource sample |")
    assert "about 3M words (600,000 tokens read)" in ours
    assert "`conll-full` workflow (not run)" in headline
    assert "## The paper's benchmark: CoNLL-2003" in built["report"]
    assert built["results"]["paper"]["elmo"] == 92.22


def test_the_headline_targets_say_what_is_not_measured(built):
    """Without the robustness and tweets workflows, their targets are not measured; the target
    against spaCy's pretraining is met here (ELMo beats it with p < 0.05)."""
    goals = {t["goal"].split(", ")[-1]: t for t in built["results"]["headline_targets"]}
    assert len(goals) == 3
    pooled = next(t for t in built["results"]["headline_targets"] if "pooled over the biLMs" in t["goal"])
    assert pooled["met"] is None and "the robustness workflow has not run" in pooled["text"]
    assert "on `all`'s biLM alone: +" in pooled["text"]
    spacy = next(t for t in built["results"]["headline_targets"] if "spaCy's pretraining" in t["goal"])
    assert spacy["met"] is True and "**met**" in spacy["text"]
    tweets = next(t for t in built["results"]["headline_targets"] if "cross-validated" in t["goal"])
    assert tweets["met"] is None and "the tweets workflow has not run" in tweets["text"]
    for target in built["results"]["headline_targets"]:
        assert f"- {target['text']}" in built["landing"] and f"- {target['text']}" in built["report"]
