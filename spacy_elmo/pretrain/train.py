"""One pretraining run: set up (or resume), train for ``max_steps``/``max_tokens``, evaluate, checkpoint, save.

Layout of ``OUTPUT_DIR``: ``config.cfg`` (as run), ``vocab.json``, ``corpus_stats.json``,
``checkpoint.pt``, ``metrics.jsonl``, ``run.json`` (why and where it stopped), ``model-last/``
and ``model-best/``. Under torchrun only
rank 0 writes; every process reads its own shards and all of them take every step together.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import signal
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar, Union

import torch
from tqdm import tqdm

from ..corpora.segmenter import Segmenter
from ..embedding.batching import length_sorted_batches
from ..nn.bilm import BiLM
from ..config import BiLMConfig
from .checkpoint import CHECKPOINT_FILE, capture_rng, load_checkpoint, restore_rng, save_checkpoint
from .corpus import count_words, make_reader, read_dev_sentences
from .distributed import Distributed, setup_distributed, teardown_distributed
from .encoding import BatchEncoder, EncodedBatch
from .evaluate import DevScores, dev_perplexity
from .initialization import fresh_model, load_existing_model, same_architecture, vocabulary_of, with_vocabulary
from .metrics import METRICS_FILE, append_metrics, truncate_metrics
from .objective import LanguageModelObjective
from .optim import decay_progress, learning_rate_at, make_optimizer, set_learning_rate
from .resume_settings import compare_resumed_settings
from .run_record import RunRecord
from .settings import PretrainSettings
from .softmax import SoftmaxLoss
from .stream import BatchPlan, EmptyCorpusError, RankStream, ShardState, ShardStream, shards_of_rank
from .vocab import Vocabulary, build_vocabulary, with_counts

logger = logging.getLogger("spacy_elmo.pretrain")

VOCAB_FILE = "vocab.json"
CONFIG_FILE = "config.cfg"
STATS_FILE = "corpus_stats.json"
MODEL_LAST = "model-last"
MODEL_BEST = "model-best"

T = TypeVar("T")


class PretrainError(RuntimeError):
    """A problem with the inputs or the output folder, explained for the user."""


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
) -> RunResult:
    """Pretrain a biLM as ``settings`` say; see the module docstring for what is written."""
    context = setup_distributed(settings.system.device)
    try:
        return PretrainRun(settings, Path(output_dir), context, resume, config_text, progress).run()
    finally:
        teardown_distributed(context)


class PretrainRun:
    def __init__(
        self,
        settings: PretrainSettings,
        output_dir: Path,
        context: Distributed,
        resume: bool,
        config_text: str,
        progress: bool,
    ) -> None:
        self.settings = settings
        self.out = output_dir
        self.context = context
        self.resume = resume
        self.config_text = config_text
        self.progress = progress and context.is_main
        self.step = 0
        self.tokens = 0
        self.best_score: Optional[float] = None
        self.since_eval = [0.0, 0.0]  # summed mean-of-directions NLL and predictions since the last evaluation
        self.elapsed_before = 0.0  # wall seconds of training in earlier sessions of this run
        self.stop_signal: Optional[int] = None
        self.decay_start_tokens: Optional[int] = None  # tokens done when the warm-up ended
        self.learning_rate = 0.0  # the rate of the last step taken
        if settings.system.threads > 0:
            torch.set_num_threads(settings.system.threads)

    # ================================================================== setup
    def run(self) -> RunResult:
        """Signals are caught from the start: one that comes during setup stops the run after
        its first step, with a checkpoint."""
        with self._signals():
            return self._run()

    def _run(self) -> RunResult:
        if not self.settings.paths.train:
            raise PretrainError("No training text: set paths.train (e.g. --paths.train corpus/train.txt)")
        checkpoint = self._prepare_output()
        self.segmenter = Segmenter(self.settings.corpus)
        initial = None
        if checkpoint is None and self.settings.paths.init_from:
            initial = load_existing_model(self.settings.paths.init_from)
            if not same_architecture(initial.config, self.settings.model):
                logger.info("Architecture taken from %s; the [model] section is not used", self.settings.paths.init_from)
        self.vocab = self._vocabulary(checkpoint, initial)
        self.model = self._model(checkpoint, initial)
        self.loss = SoftmaxLoss(len(self.vocab), self.settings.softmax.n_negatives, self.settings.system.seed * 7919 + self.context.rank)
        training = self.settings.training
        self.objective = LanguageModelObjective(self.model, self.loss, training.dropout, lstm_dropout=training.lstm_dropout)
        self.model.to(self.context.device)
        self.trainable: torch.nn.Module = self.objective
        if self.context.enabled:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.context.device.index] if self.context.device.type == "cuda" else None
            self.trainable = DistributedDataParallel(self.objective, device_ids=ids)
        self._setup_precision()
        self.optimizer = make_optimizer(self.objective.parameters(), self.settings.training)
        self.n_shards = self._n_shards(checkpoint)
        shard_states = self._restore(checkpoint)
        if checkpoint is not None and self._budget_done() and self.context.is_main:
            # A kill between the final checkpoint and the export left an older model-last.
            self.model.to_disk(self.out / MODEL_LAST)
        self.encoder = BatchEncoder(self.vocab)
        self.stream = self._stream(shard_states)
        self.dev_batches = self._dev_batches()
        try:
            self._train()
        finally:
            self.objective.close()
        record = self._run_record()
        if self.context.is_main:
            record.to_disk(self.out)
            message = record.describe()
            if message and record.stopped_by == "max_minutes":
                logger.warning(message)
        return RunResult(self.out, self.step, self.tokens, self.best_score, self.stop_signal, record.stopped_by)

    def _budget_done(self) -> bool:
        training = self.settings.training
        return (training.max_steps > 0 and self.step >= training.max_steps) or (
            training.max_tokens > 0 and self.tokens >= training.max_tokens
        )

    def _run_record(self) -> RunRecord:
        training = self.settings.training
        if self.stop_signal is not None:
            reason = "signal"
        elif training.max_tokens > 0 and self.tokens >= training.max_tokens:
            reason = "max_tokens"
        elif training.max_steps > 0 and self.step >= training.max_steps:
            reason = "max_steps"
        else:
            reason = "max_minutes"
        elapsed = self._elapsed() if hasattr(self, "session_start") else self.elapsed_before
        return RunRecord(
            stopped_by=reason,
            steps=self.step,
            tokens=self.tokens,
            max_steps=training.max_steps,
            max_tokens=training.max_tokens,
            max_minutes=training.max_minutes,
            minutes=elapsed / 60.0,
        )

    def _prepare_output(self) -> Optional[dict[str, Any]]:
        checkpoint_path = self.out / CHECKPOINT_FILE
        if self.resume:
            if not checkpoint_path.is_file():
                raise PretrainError(f"--resume: no checkpoint in {self.out} ({CHECKPOINT_FILE} is missing)")
            checkpoint = load_checkpoint(checkpoint_path)
            for message in compare_resumed_settings(self.out / CONFIG_FILE, self.settings, int(checkpoint["step"])):
                logger.warning(message)
            if self.context.is_main:
                truncate_metrics(self.out / METRICS_FILE, int(checkpoint["step"]))
            logger.info("Resuming from step %d of %s", checkpoint["step"], checkpoint_path)
            return checkpoint
        if checkpoint_path.exists():
            raise PretrainError(
                f"{self.out} already holds a pretraining run ({CHECKPOINT_FILE}); "
                "pass --resume to continue it or choose another output folder"
            )
        if self.context.is_main:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / METRICS_FILE).unlink(missing_ok=True)
            if self.config_text:
                (self.out / CONFIG_FILE).write_text(self.config_text, encoding="utf8")
        return None

    def _vocabulary(self, checkpoint: Optional[dict[str, Any]], initial: Optional[BiLM]) -> Vocabulary:
        if checkpoint is not None:
            return Vocabulary.from_disk(self.out / VOCAB_FILE)
        if self.settings.paths.vocab:
            vocab = Vocabulary.from_disk(self.settings.paths.vocab)
            if initial is None or initial.vocab != vocab.words:  # a new output layer: start it from counts
                vocab = with_counts(vocab, self._count_words()[0])
        elif initial is not None and vocabulary_of(initial) is not None:
            vocab = vocabulary_of(initial)
            logger.info("Using the %d-word vocabulary of the initial model", len(vocab))
        else:
            return self._on_main(self._build_vocabulary, lambda: Vocabulary.from_disk(self.out / VOCAB_FILE))
        if self.context.is_main:
            vocab.to_disk(self.out / VOCAB_FILE)
        return vocab

    def _count_words(self):
        settings = self.settings
        return count_words(
            settings.paths.train, settings.corpus, self.segmenter, settings.vocab.max_tracked_types, self.progress
        )

    def _build_vocabulary(self) -> Vocabulary:
        settings = self.settings
        counter, stats = self._count_words()
        if counter.sentences == 0:
            raise EmptyCorpusError(f"The training text {settings.paths.train} has no sentences ({stats.summary()})")
        vocab = build_vocabulary(counter, settings.vocab.size, settings.vocab.min_count)
        coverage = 1.0 - vocab.counts[vocab.unk_id] / max(1, counter.tokens)
        logger.info("Vocabulary: %d words, covering %.1f%% of %s training tokens", len(vocab), 100 * coverage, f"{counter.tokens:,}")
        vocab.to_disk(self.out / VOCAB_FILE)
        summary = {
            "sentences": counter.sentences,
            "tokens": counter.tokens,
            "distinct_words": len(counter.counts),
            "vocab_size": len(vocab),
            "vocab_coverage": coverage,
            "reading": stats.to_dict(),
            "cut_tokens": self.segmenter.stats.cut_tokens,
            "split_sentences": self.segmenter.stats.split_sentences,
        }
        (self.out / STATS_FILE).write_text(json.dumps(summary, indent=2), encoding="utf8")
        return vocab

    def _on_main(self, work: Callable[[], T], others: Callable[[], T]) -> T:
        """Run ``work`` on rank 0 while the others wait, then ``others`` elsewhere; an error on
        rank 0 stops every process with the same message instead of leaving them hanging."""
        error: Optional[BaseException] = None
        result: Any = None
        if self.context.is_main:
            try:
                result = work()
            except (PretrainError, EmptyCorpusError, OSError, ValueError) as err:
                error = err
        messages = self.context.gather(None if error is None else f"{type(error).__name__}: {error}")
        if error is not None:
            raise error
        if messages[0] is not None:
            raise PretrainError(f"rank 0 failed: {messages[0]}")
        return result if self.context.is_main else others()

    def _model(self, checkpoint: Optional[dict[str, Any]], initial: Optional[BiLM]) -> BiLM:
        seed = self.settings.system.seed
        if checkpoint is not None:
            config = BiLMConfig.from_dict(checkpoint["model_config"]).replace(vocab_size=0)
            model = BiLM(config, vocab=self.vocab.words)
            model.load_state_dict(checkpoint["model"])
        elif initial is not None:
            model = with_vocabulary(initial, self.vocab, seed)
        else:
            model = fresh_model(self.settings.model, self.vocab, seed)
        model.train()
        # Dropout masks differ per process (as they would for different examples).
        torch.manual_seed(seed * 1000 + 1 + self.context.rank)
        return model

    def _n_shards(self, checkpoint: Optional[dict[str, Any]]) -> int:
        n = int(checkpoint["n_shards"]) if checkpoint is not None else (self.settings.training.shards or self.context.world_size)
        if n % self.context.world_size:
            raise PretrainError(
                f"{n} data shards cannot be split over {self.context.world_size} processes: "
                "use a number of processes that divides training.shards"
            )
        return n

    def _restore(self, checkpoint: Optional[dict[str, Any]]) -> dict[int, ShardState]:
        if checkpoint is None:
            return {}
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.step = int(checkpoint["step"])
        self.tokens = int(checkpoint["tokens"])
        best = checkpoint.get("best_score")
        self.best_score = None if best is None else float(best)
        self.since_eval = [float(v) for v in checkpoint.get("since_eval", [0.0, 0.0])]
        self.elapsed_before = float(checkpoint.get("elapsed_seconds", 0.0))
        start = checkpoint.get("decay_start_tokens")
        self.decay_start_tokens = None if start is None else int(start)
        ranks = checkpoint.get("rng", [])
        if self.context.rank < len(ranks):
            restore_rng(ranks[self.context.rank], self.loss.generator)
        else:
            logger.warning("The checkpoint has no random state for process %d: reseeded", self.context.rank)
        return {int(k): ShardState.from_dict(v) for k, v in checkpoint["shards"].items()}

    def _stream(self, states: dict[int, ShardState]) -> RankStream:
        settings = self.settings
        plan = BatchPlan(
            batch_tokens=max(1, settings.training.batch_tokens // self.n_shards),
            max_sentences=max(1, settings.training.max_batch_sentences // self.n_shards),
            chunk_sentences=settings.corpus.chunk_sentences,
        )
        reader = make_reader(settings.paths.train, settings.corpus, self.segmenter)
        shards = shards_of_rank(self.context.rank, self.context.world_size, self.n_shards)
        return RankStream([
            ShardStream(reader, self.segmenter, plan, shard, self.n_shards, settings.system.seed, states.get(shard, ShardState()))
            for shard in shards
        ])

    def _dev_batches(self) -> list[EncodedBatch]:
        settings = self.settings
        if not settings.paths.dev:
            logger.warning("No dev text (paths.dev): dev perplexity is not computed and model-best follows the training loss")
            return []
        sentences, _ = read_dev_sentences(settings.paths.dev, settings.corpus, self.segmenter, settings.training.max_dev_sentences)
        if not sentences:
            logger.warning("The dev text %s has no sentences: dev perplexity is not computed and model-best follows the training loss", settings.paths.dev)
            return []
        mine = sentences[self.context.rank :: self.context.world_size]
        lengths = [len(s) + 2 for s in mine]
        groups = length_sorted_batches(lengths, settings.training.max_batch_sentences, 2 * settings.training.batch_tokens)
        return [self.encoder.encode([mine[i] for i in group]) for group in groups]

    @contextlib.contextmanager
    def _signals(self):
        """SIGINT/SIGTERM ask for a checkpoint and a clean stop after the current step; a second
        SIGINT stops at once."""

        def request_stop(signum: int, frame: Any) -> None:
            if self.stop_signal is not None and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self.stop_signal = signum
            logger.warning("Received %s: stopping after this step with a checkpoint", signal.Signals(signum).name)

        previous = {}
        try:
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, request_stop)
        except ValueError:  # not the main thread: leave signals alone
            pass
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _setup_precision(self) -> None:
        """bf16 on CUDA: the model runs its own matmuls in bf16 when it can (``use_autocast``
        keeps the LSTM state in float32) and the training softmax is autocast; otherwise the
        whole forward pass is autocast. Dev perplexity keeps a float32 softmax."""
        self._whole_forward_autocast = False
        if self.context.device.type != "cuda" or not self.settings.system.bf16:
            return
        if hasattr(self.model, "use_autocast"):
            self.model.use_autocast(torch.bfloat16)
            self.objective.compute_dtype = torch.bfloat16
        else:
            self._whole_forward_autocast = True

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self._whole_forward_autocast:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    # ================================================================== training
    def _train(self) -> None:
        settings = self.settings.training
        batches = iter(self.stream)
        shard_states: dict[int, ShardState] = {s.shard: s.state for s in self.stream.streams}
        self.trained_parameters = [p for p in self.objective.parameters() if p.requires_grad]
        window: deque[tuple[float, float]] = deque(maxlen=50)
        session_tokens, train_seconds = 0, 0.0
        self.session_start = time.perf_counter()
        # The bar counts what the budget counts: tokens when max_tokens is set, else steps.
        by_tokens = bool(settings.max_tokens)
        bar = tqdm(
            total=(settings.max_tokens if by_tokens else settings.max_steps) or None,
            initial=self.tokens if by_tokens else self.step,
            unit="tok" if by_tokens else "step",
            unit_scale=by_tokens,
            disable=not self.progress,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        epoch = 0
        try:
            while not self._budget_done():
                tick = time.perf_counter()
                sentences, shard_states = next(batches)
                epoch = min(state.epoch for state in shard_states.values())
                n_tokens, step_loss, stopping, time_up = self._train_step(self.encoder.encode(sentences))
                self.step += 1
                self.tokens += n_tokens
                session_tokens += n_tokens
                train_seconds += time.perf_counter() - tick
                window.append((step_loss * n_tokens, n_tokens))
                self.since_eval[0] += step_loss * n_tokens
                self.since_eval[1] += n_tokens
                running = sum(a for a, _ in window) / sum(b for _, b in window)
                bar.update(n_tokens if by_tokens else 1)
                bar.set_postfix(
                    {"step": self.step, "tok/s": f"{session_tokens / max(train_seconds, 1e-9):,.0f}", "loss": f"{running:.3f}", "ppl": f"{_exp(running):.1f}"},
                    refresh=False,
                )
                finished = self._budget_done() or time_up
                if self.step % settings.eval_every == 0 or finished:
                    record = self._evaluate(epoch, session_tokens / max(train_seconds, 1e-9))
                    self.since_eval = [0.0, 0.0]
                    if self.context.is_main:
                        bar.write(_describe(record))
                if self.step % settings.checkpoint_every == 0 or finished or stopping:
                    self._checkpoint(shard_states)
                if time_up and not stopping:
                    return
                if stopping:
                    self.stop_signal = self.stop_signal or signal.SIGTERM
                    logger.warning("Stopped at step %d; resume with --resume", self.step)
                    return
        finally:
            bar.close()

    def _elapsed(self) -> float:
        return self.elapsed_before + time.perf_counter() - self.session_start

    def _train_step(self, batch: EncodedBatch) -> tuple[int, float, bool, bool]:
        """One optimizer step on this process's part of the global batch.

        Returns the global number of predictions, the step's mean loss over all processes,
        whether any process was asked to stop, and whether rank 0's time budget is used up
        (every process then stops after this same step).
        """
        batch = batch.to(self.context.device)
        training = self.settings.training
        if self.decay_start_tokens is None and self.step >= training.warmup_steps:
            self.decay_start_tokens = self.tokens
        progress = decay_progress(self.step, self.tokens, training, self.decay_start_tokens)
        self.learning_rate = learning_rate_at(self.step, training, progress)
        set_learning_rate(self.optimizer, self.learning_rate)
        self.objective.train()
        with self._autocast():
            sums = self.trainable(batch.char_ids, batch.lengths, batch.targets)
        detached = sums.detach()
        budget = self.settings.training.max_minutes * 60.0
        time_up = self.context.is_main and budget > 0 and self._elapsed() >= budget
        totals = torch.tensor(
            [batch.n_tokens, float(self.stop_signal is not None), float(detached[0]), float(detached[1]), float(time_up)],
            dtype=torch.float64,
        )
        self.context.all_reduce_sum(totals)
        n_tokens = int(totals[0])
        step_loss = float(totals[2] + totals[3]) / (2.0 * n_tokens)
        if not math.isfinite(step_loss):
            raise PretrainError(
                f"The training loss is not finite at step {self.step + 1}; the weights were not updated. "
                "Lower training.learning_rate or training.grad_clip, and --resume from the last checkpoint"
            )
        # Mean over all processes' predictions; DDP averages gradients, so undo its 1/N.
        loss = sums.sum() * (self.context.world_size / (2.0 * n_tokens))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.settings.training.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.trained_parameters, self.settings.training.grad_clip)
        self.optimizer.step()
        return n_tokens, step_loss, bool(totals[1] > 0), bool(totals[4] > 0)

    def _evaluate(self, epoch: int, tokens_per_second: float) -> dict[str, Any]:
        loss_sum, n_tokens = self.since_eval
        train_loss = loss_sum / n_tokens if n_tokens else float("nan")
        scores: Optional[DevScores] = dev_perplexity(self.model, self.dev_batches, self.context, self._autocast)
        record = {
            "step": self.step,
            "epoch": epoch,
            "tokens": self.tokens,
            "train_loss": train_loss,  # with a sampled softmax, the sampled surrogate's loss
            "softmax": "sampled" if self.loss.sampled else "full",
            "train_perplexity": _exp(train_loss),
            "dev_perplexity_forward": scores.perplexity_forward if scores else None,
            "dev_perplexity_backward": scores.perplexity_backward if scores else None,
            "dev_perplexity": scores.perplexity if scores else None,
            "learning_rate": self.learning_rate,
            "tokens_per_second": tokens_per_second,
            "elapsed_seconds": self._elapsed(),
            "processes": self.context.world_size,
        }
        score = scores.perplexity if scores else _exp(train_loss)
        improved = math.isfinite(score) and (self.best_score is None or score < self.best_score)
        if improved:
            self.best_score = score
        if self.context.is_main:
            append_metrics(self.out / METRICS_FILE, record)
            if improved:
                self.model.to_disk(self.out / MODEL_BEST)
        return record

    def _checkpoint(self, shard_states: dict[int, ShardState]) -> None:
        """Every process contributes its RNG and shard positions; rank 0 writes."""
        mine = {"rng": capture_rng(self.loss.generator), "shards": {str(k): v.to_dict() for k, v in shard_states.items()}}
        gathered = self.context.gather(mine)
        if not self.context.is_main:
            return
        shards: dict[str, dict[str, int]] = {}
        for part in gathered:
            shards.update(part["shards"])
        payload = {
            "step": self.step,
            "tokens": self.tokens,
            "best_score": self.best_score,
            "since_eval": list(self.since_eval),
            "elapsed_seconds": self._elapsed(),
            "decay_start_tokens": self.decay_start_tokens,
            "n_shards": self.n_shards,
            "shards": shards,
            "rng": [part["rng"] for part in gathered],
            "model_config": self.model.config.to_dict(),
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "optimizer": _to_cpu(self.optimizer.state_dict()),
        }
        save_checkpoint(self.out / CHECKPOINT_FILE, payload)
        self.model.to_disk(self.out / MODEL_LAST)


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def _exp(value: float) -> float:
    return math.exp(value) if value < 700 else float("inf")


def _describe(record: dict[str, Any]) -> str:
    text = f"step {record['step']:>7}  tokens {record['tokens']:>12,}  train ppl {record['train_perplexity']:.2f}"
    if record["dev_perplexity"] is not None:
        text += f"  dev ppl fwd {record['dev_perplexity_forward']:.2f} bwd {record['dev_perplexity_backward']:.2f}"
    return text
