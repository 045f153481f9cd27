"""ELMo's predictions as training data: the students, how much of ELMo's gain they keep, the
self-training control, what the labelling cost, and the students' targets.

A student (``*-elmo-silver``) is the baseline's config trained on the gold documents plus the
silver: an ELMo teacher's predictions on unlabeled in-domain text (the ``label-silver`` steps,
``training.silver``). The control (``*-self-training``) is the same with the baseline as the
teacher: a student that does not beat it shows a gain of self-training, not of ELMo. Their paired
tests (against the baseline, the control, ELMo and the distilled ELMo) are ordinary comparison rows
(``rows.comparison_rows``); this module reads those rows, the price columns and the labelling
records, and adds

* the share of ELMo's gain over the baseline that the student recovers (as ``distill``'s);
* each student's targets: that share at least half, a gain with p < 0.05 over the baseline and
  over the control, and words per CPU-second within 10% of the baseline's, each met or missed by
  how much;
* one sentence on what to choose at the baseline's speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import data
from .distill import _beats, _half, _index, _numbers, recovered_share
from .text import TASK_DATA, p_text

# the students' targets: (task, size), a share of ELMo's gain, and the slowest words/s allowed
TARGETS: Tuple[Tuple[str, str], ...] = (("conll", "small"), ("tagger", "small"))
MAX_SLOWDOWN = 0.10
RECORD_FILE = "silver.json"  # what the label-silver step writes beside its silver.spacy


def read_labelling_records(folders: Sequence[Path]) -> Dict[str, dict]:
    """``{folder name: silver.json}`` of the labelling runs that exist; an error names a bad file."""
    records = {}
    for folder in folders:
        path = folder / RECORD_FILE
        if not path.is_file():
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from e
        if not isinstance(record, dict) or not isinstance(record.get("teacher"), dict):
            raise ValueError(f"{path}: expected the record of a label-silver run (a JSON object with a teacher)")
        records[folder.name] = record
    return records


def labelling_rows(records: Dict[str, dict], step_times: dict) -> List[List[str]]:
    """Budget-table rows, one per labelling: the step's CPU time (else the record's), the text."""
    rows = []
    for name, record in records.items():
        step = step_times.get(f"label-silver-{name}", {}).get("cpu_seconds")
        seconds = step if isinstance(step, (int, float)) else record.get("cpu_seconds")
        teacher = record["teacher"]
        which = f"seed {teacher['seed']}, best on dev" if teacher.get("seed") is not None else teacher.get("model")
        rows.append(
            [
                f"teacher labelling ({name}: {which})",
                f"{seconds:,.0f} s" if isinstance(seconds, (int, float)) else "n/a",
                "end of its text",
                "-",
                f"{record.get('words', 0):,} words ({record.get('docs', 0):,} documents)",
            ]
        )
    return rows


def share_rows(rows: List[dict]) -> List[dict]:
    """One entry per student compared with its baseline: its gain, ELMo's and the share."""
    index = _index(rows)
    entries = []
    for r in rows:
        task, size, variant = data.parse_setting(r["other"])
        if variant != data.ELMO_SILVER or data.parse_setting(r["baseline"])[2] != "baseline":
            continue
        elmo = index.get((data.setting_name(task, size, "elmo"), r["baseline"]))
        elmo_gain = elmo["delta"] if elmo else None
        share = recovered_share(r["delta"], elmo_gain)
        where = f"{TASK_DATA[task]}, {size} training set"
        if elmo is None:
            text = f"{where}: ELMo's gain was not measured (no {data.setting_name(task, size, 'elmo')} scores)."
        elif share is None:
            text = (
                f"{where}: no share of ELMo's gain to recover: ELMo did not gain ({elmo['other']}: {_numbers(elmo)})."
            )
        else:
            text = (
                f"{where}: the student recovers {share:.0%} of ELMo's gain over the baseline "
                f"({r['other']} - {r['baseline']}: {_numbers(r)}; {elmo['other']} - {r['baseline']}: {_numbers(elmo)})."
            )
        entries.append(
            {"task": task, "size": size, "setting": r["other"], "student_gain": r["delta"], "elmo_gain": elmo_gain}
            | {"share": share, "text": text}
        )
    return entries


def _speed(student: Optional[dict], baseline: Optional[dict], where: str) -> dict:
    """The target "runs within 10% of the baseline's words per CPU-second" (the price columns)."""
    goal = f"{where}: runs within {MAX_SLOWDOWN:.0%} of the baseline's words per CPU-second"
    speeds = [row.get("words_per_cpu_second") if row else None for row in (student, baseline)]
    if None in speeds:
        return {"goal": goal, "met": None, "short_by": None, "text": f"{goal}: not measured (no price of both)."}
    ratio = speeds[0] / speeds[1]
    numbers = f"{speeds[0]:,.0f} against {speeds[1]:,.0f} words / CPU s, {ratio:.2f}x"
    if ratio >= 1 - MAX_SLOWDOWN:
        return {"goal": goal, "met": True, "short_by": 0.0, "text": f"{goal}: **met** ({numbers})."}
    short = 1 - MAX_SLOWDOWN - ratio
    text = f"{goal}: not met, {short * 100:.0f} percentage points slower than allowed ({numbers})."
    return {"goal": goal, "met": False, "short_by": short, "text": text}


