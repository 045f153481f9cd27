"""The report's low-precision section (scripts/workflow/report/low_precision.py and its use in
build.py): per-document counts built so that the answer is known (identical predictions, one
entity lost in a thousand tweets, every document one tag worse) give the equivalence verdicts
with the margins (±0.5 NER F1 points, ±0.1 UPOS accuracy points); ``SETTING@PRECISION`` names
are never biLMs; a run without the precision scores has no section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

from scripts.workflow.report import data as report_data
from scripts.workflow.report import low_precision
from scripts.workflow.report.build import ReportInputs, build
from scripts.workflow.report.headline import headline_section

from .test_build import write_run

N_NER, N_TAGGER = 1000, 200
TEST_OPTIONS = {"resamples": 1000, "rounds": 1000}


def ner_float32() -> numpy.ndarray:
    """One entity per tweet, all found: F1 = 1."""
    return numpy.tile([1, 0, 0], (N_NER, 1))


def ner_one_lost() -> numpy.ndarray:
    """The same but the first tweet's entity missed: F1 = 2 * 999 / 1999 in the whole file."""
    counts = ner_float32()
    counts[0] = [0, 0, 1]
    return counts


def tagger_float32() -> numpy.ndarray:
    """Ten tokens per document, nine tagged right: accuracy 0.9 in every resample."""
    return numpy.tile([9, 10, 10], (N_TAGGER, 1))


def tagger_one_worse() -> numpy.ndarray:
    """Eight right instead of nine in every document: accuracy 0.8, 10 points less, always."""
    return numpy.tile([8, 10, 10], (N_TAGGER, 1))


def write_setting(folder: Path, name: str, task: str, counts: numpy.ndarray, seeds=(0, 1), **extra) -> None:
    folder.mkdir(exist_ok=True)
    for seed in seeds:
        stem = f"{name}.seed{seed}"
        write_run(folder, stem, task, counts)
        if extra:  # what evaluate --precision adds to both files
            for path in (folder / f"{stem}.json", folder / f"{stem}.docs.json"):
                path.write_text(json.dumps({**json.loads(path.read_text()), **extra}))


@pytest.mark.parametrize(
    "low, high, margin, verdict, outside",
    [
        (-0.3, 0.4, 0.5, "equivalent", 0.0),
        (-0.5, 0.5, 0.5, "equivalent", 0.0),  # on the margin is within it
        (-0.3, 0.6, 0.5, "not shown equivalent", 0.1),
        (-0.25, 0.05, 0.1, "not shown equivalent", 0.15),
        (-0.9, 0.8, 0.5, "not shown equivalent", 0.4),  # both ends out: the larger excess
        (0.0, 0.0, 0.1, "equivalent", 0.0),
    ],
)
def test_equivalence_needs_the_whole_interval_within_the_margin(low, high, margin, verdict, outside):
    found, by = low_precision.equivalence(low, high, margin)
    assert found == verdict and by == pytest.approx(outside)


def test_an_empty_interval_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        low_precision.equivalence(0.2, -0.2, 0.5)


