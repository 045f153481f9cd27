"""Write the project's report: ``reports/report.md``, PNG plots, ``results.json``, the summary
table on the terminal and, with ``--readme``, the README's results section.

Reads what the workflow produced: the ``evaluate`` step's JSON files (``--metrics-dir``), the
trained ELMo pipelines (``--training-dir``, for their learned layer weights and gamma), the
pretrained biLM (``--bilm-dir``: ``metrics.jsonl`` and ``model-best``) and the steps' wall
times (``--step-times``). Every number in the report and the README comes from those files.

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


# -- the comparisons ---------------------------------------------------------------------

def comparison_rows(settings: Dict[str, data.Setting]) -> List[dict]:
    """One row per (task, size): baseline and ELMo summaries of the task's main score."""
    rows = []
    for task, size, baseline_name, elmo_name in data.COMPARISONS:
        baseline, elmo = settings.get(baseline_name), settings.get(elmo_name)
        runs = (baseline.runs if baseline else []) + (elmo.runs if elmo else [])
        key, score_name = data.main_score(task, runs)
        base_summary = baseline.summary(key) if baseline and key else None
        elmo_summary = elmo.summary(key) if elmo and key else None
        reference = baseline or elmo
        rows.append({
            "task": task, "size": size, "score": score_name, "key": key,
            "train_docs": reference.train_docs if reference else None,
            "seeds": max(len(baseline.runs) if baseline else 0, len(elmo.runs) if elmo else 0),
            "baseline": base_summary, "elmo": elmo_summary,
            "delta": (elmo_summary.mean - base_summary.mean) * 100
            if base_summary and elmo_summary else None,
        })
    return rows


def summary_table(rows: List[dict]) -> str:
    table_rows = []
    for row in rows:
        docs = f"{row['train_docs']:,}" if row["train_docs"] else "?"
        unit = "tweets" if row["task"] == "ner" else "sentences"
        seeds = f", mean ± std of {row['seeds']} seeds" if row["seeds"] > 1 else ""
        table_rows.append([
            TASK_DATA[row["task"]], f"{row['size']}: {docs} {unit}{seeds}", row["score"],
            row["baseline"].as_percent() if row["baseline"] else "n/a",
            row["elmo"].as_percent() if row["elmo"] else "n/a",
            f"{row['delta']:+.2f}" if row["delta"] is not None else "n/a",
        ])
    return markdown_table(["task", "training data", "test score", "baseline", "ELMo", "ELMo - baseline"],
                          table_rows)


def shortfalls(rows: List[dict]) -> List[str]:
    """A sentence for each comparison where ELMo did not beat its baseline.

    A single-run comparison is set against the seed spread the same task showed elsewhere
    in the run: a difference smaller than that spread is within run-to-run noise.
    """
    notes = []
    for row in rows:
        if row["delta"] is None or row["delta"] > 0:
            continue
        note = (f"ELMo did not beat the baseline on {TASK_DATA[row['task']]}, {row['size']} training set: "
                f"{row['elmo'].as_percent()} vs {row['baseline'].as_percent()} {row['score']}.")
        spreads = [(other["size"], other["seeds"], max(other["baseline"].std, other["elmo"].std) * 100)
                   for other in rows if other["task"] == row["task"] and other["seeds"] > 1
                   and other["baseline"] and other["elmo"]]
        if row["seeds"] > 1:
            spread = max(row["baseline"].std, row["elmo"].std) * 100
            if abs(row["delta"]) < spread:
                note += (f" The difference is smaller than the standard deviation over its {row['seeds']} "
                         f"seeds ({spread:.2f} points).")
        elif spreads:
            size, seeds, spread = spreads[0]
            note += (f" That is one run each; over {seeds} seeds the {size} setting's {row['score']} "
                     f"varied with a standard deviation of up to {spread:.2f} points.")
        notes.append(note)
    return notes


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

def elmo_pipelines(training_dir: Path) -> Dict[str, Path]:
    """``{label: model dir}`` of the ELMo pipelines whose learned mixes the report shows."""
    found = {}
    for _, _, _, setting in data.COMPARISONS:
        candidates = [training_dir / setting / "model-best"] + sorted(
            (training_dir / setting).glob("seed*/model-best"))
        for path in candidates:
            if path.is_dir():
                label = setting if path.parent.name == setting else f"{setting} {path.parent.name}"
                found[label] = path
    return found


