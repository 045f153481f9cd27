"""Write the project's report: ``reports/report.md``, PNG plots, ``results.json``, the summary
table on the terminal and, with ``--readme``, the README's results section.

Reads what the workflow produced: the ``evaluate`` step's JSON files and per-document counts
(``--metrics-dir``), the trained ELMo pipelines (``--training-dir``, for their learned layer
weights and gamma), the pretrained biLM (``--bilm-dir``: ``metrics.jsonl``, ``run.json`` and
``model-best``), the domain-adapted biLM if any (``--adapted-bilm-dir``) and the steps' wall
times (``--step-times``). Every number in the report and the README comes from those files.

Settings are compared as ``report_data.comparisons`` pairs them (each ELMo variant with the
baseline of its task and size, each ``*-adapted`` with its unadapted setting), with the
paired tests of ``paired_stats.py``; a gain or loss is claimed only where p < 0.05.

The README section is the text between ``<!-- results:start -->`` and
``<!-- results:end -->``; only that text is replaced. Without the markers, a ``## Results``
heading (if absent) and the markers are added at the end of the README.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from wasabi import msg

import report_data as data
import report_plots as plots

START_MARKER = "<!-- results:start -->"
END_MARKER = "<!-- results:end -->"
TASK_DATA = {"ner": "NER (WNUT-16 tweets)", "tagger": "POS tagging (Brown)"}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_description() -> str:
    """CPU cores and model, OS, and the versions that matter for the numbers."""
    import spacy
    import torch

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{os.cpu_count()} CPU cores ({model}), no GPU used, {platform.system()}; "
            f"Python {platform.python_version()}, torch {torch.__version__}, spaCy {spacy.__version__}")


# -- the settings and their comparisons ----------------------------------------------------

def size_text(task: str, size: str, train_docs: Optional[int]) -> str:
    unit = "tweets" if task == "ner" else "sentences"
    return f"{size}: {train_docs:,} {unit}" if train_docs else size


def setting_rows(settings: Dict[str, data.Setting]) -> List[dict]:
    """One row per scored setting of the TASK[-small]-VARIANT names: its main score over seeds."""
    rows = []
    for name, setting in settings.items():
        parts = data.parse_setting(name)
        if parts is None:
            continue
        task, size, variant = parts
        key, score_name = data.main_score(task, setting.runs)
        order = (data.TASKS.index(task), data.SIZES.index(size),
                 data.VARIANTS.index(variant) if variant in data.VARIANTS else len(data.VARIANTS), variant)
        rows.append({"order": order, "name": name, "task": task, "size": size, "variant": variant,
                     "key": key, "score": score_name, "train_docs": setting.train_docs,
                     "seeds": [seed for seed in setting.seeds],
                     "summary": setting.summary(key) if key else None})
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
        result, reason = (data.paired_test(task, key, baseline, other, **test_options) if key
                          else (None, f"no {score_name} in the scores"))
        base_summary, other_summary = (baseline.summary(key), other.summary(key)) if key else (None, None)
        if result is not None:
            delta = result.difference * 100
        elif base_summary and other_summary:
            delta = (other_summary.mean - base_summary.mean) * 100
        else:
            delta = None
        rows.append({
            "task": task, "size": size, "baseline": baseline_name, "other": other_name,
            "label": f"{data.variant_label(data.parse_setting(other_name)[2])} vs "
                     f"{data.variant_label(data.parse_setting(baseline_name)[2])}",
            "score": score_name, "key": key, "train_docs": baseline.train_docs or other.train_docs,
            "baseline_summary": base_summary, "other_summary": other_summary, "delta": delta,
            "test": result, "not_tested": reason,
            "verdict": result.verdict if result is not None else "not tested",
        })
    return rows


def p_text(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.4f}"


def interval_text(result) -> str:
    return f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}"


def settings_table(rows: List[dict]) -> str:
    table_rows = [[TASK_DATA[r["task"]], size_text(r["task"], r["size"], r["train_docs"]), r["name"], r["score"],
                   r["summary"].as_percent() if r["summary"] else "n/a", str(len(r["seeds"]))] for r in rows]
    return markdown_table(["task", "training data", "setting", "test score", "mean ± std over seeds", "runs"],
                          table_rows)


def comparisons_table(rows: List[dict]) -> str:
    table_rows = []
    for r in rows:
        test = r["test"]
        table_rows.append([
            TASK_DATA[r["task"]], size_text(r["task"], r["size"], r["train_docs"]),
            f"{r['other']} vs {r['baseline']}",
            f"{r['delta']:+.2f}" if r["delta"] is not None else "n/a",
            interval_text(test) if test else "n/a", p_text(test.p_value) if test else "n/a",
            f"{len(test.seeds)} x {test.n_docs:,}" if test else "n/a", r["verdict"],
        ])
    return markdown_table(["task", "training data", "comparison", "difference (points)", "95% interval",
                           "p", "seeds x test docs", "verdict"], table_rows)


def comparison_sentence(row: dict) -> str:
    """The claim a comparison supports: a gain or loss only where p < 0.05."""
    where = f"{TASK_DATA[row['task']]}, {row['size']} training set"
    other, baseline = row["other"], row["baseline"]
    test = row["test"]
    if test is None:
        delta = f"{row['delta']:+.2f} {row['score']} points" if row["delta"] is not None else "no difference"
        return (f"{where}: {other} vs {baseline}: {delta}, not tested ({row['not_tested']}); "
                f"no gain is claimed.")
    numbers = (f"{row['delta']:+.2f} {row['score']} points, 95% interval {interval_text(test)}, "
               f"p = {p_text(test.p_value)}, {len(test.seeds)} seed pair{'s' if len(test.seeds) > 1 else ''} "
               f"over {test.n_docs:,} test documents")
    if test.verdict == "gain":
        return f"{where}: **gain**: {other} beats {baseline} ({numbers})."
    if test.verdict == "loss":
        return f"{where}: **loss**: {other} is below {baseline} ({numbers})."
    return f"{where}: no significant difference between {other} and {baseline} ({numbers})."


def target_rows(rows: List[dict]) -> List[dict]:
    """Each target with the comparison that comes closest and whether (or by how much) it is
    missed; only tested comparisons with the baseline count, not the published weights."""
    targets = []
    for task, size, target in data.TARGETS:
        candidates = [r for r in rows if r["task"] == task and r["size"] == size and r["test"] is not None
                      and data.parse_setting(r["baseline"])[2] == "baseline"
                      and data.parse_setting(r["other"])[2] not in data.NOT_FOR_TARGETS]
        met = [r for r in candidates if r["delta"] >= target and r["verdict"] == "gain"]
        best = max(met or candidates, key=lambda r: r["delta"], default=None)
        entry = {"task": task, "size": size, "target": target, "met": bool(met),
                 "setting": best["other"] if best else None, "delta": best["delta"] if best else None,
                 "p_value": best["test"].p_value if best else None,
                 "seeds": len(best["test"].seeds) if best else None,
                 "short_by": max(0.0, target - best["delta"]) if best else None}
        where = f"{TASK_DATA[task]}, {size} training set, at least {target:+.2f} points with p < 0.05"
        if best is None:
            entry["text"] = f"{where}: not measured (no tested comparison with the baseline)."
        else:
            numbers = (f"{best['other']}: {best['delta']:+.2f} points, p = {p_text(best['test'].p_value)}, "
                       f"{entry['seeds']} seed pair{'s' if entry['seeds'] > 1 else ''}")
            if met:
                entry["text"] = f"{where}: **met** ({numbers})."
            elif best["delta"] >= target:
                entry["text"] = f"{where}: not met: the difference is large enough but not significant ({numbers})."
            else:
                entry["text"] = f"{where}: not met, {entry['short_by']:.2f} points short ({numbers})."
        targets.append(entry)
    return targets


METHOD_NOTE = ("Differences are the other setting's mean over seeds minus the baseline's, the seeds "
               "paired by number (baseline seed k with seed k), on corpus-level scores (NER micro F1 "
               "from summed tp/fp/fn, accuracy from summed token counts). The 95% interval is a paired "
               "bootstrap over test documents ({resamples:,} resamples, the same documents for every "
               "seed and both settings); p is two-sided, from paired approximate randomization over "
               "documents ({rounds:,} rounds: each document's counts swapped between the two settings "
               "for all seeds at once). A gain or loss is claimed only where p < 0.05.")


def per_type_table(baseline: Optional[data.Setting], elmo: Optional[data.Setting]) -> str:
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


def step_times_table(step_times: dict) -> Tuple[str, float, Optional[float]]:
    """Markdown table of the steps' wall and CPU times, the total wall and total CPU seconds."""
    steps = sorted(((name, entry) for name, entry in step_times.items() if "seconds" in entry),
                   key=lambda item: item[1].get("finished", ""))
    total = sum(entry["seconds"] for _, entry in steps)
    cpus = [entry.get("cpu_seconds") for _, entry in steps]
    total_cpu = sum(cpus) if steps and None not in cpus else None
    rows = [[name, duration(entry["seconds"]),
             duration(entry["cpu_seconds"]) if entry.get("cpu_seconds") is not None else "n/a",
             entry.get("finished", "")] for name, entry in steps]
    rows.append(["total", duration(total), duration(total_cpu) if total_cpu is not None else "n/a", ""])
    return markdown_table(["step", "wall time", "CPU time", "finished"], rows), total, total_cpu


