"""One pretraining run: set up (or resume), train for ``max_steps``/``max_tokens``, save.

Layout of ``OUTPUT_DIR`` (names in :mod:`.output_folder`): ``config.cfg`` (as run), ``vocab.json``,
``corpus_stats.json``, ``checkpoint.pt``, ``metrics.jsonl``, ``run.json`` (why and where it
stopped), ``model-last/`` and ``model-best/``, and ``inputs.json`` with ``--auto-resume``.
Set-up is :mod:`.setup`, resuming :mod:`.resume`, the loop :mod:`.loop`, the checkpoint
:mod:`.checkpoint`. Under torchrun only rank 0 writes; every process reads its own shards and
all of them take every step together.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import torch

from .distributed import Distributed, run_on_main, setup_distributed, teardown_distributed
from .errors import PretrainError
from .loop import TrainingLoop, catch_stop_signals
from .resume import describe_run, resume_or_start_over
from .settings import PretrainSettings
from .setup import set_up_run

logger = logging.getLogger("spacy_elmo.pretrain")


@dataclass
class RunResult:
    output_dir: Path
    step: int
    tokens: int
    best_score: Optional[float]
    stopped_by_signal: Optional[int] = None
    stopped_by: str = "max_steps"  # as in run.json: max_tokens, max_steps, max_minutes or signal


def pretrain(
    settings: PretrainSettings,
    output_dir: Union[str, Path],
    resume: bool = False,
    config_text: str = "",
    progress: bool = True,
    auto_resume: bool = False,
) -> RunResult:
    """Pretrain a biLM as ``settings`` say; see the module docstring for what is written.

    ``resume`` continues the run saved in ``output_dir``. ``auto_resume`` decides that itself:
    resume when the saved run has these settings (:func:`~.resume.describe_run`), else move it
    aside and start over.
    """
    if resume and auto_resume:
        raise PretrainError("resume and auto_resume exclude each other: pass one")
    out = Path(output_dir)
    context = setup_distributed(settings.system.device)
    try:
        if settings.system.threads > 0:
            torch.set_num_threads(settings.system.threads)
        with catch_stop_signals() as stop:
            if auto_resume:
                resume = _decide_resume(context, out, settings)
            run = set_up_run(settings, out, context, resume, config_text, progress)
            loop = TrainingLoop(run, stop)
            try:
                loop.train()
            finally:
                run.objective.close()
            summary = loop.run_summary()
            if context.is_main:
                summary.to_disk(out)
                message = summary.describe()
                if message and summary.stopped_by == "max_minutes":
                    logger.warning(message)
            return RunResult(
                out, loop.progress.step, loop.progress.tokens, loop.progress.best_score, stop.signum, summary.stopped_by
            )
    finally:
        teardown_distributed(context)


def _decide_resume(context: Distributed, out: Path, settings: PretrainSettings) -> bool:
    """Rank 0 looks at (and, to start over, clears) the folder; every process gets its answer."""
    decision = run_on_main(context, lambda: resume_or_start_over(out, describe_run(settings)), lambda: None)
    resume = bool(context.gather(decision)[0])
    if resume:
        logger.info("Same settings as the run in %s: resuming it", out)
    return resume
