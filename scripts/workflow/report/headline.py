"""The README's headline: one line on the run, ELMo against the baseline per task (CoNLL-2003
first), and one sentence on ELMo against spaCy's own pretraining, all taken from ``results.json``.
When the ``tweets`` workflow has run (``results["cv"]``), the cross-validated WNUT-16 gain pooled
over folds, seeds and biLMs; when the ``robustness`` workflow has run (``results["pooled"]``), the
claims pooled over biLMs: per task, a gain only where the pooled p < 0.05 and every biLM gains,
else "varies", with the range over the biLMs. Then the ELMo paper's CoNLL-2003 row beside ours
(``paper``), ELMo distilled into the baseline's tok2vec against the baseline (with the share of
ELMo's gain it keeps and its speed), the students of ELMo's predictions against the baseline and
the self-training control, the ELMo pipelines with the biLM in bfloat16 / int8 against float32,
and the targets, each met or missed by how much.

Why apart from the full results section: the landing page quotes a few numbers a newcomer
needs to decide, and links to ``docs/workflow.md`` for the rest."""

from __future__ import annotations

import statistics
from typing import List, Optional, Sequence

from .paper import paper_lines
from .text import markdown_table, p_text

SCORE_DATA = {
    "conll": "NER F1 (CoNLL-2003 news)",
    "tweets": "NER F1 (WNUT-16 tweets, cross-validated)",
    "ner": "NER F1 (WNUT-16 tweets)",
    "tagger": "UPOS accuracy (Brown)",
    "textcat": "genre accuracy (Brown paragraphs)",
}
UNITS = {"ner": "tweets", "textcat": "paragraphs"}
TASK_NAMES = {"conll": "CoNLL-2003 NER", "ner": "WNUT-16 NER", "tagger": "the tagger", "textcat": "genres"}
WORDS_NOTE = " Words/s: words per CPU-second on one thread, one seed's pipeline per setting (`-`: not measured)."


def spread(values: Optional[Sequence[float]]) -> str:
    """``mean ± std`` over seeds, in points; ``n/a`` without values."""
    if not values:
        return "n/a"
    points = [100 * value for value in values]
    deviation = statistics.stdev(points) if len(points) > 1 else 0.0
    return f"{statistics.mean(points):.2f} ± {deviation:.2f}"


def with_interval(points: float, ci95: List[float]) -> str:
    """``+2.78 (+0.17 to +5.37)``: a difference in points with its 95% interval (fractions)."""
    low, high = (100 * bound for bound in ci95)
    return f"{points:+.2f} ({low:+.2f} to {high:+.2f})"


def difference(comparison: dict) -> str:
    """A comparison's difference with its 95% interval, in points; ``n/a`` untested."""
    test = comparison["test"]
    if comparison["delta"] is None or not test:
        return "n/a"
    return with_interval(comparison["delta"], test["ci95"])


def run_line(results: dict) -> str:
    """When, where and how long: the run the numbers come from."""
    date = str(results.get("date", "")).split(" ")[0]
    machine = str(results.get("machine", "")).split(", no GPU")[0]
    line = f"Run of {date} on {machine}, `{results.get('command', 'make all')}`"
    cpu, elapsed = results.get("cpu_seconds"), results.get("elapsed_seconds")
    if cpu:
        line += f": {cpu / 60:.1f} min of CPU time"
        line += (
            f", {elapsed / 60:.1f} min of wall time" if elapsed else " (its steps timed by several runs of the runner)"
        )
    for workflow, key, shown in (
        ("robustness", "robustness_cpu_seconds", bool(elmo_pools(results))),
        ("tweets", "tweets_cpu_seconds", bool(results.get("cv"))),
        (
            "conll-full",
            "conll_full_cpu_seconds",
            any(c["task"] == "conll" and c["size"] == "full" for c in results["comparisons"]),
        ),
    ):
        seconds = results.get(key)
        if seconds and shown:
            line += "; then" if "; then" not in line else ","
            line += f" `python -m scripts run-workflow {workflow}`: {seconds / 60:.1f} min of CPU time"
    return line + "."


