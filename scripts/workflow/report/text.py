"""The report's words: markdown tables and the sentences that state each comparison's result.

Shared by the report and the probe summary; every function takes plain values (rows built by
``rows``, summaries of ``data``) and returns markdown text.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from . import data, price

TASK_DATA = {
    "conll": "NER (CoNLL-2003 news)",
    "ner": "NER (WNUT-16 tweets)",
    "tagger": "POS tagging (Brown)",
    "textcat": "genre classification (Brown paragraphs, 15 genres)",
}
UNITS = {"ner": "tweets", "textcat": "paragraphs"}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table; every cell as ``str()`` gives it."""
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def size_text(task: str, size: str, train_docs: Optional[int]) -> str:
    """``"small: 1,000 tweets"``, or the size alone when the count is unknown."""
    unit = UNITS.get(task, "sentences")
    return f"{size}: {train_docs:,} {unit}" if train_docs else size


def p_text(p: float) -> str:
    """Three decimals, four below 0.001."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.4f}"


def interval_text(result) -> str:
    """The 95% interval of a paired test, in points."""
    return f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}"


def settings_table(rows: List[dict], with_price: bool = False) -> str:
    """One line per scored setting: its test score over the seeds and, ``with_price``, what
    running it costs (``price.cells``: ``-`` where it was not measured)."""
    table_rows = [
        [
            TASK_DATA[r["task"]],
            size_text(r["task"], r["size"], r["train_docs"]),
            r["name"],
            r["score"],
            r["summary"].as_percent() if r["summary"] else "n/a",
        ]
        + (price.cells(r) if with_price else [])
        + [str(len(r["seeds"]))]
        for r in rows
    ]
    headers = ["task", "training data", "setting", "test score", "mean ± std over seeds"]
    return markdown_table(headers + (list(price.HEADERS) if with_price else []) + ["runs"], table_rows)


def comparisons_table(rows: List[dict]) -> str:
    """One line per comparison: difference, interval, p and verdict."""
    table_rows = []
    for r in rows:
        test = r["test"]
        table_rows.append(
            [
                TASK_DATA[r["task"]],
                size_text(r["task"], r["size"], r["train_docs"]),
                f"{r['other']} vs {r['baseline']}",
                f"{r['delta']:+.2f}" if r["delta"] is not None else "n/a",
                interval_text(test) if test else "n/a",
                p_text(test.p_value) if test else "n/a",
                f"{len(test.seeds)} x {test.n_docs:,}" if test else "n/a",
                r["verdict"],
            ]
        )
    return markdown_table(
        [
            "task",
            "training data",
            "comparison",
            "difference (points)",
            "95% interval",
            "p",
            "seeds x test docs",
            "verdict",
        ],
        table_rows,
    )


def comparison_sentence(row: dict) -> str:
    """The claim a comparison supports: a gain or loss only where p < 0.05."""
    where = f"{TASK_DATA[row['task']]}, {row['size']} training set"
    other, baseline = row["other"], row["baseline"]
    test = row["test"]
    if test is None:
        delta = f"{row['delta']:+.2f} {row['score']} points" if row["delta"] is not None else "no difference"
        return f"{where}: {other} vs {baseline}: {delta}, not tested ({row['not_tested']}); no gain is claimed."
    numbers = (
        f"{row['delta']:+.2f} {row['score']} points, 95% interval {interval_text(test)}, "
        f"p = {p_text(test.p_value)}, {len(test.seeds)} seed pair{'s' if len(test.seeds) > 1 else ''} "
        f"over {test.n_docs:,} test documents"
    )
    if test.verdict == "gain":
        return f"{where}: **gain**: {other} beats {baseline} ({numbers})."
    if test.verdict == "loss":
        return f"{where}: **loss**: {other} is below {baseline} ({numbers})."
    return f"{where}: no significant difference between {other} and {baseline} ({numbers})."


METHOD_NOTE = (
    "Differences are the other setting's mean over seeds minus the baseline's, the seeds "
    "paired by number (baseline seed k with seed k), on corpus-level scores (NER micro F1 "
    "from summed tp/fp/fn, accuracy from summed token counts). The 95% interval is a paired "
    "bootstrap over test documents ({resamples:,} resamples, the same documents for every "
    "seed and both settings); p is two-sided, from paired approximate randomization over "
    "documents ({rounds:,} rounds: each document's counts swapped between the two settings "
    "for all seeds at once). A gain or loss is claimed only where p < 0.05."
)


def per_type_table(baseline: Optional[data.Setting], elmo: Optional[data.Setting]) -> str:
    """NER precision, recall and F1 per entity type, baseline beside ELMo."""
    labels = sorted(set(baseline.per_type() if baseline else {}) | set(elmo.per_type() if elmo else {}))
    rows = []
    for label in labels:
        cells = [label]
        for setting in (baseline, elmo):
            for metric in ("p", "r", "f"):
                summary = setting.per_type(metric).get(label) if setting else None
                cells.append(summary.as_percent() if summary else "n/a")
        rows.append(cells)
    return markdown_table(["type", "baseline P", "baseline R", "baseline F1", "ELMo P", "ELMo R", "ELMo F1"], rows)


def duration(seconds: float) -> str:
    """``"42 s"`` below two minutes, ``"12.3 min"`` above."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


