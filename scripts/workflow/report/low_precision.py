"""Low precision: the ELMo settings run at bfloat16 and int8 against the same pipelines in float32.

Why a section of its own: a reduced precision is worth its speed only where the scores stay the
same, and "the same" needs a margin and an interval, not a p-value (a large p only says that no
difference was shown). The ``evaluate-precision`` step scores each ELMo setting's pipelines (all
seeds) with the ``elmo`` component's ``precision`` overridden, as ``SETTING@PRECISION``; here each
is compared with ``SETTING`` (float32, the ``evaluate`` step's) by the report's paired test
(``data.paired_test``: the same seeds and test documents, difference precision minus float32).

Equivalence is claimed only where the whole 95% interval of that difference lies within the
margin: ±0.5 points of NER F1, ±0.1 points of UPOS accuracy (a 95% interval is stricter than the
90% one of two one-sided tests at 0.05). Otherwise the precision is "not shown equivalent", and
the row says by how many points the interval leaves the margin. Beside the scores, the ``price``
step's words per CPU-second of ``SETTING@PRECISION`` and of ``SETTING``.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from . import data
from .text import markdown_table, p_text

#: the equivalence margin per task, in points of its main score
MARGINS: Dict[str, float] = {"conll": 0.5, "ner": 0.5, "tagger": 0.1}
EQUIVALENT = "equivalent"
NOT_SHOWN = "not shown equivalent"
NOT_TESTED = "not tested"
#: the order of the rows within a setting
PRECISION_ORDER = ("float32", "bfloat16", "int8")


def equivalence(ci_low: float, ci_high: float, margin: float) -> Tuple[str, float]:
    """The verdict on a 95% interval in points and by how many points it leaves ``±margin``
    (0 when it lies within: then the verdict is ``equivalent``)."""
    if not ci_low <= ci_high:
        raise ValueError(f"an interval from {ci_low} to {ci_high} is empty")
    outside = max(ci_high - margin, -margin - ci_low, 0.0)
    return (EQUIVALENT if outside == 0.0 else NOT_SHOWN), outside


def _words_per_second(prices: Dict[str, dict], name: str) -> Optional[float]:
    price = prices.get(name)
    return float(price["words_per_cpu_second"]) if price else None


def precision_rows(settings: Dict[str, data.Setting], prices: Dict[str, dict], **test_options) -> List[dict]:
    """One row per ``SETTING@PRECISION`` of ``settings`` whose SETTING is a TASK[-small]-VARIANT:
    its score, its price, the paired test against SETTING and the equivalence verdict."""
    found = []
    for name, setting in settings.items():
        base_name, precision = data.split_precision(name)
        parts = data.parse_setting(base_name)
        if precision is None or parts is None:
            continue
        task, size, variant = parts
        base = settings.get(base_name)
        key, score_name = data.main_score(task, setting.runs + (base.runs if base else []))
        result: Optional[data.paired_stats.PairedResult] = None
        if base is None:
            reason: Optional[str] = f"{base_name} (float32) was not scored"
        elif key is None:
            reason = f"no {score_name} in the scores"
        else:
            result, reason = data.paired_test(task, key, base, setting, **test_options)
        margin = MARGINS.get(task)
        if result is None:
            verdict, outside = NOT_TESTED, None
        elif margin is None:
            verdict, outside, reason = NOT_TESTED, None, f"no equivalence margin for {task}"
        else:
            verdict, outside = equivalence(result.ci_low * 100, result.ci_high * 100, margin)
        words, base_words = _words_per_second(prices, name), _words_per_second(prices, base_name)
        order = (
            data.TASKS.index(task),
            data.SIZES.index(size),
            data.VARIANTS.index(variant) if variant in data.VARIANTS else len(data.VARIANTS),
            variant,
            PRECISION_ORDER.index(precision),
        )
        found.append(
            (
                order,
                {
                    "name": name,
                    "setting": base_name,
                    "precision": precision,
                    # what the elmo component ran: float32 where the CPU lacked the instructions
                    "ran_as": sorted({str(r["elmo_precision"]) for r in setting.runs if r.get("elmo_precision")}),
                    "task": task,
                    "size": size,
                    "key": key,
                    "score": score_name,
                    "summary": setting.summary(key) if key else None,
                    "float32_summary": base.summary(key) if base and key else None,
                    "words_per_cpu_second": words,
                    "float32_words_per_cpu_second": base_words,
                    "speedup": words / base_words if words and base_words else None,
                    "margin": margin,
                    "test": result,
                    "not_tested": reason if result is None or verdict == NOT_TESTED else None,
                    "verdict": verdict,
                    "outside_margin_by": outside,
                },
            )
        )
    return [row for _, row in sorted(found, key=lambda item: item[0])]


def _fell_back(row: dict) -> bool:
    """Whether some run of the row ran another precision than the one asked for."""
    return bool(row["ran_as"]) and row["ran_as"] != [row["precision"]]


def _speed(words: Optional[float]) -> str:
    return f"{words:,.0f}" if words is not None else "-"


def sentence(row: dict) -> str:
    """One row's result in words: the difference, its interval and p, the verdict, the speed."""
    where = f"{row['setting']} at {row['precision']}"
    if _fell_back(row):
        where += f" (ran as {', '.join(row['ran_as'])}: this CPU lacks the instructions)"
    result = row["test"]
    if result is None:
        return f"{where}: not tested ({row['not_tested']})."
    pairs = len(result.seeds)
    numbers = (
        f"{result.difference * 100:+.2f} {row['score']} points against float32 (95% interval "
        f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}, p = {p_text(result.p_value)}, "
        f"{pairs} seed pair{'s' if pairs != 1 else ''} x {result.n_docs:,} test documents)"
    )
    if row["verdict"] == EQUIVALENT:
        verdict = f"**equivalent** within ±{row['margin']:g} points"
    elif row["verdict"] == NOT_SHOWN:
        verdict = (
            f"not shown equivalent: the interval leaves the ±{row['margin']:g}-point margin by "
            f"{row['outside_margin_by']:.2f} points"
        )
    else:
        verdict = f"not tested for equivalence ({row['not_tested']})"
    speed = ""
    if row["speedup"] is not None:
        speed = (
            f"; {_speed(row['words_per_cpu_second'])} words per CPU second against "
            f"{_speed(row['float32_words_per_cpu_second'])} in float32 ({row['speedup']:.2f}x)"
        )
    return f"{where}: {numbers}: {verdict}{speed}."