def elmo_pools(results: dict) -> List[dict]:
    """The pooled comparisons of ELMo (over biLMs) with the baseline, where they were tested."""
    return [
        p
        for p in results.get("pooled") or []
        if p["setting"].endswith("-elmo") and p["baseline"].endswith("-baseline") and p["test"]
    ]


def claim(pool: dict) -> str:
    """``gain`` (pooled p < 0.05 and every biLM gains), ``loss`` likewise, else ``varies``."""
    return {"gain": "**gain**", "loss": "**loss**"}.get(pool["verdict"], "varies")


def pooled_lines(pools: List[dict]) -> List[str]:
    """The claims over biLMs: a sentence on what was pooled and a table, one row per task."""
    seeds = sorted({b["seed"] for p in pools for b in p["bilms"] if b["seed"] is not None})
    n_bilms = max(len(p["test"]["bilms"]) for p in pools)
    rows = []
    for p in pools:
        test = p["test"]
        unit = UNITS.get(p["task"], "sentences")
        low, high = (100 * bound for bound in test["ci95"])
        rows.append(
            [
                SCORE_DATA[p["task"]],
                f"{p['train_docs']:,} {unit}" if p["train_docs"] else p["size"],
                f"{p['delta']:+.2f} ({low:+.2f} to {high:+.2f})",
                p_text(test["p_value"]),
                f"{p['range'][0]:+.2f} to {p['range'][1]:+.2f}",
                f"{len(test['bilms'])} x {len(test['seeds'])} x {test['n_docs']:,}",
                claim(p),
            ]
        )
    pretrained = f" (pretraining seeds {', '.join(map(str, seeds))})" if seeds else ""
    return [
        f"Over {n_bilms} biLMs{pretrained}, pretrained alike but for the seed: a gain is claimed only where "
        "ELMo beats the baseline pooled over the biLMs (p < 0.05, a bootstrap over biLMs, seeds and test "
        "documents) and on every biLM; otherwise it varies with the biLM.",
        "",
        markdown_table(
            [
                "task",
                "training data",
                "ELMo - baseline, pooled (95% interval)",
                "p",
                "range over biLMs",
                "biLMs x seeds x test docs",
                "claim",
            ],
            rows,
        ),
        "",
    ]


def cv_lines(results: dict) -> List[str]:
    """The cross-validated tweets (the ``tweets`` workflow): ELMo against the baseline pooled over
    folds, seeds and biLMs, one row per setting; none without it."""
    rows = []
    for row in results.get("cv") or []:
        test = row["test"]
        if not test:
            continue
        low, high = (100 * bound for bound in test["ci95"])
        elmo = [value for values in (row["member_values"] or {}).values() for value in values]
        rows.append(
            [
                SCORE_DATA["tweets"],
                f"{len(test['folds'])} folds of the whole file ({test['n_docs']:,} tweets)",
                spread(row["baseline_values"]),
                spread(elmo),
                f"{row['delta']:+.2f} ({low:+.2f} to {high:+.2f})",
                p_text(test["p_value"]),
                f"{row['range'][0]:+.2f} to {row['range'][1]:+.2f}",
                f"{len(test['bilms'])} x {len(test['seeds'])} x {len(test['folds'])} x {test['n_docs']:,}",
                claim(row),
            ]
        )
    if not rows:
        return []
    return [
        "WNUT-16 cross-validated: each tweet tested once, by the models trained on the other folds; ELMo against "
        "the baseline over biLMs, seeds and folds (a bootstrap drawing each, and each fold's tweets):",
        "",
        markdown_table(
            [
                "task",
                "test data",
                "baseline",
                "ELMo",
                "ELMo - baseline over biLMs, seeds and folds (95% interval)",
                "p",
                "range over biLMs",
                "biLMs x seeds x folds x test docs",
                "claim",
            ],
            rows,
        ),
    ]


def target_lines(results: dict) -> List[str]:
    """Every target, met or missed by how much: the headline's (over biLMs, against spaCy's
    pretraining, cross-validated), the ones of a run, the distilled tok2vec's."""
    texts = [t["text"] for t in results.get("headline_targets") or []]
    texts += [t["text"] for t in results.get("targets") or []]
    texts += [t["text"] for t in (results.get("distillation") or {}).get("targets") or []]
    if not texts:
        return []
    return ["Targets:", ""] + [f"- {text}" for text in texts]


