"""The pretraining commands: ``spacy-elmo pretrain`` (a biLM trained on raw text, as a config
describes), ``perplexity`` (a saved biLM scored apart from its run) and ``plot-training``."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

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


@app.command("plot-training")
def plot_training_cli(
    output_dir: Path = typer.Argument(
        ..., help="A pretraining OUTPUT_DIR (with metrics.jsonl)", exists=True, file_okay=False
    ),
    image: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Where to write the PNG (default OUTPUT_DIR/training.png)"
    ),
) -> None:
    """Plot train loss and train/dev perplexity against steps."""
    from ..pretrain.plot import plot_training

    typer.echo(f"Wrote {plot_training(output_dir, image)}")


@app.command(
    "pretrain",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def pretrain_cli(
    ctx: typer.Context,
    config_path: Path = typer.Argument(
        ..., help="Pretraining config (.cfg), e.g. configs/bilm_small.cfg", exists=True, dir_okay=False
    ),
    output_dir: Path = typer.Argument(..., help="Where checkpoints, metrics.jsonl, model-last and model-best go"),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run saved in OUTPUT_DIR, exactly where it stopped"
    ),
    auto_resume: bool = typer.Option(
        False,
        "--auto-resume",
        help="Continue OUTPUT_DIR's interrupted run if it has the same settings (the config and overrides as "
        "parsed) and input files (by content; recorded in OUTPUT_DIR/inputs.json); otherwise move that run aside "
        "to OUTPUT_DIR.previous-N and start over. A folder that holds no pretraining run is never touched",
    ),
    init_from: Optional[Path] = typer.Option(
        None,
        "--init-from",
        help="Start from these weights: a spacy-elmo model directory or AllenNLP options.json + .hdf5",
    ),
    device: Optional[str] = typer.Option(
        None, "--device", help="cpu, cuda, cuda:N or auto (a GPU if torch sees one; overrides system.device)"
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
) -> None:
    """Pretrain a biLM. Config overrides follow, e.g. --paths.train corpus/train.txt --training.max_steps 100.

    Under torchrun (torchrun --nproc_per_node N -m spacy_elmo pretrain ...) each process trains
    on its own shard of the text with DistributedDataParallel.
    """
    from ..pretrain.errors import PretrainError
    from ..pretrain.output_folder import MODEL_BEST, MODEL_LAST
    from ..pretrain.settings import load_config, settings_from_config
    from ..pretrain.train import pretrain

    _setup_logging()
    if resume and auto_resume:
        raise PretrainError("--resume and --auto-resume exclude each other: pass one")
    overrides: dict[str, Any] = parse_overrides(ctx.args)
    if init_from is not None:
        overrides["paths.init_from"] = str(init_from)
    if device is not None:
        overrides["system.device"] = device
    config = load_config(config_path, overrides)
    result = pretrain(
        settings_from_config(config),
        output_dir,
        resume=resume,
        config_text=config.to_str(),
        progress=not quiet,
        auto_resume=auto_resume,
    )
    if result.stopped_by_signal is not None:
        again = "run the same command again" if auto_resume else "continue with --resume"
        typer.echo(f"Stopped at step {result.step} with a checkpoint in {output_dir}; {again}", err=True)
        raise typer.Exit(128 + int(result.stopped_by_signal))
    if int(os.environ.get("RANK", "0")) == 0:
        typer.echo(
            f"Done: {result.step} steps, {result.tokens:,} tokens (stopped by {result.stopped_by}). "
            f"Models in {output_dir / MODEL_LAST} and {output_dir / MODEL_BEST}"
        )


#: The log lines' handler, pointed at the stderr of each run: a caller (a test, a notebook) may
#: have closed or replaced the last run's.
_HANDLER = logging.StreamHandler()


def _setup_logging() -> None:
    rank = int(os.environ.get("RANK", "0"))
    logger = logging.getLogger("spacy_elmo.pretrain")
    _HANDLER.stream = sys.stderr
    _HANDLER.setFormatter(logging.Formatter("%(message)s" if rank == 0 else f"[rank {rank}] %(message)s"))
    if not logger.handlers:
        logger.addHandler(_HANDLER)
    logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)
    logger.propagate = False


def parse_overrides(args: Sequence[str]) -> dict[str, Any]:
    """``{"section.key": value}``; values are JSON when they parse as JSON, else strings.

    A flag with no value (followed by another ``--`` option or nothing) means ``true``.
    """
    from ..pretrain.errors import ConfigError

    result: dict[str, Any] = {}
    items = list(args)
    index = 0
    while index < len(items):
        option = items[index]
        if not option.startswith("--"):
            raise ConfigError(f"Unexpected argument {option!r}: overrides look like --section.key value")
        name, has_value, value = option[2:].partition("=")
        if "." not in name:
            raise ConfigError(f"Unknown option --{name}: config overrides need a section, like --training.{name}")
        if not has_value:
            following = items[index + 1] if index + 1 < len(items) else None
            if following is None or following.startswith("--"):
                value = "true"
            else:
                value = following
                index += 1
        try:
            result[name.replace("-", "_")] = json.loads(value)
        except ValueError:
            result[name.replace("-", "_")] = value
        index += 1
    return result