# -- building the report ---------------------------------------------------------------------

def elmo_pipelines(training_dir: Path, names: Sequence[str]) -> Dict[str, Path]:
    """``{label: model dir}``: the first run (seed) of each non-baseline setting, whose learned
    layer mix the report shows."""
    found = {}
    for name in names:
        parts = data.parse_setting(name)
        if parts is None or parts[2] == "baseline":
            continue
        candidates = [training_dir / name / "model-best"] + sorted(
            (training_dir / name).glob("seed*/model-best"),
            key=lambda p: int(p.parent.name[4:]) if p.parent.name[4:].isdigit() else 1 << 30)
        for path in candidates:
            if path.is_dir():
                found[name if path.parent.name == name else f"{name} {path.parent.name}"] = path
                break
    return found


def pretraining_section(title: str, run_name: str, bilm_dir: Path, figure_name: str, out: Path,
                        figures: Dict[str, Path]) -> Tuple[List[str], Optional[str], Optional[dict], List[dict]]:
    """Markdown lines about one biLM's pretraining, the warning to repeat at the top (if it was
    cut short), its run.json and its curve."""
    curve = data.read_pretraining_curve(bilm_dir / "metrics.jsonl")
    info = data.read_run_info(bilm_dir)
    if not curve and info is None:
        return [], None, None, []
    lines = [f"## {title}", ""]
    warning = None
    if info is not None:
        sentence, loud = data.describe_run(info, run_name)
        lines += [f"> **Warning:** {sentence}" if loud else sentence, ""]
        warning = sentence if loud else None
    if curve:
        last = curve[-1]
        figures[figure_name] = plots.plot_pretraining(curve, out / f"{figure_name}.png", title=title)
        lines += [f"{last.get('step')} steps, {last.get('tokens', 0):,} training tokens. Dev perplexity at the "
                  f"last evaluation: forward {last.get('dev_perplexity_forward', float('nan')):.1f}, backward "
                  f"{last.get('dev_perplexity_backward', float('nan')):.1f}.", "",
                  f"![perplexity]({figures[figure_name].name})", ""]
    return lines, warning, info, curve


