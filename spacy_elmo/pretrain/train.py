"""One pretraining run: set up (:mod:`.setup`) or resume (:mod:`.resume`), train (:mod:`.loop`),
record how it ended. What it writes into ``OUTPUT_DIR``: :mod:`.output_folder`."""

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
    """Pretrain a biLM as ``settings`` say into ``output_dir``. ``resume`` continues the run saved
    there; ``auto_resume`` resumes it when it has these settings, else moves it aside and starts over."""
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
                if summary.stopped_by == "max_minutes":
                    logger.warning(summary.time_guard_line())
            return RunResult(
                out, loop.progress.step, loop.progress.tokens, loop.progress.best_score, stop.signum, summary.stopped_by
            )
    finally:
        teardown_distributed(context)


def _decide_resume(context: Distributed, out: Path, settings: PretrainSettings) -> bool:
    """Rank 0 looks at (and, to start over, clears) the folder; every process gets its answer."""
    resume = run_on_main(context, lambda: resume_or_start_over(out, describe_run(settings)))
    if resume:
        logger.info("Same settings as the run in %s: resuming it", out)
    return resume
