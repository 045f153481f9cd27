"""The README's headline table quotes the last report (``reports/results.json``): every number
in it is that run's, rounded as shown; where the report pooled ELMo's gain over biLMs (the
robustness workflow), the headline's claims are those, and only those."""

from __future__ import annotations

import json
import re
import statistics

from .markdown_blocks import REPO_ROOT

NUMBER = r"[+-]?[\d,]*\.?\d+"


def headline_section() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("<!-- headline:start -->", 1)[1].split("<!-- headline:end -->", 1)[0]


def headline_tables() -> list[list[list[str]]]:
    """Each table of the headline: its rows of cells, after the header and the rule."""
    blocks = [block.strip() for block in headline_section().split("\n\n")]
    return [
        [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block.splitlines()][2:]
        for block in blocks
        if block.startswith("|")
    ]


def headline_rows() -> list[list[str]]:
    """The first table: ELMo against the baseline on the `all` workflow's biLM."""
    return headline_tables()[0]


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
    (sentence,) = [line for line in section.splitlines() if "against spaCy's own pretraining" in line]
    quoted = re.findall(rf"({NUMBER}) \(p = ({NUMBER})", sentence)
    assert len(quoted) == len(compared) > 0
    for (delta, p_value), comparison in zip(quoted, compared):
        assert_shows(delta, comparison["delta"])
        assert_shows(p_value, comparison["test"]["p_value"])


def test_the_headline_claims_only_what_holds_pooled():
    """With pooled comparisons, a second table quotes them and claims a gain only where the
    pooled p < 0.05 and every biLM gains; without them, the headline has one table and no
    pooled words."""
    results = json.loads((REPO_ROOT / "reports" / "results.json").read_text(encoding="utf-8"))
    pools = [
        p
        for p in results.get("pooled") or []
        if p["setting"].endswith("-elmo") and p["baseline"].endswith("-baseline") and p["test"]
    ]
    # the pooled table is the one whose header speaks of pooling (the distilled and low-precision
    # tables may follow)
    blocks = [block.strip() for block in headline_section().split("\n\n") if block.strip().startswith("|")]
    pooled_tables = [table for block, table in zip(blocks, headline_tables()) if "pooled" in block.splitlines()[0]]
    if not pools:
        assert not pooled_tables and "biLMs" not in headline_section()
        return
    assert len(pooled_tables) == 1 and len(pooled_tables[0]) == len(pools)
    for row, pool in zip(pooled_tables[0], pools):
        test = pool["test"]
        assert_shows(row[2], pool["delta"], 100 * test["ci95"][0], 100 * test["ci95"][1])
        assert_shows(row[3], test["p_value"])
        assert_shows(row[4], *pool["range"])
        assert_shows(row[5], len(test["bilms"]), len(test["seeds"]), test["n_docs"])
        gain = test["p_value"] < 0.05 and pool["range"][0] > 0
        loss = test["p_value"] < 0.05 and pool["range"][1] < 0
        assert row[6] == ("**gain**" if gain else "**loss**" if loss else "varies"), row
