"""The price columns of the report (scripts/workflow/report/price.py and its use in build.py,
text.py, plots.py, headline.py): from a small synthetic metrics folder and price folder, the
tables show each setting's words per CPU-second, peak memory and size next to its score,
results.json carries them, price.png is drawn, and a setting without a price shows ``-``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.workflow.report import price as report_price
from scripts.workflow.report.build import ReportInputs, build
from scripts.workflow.report.headline import headline_section

SCORES = {  # setting: test scores of its seeds
    "ner-baseline": [0.30, 0.34],
    "ner-elmo": [0.36, 0.40],
    "tagger-baseline": [0.950],
    "tagger-elmo": [0.960],
}
PRICES = {  # setting: (words per CPU-second, peak memory MiB, size MiB); tagger-elmo has none
    "ner-baseline": (21_345.6, 310.2, 4.04),
    "ner-elmo": (1_234.4, 812.6, 39.96),
    "tagger-baseline": (30_100.0, 300.0, 3.5),
}


def write_metrics(metrics: Path) -> None:
    metrics.mkdir()
    for setting, values in SCORES.items():
        key = "ents_f" if setting.startswith("ner") else "tag_acc"
        for seed, value in enumerate(values):
            stem = f"{setting}.seed{seed}" if len(values) > 1 else setting
            scores = {key: value, "model": f"/nowhere/{stem}", "test_data": "test.spacy", "model_sha256": stem}
            (metrics / f"{stem}.json").write_text(json.dumps(scores))


def write_prices(folder: Path) -> None:
    folder.mkdir()
    for setting, (words, memory, size) in PRICES.items():
        price = {"words_per_cpu_second": words, "peak_memory_mib": memory, "size_mib": size}
        price.update(seed=0 if setting.startswith("ner") else None, max_docs=500, docs=478, setting=setting)
        (folder / f"{setting}.json").write_text(json.dumps(price))


def table_row(markdown: str, setting: str) -> list:
    (line,) = [line for line in markdown.splitlines() if line.startswith("|") and f"| {setting} |" in line]
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict:
    """The report built with the price folder, and again without one (a run from before it)."""
    base = tmp_path_factory.mktemp("price_report")
    write_metrics(base / "metrics")
    write_prices(base / "prices")
    built = {}
    for name, price_dir in (("priced", base / "prices"), ("unpriced", None)):
        inputs = ReportInputs(
            metrics_dir=base / "metrics",
            training_dir=base / "training",
            bilm_dir=base / "bilm",
            output_dir=base / name,
            price_dir=price_dir,
            resamples=100,
            rounds=100,
        )
        report_md, section, table, results = build(inputs)
        built[name] = {"md": report_md, "section": section, "table": table, "results": results, "out": base / name}
    return built


def test_tables_show_the_price_next_to_the_score(reports):
    md = reports["priced"]["md"]
    header = table_row(md, "setting")
    assert header[4:8] == ["mean ± std over seeds", "words / CPU s", "peak memory (MiB)", "size (MiB)"]
    assert table_row(md, "ner-elmo")[4:9] == ["38.00 ± 2.83", "1,234", "813", "40.0", "2"]
    assert table_row(md, "ner-baseline")[5:8] == ["21,346", "310", "4.0"]
    assert table_row(md, "tagger-elmo")[5:8] == ["-", "-", "-"]  # not measured
    for text in (reports["priced"]["section"], reports["priced"]["table"]):
        assert table_row(text, "ner-elmo")[5:8] == ["1,234", "813", "40.0"]
    assert "seed 0's model-best, or the one model-best of a setting trained once" in md
    assert "at most 500 test documents" in md


def test_results_carry_the_price_per_setting(reports):
    settings = {row["name"]: row for row in reports["priced"]["results"]["settings"]}
    for name, (words, memory, size) in PRICES.items():
        row = settings[name]
        assert (row["words_per_cpu_second"], row["peak_memory_mib"], row["size_mib"]) == (words, memory, size)
    assert settings["ner-elmo"]["price_seed"] == 0 and settings["tagger-baseline"]["price_seed"] is None
    missing = settings["tagger-elmo"]
    assert (missing["words_per_cpu_second"], missing["peak_memory_mib"], missing["size_mib"]) == (None, None, None)
    json.dumps(reports["priced"]["results"])  # still JSON


def test_price_figure_is_drawn_only_with_prices(reports):
    priced = reports["priced"]
    assert (priced["out"] / "price.png").stat().st_size > 1000
    assert priced["results"]["figures"]["price"] == "price.png" and "price.png" in priced["md"]
    assert "price.png" in priced["section"]  # linked from the docs' results section
    unpriced = reports["unpriced"]
    assert not (unpriced["out"] / "price.png").exists() and "price" not in unpriced["results"]["figures"]


def test_a_run_without_prices_shows_dashes(reports):
    unpriced = reports["unpriced"]
    for setting in SCORES:
        assert table_row(unpriced["md"], setting)[5:8] == ["-", "-", "-"]
    assert all(row["words_per_cpu_second"] is None for row in unpriced["results"]["settings"])
    assert "Price:" not in unpriced["md"]


def test_headline_quotes_words_per_second_of_baseline_and_elmo(reports):
    section = headline_section(reports["priced"]["results"])
    header = table_row(section, "task")
    assert header[-2:] == ["baseline words/s", "ELMo words/s"]
    assert table_row(section, "NER F1 (WNUT-16 tweets)")[-2:] == ["21,346", "1,234"]
    assert table_row(section, "UPOS accuracy (Brown)")[-2:] == ["30,100", "-"]
    old = headline_section(reports["unpriced"]["results"])
    assert table_row(old, "NER F1 (WNUT-16 tweets)")[-2:] == ["-", "-"]


def test_a_malformed_price_file_names_it(tmp_path):
    (tmp_path / "ner-elmo.json").write_text("{not json")
    with pytest.raises(ValueError, match="ner-elmo.json: not valid JSON"):
        report_price.read_prices(tmp_path)
    (tmp_path / "ner-elmo.json").write_text(json.dumps({"words_per_cpu_second": 5.0}))
    with pytest.raises(ValueError, match="ner-elmo.json: expected a JSON object with the numbers"):
        report_price.read_prices(tmp_path)
    assert report_price.read_prices(tmp_path / "absent") == {} and report_price.read_prices(None) == {}
