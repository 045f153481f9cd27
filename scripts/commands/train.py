"""The training steps' commands: ``train-seeds``, ``train-probes``, ``spacy-pretrain``,
``label-silver`` and ``tune-recipe`` (the code: ``scripts.workflow.training``). Options a command does not declare
are spaCy config overrides (``--paths.train corpus/ner/train.spacy``)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg


class Component(str, Enum):
    ner = "ner"
    tagger = "tagger"


def train_seeds(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="The spaCy training config"),
    output_dir: Path = typer.Argument(..., help="One folder per seed goes here: seed{N}/model-best"),
    seeds: str = typer.Option("0,1,2", "--seeds", help="Comma-separated seeds"),
    gpu_choice: str = typer.Option(
        "-1",
        "--gpu",
        help="GPU id for spacy train, -1 for the CPU, or auto (a GPU when torch sees one and CuPy is installed)",
    ),
    jobs_choice: int = typer.Option(
        1, "--jobs", help="Runs trained at a time, each in its own process (0: one per core; on a GPU one at a time)"
    ),
    folds: int = typer.Option(
        0,
        "--folds",
        min=0,
        help="Cross-validation with this many folds: one run per fold K and seed into OUTPUT_DIR/fold{K}/seed{N}, "
        "{fold} in the overrides' values replaced by K (0: no folds)",
    ),
) -> None:
    """The training steps: one spacy train run per seed (and fold).

    spacy train CONFIG --output OUTPUT_DIR/seed{N} --system.seed N, plus the spacy train overrides
    given; with --folds, OUTPUT_DIR/fold{K}/seed{N} per fold K, {fold} in the overrides replaced by
    K. A run that finished earlier with the same inputs (and an unchanged model-best) is skipped,
    so a rerun after a failure continues with the run that failed. A training corpus whose
    dataset was left out (project.yml's leave_out) trains nothing."""
    from scripts.workflow.training.options import gpu, int_list, jobs
    from scripts.workflow.training.runs import FOLD, parse_overrides
    from scripts.workflow.training.runs import train_seeds as train

    overrides = parse_overrides(ctx.args)
    if "system.seed" in overrides:
        raise typer.BadParameter("give the seeds with --seeds, not --system.seed")
    fold_list = list(range(folds))
    if fold_list and not any(isinstance(v, str) and FOLD in v for v in overrides.values()):
        raise typer.BadParameter(
            f"--folds needs {FOLD} in the corpora's paths (e.g. --paths.train DIR/fold{FOLD}/train.spacy)"
        )
    train(
        config,
        output_dir,
        int_list(seeds, "--seeds"),
        overrides,
        use_gpu=gpu(gpu_choice),
        jobs=jobs(jobs_choice),
        folds=fold_list,
    )


def train_probes(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="An ELMo training config"),
    output_dir: Path = typer.Argument(..., help="layer{j}.cfg and layer{j}/model-best go here"),
    component: str = typer.Option(..., "--component", help="The pipe whose listener is probed, e.g. ner"),
    layers: str = typer.Option("0,1,2", "--layers", help="Comma-separated biLM layers (0: the char-CNN)"),
) -> None:
    """The probe workflow: one spacy train run per biLM layer.

    An ELMo config trained once per biLM layer, the task seeing only that layer (its listener's
    fixed_layer_weights one-hot on it), plus the spacy train overrides given. A layer that finished
    earlier with the same inputs is skipped."""
    from scripts.workflow.training.options import int_list
    from scripts.workflow.training.probes import train_probes as train
    from scripts.workflow.training.runs import parse_overrides

    train(config, output_dir, component, int_list(layers, "--layers"), parse_overrides(ctx.args))