def target_rows(rows: List[dict], shares: List[dict], settings: List[dict]) -> List[dict]:
    """Each student's targets (``TARGETS``), met or missed by how much: ``short_by`` in points for
    "beats" (None where only p misses), as a share for the half and for the speed."""
    index, by_name = _index(rows), {row["name"]: row for row in settings}
    entries = []
    for task, size in TARGETS:
        student, baseline = (data.setting_name(task, size, v) for v in (data.ELMO_SILVER, "baseline"))
        control = data.setting_name(task, size, data.SELF_TRAINING)
        where = f"{TASK_DATA[task]}, {size} training set, {student}"
        share = next((s for s in shares if s["setting"] == student), None)
        for target in (
            _half(share, where, gain_key="student_gain"),
            _beats(index.get((student, baseline)), "the baseline", where),
            _beats(index.get((student, control)), "the self-training control", where),
            _speed(by_name.get(student), by_name.get(baseline), where),
        ):
            entries.append({"task": task, "size": size, **target})
    return entries


def choice_sentence(rows: List[dict]) -> Optional[str]:
    """What to choose at the baseline's speed per task and size, from the students' paired tests
    against the self-training control and the distilled ELMo, as far as they allow (p < 0.05)."""
    index, parts = _index(rows), []
    for r in rows:
        task, size, variant = data.parse_setting(r["other"])
        if variant != data.ELMO_SILVER or r["baseline"] != data.setting_name(task, size, "baseline"):
            continue
        where = f"{TASK_DATA[task]} with the {size} training set"
        control = index.get((r["other"], data.setting_name(task, size, data.SELF_TRAINING)))
        distilled = index.get((r["other"], data.setting_name(task, size, data.DISTILLED)))
        numbers = (
            [f"student - baseline: {r['delta']:+.2f} points, p = {p_text(r['test'].p_value)}"] if r["test"] else []
        )
        for other, label in ((control, "self-training"), (distilled, "distilled")):
            if other is not None and other["test"] is not None:
                numbers.append(f"student - {label}: {other['delta']:+.2f} points, p = {p_text(other['test'].p_value)}")
        if r["verdict"] != "gain":
            choice = "the ELMo-taught student shows no gain over the baseline"
        elif control is None or control["verdict"] != "gain":
            choice = "the student's gain is not shown to be ELMo's (it does not beat self-training)"
        elif distilled is not None and distilled["verdict"] == "loss":
            choice = "choose the distilled ELMo"
        else:
            choice = "choose the ELMo-taught student"
        parts.append(f"{choice} for {where} ({'; '.join(numbers)})")
    if not parts:
        return None
    return (
        "With ELMo's predictions as training data (the baseline's network and speed; the teacher's "
        "labelling costs CPU time once): " + "; ".join(parts) + "."
    )


def silver_lines(rows: List[dict], settings: List[dict], records: Dict[str, dict]) -> Tuple[List[str], dict]:
    """The report's section on the students (markdown lines, empty without any) and what
    ``results.json`` keeps."""
    shares = share_rows(rows)
    choice = choice_sentence(rows)
    if not shares and not records:
        return [], {"shares": [], "targets": [], "choice": None, "labelling": records}
    targets = target_rows(rows, shares, settings)
    lines = [
        "A teacher (the ELMo setting's seed best on dev, or for the self-training control the "
        "baseline's) labels unlabeled in-domain text (`python -m scripts label-silver`); the student "
        "(`*-elmo-silver`) and the control (`*-self-training`) are the baseline config trained with the "
        "same seeds on the gold documents plus that silver (`spacy_elmo.GoldAndSilverCorpus.v1`), and "
        "run without the biLM. The share of ELMo's gain a student recovers is (student - baseline) / "
        "(ELMo - baseline), both differences from the paired tests above.",
        "",
    ]
    lines = ([choice, ""] if choice else []) + lines
    if records:
        lines += [
            "What each teacher's labelling cost is in the budget table above (with the pretraining runs).",
            "",
        ]
    lines += [f"- {s['text']}" for s in shares] + ([""] if shares else [])
    lines += ["Targets of the students:", ""] + [f"- {t['text']}" for t in targets] + [""]
    return lines, {"shares": shares, "targets": targets, "choice": choice, "labelling": records}
