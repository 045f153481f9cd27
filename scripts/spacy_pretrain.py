"""The spacy-pretrain steps: ``spacy pretrain`` of a training config's tok2vec on the pretraining
text, stopped when this process has used the CPU seconds of another step (the biLM's
``pretrain``), so that spaCy's pretraining and the biLM cost the same CPU time
(``scripts.workflow.training.spacy_pretrain`` says how the budget is kept).

Usage: ``python -m scripts.spacy_pretrain CONFIG OUTPUT_DIR --text corpus/text/train.txt
--cpu-seconds-of pretrain --step-times reports/step_times.json [spacy overrides...]``; or
``--cpu-seconds N``, or ``--max-steps N`` (repeats a run: the updates its run.json records).
Then ``spacy train CONFIG --paths.init_tok2vec OUTPUT_DIR/model-last.bin``.
"""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from scripts.workflow.training.options import spacy_train_command
from scripts.workflow.training.runs import parse_overrides
from scripts.workflow.training.spacy_pretrain import pretrain_within_budget, step_cpu_seconds


def main(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="The training config whose [pretraining] block to run"),
    output_dir: Path = typer.Argument(..., help="model-last.bin, run.json and spaCy's log go here"),
    text: Path = typer.Option(..., "--text", help="The pretraining text, one sentence (or text) per line"),
    cpu_seconds_of: str = typer.Option("", "--cpu-seconds-of",
                                       help="Stop at the CPU seconds this step took (read from --step-times)"),
    step_times: Path = typer.Option(Path("reports/step_times.json"), "--step-times",
                                    help="step_clock's JSON file"),
    cpu_seconds: float = typer.Option(0.0, "--cpu-seconds", help="Stop at this many CPU seconds (0: not set)"),
    max_steps: int = typer.Option(0, "--max-steps", help="Stop after this many updates (0: not set)"),
) -> None:
    """spacy pretrain CONFIG OUTPUT_DIR on TEXT, stopped at a CPU-second budget (this whole
    process) or a number of updates; a run finished with the same inputs is kept."""
    if not text.is_file():
        msg.fail(f"Pretraining text not found: {text}", exits=1)
    budget: Optional[float] = cpu_seconds or None
    if cpu_seconds_of:
        try:
            budget = step_cpu_seconds(step_times, cpu_seconds_of)
        except ValueError as e:
            msg.fail(str(e), exits=1)
    if budget is None and not max_steps:
        raise typer.BadParameter("give --cpu-seconds-of, --cpu-seconds or --max-steps", param_hint="--cpu-seconds-of")
    pretrain_within_budget(config, output_dir, text, parse_overrides(ctx.args), cpu_seconds=budget,
                           max_steps=max_steps or None)


app = spacy_train_command(main)

if __name__ == "__main__":
    app()