def spacy_pretrain(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="The training config whose [pretraining] block to run"),
    output_dir: Path = typer.Argument(..., help="model-last.bin, run.json and spaCy's log go here"),
    text: Path = typer.Option(..., "--text", help="The pretraining text, one sentence (or text) per line"),
    cpu_seconds_from: Optional[Path] = typer.Option(
        None,
        "--cpu-seconds-from",
        help="Stop at the CPU seconds this file records (written by `python -m scripts timed`)",
    ),
    cpu_seconds: float = typer.Option(0.0, "--cpu-seconds", help="Stop at this many CPU seconds (0: not set)"),
    max_steps: int = typer.Option(0, "--max-steps", help="Stop after this many updates (0: not set)"),
) -> None:
    """The spacy-pretrain steps: spacy pretrain within a CPU-second budget.

    spacy pretrain CONFIG OUTPUT_DIR on TEXT, stopped at a CPU-second budget (this whole process) or
    a number of updates (--max-steps repeats a run: the updates its run.json records); a run
    finished with the same inputs is kept. Then spacy train CONFIG --paths.init_tok2vec
    OUTPUT_DIR/model-last.bin."""
    from scripts.workflow.process_times import read_cpu_seconds
    from scripts.workflow.training.runs import parse_overrides
    from scripts.workflow.training.spacy_pretrain import pretrain_within_budget

    if not text.is_file():
        msg.fail(f"Pretraining text not found: {text}", exits=1)
    budget: Optional[float] = cpu_seconds or None
    if cpu_seconds_from is not None:
        try:
            budget = read_cpu_seconds(cpu_seconds_from)
        except ValueError as e:
            msg.fail(str(e), exits=1)
    if budget is None and not max_steps:
        raise typer.BadParameter(
            "give --cpu-seconds-from, --cpu-seconds or --max-steps", param_hint="--cpu-seconds-from"
        )
    pretrain_within_budget(
        config, output_dir, text, parse_overrides(ctx.args), cpu_seconds=budget, max_steps=max_steps or None
    )


def label_silver(
    teacher: Path = typer.Argument(
        ..., help="A trained pipeline, or a setting's folder of seed*/model-best (its seed best on dev)"
    ),
    unlabeled: Path = typer.Argument(..., help="The documents to label (.spacy; any annotation is ignored)"),
    output_dir: Path = typer.Argument(..., help="silver.spacy and silver.json (teacher, text, CPU time) go here"),
    skip: int = typer.Option(0, "--skip", min=0, help="Leave out the first N documents (the gold ones)"),
    limit: int = typer.Option(0, "--limit", min=0, help="Label at most N documents (0: all)"),
    batch_size: int = typer.Option(0, "--batch-size", min=0, help="Documents per batch (0: the pipeline's own)"),
) -> None:
    """The silver steps: a teacher labels unlabeled text for a student.

    The teacher (an ELMo pipeline, or the baseline for self-training) runs over the documents'
    texts, as spacy train and spacy evaluate show a text to a pipeline, and its predictions are
    written as a DocBin without user data: the silver that the student's reader
    (spacy_elmo.GoldAndSilverCorpus.v1) mixes with the gold. Reads no test data: the teacher is
    chosen by the dev scores spacy train kept in each seed's model-best. A teacher or text of a
    dataset left out (project.yml's leave_out) labels nothing: an empty silver, its students train
    nothing."""
    from scripts.workflow.training.silver import choose_teacher, label, left_out_dataset, write_left_out

    dataset = left_out_dataset(teacher, unlabeled)
    if dataset is not None:
        write_left_out(output_dir, dataset)
        msg.info(f"{dataset} was left out: nothing to label ({output_dir})")
        return
    try:
        chosen = choose_teacher(teacher)
        msg.info(f"Teacher: {chosen.model} (weighted dev score {chosen.dev_score:.4f})")
        record = label(chosen, unlabeled, output_dir, skip=skip, limit=limit, batch_size=batch_size)
    except ValueError as e:
        msg.fail(str(e), exits=1)
    msg.good(
        f"{record['docs']:,} documents ({record['words']:,} words) labelled in {record['cpu_seconds']:,.0f} CPU s "
        f"-> {output_dir}"
    )


def tune_recipe(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="An ELMo training config"),
    output_dir: Path = typer.Argument(..., help="NAME/seed{N} per variant, and dev_scores.json, go here"),
    component: Component = typer.Option(..., "--component", help="The pipe whose dev score is compared"),
    seeds: str = typer.Option("0,1", "--seeds", help="Comma-separated seeds"),
    variant: List[str] = typer.Option(
        ...,
        "--variant",
        metavar='"NAME KEY=VALUE ..."',
        help="A variant: its name and its config overrides, in one argument (repeatable)",
    ),
) -> None:
    """Not a workflow step: compare listener recipe variants on the dev split.

    Trains every listener recipe variant once per seed and prints the table of their best dev scores
    (mean and spread over seeds); the spacy train overrides given apply to all of them. How the
    choices in configs/*_elmo.cfg were made."""
    from scripts.workflow.training.options import int_list
    from scripts.workflow.training.recipes import parse_variants, table_lines, tune
    from scripts.workflow.training.runs import parse_overrides

    try:
        variants = parse_variants([item.split() for item in variant])
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--variant") from e
    table = tune(config, output_dir, component.value, int_list(seeds, "--seeds"), variants, parse_overrides(ctx.args))
    for line in table_lines(table):
        print(line)
