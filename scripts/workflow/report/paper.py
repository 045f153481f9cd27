"""The ELMo paper's CoNLL-2003 result beside ours, and how our biLM differs from the paper's.

Why: CoNLL-2003 English NER is the benchmark of the paper's NER result, so a reader compares our
numbers with it first. They are not the same experiment: the paper's biLM read about 800M words
of news (the 1B Word Benchmark) and was far larger; ours reads a few million words of the Brown
corpus and State of the Union addresses, so the row says both.

Works on the JSON-ready comparisons of ``results.json`` (``build``), so that the report and the
README's headline say the same.
"""

from __future__ import annotations

from typing import List, Optional

from .text import markdown_table, p_text

#: Peters et al. (2018), "Deep contextualized word representations", Table 1 (NER, CoNLL-2003
#: test F1): their baseline and baseline + ELMo (mean ± std over five seeds)
PAPER_BASELINE = 90.15
PAPER_ELMO = 92.22
PAPER_ELMO_STD = 0.10
PAPER_GAIN = 2.06  # as the paper states it (from its unrounded scores)
PAPER_CITATION = "Peters et al. 2018, Table 1"
PAPER_BILM = "1B Word Benchmark: about 800M words of news (AllenNLP's later ELMo 5.5B read 5.5B tokens)"


def _spread(values: Optional[List[float]]) -> str:
    if not values:
        return "n/a"
    points = [100 * v for v in values]
    mean = sum(points) / len(points)
    if len(points) == 1:
        return f"{mean:.2f}"
    deviation = (sum((p - mean) ** 2 for p in points) / (len(points) - 1)) ** 0.5
    return f"{mean:.2f} ± {deviation:.2f}"


def _ours(comparison: dict, training: str, bilm: str) -> List[str]:
    test = comparison.get("test")
    difference = f"{comparison['delta']:+.2f}" if comparison.get("delta") is not None else "n/a"
    if test:
        low, high = (100 * bound for bound in test["ci95"])
        difference += f" ({low:+.2f} to {high:+.2f}, p = {p_text(test['p_value'])})"
    return [
        f"this project ({comparison['other']})",
        training,
        bilm,
        _spread(comparison.get("baseline_values")),
        _spread(comparison.get("other_values")),
        difference,
    ]


def bilm_text(pretraining_run: Optional[dict]) -> str:
    """Our biLM's pretraining text, in words, from its ``run.json``."""
    tokens = (pretraining_run or {}).get("tokens")
    read = f"{tokens:,} tokens read" if isinstance(tokens, int) else "a token budget"
    return f"Brown corpus and State of the Union addresses: about 3M words ({read})"


def paper_lines(comparisons: List[dict], pretraining_run: Optional[dict]) -> List[str]:
    """The paper's row and ours (the whole training split, the ``conll-full`` workflow, and the
    low-resource sample of ``all``) as a table with a sentence; none without a CoNLL-2003
    comparison of ELMo with the baseline."""
    ours = [
        c
        for c in comparisons
        if c["task"] == "conll" and c["other"].endswith("-elmo") and c["baseline"].endswith("-baseline")
    ]
    if not ours:
        return []
    bilm = bilm_text(pretraining_run)
    rows = [
        [
            f"the ELMo paper ({PAPER_CITATION})",
            "whole training split (14,041 sentences)",
            PAPER_BILM,
            f"{PAPER_BASELINE:.2f}",
            f"{PAPER_ELMO:.2f} ± {PAPER_ELMO_STD:.2f}",
            f"{PAPER_GAIN:+.2f}",
        ]
    ]
    for comparison in sorted(ours, key=lambda c: c["size"] != "full"):
        docs = comparison.get("train_docs")
        size = "whole training split" if comparison["size"] == "full" else "low-resource sample"
        rows.append(_ours(comparison, f"{size} ({docs:,} sentences)" if docs else size, bilm))
    full = any(c["size"] == "full" for c in ours)
    return [
        markdown_table(
            ["CoNLL-2003 test F1", "training data", "biLM pretraining text", "baseline", "ELMo", "ELMo - baseline"],
            rows,
        ),
        "",
        "The paper's biLM was trained on about 250 times more text than ours (800M against about 3M words) and is "
        "far larger (4096-unit LSTMs); its baseline is another tagger (a biLSTM-CRF with pretrained word "
        "embeddings). Our baseline and ELMo settings differ only in the ELMo features, so it is the gain that "
        "compares, not the scores."
        + ("" if full else " Our row on the whole training split comes from the `conll-full` workflow (not run)."),
    ]
