"""The ``report-textcat`` step: ``reports/textcat.md``, ``textcat_results.json``, a figure and
the README's genre classification section (``scripts.workflow.report.textcat``).

Usage: ``python -m scripts.report_textcat --metrics-dir metrics/textcat --output-dir reports
[--readme README.md]``.
"""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from scripts.workflow.report.textcat import TextcatReportInputs, write_textcat_report

app = typer.Typer(add_completion=False)


@app.command()
def main(
    metrics_dir: Path = typer.Option(Path("metrics/textcat"), "--metrics-dir", help="The evaluate-textcat step's score files"),
    output_dir: Path = typer.Option(Path("reports"), "--output-dir", help="Where textcat.md, textcat_results.json and the figure go"),
    corpus_stats: Path = typer.Option(Path("corpus/genres/stats.json"), "--corpus-stats", help="preprocess-genres' stats.json"),
    step_times: Optional[Path] = typer.Option(None, "--step-times", help="step_clock's JSON file"),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples per comparison"),
    rounds: int = typer.Option(10_000, "--rounds", help="Approximate randomization rounds per comparison"),
    command: str = typer.Option("python -m spacy project run textcat", "--command", help="The command the report quotes"),
    readme: str = typer.Option("", "--readme", help="README whose textcat-results section is rewritten (empty: none)"),
) -> None:
    """Compare textcat-elmo with textcat-baseline by the paired tests over test files; a gain or
    loss is claimed only where p < 0.05."""
    inputs = TextcatReportInputs(metrics_dir=metrics_dir, output_dir=output_dir, corpus_stats=corpus_stats,
                                 step_times=step_times, command=command, readme=Path(readme) if readme else None,
                                 resamples=resamples, rounds=rounds)
    try:
        section, _ = write_textcat_report(inputs)
    except ValueError as e:  # a malformed input file, named in the message
        msg.fail(str(e), exits=1)
    print(section)
    msg.good(f"Report: {output_dir / 'textcat.md'}" + (f"; README section updated: {readme}" if readme else ""))


if __name__ == "__main__":
    app()
