"""The rows the report is made of: one per scored setting, per comparison (with its paired
test) and per target, as plain dicts that the markdown, the README and ``results.json`` share.
"""

from __future__ import annotations

from typing import Dict, List

from . import data
from .text import TASK_DATA, p_text


def setting_rows(settings: Dict[str, data.Setting]) -> List[dict]:
    """One row per scored setting of the TASK[-small]-VARIANT names: its main score over seeds."""
    rows = []
    for name, setting in settings.items():
        parts = data.parse_setting(name)
        if parts is None:
            continue
        task, size, variant = parts
        key, score_name = data.main_score(task, setting.runs)
        order = (
            data.TASKS.index(task),
            data.SIZES.index(size),
            data.VARIANTS.index(variant) if variant in data.VARIANTS else len(data.VARIANTS),
            variant,
        )
        rows.append(
            {
                "order": order,
                "name": name,
                "task": task,
                "size": size,
                "variant": variant,
                "key": key,
                "score": score_name,
                "train_docs": setting.train_docs,
                "seeds": [seed for seed in setting.seeds],
                "summary": setting.summary(key) if key else None,
            }
        )
    return [{k: v for k, v in row.items() if k != "order"} for row in sorted(rows, key=lambda r: r["order"])]


def comparison_rows(settings: Dict[str, data.Setting], **test_options) -> List[dict]:
    """One row per comparison whose two settings were scored, with its paired test.

    ``delta`` is in points: the paired test's difference where there is one, else the
    difference of the means over all runs (then ``verdict`` says it was not tested).
    """
    rows = []
    for task, size, baseline_name, other_name in data.comparisons(list(settings)):
        baseline, other = settings[baseline_name], settings[other_name]
        key, score_name = data.main_score(task, baseline.runs + other.runs)
        result, reason = (
            data.paired_test(task, key, baseline, other, **test_options)
            if key
            else (None, f"no {score_name} in the scores")
        )
        base_summary, other_summary = (baseline.summary(key), other.summary(key)) if key else (None, None)
        if result is not None:
            delta = result.difference * 100
        elif base_summary and other_summary:
            delta = (other_summary.mean - base_summary.mean) * 100
        else:
            delta = None
        rows.append(
            {
                "task": task,
                "size": size,
                "baseline": baseline_name,
                "other": other_name,
                "label": f"{data.variant_label(data.parse_setting(other_name)[2])} vs "
                f"{data.variant_label(data.parse_setting(baseline_name)[2])}",
                "score": score_name,
                "key": key,
                "train_docs": baseline.train_docs or other.train_docs,
                "baseline_summary": base_summary,
                "other_summary": other_summary,
                "delta": delta,
                "test": result,
                "not_tested": reason,
                "verdict": result.verdict if result is not None else "not tested",
            }
        )
    return rows


def target_rows(rows: List[dict]) -> List[dict]:
    """Each target with the comparison that comes closest and whether (or by how much) it is
    missed; only tested comparisons with the baseline count, not the published weights."""
    targets = []
    for task, size, target in data.TARGETS:
        candidates = [
            r
            for r in rows
            if r["task"] == task
            and r["size"] == size
            and r["test"] is not None
            and data.parse_setting(r["baseline"])[2] == "baseline"
            and data.parse_setting(r["other"])[2] not in data.NOT_FOR_TARGETS
        ]
        met = [r for r in candidates if r["delta"] >= target and r["verdict"] == "gain"]
        best = max(met or candidates, key=lambda r: r["delta"], default=None)
        entry = {
            "task": task,
            "size": size,
            "target": target,
            "met": bool(met),
            "setting": best["other"] if best else None,
            "delta": best["delta"] if best else None,
            "p_value": best["test"].p_value if best else None,
            "seeds": len(best["test"].seeds) if best else None,
            "short_by": max(0.0, target - best["delta"]) if best else None,
        }
        where = f"{TASK_DATA[task]}, {size} training set, at least {target:+.2f} points with p < 0.05"
        if best is None:
            entry["text"] = f"{where}: not measured (no tested comparison with the baseline)."
        else:
            numbers = (
                f"{best['other']}: {best['delta']:+.2f} points, p = {p_text(best['test'].p_value)}, "
                f"{entry['seeds']} seed pair{'s' if entry['seeds'] > 1 else ''}"
            )
            if met:
                entry["text"] = f"{where}: **met** ({numbers})."
            elif best["delta"] >= target:
                entry["text"] = f"{where}: not met: the difference is large enough but not significant ({numbers})."
            else:
                entry["text"] = f"{where}: not met, {entry['short_by']:.2f} points short ({numbers})."
        targets.append(entry)
    return targets
