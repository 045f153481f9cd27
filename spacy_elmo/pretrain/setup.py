"""A run made ready to train: output folder, vocabulary, model, objective, optimizer and data.
The steps run in the order of their random draws (weights, dropout seed, sampler): keep it, or a
run no longer reproduces."""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import torch

from ..config import BiLMConfig
from ..nn.bilm import BiLM
from ..nn.precision import running_precision
from .checkpoint import CheckpointState, Progress, restore_rng, save_model
from .data.batches import BatchPlan, RankStream, ShardState, ShardStream, shards_of_rank
from .data.sentences import SentenceSplitter, count_words, make_reader, read_dev_sentences
from .data.step_inputs import StepInputBuilder, StepInputs
from .distributed import Distributed, run_on_main
from .errors import CheckpointMismatchError, EmptyCorpusError, PretrainError
from .initialization import fresh_model, load_existing_model, vocabulary_of, with_vocabulary
from .language_model_objective import LanguageModelObjective
from .optim import make_optimizer
from .output_folder import CHECKPOINT_FILE, MODEL_LAST, STATS_FILE, VOCAB_FILE, write_file
from .perplexity import dev_batches
from .resume import FileFingerprint, fingerprint, resume_output, start_output
from .settings import PretrainSettings
from .softmax import SoftmaxLoss
from .vocab import Vocabulary, build_vocabulary, with_counts

logger = logging.getLogger("spacy_elmo.pretrain")


@dataclass
class TrainingRun:
    """Everything the training loop works with; ``progress`` is where it starts counting."""

    settings: PretrainSettings
    out: Path
    context: Distributed
    show_progress: bool
    vocab: Vocabulary
    objective: LanguageModelObjective  # the biLM and its softmax loss
    trainable: torch.nn.Module  # the objective, or its DistributedDataParallel wrapper
    optimizer: torch.optim.Optimizer
    stream: RankStream
    dev_batches: list[StepInputs]
    progress: Progress
    train_files: list[FileFingerprint]  # what the data positions point into