def words_per_second(results: dict, setting: str) -> str:
    """The setting's words per CPU-second (the price step's, one thread) as ``12,345``; ``-``
    where it was not measured (a run from before the price step)."""
    for row in results.get("settings") or []:
        if row.get("name") == setting and isinstance(row.get("words_per_cpu_second"), (int, float)):
            return f"{row['words_per_cpu_second']:,.0f}"
    return "-"


def distilled_lines(results: dict) -> List[str]:
    """ELMo distilled into the baseline's tok2vec against the baseline, one row per task, with
    the share of ELMo's gain it recovers and its words/s beside the baseline's and ELMo's; none
    without a distilled setting."""
    shares = {s["setting"]: s for s in (results.get("distillation") or {}).get("shares") or []}
    rows = []
    for c in results["comparisons"]:
        if not (c["other"].endswith("-elmo-distilled") and c["baseline"].endswith("-baseline")):
            continue
        test = c["test"]
        unit = UNITS.get(c["task"], "sentences")
        share = (shares.get(c["other"]) or {}).get("share")
        elmo = c["other"][: -len("-distilled")]
        rows.append(
            [
                SCORE_DATA[c["task"]],
                f"{c['train_docs']:,} {unit}" if c["train_docs"] else c["size"],
                spread(c["other_values"]),
                difference(c),
                p_text(test["p_value"]) if test else "n/a",
                f"{share:.0%}" if share is not None else "n/a",
                words_per_second(results, c["baseline"]),
                words_per_second(results, c["other"]),
                words_per_second(results, elmo),
            ]
        )
    if not rows:
        return []
    headers = [
        "task",
        "training data",
        "distilled",
        "distilled - baseline (95% interval)",
        "p",
        "share of ELMo's gain",
        "baseline words/s",
        "distilled words/s",
        "ELMo words/s",
    ]
    return [
        "ELMo distilled into the baseline's own tok2vec (`spacy pretrain` with `spacy_elmo.PretrainElmo.v1` "
        "for the biLM's pretraining CPU time, then the baseline trained from it: no biLM at prediction), "
        "paired with the baseline over the same seeds and test documents; the share is (distilled - "
        "baseline) / (ELMo - baseline), n/a where ELMo did not gain:",
        "",
        markdown_table(headers, rows),
    ]


def silver_lines(results: dict) -> List[str]:
    """The students of ELMo's predictions against the baseline and the self-training control, one
    row per task, with the share of ELMo's gain and their words/s beside the baseline's; none
    without a student."""
    shares = {s["setting"]: s for s in (results.get("silver") or {}).get("shares") or []}
    index = {(c["other"], c["baseline"]): c for c in results["comparisons"]}
    rows = []
    for c in results["comparisons"]:
        if not (c["other"].endswith("-elmo-silver") and c["baseline"].endswith("-baseline")):
            continue
        control = index.get((c["other"], c["baseline"][: -len("baseline")] + "self-training"))
        share = (shares.get(c["other"]) or {}).get("share")
        rows.append(
            [
                SCORE_DATA[c["task"]],
                f"{c['train_docs']:,} {UNITS.get(c['task'], 'sentences')}" if c["train_docs"] else c["size"],
                spread(c["other_values"]),
                difference(c),
                p_text(c["test"]["p_value"]) if c["test"] else "n/a",
                difference(control) if control else "n/a",
                p_text(control["test"]["p_value"]) if control and control["test"] else "n/a",
                f"{share:.0%}" if share is not None else "n/a",
                words_per_second(results, c["baseline"]),
                words_per_second(results, c["other"]),
            ]
        )
    if not rows:
        return []
    headers = [
        "task",
        "training data",
        "student",
        "student - baseline (95% interval)",
        "p",
        "student - self-training (95% interval)",
        "p",
        "share of ELMo's gain",
        "baseline words/s",
        "student words/s",
    ]
    return [
        "ELMo's predictions as training data: the baseline trained on the gold plus an ELMo teacher's labels "
        "on unlabeled in-domain text (no biLM at prediction), paired with the baseline and with self-training "
        "(the same, taught by the baseline) over the same seeds and test documents:",
        "",
        markdown_table(headers, rows),
    ]


