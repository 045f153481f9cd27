"""The genre classification report (the ``textcat`` workflow): ``textcat.md``, its figure,
``textcat_results.json`` and the README's own section for it.

The task's scores live in their own metrics folder, so the main report never sees them and
each report can be rebuilt alone (``make all`` first, the ``textcat`` workflow after it). The
rows, tables, sentences and paired tests are the main report's (``rows``, ``text``,
``evaluation.paired_stats``); the per-document counts are summed per Brown file, so the
bootstrap and the randomization resample whole files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

from . import data, plots
from .readme import update_readme
from .rows import comparison_rows, setting_rows
from .text import (
    TIMES_MISSING,
    comparison_sentence,
    comparisons_table,
    markdown_table,
    settings_table,
    step_times_table,
)

README_SECTION = "textcat-results"
METHOD = (
    "Genre accuracy is spaCy's micro F of exclusive classes (the share of test paragraphs whose "
    "most probable genre is right); macro F is the mean F1 over the 15 genres. The paired tests "
    "are the other tasks' (seed k with seed k, {resamples:,} bootstrap resamples, {rounds:,} "
    "randomization rounds), with one difference: their units are the test files (Brown texts), each "
    "holding all its paragraphs, because paragraphs of one text share author and topic and are not "
    "independent. A gain or loss is claimed only where p < 0.05."
)


@dataclass
class TextcatReportInputs:
    metrics_dir: Path = Path("metrics/textcat")
    output_dir: Path = Path("reports")
    corpus_stats: Optional[Path] = Path("corpus/genres/stats.json")
    step_times: Optional[Path] = None
    command: str = "python -m spacy project run textcat"
    readme: Optional[Path] = None
    resamples: int = 10_000
    rounds: int = 10_000


def genre_table(settings: Dict[str, data.Setting]) -> str:
    """F1 per genre, mean ± std over seeds, one column per setting."""
    names = [name for name in ("textcat-baseline", "textcat-elmo") if name in settings]
    genres = sorted({g for name in names for run in settings[name].runs for g in (run.get("cats_f_per_type") or {})})
    rows = []
    for genre in genres:
        cells = [genre]
        for name in names:
            values = [
                run["cats_f_per_type"][genre]["f"]
                for run in settings[name].runs
                if genre in (run.get("cats_f_per_type") or {})
            ]
            cells.append(data.Summary(values).as_percent() if values else "n/a")
        rows.append(cells)
    macro = ["macro F"] + [s.as_percent() if (s := settings[name].summary("cats_macro_f")) else "n/a" for name in names]
    return markdown_table(["genre", *[f"{name} F1" for name in names]], rows + [[f"**{c}**" for c in macro]])


def data_sentence(stats_path: Optional[Path]) -> str:
    """The corpus the numbers come from, from the preprocessing step's stats.json."""
    if stats_path is None or not stats_path.is_file():
        return ""
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    splits = stats.get("splits", {})
    parts = [
        f"{name} {s['files']} files, {s['paragraphs']:,} paragraphs, {s['words']:,} words" for name, s in splits.items()
    ]
    per_file = stats.get("per_file", {})
    limits = ", ".join(f"{split} {n if n else 'all'}" for split, n in per_file.items())
    return (
        f"Brown paragraphs, one Doc each, labelled with their file's genre; split by file as the POS corpus: "
        f"{'; '.join(parts)} (paragraphs kept per file: {limits})."
    )


def build_textcat_report(inputs: TextcatReportInputs) -> tuple[str, str, dict]:
    """``textcat.md``'s text, the README section and the results (JSON-ready)."""
    out = inputs.output_dir
    out.mkdir(parents=True, exist_ok=True)
    settings = data.load_settings(inputs.metrics_dir) if inputs.metrics_dir.is_dir() else {}
    settings = {name: s for name, s in settings.items() if (data.parse_setting(name) or ("",))[0] == "textcat"}
    options = {"resamples": inputs.resamples, "rounds": inputs.rounds}
    listed, rows = setting_rows(settings), comparison_rows(settings, **options)
    step_times = json.loads(inputs.step_times.read_text()) if inputs.step_times and inputs.step_times.is_file() else {}
    times, wall, cpu, elapsed = step_times_table(step_times)
    header = f"Command: `{inputs.command}`."
    if wall:
        header += f" Wall time of its steps: {wall / 60:.1f} min" + (
            f" ({cpu / 60:.1f} min of CPU time)" if cpu else ""
        )
        header += (
            f", {elapsed / 60:.1f} min from the first one's start to the last one's end."
            if elapsed is not None
            else " (timed by several runs of the runner)."
        )
    else:
        header += " " + TIMES_MISSING
    corpus = data_sentence(inputs.corpus_stats)
    figure = (
        plots.plot_scores(
            [("genre classification", [(r["variant"], r["summary"]) for r in listed])], out / "textcat_scores.png"
        )
        if listed
        else None
    )
    sentences = [f"- {comparison_sentence(row)}" for row in rows]
    tables = [settings_table(listed), "", comparisons_table(rows), "", METHOD.format(**options), ""] + sentences
    md = [
        "# Genre classification: baseline vs ELMo",
        "",
        header,
        "",
        corpus,
        "",
        *tables,
        "",
        "## F1 per genre (test split)",
        "",
        genre_table(settings),
        "",
    ]
    if figure is not None:
        md += [f"![scores]({figure.name})", ""]
    md += ["## Time per step", "", times if step_times else TIMES_MISSING, ""]
    report_path = (Path(os.path.relpath(out, inputs.readme.parent)) if inputs.readme else out) / "textcat.md"
    section = [
        header,
        "",
        corpus,
        "",
        *tables,
        "",
        f"Full report: [{report_path.as_posix()}]({report_path.as_posix()}).",
    ]
    results = {
        "command": inputs.command,
        "corpus": corpus,
        "settings": [
            {**{k: v for k, v in r.items() if k != "summary"}, "values": r["summary"].values if r["summary"] else None}
            for r in listed
        ],
        "comparisons": [
            {
                k: (v.as_dict() if k == "test" and v is not None else v)
                for k, v in r.items()
                if k not in ("baseline_summary", "other_summary")
            }
            for r in rows
        ],
        "step_times": step_times,
    }
    return "\n".join(md), "\n".join(section), results


def write_textcat_report(inputs: TextcatReportInputs) -> tuple[str, dict]:
    """Write ``textcat.md``, ``textcat_results.json`` and the README's textcat section."""
    report, section, results = build_textcat_report(inputs)
    (inputs.output_dir / "textcat.md").write_text(report + "\n", encoding="utf-8")
    (inputs.output_dir / "textcat_results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if inputs.readme is not None:
        update_readme(
            inputs.readme, section, name=README_SECTION, heading="### Genre classification (textcat workflow)"
        )
    return section, results
