"""The README's headline table quotes the last report (``reports/results.json``): every number
in it is that run's, rounded as shown."""

from __future__ import annotations

import json
import re
import statistics

from .markdown_blocks import REPO_ROOT

NUMBER = r"[+-]?[\d,]*\.?\d+"


def headline_rows() -> list[list[str]]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("<!-- headline:start -->", 1)[1].split("<!-- headline:end -->", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("|")
    ]
    return rows[2:]  # after the header and the rule


def numbers(cell: str) -> list[tuple[float, float]]:
    """Each number in ``cell`` with half a unit of its last digit: how far rounding may move it."""
    found = []
    for text in re.findall(NUMBER, cell):
        decimals = len(text.split(".")[1]) if "." in text else 0
        found.append((float(text.replace(",", "")), 0.5 * 10**-decimals + 1e-12))
    return found


def assert_shows(cell: str, *values: float) -> None:
    shown = numbers(cell)
    assert len(shown) == len(values), f"{cell!r} should show {len(values)} numbers"
    for (number, tolerance), value in zip(shown, values):
        assert abs(number - value) <= tolerance, f"{cell!r}: {number} is not {value} rounded"


def test_the_headline_table_quotes_the_report():
    results = json.loads((REPO_ROOT / "reports" / "results.json").read_text(encoding="utf-8"))
    compared = [
        c for c in results["comparisons"] if c["other"].endswith("-elmo") and c["baseline"].endswith("-baseline")
    ]
    rows = headline_rows()
    assert len(rows) == len(compared) > 0
    for row, comparison in zip(rows, compared):
        test = comparison["test"]
        for cell, values in ((row[2], comparison["baseline_values"]), (row[3], comparison["other_values"])):
            points = [100 * value for value in values]
            assert_shows(cell, statistics.mean(points), statistics.stdev(points))
        assert_shows(row[4], comparison["delta"], 100 * test["ci95"][0], 100 * test["ci95"][1])
        assert_shows(row[5], test["p_value"])
        assert_shows(row[6], len(test["seeds"]), test["n_docs"])
        assert_shows(row[1], comparison["train_docs"])


def test_the_headline_sentence_on_spacy_pretraining_quotes_the_report():
    results = json.loads((REPO_ROOT / "reports" / "results.json").read_text(encoding="utf-8"))
    compared = [
        c for c in results["comparisons"] if c["other"].endswith("-elmo") and c["baseline"].endswith("-spacy-pretrain")
    ]
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("<!-- headline:start -->", 1)[1].split("<!-- headline:end -->", 1)[0]
    (sentence,) = [line for line in section.splitlines() if "spacy pretrain" in line]
    quoted = re.findall(rf"({NUMBER}) \(p = ({NUMBER})", sentence)
    assert len(quoted) == len(compared) > 0
    for (delta, p_value), comparison in zip(quoted, compared):
        assert_shows(delta, comparison["delta"])
        assert_shows(p_value, comparison["test"]["p_value"])
