"""ELMo distilled into the baseline's tok2vec: how much of ELMo's gain it keeps, and the targets
for it.

The distilled settings (``*-elmo-distilled``) are the baseline configs whose tok2vec was first
trained by ``spacy pretrain`` to predict the biLM's vectors per token; they run without the biLM.
Their paired tests against the baseline, spaCy's pretraining and ELMo are ordinary comparison
rows (``rows.comparison_rows``); this module reads those rows and adds

* the share of ELMo's gain over the baseline that distillation recovers,
  (distilled - baseline) / (ELMo - baseline), each difference the paired test's (seed means over
  the same test documents); defined only where ELMo gains over the baseline (> 0 points);
* its targets (the headline NER: CoNLL-2003, low-resource training set): the distilled setting
  beats the baseline and spaCy's pretraining with p < 0.05 and recovers at least half of ELMo's
  gain; a missed target says by how much.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from . import data
from .text import TASK_DATA, p_text

# (task, size) whose distilled setting has targets, and the share of ELMo's gain to keep
TARGETS: Tuple[Tuple[str, str], ...] = (("conll", "small"),)
MIN_SHARE = 0.5


def _index(rows: List[dict]) -> Dict[Tuple[str, str], dict]:
    """``{(other setting, reference setting): row}``."""
    return {(r["other"], r["baseline"]): r for r in rows}


def _numbers(row: dict) -> str:
    """``+1.20 points, p = 0.012`` (or ``not tested``) for one comparison row."""
    if row["test"] is None:
        return f"{row['delta']:+.2f} points, not tested" if row["delta"] is not None else "not measured"
    return f"{row['delta']:+.2f} points, p = {p_text(row['test'].p_value)}"


def recovered_share(distilled_gain: Optional[float], elmo_gain: Optional[float]) -> Optional[float]:
    """(distilled - baseline) / (ELMo - baseline); None unless both are known and ELMo gains."""
    if distilled_gain is None or elmo_gain is None or elmo_gain <= 0:
        return None
    return distilled_gain / elmo_gain


def share_rows(rows: List[dict]) -> List[dict]:
    """One entry per distilled setting compared with its baseline: its gain, ELMo's gain and the
    share recovered, with a sentence."""
    index = _index(rows)
    entries = []
    for r in rows:
        task, size, variant = data.parse_setting(r["other"])
        if variant != data.DISTILLED or data.parse_setting(r["baseline"])[2] != "baseline":
            continue
        elmo = index.get((data.setting_name(task, size, "elmo"), r["baseline"]))
        elmo_gain = elmo["delta"] if elmo else None
        share = recovered_share(r["delta"], elmo_gain)
        where = f"{TASK_DATA[task]}, {size} training set"
        if elmo is None:
            text = f"{where}: ELMo's gain was not measured (no {data.setting_name(task, size, 'elmo')} scores)."
        elif share is None:
            text = (
                f"{where}: no share of ELMo's gain to recover: ELMo did not gain over the baseline "
                f"({elmo['other']} - {r['baseline']}: {_numbers(elmo)})."
            )
        else:
            text = (
                f"{where}: distillation recovers {share:.0%} of ELMo's gain over the baseline "
                f"({r['other']} - {r['baseline']}: {_numbers(r)}; {elmo['other']} - {r['baseline']}: {_numbers(elmo)})."
            )
        entries.append(
            {
                "task": task,
                "size": size,
                "setting": r["other"],
                "distilled_gain": r["delta"],
                "elmo_gain": elmo_gain,
                "share": share,
                "text": text,
            }
        )
    return entries


def _beats(row: Optional[dict], what: str, where: str) -> dict:
    """The target "the distilled setting beats ``what`` with p < 0.05" on one comparison row."""
    goal = f"{where}: beats {what} with p < 0.05"
    if row is None or row["test"] is None:
        return {"goal": goal, "met": None, "short_by": None, "text": f"{goal}: not measured (no paired test)."}
    numbers = f"{row['other']} - {row['baseline']}: {_numbers(row)}"
    if row["verdict"] == "gain":
        return {"goal": goal, "met": True, "short_by": 0.0, "text": f"{goal}: **met** ({numbers})."}
    if row["delta"] > 0:
        text = f"{goal}: not met: the difference is positive but not significant ({numbers}, not < 0.05)."
        return {"goal": goal, "met": False, "short_by": None, "text": text}  # missed on p alone
    short = abs(row["delta"])  # delta <= 0 here; abs() never writes -0.00
    text = f"{goal}: not met, missed by {short:.2f} points, and more for p < 0.05 ({numbers})."
    return {"goal": goal, "met": False, "short_by": short, "text": text}


def _half(entry: Optional[dict], where: str, gain_key: str = "distilled_gain") -> dict:
    """The target "recovers at least half of ELMo's gain"; ``gain_key``: the entry's own gain."""
    goal = f"{where}: recovers at least {MIN_SHARE:.0%} of ELMo's gain over the baseline"
    if entry is None or entry["share"] is None:
        why = entry["text"].split(": ", 1)[1] if entry else "no distilled setting compared with the baseline."
        return {"goal": goal, "met": None, "short_by": None, "text": f"{goal}: not measured ({why.rstrip('.')})."}
    share = entry["share"]
    numbers = f"{share:.0%}: {entry[gain_key]:+.2f} of {entry['elmo_gain']:+.2f} points"
    if share >= MIN_SHARE:
        return {"goal": goal, "met": True, "short_by": 0.0, "text": f"{goal}: **met** ({numbers})."}
    points = MIN_SHARE * entry["elmo_gain"] - entry[gain_key]
    text = (
        f"{goal}: not met, missed by {(MIN_SHARE - share) * 100:.0f} percentage points of the share, "
        f"{points:.2f} points of the score ({numbers})."
    )
    return {"goal": goal, "met": False, "short_by": MIN_SHARE - share, "text": text}