# what a report says when no step times were recorded
TIMES_MISSING = (
    "Step times were not recorded: `spacy project run` does not time its steps; `make all` "
    "(`python -m scripts run-workflow all`) records each step's wall and CPU time."
)


#: Steps whose entry in the times file is always a previous run's when a report is written: the
#: report steps themselves (their times would stretch "first start to last end" back to that run).
REPORT_STEPS = ("report", "report-textcat")


def timed_steps(step_times: dict) -> List[Tuple[str, dict]]:
    """The entries with a wall time, the report steps left out, in the order they finished."""
    return sorted(
        ((name, entry) for name, entry in step_times.items() if "seconds" in entry and name not in REPORT_STEPS),
        key=lambda item: item[1].get("finished", ""),
    )


def runner_runs(step_times: dict) -> set:
    """The runs of the runner that timed these steps (their ``invocation``; entries written
    before it was recorded count as one run of their own)."""
    return {entry.get("invocation") for _, entry in timed_steps(step_times)}


def step_times_table(step_times: dict) -> Tuple[str, float, Optional[float], Optional[float]]:
    """Markdown table of the steps' wall and CPU times; the wall seconds summed over the steps,
    the CPU seconds summed (None if one is unknown), and the seconds from the first step's
    start to the last step's end (less than the sum when steps ran side by side; None when the
    steps were timed by more than one run of the runner, as after a rerun of changed steps).
    The report steps (:data:`REPORT_STEPS`) are left out: the one writing this has not finished."""
    steps = timed_steps(step_times)
    total = sum(entry["seconds"] for _, entry in steps)
    cpus = [entry.get("cpu_seconds") for _, entry in steps]
    total_cpu = sum(cpus) if steps and None not in cpus else None
    spans = [
        (entry["started_unix"], entry["started_unix"] + entry["seconds"])
        for _, entry in steps
        if isinstance(entry.get("started_unix"), (int, float))
    ]
    elapsed: Optional[float] = None
    if len(runner_runs(step_times)) <= 1:
        elapsed = (
            max(end for _, end in spans) - min(start for start, _ in spans)
            if len(spans) == len(steps) and spans
            else total
        )
    rows = [
        [
            name,
            duration(entry["seconds"]),
            duration(entry["cpu_seconds"]) if entry.get("cpu_seconds") is not None else "n/a",
            entry.get("finished", ""),
        ]
        for name, entry in steps
    ]
    rows.append(["total", duration(total), duration(total_cpu) if total_cpu is not None else "n/a", ""])
    rows.append(["first start to last end", duration(elapsed) if elapsed is not None else "n/a (several runs)", "", ""])
    return markdown_table(["step", "wall time", "CPU time", "finished"], rows), total, total_cpu, elapsed
