"""The ``evaluate`` steps: spaCy's scores of every trained pipeline of the given settings on
its task's test split, with the per-document counts the report's paired tests need
(``scripts.workflow.evaluation.scoring``).

Usage: ``python -m scripts.evaluate_all TRAINING_DIR METRICS_DIR --ner-test NER.spacy
--tagger-test POS.spacy [--textcat-test GENRES.spacy] --setting ner-elmo ...
[--optional-setting ner-elmo-published ...]``; each setting's task needs its test split.
"""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from scripts.workflow.evaluation.scoring import jobs, remove_stale_scores, score_jobs, trained_settings

app = typer.Typer(add_completion=False)


@app.command()
def main(
    training_dir: Path = typer.Argument(..., help="SETTING/model-best or SETTING/seed{N}/model-best per setting"),
    metrics_dir: Path = typer.Argument(..., help="Where SETTING[.seedN].json and .docs.json go"),
    ner_test: Optional[Path] = typer.Option(None, "--ner-test", help="Test split of the settings named ner*"),
    tagger_test: Optional[Path] = typer.Option(None, "--tagger-test", help="Test split of the other settings"),
    textcat_test: Optional[Path] = typer.Option(None, "--textcat-test", help="Test split of the settings named textcat*"),
    setting: Optional[List[str]] = typer.Option(None, "--setting",
                                                help="A folder of TRAINING_DIR to score (repeatable)"),
    optional_setting: Optional[List[str]] = typer.Option(
        None, "--optional-setting",
        help="A setting scored only if it was trained (repeatable); without a pipeline, its old scores "
             "are removed"),
) -> None:
    """Score each trained setting's pipeline(s) on the test split of its task: spaCy's scores
    and the per-document counts behind them. Pipelines scored earlier with the same checksum
    and test file are skipped."""
    required, optional = setting or [], optional_setting or []
    if not required and not optional:
        raise typer.BadParameter("give at least one --setting or --optional-setting", param_hint="--setting")
    for test_data in (ner_test, tagger_test, textcat_test):
        if test_data is not None and not test_data.is_file():
            msg.fail(f"Test data not found: {test_data}", exits=1)
    settings = trained_settings(training_dir, required, optional)
    try:
        todo = list(jobs(settings, training_dir, ner_test, tagger_test, textcat_test))
    except FileNotFoundError as e:
        msg.fail(str(e), exits=1)
    metrics_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_scores(metrics_dir, required + optional, {stem for stem, _, _ in todo})
    score_jobs(todo, metrics_dir)


if __name__ == "__main__":
    app()
