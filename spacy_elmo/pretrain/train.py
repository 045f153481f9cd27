"""One pretraining run: set up or resume, then optimizer steps on the global batch until a budget
is used up or a signal asks to stop, evaluating and checkpointing as the config says (rank 0 writes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import torch

from ..progress import progress_bar
from .checkpoint import CheckpointState, capture_rng, save_model
from .data.batches import ShardState
from .data.step_inputs import StepInputBuilder, StepInputs
from .distributed import run_on_main, setup_distributed, teardown_distributed
from .errors import PretrainError
from .optim import decay_progress, learning_rate_at
from .output_folder import CHECKPOINT_FILE, METRICS_FILE, MODEL_BEST, MODEL_LAST, RunSummary, append_metrics
from .perplexity import DevScores, dev_perplexity, exp
from .resume import describe_run, resume_or_start_over
from .settings import PretrainSettings
from .setup import TrainingRun, set_up_run

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
    """``auto_resume`` resumes a run of these settings, else moves it aside and starts over."""
    if resume and auto_resume:
        raise PretrainError("resume and auto_resume exclude each other: pass one")
    out = Path(output_dir)
    context = setup_distributed(settings.system.device)
    try:
        if settings.system.threads > 0:
            torch.set_num_threads(settings.system.threads)
        with catch_stop_signals() as stop:
            if auto_resume:  # rank 0 looks at (and, to start over, clears) the folder
                resume = run_on_main(context, lambda: resume_or_start_over(out, describe_run(settings)))
                if resume:
                    logger.info("Same settings as the run in %s: resuming it", out)
            run = set_up_run(settings, out, context, resume, config_text, progress)
            loop = TrainingLoop(run, stop)
            loop.train()
            progress = loop.progress
            minutes = loop.elapsed() / 60.0
            summary = RunSummary.of_session(
                settings.training, progress.step, progress.tokens, stop.signum is not None, minutes
            )
            if context.is_main:
                summary.to_disk(out)
                if summary.stopped_by == "max_minutes":
                    logger.warning(summary.time_guard_line())
            return RunResult(out, progress.step, progress.tokens, progress.best_score, stop.signum, summary.stopped_by)
    finally:
        teardown_distributed(context)


@dataclass
class StopRequest:
    """Set by a signal handler, read by the training loop between steps."""

    signum: Optional[int] = None


@contextlib.contextmanager
def catch_stop_signals() -> Iterator[StopRequest]:
    """SIGINT and SIGTERM ask for a checkpoint and a stop after this step; a second SIGINT stops now."""
    request = StopRequest()

    def request_stop(signum: int, frame: Any) -> None:
        if request.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        request.signum = signum
        logger.warning("Received %s: stopping after this step with a checkpoint", signal.Signals(signum).name)

    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, request_stop)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield request
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class TrainingLoop:
    """Trains ``run`` from ``run.progress`` on; ``stop`` is how a signal asks it to end early."""

    def __init__(self, run: TrainingRun, stop: StopRequest) -> None:
        self.run = run
        self.stop = stop
        self.progress = run.progress
        self.learning_rate = 0.0  # the rate of the last step taken
        self.session_start: Optional[float] = None
        self.trained_parameters = [p for p in run.objective.parameters() if p.requires_grad]  # what grad_clip clips
        self.model, self.encoder = run.objective.bilm, StepInputBuilder(run.vocab)

    def train(self) -> None:
        run, progress, training = self.run, self.progress, self.run.settings.training
        batches = iter(run.stream)
        shard_states: dict[int, ShardState] = {s.shard: s.state for s in run.stream.streams}
        session_tokens, train_seconds = 0, 0.0
        self.session_start = time.perf_counter()
        by_tokens = bool(training.max_tokens)  # the bar counts what the budget counts
        bar = progress_bar(
            total=(training.max_tokens if by_tokens else training.max_steps) or None,
            initial=progress.tokens if by_tokens else progress.step,
            unit="tok" if by_tokens else "step",
            unit_scale=by_tokens,
            disable=not run.show_progress,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        epoch = 0
        try:
            while not training.budget_reached(progress.step, progress.tokens):
                tick = time.perf_counter()
                sentences, shard_states = next(batches)
                epoch = min(state.epoch for state in shard_states.values())
                n_tokens, step_loss, stopping, time_up = self._step(self.encoder.encode(sentences))
                progress.step += 1
                progress.tokens += n_tokens
                session_tokens += n_tokens
                train_seconds += time.perf_counter() - tick
                progress.since_eval[0] += step_loss * n_tokens
                progress.since_eval[1] += n_tokens
                running = progress.since_eval[0] / progress.since_eval[1]  # the loss since the last evaluation
                bar.update(n_tokens if by_tokens else 1)
                bar.set_postfix(
                    {
                        "step": progress.step,
                        "tok/s": f"{session_tokens / max(train_seconds, 1e-9):,.0f}",
                        "loss": f"{running:.3f}",
                        "ppl": f"{exp(running):.1f}",
                    },
                    refresh=False,
                )
                finished = training.budget_reached(progress.step, progress.tokens) or time_up
                if progress.step % training.eval_every == 0 or finished:
                    record = self._evaluate(epoch, session_tokens / max(train_seconds, 1e-9))
                    progress.since_eval = [0.0, 0.0]
                    if run.context.is_main:
                        line = f"step {record['step']:>7}  tokens {record['tokens']:>12,}  "
                        line += f"train ppl {record['train_perplexity']:.2f}"
                        if record["dev_perplexity"] is not None:
                            fwd, bwd = record["dev_perplexity_forward"], record["dev_perplexity_backward"]
                            line += f"  dev ppl fwd {fwd:.2f} bwd {bwd:.2f}"
                        bar.write(line)
                if progress.step % training.checkpoint_every == 0 or finished or stopping:
                    self._checkpoint(shard_states)
                if time_up and not stopping:
                    return
                if stopping:
                    self.stop.signum = self.stop.signum or signal.SIGTERM
                    logger.warning("Stopped at step %d; resume with --resume", progress.step)
                    return
        finally:
            bar.close()

    def elapsed(self) -> float:
        """Wall seconds of training in all sessions of this run so far."""
        if self.session_start is None:
            return self.progress.elapsed_seconds
        return self.progress.elapsed_seconds + time.perf_counter() - self.session_start

    def _step(self, batch: StepInputs) -> tuple[int, float, bool, bool]:
        """Predictions over all processes, the mean loss, and whether any process must stop after this step."""
        run, progress, training = self.run, self.progress, self.run.settings.training
        context = run.context
        batch = batch.to(context.device)
        if progress.decay_start_tokens is None and progress.step >= training.warmup_steps:
            progress.decay_start_tokens = progress.tokens
        decay = decay_progress(progress.step, progress.tokens, training, progress.decay_start_tokens)
        self.learning_rate = learning_rate_at(progress.step, training, decay)
        for group in run.optimizer.param_groups:
            group["lr"] = self.learning_rate
        run.objective.train()
        sums = run.trainable(batch.char_ids, batch.lengths, batch.targets)
        budget = training.max_minutes * 60.0
        time_up = context.is_main and budget > 0 and self.elapsed() >= budget
        stop = self.stop.signum is not None
        totals = torch.tensor([batch.n_tokens, stop, *sums.detach().tolist(), time_up], dtype=torch.float64)
        context.all_reduce_sum(totals)
        n_tokens = int(totals[0])
        step_loss = float(totals[2] + totals[3]) / (2.0 * n_tokens)
        if not math.isfinite(step_loss):
            raise PretrainError(
                f"The training loss is not finite at step {progress.step + 1}; the weights were not updated. "
                "Lower training.learning_rate or training.grad_clip, and --resume from the last checkpoint"
            )
        # Mean over all processes' predictions; DDP averages gradients, so undo its 1/N.
        loss = sums.sum() * (context.world_size / (2.0 * n_tokens))
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if training.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.trained_parameters, training.grad_clip)
        run.optimizer.step()
        return n_tokens, step_loss, bool(totals[1] > 0), bool(totals[4] > 0)

    def _evaluate(self, epoch: int, tokens_per_second: float) -> dict[str, Any]:
        run, progress = self.run, self.progress
        loss_sum, n_tokens = progress.since_eval
        train_loss = loss_sum / n_tokens if n_tokens else float("nan")
        scores: Optional[DevScores] = dev_perplexity(self.model, run.dev_batches, run.context)
        record = {
            "step": progress.step,
            "epoch": epoch,
            "tokens": progress.tokens,
            "train_loss": train_loss,  # with a sampled softmax, the sampled surrogate's loss
            "softmax": "sampled" if run.objective.softmax_loss.sampled else "full",
            "train_perplexity": exp(train_loss),
            "dev_perplexity_forward": scores.perplexity_forward if scores else None,
            "dev_perplexity_backward": scores.perplexity_backward if scores else None,
            "dev_perplexity": scores.perplexity if scores else None,
            "learning_rate": self.learning_rate,
            "tokens_per_second": tokens_per_second,
            "elapsed_seconds": self.elapsed(),
            "processes": run.context.world_size,
        }
        score = scores.perplexity if scores else exp(train_loss)
        improved = math.isfinite(score) and (progress.best_score is None or score < progress.best_score)
        if improved:
            progress.best_score = score
        if run.context.is_main:
            append_metrics(run.out / METRICS_FILE, record)
            if improved:
                save_model(self.model, run.out / MODEL_BEST, run.out / CHECKPOINT_FILE)
        return record

    def _checkpoint(self, shard_states: dict[int, ShardState]) -> None:
        """Every process contributes its random states and shard positions; rank 0 writes."""
        run = self.run
        gathered = run.context.gather(
            {"rng": capture_rng(run.objective.softmax_loss.generator), "shards": shard_states}
        )
        if not run.context.is_main:
            return
        shards: dict[int, ShardState] = {}
        for part in gathered:
            shards.update(part["shards"])
        state = CheckpointState(
            progress=dataclasses.replace(
                self.progress, since_eval=list(self.progress.since_eval), elapsed_seconds=self.elapsed()
            ),
            n_shards=len(shards),
            shards=shards,
            rng=[part["rng"] for part in gathered],
            model_config=self.model.config.to_dict(),
            model={k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            optimizer=run.optimizer.state_dict(),  # read back onto the CPU (map_location)
            train_files=run.train_files,
            vocab_sha256=run.vocab.digest(),
        )
        state.save(run.out / CHECKPOINT_FILE)
        save_model(self.model, run.out / MODEL_LAST, run.out / CHECKPOINT_FILE)
