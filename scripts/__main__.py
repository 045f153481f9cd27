"""The spaCy project's steps as one command line app: ``python -m scripts COMMAND --help``.

``project.yml`` runs every step through it from the project root (where ``python -m`` finds
this package without any change to the import path); ``make all`` runs ``python -m scripts
run-workflow all``. The commands are thin (``scripts.commands``): they read their options and
call the ``scripts.workflow`` package, importing it only when they run, so ``--help`` is quick.
``--threads N`` before the command sets its torch threads (``scripts.workflow.threads``).
"""

from __future__ import annotations

import typer

from scripts.commands import orchestrate, prepare, score, train
from scripts.workflow.training.options import SPACY_OVERRIDES

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="The spacy-elmo project's workflow steps (project.yml runs each as one command).",
)


@app.callback()
def main(
    threads: int = typer.Option(
        0, "--threads", min=0, help="torch threads of the command (0: torch's default, one per core)"
    ),
) -> None:
    """The spacy-elmo project's workflow steps (project.yml runs each as one command)."""
    from scripts.workflow.threads import set_threads

    set_threads(threads)


# data: the fetch and preprocess steps
app.command("fetch")(prepare.fetch)
preprocess = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The preprocess steps: the fetched files -> .spacy splits and the pretraining text.",
)
preprocess.command("brown")(prepare.preprocess_brown)
preprocess.command("wnut")(prepare.preprocess_wnut)
preprocess.command("conll")(prepare.preprocess_conll)
preprocess.command("text")(prepare.preprocess_text)
preprocess.command("genres")(prepare.preprocess_genres)
app.add_typer(preprocess, name="preprocess")
# training
app.command("train-seeds", context_settings=SPACY_OVERRIDES)(train.train_seeds)
app.command("train-probes", context_settings=SPACY_OVERRIDES)(train.train_probes)
app.command("spacy-pretrain", context_settings=SPACY_OVERRIDES)(train.spacy_pretrain)
app.command("label-silver")(train.label_silver)
app.command("tune-recipe", context_settings=SPACY_OVERRIDES)(train.tune_recipe)
# scores and reports
app.command("evaluate")(score.evaluate)
app.command("price")(score.price)
app.command("measure-price")(score.measure_price)
app.command("report")(score.report)
app.command("report-textcat")(score.report_textcat)
app.command("probe-report")(score.probe_report)
# around the steps
app.command("run-workflow", context_settings=orchestrate.VAR_OVERRIDES)(orchestrate.run_workflow)
app.command("timed", context_settings=orchestrate.PASS_THROUGH)(orchestrate.timed)

if __name__ == "__main__":
    app()
