"""The ``report`` step: ``reports/report.md``, the plots, ``results.json``, the summary table on
the terminal and the README's results section (``scripts.workflow.report.build``).

Usage: ``python -m scripts.report --metrics-dir metrics --training-dir training --bilm-dir
training/bilm [--adapted-bilm-dir DIR ...] --output-dir reports [--readme README.md]``.
"""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from scripts.workflow.report.build import ReportInputs, write_report

app = typer.Typer(add_completion=False)


@app.command()
def main(
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir", help="The evaluate steps' score files"),
    training_dir: Path = typer.Option(Path("training"), "--training-dir",
                                      help="The trained pipelines (for their learned layer weights)"),
    bilm_dir: Path = typer.Option(Path("training/bilm"), "--bilm-dir",
                                  help="The pretrained biLM: metrics.jsonl, run.json, model-best"),
    adapted_bilm_dir: Optional[List[Path]] = typer.Option(
        None, "--adapted-bilm-dir",
        help="A domain-adapted biLM (run.json, metrics.jsonl); repeatable, missing folders are skipped"),
    spacy_pretrain_dir: Optional[List[Path]] = typer.Option(
        None, "--spacy-pretrain-dir",
        help="A spacy pretrain run of the spacy_pretrain step (run.json); repeatable, missing folders are skipped"),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples per comparison"),
    rounds: int = typer.Option(10_000, "--rounds", help="Approximate randomization rounds per comparison"),
    output_dir: Path = typer.Option(Path("reports"), "--output-dir",
                                    help="Where report.md, results.json and the plots go"),
    step_times: Optional[Path] = typer.Option(None, "--step-times", help="step_clock's JSON file"),
    command: str = typer.Option("python -m spacy project run all", "--command",
                                help="The command that ran the workflow, as the report should quote it"),
    readme: str = typer.Option("", "--readme", help="README to update between the results markers (empty: none)"),
) -> None:
    """Write the project's report from what the workflow produced. Settings named
    TASK[-small]-VARIANT are compared with their baseline (and *-adapted with the unadapted one,
    ELMo with spaCy's pretraining) by paired tests; a gain or loss is claimed only where p < 0.05."""
    inputs = ReportInputs(metrics_dir=metrics_dir, training_dir=training_dir, bilm_dir=bilm_dir,
                          adapted_bilm_dirs=adapted_bilm_dir or [], spacy_pretrain_dirs=spacy_pretrain_dir or [],
                          output_dir=output_dir, step_times=step_times,
                          command=command, readme=Path(readme) if readme else None, resamples=resamples,
                          rounds=rounds)
    try:
        readme_section, table, results = write_report(inputs)
    except ValueError as e:  # a malformed input file, named in the message
        msg.fail(str(e), exits=1)
    print(readme_section.split("\n\n")[0])
    print()
    for warning in results["warnings"]:
        msg.warn(warning)
    print(table)
    print()
    msg.good(f"Report: {output_dir / 'report.md'}"
             + (f"; README results section updated: {readme}" if readme else ""))


if __name__ == "__main__":
    app()