def precision_lines(results: dict) -> List[str]:
    """The ELMo pipelines with the biLM in bfloat16 or int8 against float32: the difference with
    its interval, whether it lies within the report's margin, and the speed-up; none without."""
    rows = []
    for row in results.get("precision") or []:
        test = row.get("test")
        ran = row.get("ran_as") or []
        precision = row["precision"] + (f" (ran {', '.join(ran)})" if ran and ran != [row["precision"]] else "")
        change = with_interval(100 * test["difference"], test["ci95"]) if test else "n/a"
        verdict = {"equivalent": "**equivalent**"}.get(row["verdict"], row["verdict"])
        speed = "-"
        if row.get("words_per_cpu_second") is not None:
            speed = f"{row['words_per_cpu_second']:,.0f}"
            if row.get("speedup") is not None:
                speed += f" ({row['speedup']:.2f}x)"
        margin = f"±{row['margin']:g}" if row.get("margin") is not None else "-"
        rows.append([row["setting"], precision, change, margin, verdict, speed])
    if not rows:
        return []
    headers = [
        "ELMo setting",
        "biLM precision",
        "difference to float32 (95% interval)",
        "margin",
        "verdict",
        "words/s (vs float32)",
    ]
    return [
        "The same trained ELMo pipelines with the biLM in bfloat16 or int8 at prediction (the `elmo` "
        "component's `precision`), paired with float32 over seeds and test documents; equivalent only "
        "where the whole interval lies within the margin (points of the task's score):",
        "",
        markdown_table(headers, rows),
    ]


def headline_section(results: dict) -> str:
    """The markdown between the README's headline markers."""
    rows: List[List[str]] = []
    for c in results["comparisons"]:
        if not (c["other"].endswith("-elmo") and c["baseline"].endswith("-baseline")):
            continue
        test = c["test"]
        unit = UNITS.get(c["task"], "sentences")
        rows.append(
            [
                SCORE_DATA[c["task"]],
                f"{c['train_docs']:,} {unit}" if c["train_docs"] else c["size"],
                spread(c["baseline_values"]),
                spread(c["other_values"]),
                difference(c),
                p_text(test["p_value"]) if test else "n/a",
                f"{len(test['seeds'])} x {test['n_docs']:,}" if test else "n/a",
                words_per_second(results, c["baseline"]),
                words_per_second(results, c["other"]),
            ]
        )
    headers = ["task", "training data", "baseline", "ELMo", "ELMo - baseline (95% interval)", "p", "seeds x test docs"]
    table = markdown_table(headers + ["baseline words/s", "ELMo words/s"], rows)
    pools = elmo_pools(results)
    lines = [run_line(results), ""]
    if pools:
        lines += ["One biLM, the `all` workflow's, paired over seeds and test documents:", ""]
    lines += [table, ""]
    against = [
        c
        for c in results["comparisons"]
        if c["other"].endswith("-elmo") and c["baseline"].endswith("-spacy-pretrain") and c["test"]
    ]
    if against:
        quoted = ", ".join(
            f"{TASK_NAMES.get(c['task'], c['task'])} ({c['size']}) {c['delta']:+.2f} "
            f"(p = {p_text(c['test']['p_value'])}{'' if c['test']['p_value'] < 0.05 else ', no significant difference'})"
            for c in against
        )
        lines.append(
            "Scores are the mean ± std over seeds. For the same pretraining CPU time, ELMo against "
            f"spaCy's own pretraining (`spacy pretrain`): {quoted}."
        )
    else:
        lines.append("Scores are the mean ± std over seeds.")
    lines[-1] += WORDS_NOTE
    for extra in (
        cv_lines(results),
        pooled_lines(pools)[:-1] if pools else [],
        paper_lines(results["comparisons"], results.get("pretraining_run")),
        distilled_lines(results),
        silver_lines(results),
        precision_lines(results),
        target_lines(results),
    ):
        if extra:
            lines += [""] + extra
    return "\n".join(lines)
