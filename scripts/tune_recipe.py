"""Not part of a workflow: how the listener recipe in ``configs/*_elmo.cfg`` was chosen, on the
dev split only (``scripts.workflow.training.recipes``).

Usage: ``python -m scripts.tune_recipe CONFIG OUTPUT_DIR --component ner --seeds 0,1
--variant "NAME KEY=VALUE [KEY=VALUE ...]" [--variant ...] [spacy train overrides...]``.
"""
from enum import Enum
from pathlib import Path
from typing import List

import typer

from scripts.workflow.training.options import int_list, spacy_train_command
from scripts.workflow.training.recipes import parse_variants, table_lines, tune
from scripts.workflow.training.runs import parse_overrides


class Component(str, Enum):
    ner = "ner"
    tagger = "tagger"


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="An ELMo training config"),
    output_dir: Path = typer.Argument(..., help="NAME/seed{N} per variant, and dev_scores.json, go here"),
    component: Component = typer.Option(..., "--component", help="The pipe whose dev score is compared"),
    seeds: str = typer.Option("0,1", "--seeds", help="Comma-separated seeds"),
    variant: List[str] = typer.Option(..., "--variant", metavar='"NAME KEY=VALUE ..."',
                                      help="A variant: its name and its config overrides, in one "
                                           "argument (repeatable)"),
) -> None:
    """Train every recipe variant once per seed and print the table of their best dev scores
    (mean and spread over seeds); the spacy train overrides given apply to all of them."""
    try:
        variants = parse_variants([item.split() for item in variant])
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--variant") from e
    table = tune(config, output_dir, component.value, int_list(seeds, "--seeds"), variants,
                 parse_overrides(ctx.args))
    for line in table_lines(table):
        print(line)


app = spacy_train_command(main)

if __name__ == "__main__":
    app()
