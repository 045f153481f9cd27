"""The training steps: one ``spacy train`` per random seed, ``OUTPUT_DIR/seed{N}/model-best``
for each N; a rerun skips the seeds that finished with the same inputs.

Usage: ``python -m scripts.train_seeds CONFIG OUTPUT_DIR --seeds 0,1,2 [--gpu auto] [--jobs 0]
[spacy train overrides...]``, e.g. ``--paths.train corpus/ner/train_1000.spacy``.
"""
from pathlib import Path

import typer

from scripts.workflow.training.options import gpu, int_list, jobs, spacy_train_command
from scripts.workflow.training.runs import parse_overrides, train_seeds


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="The spaCy training config"),
    output_dir: Path = typer.Argument(..., help="One folder per seed goes here: seed{N}/model-best"),
    seeds: str = typer.Option("0,1,2", "--seeds", help="Comma-separated seeds"),
    gpu_choice: str = typer.Option("-1", "--gpu", help="GPU id for spacy train, -1 for the CPU, or auto "
                                                "(a GPU when torch sees one and CuPy is installed)"),
    jobs_choice: int = typer.Option(1, "--jobs", help="Seeds trained at a time, each in its own process "
                                                      "(0: one per core; on a GPU one at a time)"),
) -> None:
    """Train one spaCy config once per random seed: spacy train CONFIG --output
    OUTPUT_DIR/seed{N} --system.seed N, plus the spacy train overrides given. A seed that finished earlier with the same
    inputs is skipped, so a rerun after a failure continues with the seed that failed."""
    overrides = parse_overrides(ctx.args)
    if "system.seed" in overrides:
        raise typer.BadParameter("give the seeds with --seeds, not --system.seed")
    train_seeds(config, output_dir, int_list(seeds, "--seeds"), overrides, use_gpu=gpu(gpu_choice),
                jobs=jobs(jobs_choice))


app = spacy_train_command(main)

if __name__ == "__main__":
    app()