def target_rows(rows: List[dict], shares: List[dict]) -> List[dict]:
    """The targets for each (task, size) of ``TARGETS``, met or missed by how much:
    ``short_by`` in points for "beats" (None where only p misses), as a share for the half."""
    index = _index(rows)
    entries = []
    for task, size in TARGETS:
        distilled = data.setting_name(task, size, data.DISTILLED)
        where = f"{TASK_DATA[task]}, {size} training set, {distilled}"
        share = next((s for s in shares if s["setting"] == distilled), None)
        for target in (
            _beats(index.get((distilled, data.setting_name(task, size, "baseline"))), "the baseline", where),
            _beats(
                index.get((distilled, data.setting_name(task, size, data.SPACY_PRETRAIN))), "spaCy's pretraining", where
            ),
            _half(share, where),
        ):
            entries.append({"task": task, "size": size, **target})
    return entries


def distill_lines(rows: List[dict], choice: Optional[str] = None) -> Tuple[List[str], dict]:
    """The report's section on the distilled settings (markdown lines, empty without any), with
    ``choice`` (``user_choice.distilled_choice_sentence``) first, and what ``results.json`` keeps."""
    shares = share_rows(rows)
    if not shares and not choice:
        return [], {"shares": [], "targets": [], "choice": None}
    targets = target_rows(rows, shares)
    lines = [
        "ELMo distilled into the baseline's tok2vec (`spacy pretrain` with the `spacy_elmo.PretrainElmo.v1` "
        "objective on the biLM's pretraining text, for the CPU seconds of the biLM's pretraining, on top of "
        "it; then the baseline config with `[initialize] init_tok2vec`, trained with the same seeds) runs "
        "without the biLM: the baseline's network and speed. Its paired tests against the baseline, "
        "spaCy's pretraining and ELMo are in the comparisons above. The share of ELMo's gain it recovers is "
        "(distilled - baseline) / (ELMo - baseline), both differences from the paired tests.",
        "",
    ]
    lines = ([choice, ""] if choice else []) + lines
    lines += [f"- {s['text']}" for s in shares] + ([""] if shares else [])
    lines += ["Targets for the distilled tok2vec:", ""] + [f"- {t['text']}" for t in targets] + [""]
    return lines, {"shares": shares, "targets": targets, "choice": choice}