def build(args: argparse.Namespace) -> Tuple[str, str, str, dict]:
    """The report's markdown, the README section, the summary tables and the results (JSON-ready)."""
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    settings = data.load_settings(args.metrics_dir) if args.metrics_dir.is_dir() else {}
    test_options = {"resamples": args.resamples, "rounds": args.rounds}
    setting_list = setting_rows(settings)
    rows = comparison_rows(settings, **test_options)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = machine_description()
    step_times = json.loads(args.step_times.read_text()) if args.step_times and args.step_times.is_file() else {}
    times_md, total_seconds, total_cpu = step_times_table(step_times)
    figures: Dict[str, Path] = {}

    groups: Dict[Tuple[str, str], List[Tuple[str, Optional[data.Summary]]]] = {}
    for row in setting_list:
        groups.setdefault((row["task"], row["size"]), []).append((row["variant"], row["summary"]))
    figures["scores"] = plots.plot_scores([(f"{task} {size}", bars) for (task, size), bars in groups.items()],
                                          out / "scores.png")
    tested = [r for r in rows if r["test"] is not None]
    if tested:
        figures["differences"] = plots.plot_differences(
            [(f"{r['task']} {r['size']}: {r['other']} vs {r['baseline']}", r["test"].difference * 100,
              r["test"].ci_low * 100, r["test"].ci_high * 100, r["verdict"]) for r in tested],
            out / "differences.png")
    ner_full = (settings.get("ner-baseline"), settings.get("ner-elmo"))
    if any(ner_full):
        per_type = {label: (ner_full[0].per_type().get(label) if ner_full[0] else None,
                            ner_full[1].per_type().get(label) if ner_full[1] else None)
                    for label in set().union(*(s.per_type() for s in ner_full if s))}
        figures["ner_per_type"] = plots.plot_per_type(per_type, "NER F1 per entity type (full training set)",
                                                      out / "ner_per_type.png")
    bilm_md, bilm_warning, bilm_run, curve = pretraining_section(
        "biLM pretraining", "Pretraining of the biLM", args.bilm_dir, "bilm_perplexity", out, figures)
    adapted_md: List[str] = []
    adaptations = []  # (run name, run.json, last curve point) per adapted biLM
    for adapted_dir in args.adapted_bilm_dir:
        name = f"Domain adaptation of the biLM ({adapted_dir.name})"
        lines, warning, info, adapted_curve = pretraining_section(
            name, name, adapted_dir, f"{adapted_dir.name}_perplexity", out, figures)
        adapted_md += lines
        adaptations.append((name, info, adapted_curve[-1] if adapted_curve else None, warning))
    warnings = [w for w in [bilm_warning] + [a[3] for a in adaptations] if w]
    mixes: Dict[str, Tuple[List[float], float]] = {}
    for label, model_dir in elmo_pipelines(args.training_dir, list(settings)).items():
        for component, mix in data.learned_mixes(model_dir).items():
            mixes[f"{label} ({component})"] = mix
    if mixes:
        figures["layer_weights"] = plots.plot_layer_weights(mixes, out / "layer_weights.png")
    # the bank example runs the pretrained biLM, so only mixes learned on it apply
    task_mixes = {name: mix for name, mix in mixes.items()
                  if (data.parse_setting(name.split(" ")[0]) or ("", "", ""))[2] == "elmo"}
    bank_model = args.bilm_dir / "model-best"
    bank = data.bank_similarities(bank_model, task_mixes) if bank_model.is_dir() else []

    table = settings_table(setting_list) + "\n\n" + comparisons_table(rows)
    sentences = [comparison_sentence(row) for row in rows]
    targets = target_rows(rows)
    target_lines = ["Targets of the default workflow (issue 12; the published weights do not count):", ""] + [
        f"- {t['text']}" for t in targets] + [""]
    method = METHOD_NOTE.format(**test_options)
    header = f"Run of {now} on {machine}. Command: `{args.command}`."
    if total_seconds:
        header += f" Wall time of the steps: {duration(total_seconds)} in all"
        header += (f" ({duration(total_cpu)} of CPU time)." if total_cpu is not None else ".")
    loud = [f"> **Warning:** {warning}" for warning in warnings]
    md = ["# spacy-elmo: baseline vs ELMo", "", header, ""] + [line for w in loud for line in (w, "")]
    md += ["## Test scores", "", settings_table(setting_list), "", "## Comparisons", "",
           comparisons_table(rows), "", method, ""]
    md += [f"- {sentence}" for sentence in sentences] + ([""] if sentences else [])
    md += ["## Targets", ""] + target_lines[2:]
    md += [f"![scores]({figures['scores'].name})", ""]
    if "differences" in figures:
        md += [f"![differences]({figures['differences'].name})", ""]
    if "ner_per_type" in figures:
        md += ["## NER per entity type (full training set, test split)", "",
               per_type_table(*ner_full), "", f"![per type]({figures['ner_per_type'].name})", ""]
    md += bilm_md + adapted_md
    if mixes:
        md += ["## Learned layer weights", "",
               "softmax(a) per layer (0 = char-CNN, then the LSTM layers) and gamma of each listener "
               "(first seed of each setting).", "",
               markdown_table(["pipeline (component)"] + [f"layer {j}" for j in range(len(next(iter(mixes.values()))[0]))]
                              + ["gamma"],
                              [[name] + [f"{w:.3f}" for w in weights] + [f"{gamma:.3f}"]
                               for name, (weights, gamma) in mixes.items()]), "",
               f"![layer weights]({figures['layer_weights'].name})", ""]
    if bank:
        md += ["## The \"bank\" example", "",
               f"Cosine similarity of `bank` in \"{data.BANK_TEXTS[0]}\" and \"{data.BANK_TEXTS[1]}\" "
               f"(pretrained biLM, model-best). Layer 0 is a static vector.", "",
               markdown_table(["representation", "cosine"], [[name, f"{value:.4f}"] for name, value in bank]), ""]
    if step_times:
        md += ["## Time per step", "",
               "Wall time, and the CPU time of the step's processes (user + system; on a machine "
               "shared with other work this is closer to what the step takes alone).", "", times_md, ""]
    report_md = "\n".join(md)

    readme_rel = Path(os.path.relpath(out, args.readme.parent)) if args.readme else out
    links = ", ".join(f"[{name.replace('_', ' ')}]({(readme_rel / path.name).as_posix()})"
                      for name, path in figures.items())
    section = [header, ""] + [line for w in loud for line in (w, "")]
    ended = [sentence for info, name in [(bilm_run, "Pretraining of the biLM")] + [(a[1], a[0]) for a in adaptations]
             if info is not None
             for sentence, loud in [data.describe_run(info, name)] if not loud]
    if ended:
        section += [" ".join(ended), ""]
    section += [settings_table(setting_list), "", comparisons_table(rows), "", method, ""]
    section += [f"- {sentence}" for sentence in sentences] + ([""] if sentences else [])
    section += target_lines
    top = [(name, value) for name, value in bank if "top" in name]
    if bank and top:
        section += [f"The \"bank\" example: cosine of `bank` in \"{data.BANK_TEXTS[0]}\" and "
                    f"\"{data.BANK_TEXTS[1]}\" is {top[0][1]:.3f} with the biLM's top layer and "
                    f"{bank[0][1]:.3f} with a static vector (layer 0).", ""]
    section += [f"Full report: [{(readme_rel / 'report.md').as_posix()}]({(readme_rel / 'report.md').as_posix()}); "
                f"plots: {links}.", "", f"![scores]({(readme_rel / 'scores.png').as_posix()})"]
    if "differences" in figures:
        section += ["", f"![differences]({(readme_rel / 'differences.png').as_posix()})"]
    readme_section = "\n".join(section)

    results = {
        "date": now, "machine": machine, "command": args.command,
        "settings": [{**{k: v for k, v in r.items() if k != "summary"},
                      "values": r["summary"].values if r["summary"] else None} for r in setting_list],
        "comparisons": [{**{k: v for k, v in r.items() if k not in ("baseline_summary", "other_summary", "test")},
                         "baseline_values": r["baseline_summary"].values if r["baseline_summary"] else None,
                         "other_values": r["other_summary"].values if r["other_summary"] else None,
                         "test": r["test"].as_dict() if r["test"] else None} for r in rows],
        "statistics": {"resamples": args.resamples, "rounds": args.rounds, "alpha": 0.05},
        "targets": targets,
        "pretraining_last": curve[-1] if curve else None, "pretraining_run": bilm_run,
        "adaptations": [{"name": name, "run": info, "last": last} for name, info, last, _ in adaptations],
        "warnings": warnings,
        "layer_mixes": {name: {"weights": w, "gamma": g} for name, (w, g) in mixes.items()},
        "bank_cosine": dict(bank), "step_times": step_times,
        "figures": {name: path.name for name, path in figures.items()},
    }
    return report_md, readme_section, table, results


