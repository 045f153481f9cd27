"""Build the project's report: ``report.md``, the PNG plots, ``results.json`` and the README's
results section, from what the workflow produced.

Reads the ``evaluate`` step's JSON files and per-document counts (``metrics_dir``), the trained
ELMo pipelines (``training_dir``, for their learned layer weights and gamma), the pretrained
biLM (``bilm_dir``: ``metrics.jsonl``, ``run.json`` and ``model-best``), the domain-adapted
biLMs if any (``adapted_bilm_dirs``), spaCy's own pretraining runs if any
(``spacy_pretrain_dirs``: ``run.json``), the CPU time of the biLM's pretraining (``bilm_cpu_time``,
their budget) and the steps' wall and CPU times that the parallel runner recorded
(``step_times``; the report says so when there are none).
Every number in the report and the README comes from those files.

Settings are compared as ``data.comparisons`` pairs them (each variant with the baseline of
its task and size, each ``*-adapted`` with its unadapted setting, ELMo with spaCy's
pretraining), with the paired tests of ``evaluation.paired_stats``; a gain or loss is claimed
only where p < 0.05, and so is a choice between ELMo and spaCy's pretraining (``user_choice``).
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import cv, data, distill, low_precision, paper, plots, pooled, price, silver, targets, user_choice
from .headline import headline_section
from .readme import update_readme
from .rows import comparison_rows, setting_rows, target_rows
from .text import (
    METHOD_NOTE,
    TASK_DATA,
    TIMES_MISSING,
    comparison_sentence,
    comparisons_table,
    duration,
    markdown_table,
    per_type_table,
    runner_runs,
    settings_table,
    step_times_table,
)


@dataclass
class ReportInputs:
    """Where the workflow's outputs are, where the report goes, and how it is tested."""

    metrics_dir: Path = Path("metrics")
    training_dir: Path = Path("training")
    bilm_dir: Path = Path("training/bilm")
    adapted_bilm_dirs: List[Path] = field(default_factory=list)
    spacy_pretrain_dirs: List[Path] = field(default_factory=list)
    silver_dirs: List[Path] = field(default_factory=list)  # the label-silver steps' output folders
    output_dir: Path = Path("reports")
    step_times: Optional[Path] = None
    bilm_cpu_time: Optional[Path] = None  # None: BILM_DIR/cpu_time.json
    robustness_step_times: Optional[Path] = None  # the robustness workflow's step times, if recorded
    tweets_step_times: Optional[Path] = None  # the tweets workflow's, if recorded
    conll_full_step_times: Optional[Path] = None  # the conll-full workflow's, if recorded
    # the tweets workflow's SETTING.fold{K}.seed{N} files; None or missing: no cross-validation section
    tweets_metrics_dir: Optional[Path] = None
    price_dir: Optional[Path] = None  # the price step's SETTING.json files; None or missing: prices show "-"
    # the evaluate-precision step's SETTING@PRECISION files; None or missing: no low-precision section
    precision_metrics_dir: Optional[Path] = None
    command: str = "python -m spacy project run all"
    readme: Optional[Path] = None  # the landing page whose headline section is rewritten; None: none
    results_page: Optional[Path] = None  # the docs page whose results section is rewritten; None: none
    resamples: int = 10_000
    rounds: int = 10_000


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
    return (
        f"{os.cpu_count()} CPU cores ({model}), no GPU used, {platform.system()}; "
        f"Python {platform.python_version()}, torch {torch.__version__}, spaCy {spacy.__version__}"
    )


def elmo_pipelines(training_dir: Path, names: Sequence[str]) -> Dict[str, Path]:
    """``{label: model dir}``: the first run (seed) of each ELMo setting, whose learned layer
    mix the report shows."""
    found = {}
    for name in names:
        parts = data.parse_setting(name)
        if parts is None or parts[2] in ("baseline", data.SPACY_PRETRAIN, data.DISTILLED):  # no ELMo listener
            continue
        candidates = [training_dir / name / "model-best"] + sorted(
            (training_dir / name).glob("seed*/model-best"),
            key=lambda p: int(p.parent.name[4:]) if p.parent.name[4:].isdigit() else 1 << 30,
        )
        for path in candidates:
            if path.is_dir():
                found[name if path.parent.name == name else f"{name} {path.parent.name}"] = path
                break
    return found