def set_up_run(
    settings: PretrainSettings, out: Path, context: Distributed, resume: bool, config_text: str, show_progress: bool
) -> TrainingRun:
    train = settings.paths.train
    if not train:
        raise PretrainError("No training text: set paths.train (e.g. --paths.train corpus/train.txt)")
    if not resume:
        start_output(out, context, config_text)
    train_files = run_on_main(context, lambda: fingerprint(train))
    splitter = SentenceSplitter(settings.corpus)
    show_progress = show_progress and context.is_main
    resumed: Optional[CheckpointState] = None
    initial = None
    if resume:
        resumed, vocab = resume_output(settings, out, context, train_files)
    else:
        if settings.paths.init_from:
            initial = load_existing_model(settings.paths.init_from)
            if initial.config.differences(settings.model):
                logger.info("Architecture taken from %s; the [model] section is not used", settings.paths.init_from)
        vocab = run_vocabulary(settings, out, context, splitter, initial, show_progress)
    model = _start_model(settings, vocab, resumed, initial, context.rank, out / CHECKPOINT_FILE)
    loss = SoftmaxLoss(len(vocab), settings.softmax.n_negatives, settings.system.seed * 7919 + context.rank)
    training = settings.training
    precision = running_precision(settings.system.precision, context.device, training=True)
    objective = LanguageModelObjective(model, loss, training.dropout, training.lstm_dropout, precision)
    model.to(context.device)
    trainable: torch.nn.Module = objective
    if context.enabled:
        from torch.nn.parallel import DistributedDataParallel

        ids = [context.device.index] if context.device.type == "cuda" else None
        trainable = DistributedDataParallel(objective, device_ids=ids)
    optimizer = make_optimizer(objective.parameters(), training)
    n_shards = resumed.n_shards if resumed is not None else (training.shards or context.world_size)
    own_shards = shards_of_rank(context.rank, context.world_size, n_shards)
    progress = Progress()
    if resumed is not None:
        with _restoring(out / CHECKPOINT_FILE, "optimizer state"):
            optimizer.load_state_dict(resumed.optimizer)
        progress = resumed.progress
        if context.rank < len(resumed.rng):
            restore_rng(resumed.rng[context.rank], loss.generator)
        else:
            logger.warning("The checkpoint has no random state for process %d: reseeded", context.rank)
        if training.budget_reached(progress.step, progress.tokens) and context.is_main:
            # A kill between the final checkpoint and the export left an older model-last.
            save_model(model, out / MODEL_LAST, out / CHECKPOINT_FILE)
    plan = BatchPlan(
        batch_tokens=max(1, training.batch_tokens // n_shards),
        max_sentences=max(1, training.max_batch_sentences // n_shards),
        chunk_sentences=settings.corpus.chunk_sentences,
    )
    reader, states = make_reader(train, settings.corpus, splitter), resumed.shards if resumed is not None else {}
    streams = [
        ShardStream(reader, splitter, plan, shard, n_shards, settings.system.seed, states.get(shard, ShardState()))
        for shard in own_shards
    ]
    dev = settings.paths.dev
    dev_sentences = read_dev_sentences(dev, settings.corpus, splitter, training.max_dev_sentences) if dev else []
    if not dev_sentences:
        where = f"The dev text {dev} has no sentences" if dev else "No dev text (paths.dev)"
        logger.warning("%s: dev perplexity is not computed and model-best follows the training loss", where)
    return TrainingRun(
        settings=settings,
        out=out,
        context=context,
        show_progress=show_progress,
        vocab=vocab,
        objective=objective,
        trainable=trainable,
        optimizer=optimizer,
        stream=RankStream(streams),
        dev_batches=dev_batches(dev_sentences, StepInputBuilder(vocab), training, context.rank, context.world_size),
        progress=progress,
        train_files=train_files,
    )


def run_vocabulary(
    settings: PretrainSettings,
    out: Path,
    context: Distributed,
    splitter: SentenceSplitter,
    initial: Optional[BiLM],
    show_progress: bool,
) -> Vocabulary:
    """A given word list, the initial model's, or one built from the training text by rank 0."""
    if settings.paths.vocab:
        vocab = Vocabulary.from_disk(settings.paths.vocab)
        if initial is None or initial.vocab != vocab.words:  # a new output layer: start it from counts
            vocab = with_counts(vocab, count_words(settings, splitter, show_progress)[0])
    elif initial is not None and (initial_vocab := vocabulary_of(initial)) is not None:
        vocab = initial_vocab
        logger.info("Using the %d-word vocabulary of the initial model", len(vocab))
    else:
        return run_on_main(context, lambda: _build_vocabulary(settings, out, splitter, show_progress))
    if context.is_main:
        vocab.to_disk(out / VOCAB_FILE)
    return vocab


def _build_vocabulary(
    settings: PretrainSettings, out: Path, splitter: SentenceSplitter, show_progress: bool
) -> Vocabulary:
    """The most frequent words, with what the pass read in ``corpus_stats.json``."""
    counter, stats = count_words(settings, splitter, show_progress)
    if counter.sentences == 0:
        raise EmptyCorpusError(f"The training text {settings.paths.train} has no sentences ({stats.summary()})")
    vocab = build_vocabulary(counter, settings.vocab.size, settings.vocab.min_count)
    assert vocab.counts is not None  # build_vocabulary counts every word
    coverage = 1.0 - vocab.counts[vocab.unk_id] / max(1, counter.tokens)
    logger.info(
        "Vocabulary: %d words, covering %.1f%% of %s training tokens", len(vocab), 100 * coverage, f"{counter.tokens:,}"
    )
    vocab.to_disk(out / VOCAB_FILE)
    summary = {
        "sentences": counter.sentences,
        "tokens": counter.tokens,
        "distinct_words": len(counter.counts),
        "vocab_size": len(vocab),
        "vocab_coverage": coverage,
        "reading": stats.to_dict(),
        "cut_tokens": splitter.stats.cut_tokens,
        "split_sentences": splitter.stats.split_sentences,
    }
    write_file(out / STATS_FILE, json.dumps(summary, indent=2).encode("utf8"))
    return vocab


def _start_model(
    settings: PretrainSettings,
    vocab: Vocabulary,
    resumed: Optional[CheckpointState],
    initial: Optional[BiLM],
    rank: int,
    checkpoint: Path,
) -> BiLM:
    seed = settings.system.seed
    if resumed is not None:
        config = BiLMConfig.from_dict(resumed.model_config).replace(vocab_size=0)
        model = BiLM(config, vocab=vocab.words)
        with _restoring(checkpoint, "weights"):
            model.load_state_dict(resumed.model)
    elif initial is not None:
        model = with_vocabulary(initial, vocab, seed)
    else:
        model = fresh_model(settings.model, vocab, seed)
    model.train()
    # Dropout masks differ per process (as they would for different examples).
    torch.manual_seed(seed * 1000 + 1 + rank)
    return model


@contextlib.contextmanager
def _restoring(checkpoint: Path, what: str) -> Iterator[None]:
    """torch's errors of a state that does not fit as one error naming the checkpoint."""
    try:
        yield
    except (RuntimeError, ValueError, KeyError) as err:
        lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
        if lines and lines[0].startswith("Error(s) in loading state_dict"):
            lines = lines[1:]  # torch's header; the line after it says which tensor
        detail = lines[0].rstrip(".") if lines else type(err).__name__
        raise CheckpointMismatchError(
            f"{checkpoint}: its {what} cannot be restored ({detail}); it is damaged or was edited"
        ) from err
