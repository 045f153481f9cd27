"""The ``probe-report`` step: which biLM layer serves which task, from the probes' dev scores
(``scripts.workflow.report.probes``).

Usage: ``python -m scripts.probe_report PROBE_DIR [PROBE_DIR ...] [--output-dir reports]``.
"""
from pathlib import Path
from typing import List

import typer

from scripts.workflow.report.probes import write_probe_report

app = typer.Typer(add_completion=False)


@app.command()
def main(
    probe_dirs: List[Path] = typer.Argument(..., help="train_probes outputs (layer{j}/model-best each)"),
    output_dir: Path = typer.Option(Path("reports"), "--output-dir", help="Where probe.md and probe_layers.png go"),
) -> None:
    """Summarize the layer probes: probe.md (a table, layers by task) and probe_layers.png,
    and print the table."""
    try:
        table = write_probe_report(probe_dirs, output_dir)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    print(table)


if __name__ == "__main__":
    app()