def build(args: argparse.Namespace) -> Tuple[str, str, str, dict]:
    """The report's markdown, the README section, the summary table and the results (JSON-ready)."""
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    settings = data.load_settings(args.metrics_dir) if args.metrics_dir.is_dir() else {}
    rows = comparison_rows(settings)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = machine_description()
    step_times = json.loads(args.step_times.read_text()) if args.step_times and args.step_times.is_file() else {}
    times_md, total_seconds, total_cpu = step_times_table(step_times)
    figures: Dict[str, Path] = {}

    score_bars = [(f"{r['task']} {r['size']}", r["baseline"], r["elmo"]) for r in rows]
    figures["scores"] = plots.plot_scores(score_bars, out / "scores.png")
    ner_full = (settings.get("ner-baseline"), settings.get("ner-elmo"))
    if any(ner_full):
        per_type = {label: (ner_full[0].per_type().get(label) if ner_full[0] else None,
                            ner_full[1].per_type().get(label) if ner_full[1] else None)
                    for label in set().union(*(s.per_type() for s in ner_full if s))}
        figures["ner_per_type"] = plots.plot_per_type(per_type, "NER F1 per entity type (full training set)",
                                                      out / "ner_per_type.png")
    curve = data.read_pretraining_curve(args.bilm_dir / "metrics.jsonl")
    if curve:
        figures["bilm_perplexity"] = plots.plot_pretraining(curve, out / "bilm_perplexity.png")
    mixes: Dict[str, Tuple[List[float], float]] = {}
    for label, model_dir in elmo_pipelines(args.training_dir).items():
        for component, mix in data.learned_mixes(model_dir).items():
            mixes[f"{label} ({component})"] = mix
    if mixes:
        figures["layer_weights"] = plots.plot_layer_weights(mixes, out / "layer_weights.png")
    task_mixes = {name: mix for name, mix in mixes.items() if "seed" not in name or "seed0" in name}
    bank_model = args.bilm_dir / "model-best"
    bank = data.bank_similarities(bank_model, task_mixes) if bank_model.is_dir() else []

    table = summary_table(rows)
    notes = shortfalls(rows)
    header = f"Run of {now} on {machine}. Command: `{args.command}`."
    if total_seconds:
        header += f" Wall time of the steps: {duration(total_seconds)} in all"
        header += (f" ({duration(total_cpu)} of CPU time)." if total_cpu is not None else ".")
    md = ["# spacy-elmo: baseline vs ELMo", "", header, "", "## Test scores", "", table, ""]
    md += [f"- {note}" for note in notes] + ([""] if notes else [])
    md += [f"![scores]({figures['scores'].name})", ""]
    if "ner_per_type" in figures:
        md += ["## NER per entity type (full training set, test split)", "",
               per_type_table(*ner_full), "", f"![per type]({figures['ner_per_type'].name})", ""]
    if curve:
        last = curve[-1]
        md += ["## biLM pretraining", "",
               f"{last.get('step')} steps, {last.get('tokens', 0):,} training tokens. Dev perplexity at the "
               f"last evaluation: forward {last.get('dev_perplexity_forward', float('nan')):.1f}, backward "
               f"{last.get('dev_perplexity_backward', float('nan')):.1f}.", "",
               f"![perplexity]({figures['bilm_perplexity'].name})", ""]
    if mixes:
        md += ["## Learned layer weights", "",
               "softmax(a) per layer (0 = char-CNN, then the LSTM layers) and gamma of each listener.", "",
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
    section = [header, "", table, ""] + [f"- {note}" for note in notes] + ([""] if notes else [])
    top = [(name, value) for name, value in bank if "top" in name]
    if bank and top:
        section += [f"The \"bank\" example: cosine of `bank` in \"{data.BANK_TEXTS[0]}\" and "
                    f"\"{data.BANK_TEXTS[1]}\" is {top[0][1]:.3f} with the biLM's top layer and "
                    f"{bank[0][1]:.3f} with a static vector (layer 0).", ""]
    section += [f"Full report: [{(readme_rel / 'report.md').as_posix()}]({(readme_rel / 'report.md').as_posix()}); "
                f"plots: {links}.", "", f"![scores]({(readme_rel / 'scores.png').as_posix()})"]
    readme_section = "\n".join(section)

    results = {
        "date": now, "machine": machine, "command": args.command,
        "comparisons": [{**{k: v for k, v in r.items() if k not in ("baseline", "elmo")},
                         "baseline": r["baseline"].values if r["baseline"] else None,
                         "elmo": r["elmo"].values if r["elmo"] else None} for r in rows],
        "pretraining_last": curve[-1] if curve else None,
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
    parser.add_argument("--output-dir", type=Path, default=Path("reports"))
    parser.add_argument("--step-times", type=Path, default=None, help="step_clock.py's JSON file")
    parser.add_argument("--command", default="python -m spacy project run all",
                        help="the command that ran the workflow, as the report should quote it")
    parser.add_argument("--readme", type=lambda s: Path(s) if s else None, default=None,
                        help="README to update between the results markers (empty: none)")
    args = parser.parse_args(argv)
    report_md, readme_section, table, results = build(args)
    (args.output_dir / "report.md").write_text(report_md + "\n", encoding="utf-8")
    (args.output_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.readme:
        update_readme(args.readme, readme_section)
    print(readme_section.split("\n\n")[0])
    print()
    print(table)
    print()
    msg.good(f"Report: {args.output_dir / 'report.md'}"
             + (f"; README results section updated: {args.readme}" if args.readme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