def pretraining_section(
    title: str, run_name: str, bilm_dir: Path, figure_name: str, out: Path, figures: Dict[str, Path]
) -> Tuple[List[str], Optional[str], Optional[dict], List[dict]]:
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
        lines += [
            f"{last.get('step')} steps, {last.get('tokens', 0):,} training tokens. Dev perplexity at the "
            f"last evaluation: forward {last.get('dev_perplexity_forward', float('nan')):.1f}, backward "
            f"{last.get('dev_perplexity_backward', float('nan')):.1f}.",
            "",
            f"![perplexity]({figures[figure_name].name})",
            "",
        ]
    return lines, warning, info, curve


def build(inputs: ReportInputs) -> Tuple[str, str, str, dict]:
    """The report's markdown, the README section, the summary tables and the results (JSON-ready)."""
    out = inputs.output_dir
    out.mkdir(parents=True, exist_ok=True)
    settings = data.load_settings(inputs.metrics_dir) if inputs.metrics_dir.is_dir() else {}
    test_options = {"resamples": inputs.resamples, "rounds": inputs.rounds}
    setting_list = setting_rows(settings)
    prices = price.read_prices(inputs.price_dir)
    price.add_prices(setting_list, prices)
    price_note = price.note(prices)
    rows = comparison_rows(settings, **test_options)
    pooled_rows = pooled.pooled_rows(settings, **test_options)
    tweets_dir = inputs.tweets_metrics_dir
    cv_rows = cv.cv_rows(data.load_settings(tweets_dir), **test_options) if tweets_dir and tweets_dir.is_dir() else []
    precision_dir = inputs.precision_metrics_dir
    precision_settings = data.load_settings(precision_dir) if precision_dir and precision_dir.is_dir() else {}
    precision_rows = low_precision.precision_rows({**settings, **precision_settings}, prices, **test_options)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = machine_description()
    step_times = json.loads(inputs.step_times.read_text()) if inputs.step_times and inputs.step_times.is_file() else {}
    times_md, total_seconds, total_cpu, elapsed = step_times_table(step_times)
    figures: Dict[str, Path] = {}

    groups: Dict[Tuple[str, str], List[Tuple[str, Optional[data.Summary]]]] = {}
    for row in setting_list:
        groups.setdefault((row["task"], row["size"]), []).append((row["variant"], row["summary"]))
    figures["scores"] = plots.plot_scores(
        [(f"{task} {size}", bars) for (task, size), bars in groups.items()], out / "scores.png"
    )
    price_panels: Dict[str, List[Tuple[str, float, data.Summary]]] = {}
    for row in setting_list:
        if row["words_per_cpu_second"] and row["summary"]:
            price_panels.setdefault(row["task"], []).append((row["name"], row["words_per_cpu_second"], row["summary"]))
    if price_panels:
        figures["price"] = plots.plot_price(
            [(TASK_DATA[task], points) for task, points in price_panels.items()], out / "price.png"
        )
    tested = [r for r in rows if r["test"] is not None]
    if tested:
        figures["differences"] = plots.plot_differences(
            [
                (
                    f"{r['task']} {r['size']}: {r['other']} vs {r['baseline']}",
                    r["test"].difference * 100,
                    r["test"].ci_low * 100,
                    r["test"].ci_high * 100,
                    r["verdict"],
                )
                for r in tested
            ],
            out / "differences.png",
        )
    ner_pair = (settings.get("conll-small-baseline"), settings.get("conll-small-elmo"))
    if any(ner_pair):
        per_type = {
            label: (
                ner_pair[0].per_type().get(label) if ner_pair[0] else None,
                ner_pair[1].per_type().get(label) if ner_pair[1] else None,
            )
            for label in set().union(*(s.per_type() for s in ner_pair if s))
        }
        figures["ner_per_type"] = plots.plot_per_type(
            per_type, "NER F1 per entity type (CoNLL-2003, low-resource training set)", out / "ner_per_type.png"
        )
    bilm_md, bilm_warning, bilm_run, curve = pretraining_section(
        "biLM pretraining", "Pretraining of the biLM", inputs.bilm_dir, "bilm_perplexity", out, figures
    )
    adapted_md: List[str] = []
    adaptations = []  # (run name, run.json, last curve point) per adapted biLM
    for adapted_dir in inputs.adapted_bilm_dirs:
        name = f"Domain adaptation of the biLM ({adapted_dir.name})"
        lines, warning, info, adapted_curve = pretraining_section(
            name, name, adapted_dir, f"{adapted_dir.name}_perplexity", out, figures
        )
        if not lines:  # not run (the adapt workflow is optional)
            continue
        adapted_md += lines
        adaptations.append((name, info, adapted_curve[-1] if adapted_curve else None, warning))
    pooled_md, pooled_warnings = pooled.pooled_lines(pooled_rows, inputs.robustness_step_times, inputs.resamples)
    section_pooled_md, _ = pooled.pooled_lines(
        pooled_rows, inputs.robustness_step_times, inputs.resamples, heading="###"
    )
    warnings = [w for w in [bilm_warning] + [a[3] for a in adaptations] if w] + pooled_warnings
    mixes: Dict[str, Tuple[List[float], float]] = {}
    for label, model_dir in elmo_pipelines(inputs.training_dir, list(settings)).items():
        for component, mix in data.learned_mixes(model_dir).items():
            mixes[f"{label} ({component})"] = mix
    if mixes:
        figures["layer_weights"] = plots.plot_layer_weights(mixes, out / "layer_weights.png")
    # the bank example runs the pretrained biLM, so only mixes learned on it apply
    task_mixes = {
        name: mix
        for name, mix in mixes.items()
        if (data.parse_setting(name.split(" ")[0]) or ("", "", ""))[2] == "elmo"
    }
    bank_model = inputs.bilm_dir / "model-best"
    bank = data.bank_similarities(bank_model, task_mixes) if bank_model.is_dir() else []

    table = settings_table(setting_list, with_price=True) + "\n\n" + comparisons_table(rows)
    sentences = [comparison_sentence(row) for row in rows]
    comparisons_json = [
        {
            **{k: v for k, v in r.items() if k not in ("baseline_summary", "other_summary", "test")},
            "baseline_values": r["baseline_summary"].values if r["baseline_summary"] else None,
            "other_values": r["other_summary"].values if r["other_summary"] else None,
            "test": r["test"].as_dict() if r["test"] else None,
        }
        for r in rows
    ]
    cv_md = cv.cv_lines(cv_rows, inputs.tweets_step_times, inputs.resamples)
    paper_md = paper.paper_lines(comparisons_json, bilm_run)
    run_targets = target_rows(rows)
    headline_targets = targets.headline_targets(rows, pooled_rows, cv_rows)
    target_lines = (
        ["Targets (the published weights and the distilled tok2vec do not count for the gains of one run):", ""]
        + [f"- {t['text']}" for t in headline_targets + run_targets]
        + [""]
    )
    method = METHOD_NOTE.format(**test_options)
    header = f"Run of {now} on {machine}. Command: `{inputs.command}`."
    if total_seconds:
        header += f" The steps took {duration(total_cpu)} of CPU time" if total_cpu is not None else " The steps took"
        if elapsed is not None:
            header += f" and {duration(elapsed)} from the first one's start to the last one's end"
            header += f" ({duration(total_seconds)} of wall time summed over the steps, which may run side by side)."
        else:
            runs = len(runner_runs(step_times))
            header += (
                f" ({duration(total_seconds)} of wall time summed over the steps); they were timed by {runs} runs"
                " of the runner (steps rerun after a change), so no one wall time covers them."
            )
    else:
        header += " " + TIMES_MISSING
    spacy_runs = user_choice.read_spacy_pretrain_runs(inputs.spacy_pretrain_dirs)
    choice = user_choice.choice_sentence(rows)
    bilm_cpu = user_choice.read_cpu_time(inputs.bilm_cpu_time or inputs.bilm_dir / "cpu_time.json")
    labelling = silver.read_labelling_records(inputs.silver_dirs)
    budgets = (
        user_choice.budget_table(
            bilm_run, spacy_runs, step_times, bilm_cpu, silver.labelling_rows(labelling, step_times)
        )
        if spacy_runs
        else ""
    )
    choice_md = ([choice, ""] if choice else []) + (
        [
            "spaCy's pretraining (`spacy pretrain` of the baseline config's own tok2vec, spaCy's characters "
            "objective and defaults, on the biLM's pretraining text) stops when its process has used the CPU "
            "time of the biLM's pretraining in the same run; the `*-spacy-pretrain` settings are the "
            "baseline configs with `[initialize] init_tok2vec` set to its weights, trained with the same seeds.",
            "",
            budgets,
            "",
        ]
        if budgets
        else []
    )
    distill_md, distillation = distill.distill_lines(rows, user_choice.distilled_choice_sentence(rows))
    silver_md, students = silver.silver_lines(rows, setting_list, labelling)
    loud = [f"> **Warning:** {warning}" for warning in warnings]
    md = ["# spacy-elmo: baseline vs ELMo", "", header, ""] + [line for w in loud for line in (w, "")]
    md += [
        "## Test scores",
        "",
        settings_table(setting_list, with_price=True),
        "",
    ]
    if price_note:
        md += [price_note, ""]
    if "price" in figures:
        md += [f"![score against speed]({figures['price'].name})", ""]
    md += [
        "## Comparisons",
        "",
        comparisons_table(rows),
        "",
        method,
        "",
    ]
    md += [f"- {sentence}" for sentence in sentences] + ([""] if sentences else [])
    md += pooled_md
    md += cv_md
    if paper_md:
        md += ["## The paper's benchmark: CoNLL-2003", ""] + paper_md + [""]
    if choice_md:
        md += ["## ELMo or spaCy's own pretraining, for the same CPU time", ""] + choice_md
    if distill_md:
        md += ["## ELMo distilled into the baseline's tok2vec", ""] + distill_md
    if silver_md:
        md += ["## ELMo's predictions as training data", ""] + silver_md
    md += low_precision.lines(precision_rows)
    md += ["## Targets", ""] + target_lines[2:]
    md += [f"![scores]({figures['scores'].name})", ""]
    if "differences" in figures:
        md += [f"![differences]({figures['differences'].name})", ""]
    if "ner_per_type" in figures:
        md += [
            "## NER per entity type (CoNLL-2003, low-resource training set, test split)",
            "",
            per_type_table(*ner_pair),
            "",
            f"![per type]({figures['ner_per_type'].name})",
            "",
        ]
    md += bilm_md + adapted_md
    if mixes:
        md += [
            "## Learned layer weights",
            "",
            "softmax(a) per layer (0 = char-CNN, then the LSTM layers) and gamma of each listener "
            "(first seed of each setting).",
            "",
            markdown_table(
                ["pipeline (component)"]
                + [f"layer {j}" for j in range(len(next(iter(mixes.values()))[0]))]
                + ["gamma"],
                [[name] + [f"{w:.3f}" for w in weights] + [f"{gamma:.3f}"] for name, (weights, gamma) in mixes.items()],
            ),
            "",
            f"![layer weights]({figures['layer_weights'].name})",
            "",
        ]
    if bank:
        md += [
            '## The "bank" example',
            "",
            f'Cosine similarity of `bank` in "{data.BANK_TEXTS[0]}" and "{data.BANK_TEXTS[1]}" '
            f"(pretrained biLM, model-best). Layer 0 is a static vector.",
            "",
            markdown_table(["representation", "cosine"], [[name, f"{value:.4f}"] for name, value in bank]),
            "",
        ]
    md += ["## Time per step", ""]
    md += (
        [
            "Wall time, and the CPU time of the step's processes (user + system; on a machine "
            "shared with other work this is closer to what the step takes alone).",
            "",
            times_md,
            "",
        ]
        if step_times
        else [TIMES_MISSING, ""]
    )
    report_md = "\n".join(md)

    readme_rel = Path(os.path.relpath(out, inputs.results_page.parent)) if inputs.results_page else out
    links = ", ".join(
        f"[{name.replace('_', ' ')}]({(readme_rel / path.name).as_posix()})" for name, path in figures.items()
    )
    section = [header, ""] + [line for w in loud for line in (w, "")]
    ended = [
        sentence
        for info, name in [(bilm_run, "Pretraining of the biLM")] + [(a[1], a[0]) for a in adaptations]
        if info is not None
        for sentence, loud in [data.describe_run(info, name)]
        if not loud
    ]
    if ended:
        section += [" ".join(ended), ""]
    section += [settings_table(setting_list, with_price=True), ""] + ([price_note, ""] if price_note else [])
    section += [comparisons_table(rows), "", method, ""]
    section += [f"- {sentence}" for sentence in sentences] + ([""] if sentences else [])
    section += section_pooled_md
    section += cv.cv_lines(cv_rows, inputs.tweets_step_times, inputs.resamples, heading="###")
    if paper_md:
        section += ["### The paper's benchmark: CoNLL-2003", ""] + paper_md + [""]
    section += choice_md
    section += distill_md
    section += silver_md
    section += low_precision.lines(precision_rows, heading="###")
    section += target_lines
    top = [(name, value) for name, value in bank if "top" in name]
    if bank and top:
        section += [
            f'The "bank" example: cosine of `bank` in "{data.BANK_TEXTS[0]}" and '
            f'"{data.BANK_TEXTS[1]}" is {top[0][1]:.3f} with the biLM\'s top layer and '
            f"{bank[0][1]:.3f} with a static vector (layer 0).",
            "",
        ]
    section += [
        f"Full report: [{(readme_rel / 'report.md').as_posix()}]({(readme_rel / 'report.md').as_posix()}); "
        f"plots: {links}.",
        "",
        f"![scores]({(readme_rel / 'scores.png').as_posix()})",
    ]
    if "differences" in figures:
        section += ["", f"![differences]({(readme_rel / 'differences.png').as_posix()})"]
    readme_section = "\n".join(section)

    results = {
        "date": now,
        "machine": machine,
        "command": inputs.command,
        "settings": [
            {**{k: v for k, v in r.items() if k != "summary"}, "values": r["summary"].values if r["summary"] else None}
            for r in setting_list
        ],
        "comparisons": comparisons_json,
        "statistics": {"resamples": inputs.resamples, "rounds": inputs.rounds, "alpha": 0.05},
        "pooled": [row.as_dict() for row in pooled_rows],
        "robustness_cpu_seconds": pooled.robustness_times(inputs.robustness_step_times)[0] if pooled_rows else None,
        "cv": [row.as_dict() for row in cv_rows],
        "tweets_cpu_seconds": pooled.robustness_times(inputs.tweets_step_times)[0] if cv_rows else None,
        "conll_full_cpu_seconds": pooled.robustness_times(inputs.conll_full_step_times)[0],
        "paper": {
            "citation": paper.PAPER_CITATION,
            "baseline": paper.PAPER_BASELINE,
            "elmo": paper.PAPER_ELMO,
            "elmo_std": paper.PAPER_ELMO_STD,
            "bilm": paper.PAPER_BILM,
        },
        "targets": run_targets,
        "headline_targets": headline_targets,
        "pretraining_last": curve[-1] if curve else None,
        "pretraining_run": bilm_run,
        "spacy_pretraining": spacy_runs,
        "choice": choice,
        "distillation": distillation,
        "silver": students,
        "precision": low_precision.as_dicts(precision_rows),
        "adaptations": [{"name": name, "run": info, "last": last} for name, info, last, _ in adaptations],
        "warnings": warnings,
        "layer_mixes": {name: {"weights": w, "gamma": g} for name, (w, g) in mixes.items()},
        "bank_cosine": dict(bank),
        "step_times": step_times,
        "cpu_seconds": total_cpu,
        "elapsed_seconds": elapsed,
        "figures": {name: path.name for name, path in figures.items()},
    }
    return report_md, readme_section, table, results


def write_report(inputs: ReportInputs) -> Tuple[str, str, dict]:
    """Build the report and write ``report.md``, ``results.json`` and, with a README, its
    results section; returns the section, the summary tables and the results. A malformed
    input file is a ValueError naming it."""
    report_md, readme_section, table, results = build(inputs)
    (inputs.output_dir / "report.md").write_text(report_md + "\n", encoding="utf-8")
    (inputs.output_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if inputs.results_page:
        update_readme(inputs.results_page, readme_section)
    if inputs.readme:
        update_readme(inputs.readme, headline_section(results), name="headline")
    return readme_section, table, results