def test_precision_names_are_no_biLMs_and_no_settings_of_their_own():
    assert report_data.split_precision("ner-elmo@int8") == ("ner-elmo", "int8")
    assert report_data.split_precision("tagger-small-elmo@bfloat16") == ("tagger-small-elmo", "bfloat16")
    assert report_data.split_precision("ner-elmo@bilm1") == ("ner-elmo@bilm1", None)
    assert report_data.split_bilm("ner-elmo@int8") == ("ner-elmo@int8", None)
    assert report_data.split_bilm("ner-elmo@bfloat16") == ("ner-elmo@bfloat16", None)
    names = ["ner-baseline", "ner-elmo", "ner-elmo@int8", "ner-elmo@bfloat16"]
    assert report_data.pooled_groups(names) == []  # no biLM group from precisions
    groups = report_data.pooled_groups(names + ["ner-elmo@bilm1"])
    assert groups == [("ner", "full", "ner-baseline", "ner-elmo", ["ner-elmo", "ner-elmo@bilm1"])]
    assert report_data.parse_setting("ner-elmo@int8") is None
    assert report_data.comparisons(names) == [("ner", "full", "ner-baseline", "ner-elmo")]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    """float32 scores (metrics/), the precision step's (metrics_precision/) and prices."""
    base = tmp_path_factory.mktemp("low_precision")
    metrics, precision, prices = base / "metrics", base / "metrics_precision", base / "prices"
    write_setting(metrics, "ner-elmo", "ner", ner_float32())
    write_setting(metrics, "tagger-small-elmo", "tagger", tagger_float32())
    write_setting(precision, "ner-elmo@int8", "ner", ner_one_lost(), precision="int8", elmo_precision="int8")
    write_setting(precision, "ner-elmo@bfloat16", "ner", ner_float32(), precision="bfloat16", elmo_precision="float32")
    write_setting(
        precision, "tagger-small-elmo@int8", "tagger", tagger_one_worse(), precision="int8", elmo_precision="int8"
    )
    write_setting(precision, "tagger-elmo@int8", "tagger", tagger_float32())  # no float32 tagger-elmo
    prices.mkdir()
    for name, words in (("ner-elmo", 1000.0), ("ner-elmo@int8", 2500.0)):
        price = {"words_per_cpu_second": words, "peak_memory_mib": 500.0, "size_mib": 40.0, "seed": 0}
        (prices / f"{name}.json").write_text(json.dumps(price))
    return {"base": base, "metrics": metrics, "precision": precision, "prices": prices}


@pytest.fixture(scope="module")
def rows(folders) -> dict:
    settings = {**report_data.load_settings(folders["metrics"]), **report_data.load_settings(folders["precision"])}
    from scripts.workflow.report.price import read_prices

    found = low_precision.precision_rows(settings, read_prices(folders["prices"]), **TEST_OPTIONS)
    return {row["name"]: row for row in found}


def test_identical_predictions_are_equivalent(rows):
    row = rows["ner-elmo@bfloat16"]
    test = row["test"]
    assert test.difference == 0 and test.ci_low == test.ci_high == 0 and test.p_value == 1
    assert row["verdict"] == "equivalent" and row["outside_margin_by"] == 0 and row["margin"] == 0.5
    assert row["ran_as"] == ["float32"]  # the CPU fell back: the row says so
    assert "ran as float32" in low_precision.sentence(row)


def test_one_lost_entity_in_a_thousand_is_within_half_a_point(rows):
    row = rows["ner-elmo@int8"]
    test = row["test"]
    assert test.difference == pytest.approx(2 * 999 / 1999 - 1)  # -0.05 points
    assert test.seeds == ((0, 0), (1, 1)) and test.n_docs == N_NER
    # the lost entity is drawn at most a few times in a resample: never half a point
    assert -0.5 < test.ci_low * 100 <= test.difference * 100 and test.ci_high <= 0
    assert row["verdict"] == "equivalent" and row["outside_margin_by"] == 0
    assert row["words_per_cpu_second"] == 2500 and row["float32_words_per_cpu_second"] == 1000
    assert row["speedup"] == pytest.approx(2.5)
    sentence = low_precision.sentence(row)
    assert "**equivalent** within ±0.5 points" in sentence and "(2.50x)" in sentence
    assert "ran as" not in sentence


def test_ten_points_worse_everywhere_is_not_shown_equivalent_by_that_much(rows):
    row = rows["tagger-small-elmo@int8"]
    test = row["test"]
    assert test.difference * 100 == pytest.approx(-10)
    assert test.ci_low * 100 == pytest.approx(-10) and test.ci_high * 100 == pytest.approx(-10)
    assert row["verdict"] == "not shown equivalent" and row["margin"] == 0.1
    assert row["outside_margin_by"] == pytest.approx(9.9)
    assert "leaves the ±0.1-point margin by 9.90 points" in low_precision.sentence(row)
    assert row["speedup"] is None  # not priced


def test_without_its_float32_scores_a_precision_is_not_tested(rows):
    row = rows["tagger-elmo@int8"]
    assert row["test"] is None and row["verdict"] == "not tested"
    assert row["not_tested"] == "tagger-elmo (float32) was not scored"


def test_rows_come_in_setting_and_precision_order(rows):
    assert list(rows) == ["ner-elmo@bfloat16", "ner-elmo@int8", "tagger-elmo@int8", "tagger-small-elmo@int8"]


