"""The ``probe`` workflow's training: an ELMo config once per biLM layer, the task seeing only
that layer through fixed one-hot layer weights (``scripts.workflow.training.probes``).

Usage: ``python -m scripts.train_probes CONFIG OUTPUT_DIR --component tagger --layers 0,1,2
[spacy train overrides...]``.
"""
from pathlib import Path

import typer

from scripts.workflow.training.options import int_list, spacy_train_command
from scripts.workflow.training.probes import train_probes
from scripts.workflow.training.runs import parse_overrides


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="An ELMo training config"),
    output_dir: Path = typer.Argument(..., help="layer{j}.cfg and layer{j}/model-best go here"),
    component: str = typer.Option(..., "--component", help="The pipe whose listener is probed, e.g. ner"),
    layers: str = typer.Option("0,1,2", "--layers", help="Comma-separated biLM layers (0: the char-CNN)"),
) -> None:
    """Train an ELMo config once per biLM layer, the task seeing only that layer (its listener's
    fixed_layer_weights one-hot on it), plus the spacy train overrides given. A layer that
    finished earlier with the same inputs is skipped."""
    train_probes(config, output_dir, component, int_list(layers, "--layers"), parse_overrides(ctx.args))


app = spacy_train_command(main)

if __name__ == "__main__":
    app()
