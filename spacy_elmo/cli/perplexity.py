"""``spacy-elmo perplexity``: the exact dev perplexity of a saved biLM, apart from its run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ._app import app


@app.command("perplexity")
def perplexity_cli(
    model_or_run_dir: Path = typer.Argument(
        ..., help="A pretraining OUTPUT_DIR (its --model is scored) or a spacy-elmo model directory", exists=True
    ),
    dev_text: Optional[Path] = typer.Argument(
        None,
        help="Dev text: a file or folder, read as pretraining reads it (default: the run's paths.dev)",
        exists=True,
    ),
    model: Optional[str] = typer.Option(
        None, "--model", help="Which model folder of a pretraining OUTPUT_DIR to score (default: model-best)"
    ),
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        help="Pretraining config (.cfg) whose corpus and training sections say how the dev text is "
        "read and how many sentences count (default: the run's config.cfg, else the defaults)",
        exists=True,
        dir_okay=False,
    ),
    threads: int = typer.Option(0, "--threads", help="torch intra-op threads (0: torch's default)"),
) -> None:
    """Score a saved biLM on dev text with the full softmax and print one JSON line:
    {"model", "dev", "forward", "backward", "perplexity", "tokens"}. Read as the run read it,
    the number is comparable with the run's own metrics.jsonl."""
    import torch

    from ..pretrain.perplexity import saved_model_perplexity

    if threads > 0:
        torch.set_num_threads(threads)
    typer.echo(json.dumps(saved_model_perplexity(model_or_run_dir, dev_text, model, config).to_dict()))