def table(rows: List[dict]) -> str:
    """The section's table: per setting and precision, score, speed, difference and verdict."""
    cells = []
    for row in rows:
        result = row["test"]
        cells.append(
            [
                row["setting"],
                row["precision"] + (f" (ran {', '.join(row['ran_as'])})" if _fell_back(row) else ""),
                row["score"],
                row["summary"].as_percent() if row["summary"] else "n/a",
                row["float32_summary"].as_percent() if row["float32_summary"] else "n/a",
                _speed(row["words_per_cpu_second"]),
                _speed(row["float32_words_per_cpu_second"]),
                f"{result.difference * 100:+.2f}" if result else "n/a",
                f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}" if result else "n/a",
                p_text(result.p_value) if result else "n/a",
                f"±{row['margin']:g}" if row["margin"] is not None else "-",
                row["verdict"] + (f" (by {row['outside_margin_by']:.2f})" if row["verdict"] == NOT_SHOWN else ""),
            ]
        )
    return markdown_table(
        [
            "setting",
            "precision",
            "metric",
            "at the precision",
            "in float32",
            "words / CPU s",
            "float32 words / CPU s",
            "difference (points)",
            "95% interval",
            "p",
            "margin",
            "verdict",
        ],
        cells,
    )


def lines(rows: List[dict], heading: str = "##") -> List[str]:
    """The "Low precision" section's markdown lines; none without a row."""
    if not rows:
        return []
    margins = ", ".join(f"±{margin:g} points of {data.MAIN_SCORES[task][0][1]}" for task, margin in MARGINS.items())
    return (
        [
            f"{heading} Low precision",
            "",
            "The ELMo settings' pipelines (every seed) run with the `elmo` component's `precision` set to "
            "bfloat16 or int8 (the `evaluate-precision` step), against the same pipelines in float32, paired "
            "over seeds and test documents as the comparisons above (difference: the precision minus float32). "
            f"Equivalence is claimed only where the whole 95% interval lies within the margin ({margins}); "
            "otherwise the row says by how many points the interval leaves it. Words per CPU second: the "
            "`price` step's, one pipeline (seed) per setting and precision.",
            "",
            table(rows),
            "",
        ]
        + [f"- {sentence(row)}" for row in rows]
        + [""]
    )


def as_dicts(rows: List[dict]) -> List[dict]:
    """The rows for ``results.json``: the summaries as their values, the test as its dict."""
    return [
        {
            **{k: v for k, v in row.items() if k not in ("summary", "float32_summary", "test")},
            "values": row["summary"].values if row["summary"] else None,
            "float32_values": row["float32_summary"].values if row["float32_summary"] else None,
            "test": row["test"].as_dict() if row["test"] else None,
        }
        for row in rows
    ]