def update_readme(readme: Path, section: str) -> None:
    """Replace the text between the markers; add heading and markers at the end if absent."""
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    block = f"{START_MARKER}\n{section}\n{END_MARKER}"
    if START_MARKER in text and END_MARKER in text.split(START_MARKER, 1)[1]:
        before, rest = text.split(START_MARKER, 1)
        after = rest.split(END_MARKER, 1)[1]
        text = before + block + after
    else:
        if not any(line.strip() == "## Results" for line in text.splitlines()):
            text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + "## Results\n"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text, encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--metrics-dir", type=Path, default=Path("metrics"))
    parser.add_argument("--training-dir", type=Path, default=Path("training"))
    parser.add_argument("--bilm-dir", type=Path, default=Path("training/bilm"))
    parser.add_argument("--adapted-bilm-dir", type=Path, action="append", default=[],
                        help="a domain-adapted biLM (run.json, metrics.jsonl); repeatable, missing folders are skipped")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples per comparison")
    parser.add_argument("--rounds", type=int, default=10_000,
                        help="approximate randomization rounds per comparison")
    parser.add_argument("--output-dir", type=Path, default=Path("reports"))
    parser.add_argument("--step-times", type=Path, default=None, help="step_clock.py's JSON file")
    parser.add_argument("--command", default="python -m spacy project run all",
                        help="the command that ran the workflow, as the report should quote it")
    parser.add_argument("--readme", type=lambda s: Path(s) if s else None, default=None,
                        help="README to update between the results markers (empty: none)")
    args = parser.parse_args(argv)
    try:
        report_md, readme_section, table, results = build(args)
    except ValueError as e:  # a malformed input file, named in the message
        msg.fail(str(e), exits=1)
    (args.output_dir / "report.md").write_text(report_md + "\n", encoding="utf-8")
    (args.output_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.readme:
        update_readme(args.readme, readme_section)
    print(readme_section.split("\n\n")[0])
    print()
    for warning in results["warnings"]:
        msg.warn(warning)
    print(table)
    print()
    msg.good(f"Report: {args.output_dir / 'report.md'}"
             + (f"; README results section updated: {args.readme}" if args.readme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