def test_the_report_has_the_section_and_results_json_the_list(folders):
    inputs = ReportInputs(
        metrics_dir=folders["metrics"],
        training_dir=folders["base"] / "training",
        bilm_dir=folders["base"] / "bilm",
        output_dir=folders["base"] / "reports",
        price_dir=folders["prices"],
        precision_metrics_dir=folders["precision"],
        **TEST_OPTIONS,
    )
    report_md, section, _, results = build(inputs)
    assert "## Low precision" in report_md and "### Low precision" in section
    (line,) = [line for line in report_md.splitlines() if line.startswith("| ner-elmo | int8 |")]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[3:8] == ["99.95 ± 0.00", "100.00 ± 0.00", "2,500", "1,000", "-0.05"]
    assert cells[-2:] == ["±0.5", "equivalent"]
    (line,) = [line for line in report_md.splitlines() if line.startswith("| tagger-small-elmo | int8 |")]
    assert line.rstrip(" |").endswith("not shown equivalent (by 9.90)")
    listed = {entry["name"]: entry for entry in results["precision"]}
    assert set(listed) == {"ner-elmo@bfloat16", "ner-elmo@int8", "tagger-elmo@int8", "tagger-small-elmo@int8"}
    entry = listed["tagger-small-elmo@int8"]
    assert entry["verdict"] == "not shown equivalent" and entry["outside_margin_by"] == pytest.approx(9.9)
    assert entry["values"] == entry["test"]["other_scores"] and entry["float32_values"] == [0.9, 0.9]
    json.dumps(results)  # JSON-ready
    # the precision settings are in no other table
    assert all("@" not in row["name"] for row in results["settings"])
    assert all("@" not in row["other"] for row in results["comparisons"])
    # the README's headline quotes each row: difference, interval, margin, verdict, speed-up
    headline = headline_section(results)
    (line,) = [line for line in headline.splitlines() if line.startswith("| ner-elmo | int8 |")]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    low, high = (100 * bound for bound in listed["ner-elmo@int8"]["test"]["ci95"])
    assert cells[2:] == [f"-0.05 ({low:+.2f} to {high:+.2f})", "±0.5", "**equivalent**", "2,500 (2.50x)"]
    (line,) = [line for line in headline.splitlines() if line.startswith("| ner-elmo | bfloat16 (ran float32) |")]
    assert line.rstrip(" |").endswith("**equivalent** | -")  # the CPU fell back; not priced
    (line,) = [line for line in headline.splitlines() if line.startswith("| tagger-small-elmo | int8 |")]
    assert "| -10.00 (-10.00 to -10.00) | ±0.1 | not shown equivalent | - |" in line


def test_without_the_precision_scores_there_is_no_section(folders, tmp_path):
    inputs = ReportInputs(
        metrics_dir=folders["metrics"],
        training_dir=tmp_path / "training",
        bilm_dir=tmp_path / "bilm",
        output_dir=tmp_path / "reports",
        precision_metrics_dir=tmp_path / "missing",
        **TEST_OPTIONS,
    )
    report_md, section, _, results = build(inputs)
    assert "Low precision" not in report_md and "Low precision" not in section
    assert results["precision"] == []
    assert "biLM precision" not in headline_section(results)


def test_the_report_command_reads_the_precision_folder(folders, tmp_path, run_command, capsys):
    args = ["report", "--metrics-dir", str(folders["metrics"]), "--training-dir", str(tmp_path / "training")]
    args += ["--bilm-dir", str(tmp_path / "bilm"), "--output-dir", str(tmp_path / "reports")]
    args += ["--price-dir", str(folders["prices"]), "--resamples", "200", "--rounds", "200"]
    assert run_command(args + ["--precision-metrics-dir", str(folders["precision"])]) == 0
    results = json.loads((tmp_path / "reports" / "results.json").read_text())
    verdicts = {entry["name"]: entry["verdict"] for entry in results["precision"]}
    assert verdicts == {
        "ner-elmo@bfloat16": "equivalent",
        "ner-elmo@int8": "equivalent",
        "tagger-elmo@int8": "not tested",
        "tagger-small-elmo@int8": "not shown equivalent",
    }
    assert "## Low precision" in (tmp_path / "reports" / "report.md").read_text()
