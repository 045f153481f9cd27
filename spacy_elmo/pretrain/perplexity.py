"""Dev perplexity of each direction with the exact softmax: in training, and of a saved biLM
(``spacy-elmo perplexity``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import torch

from ..embedding.plan import length_sorted_batches
from ..nn.bilm import BiLM
from .data.sentences import SentenceSplitter, Tokens, read_dev_sentences
from .data.step_inputs import StepInputBuilder, StepInputs
from .distributed import Distributed
from .initialization import load_existing_model, vocabulary_of
from .language_model_objective import exact_direction_nll
from .output_folder import CONFIG_FILE, MODEL_BEST, is_run_folder
from .settings import CorpusSettings, TrainingSettings, load_config, settings_from_config


@dataclass(frozen=True)
class DevScores:
    perplexity_forward: float
    perplexity_backward: float
    n_tokens: int

    @property
    def perplexity(self) -> float:
        """The mean of the two directions' perplexities: what ``model-best`` is chosen by."""
        return 0.5 * (self.perplexity_forward + self.perplexity_backward)


def exp(value: float) -> float:
    return math.exp(value) if value < 700 else float("inf")


def dev_batches(
    sentences: Sequence[Tokens],
    encoder: StepInputBuilder,
    training: TrainingSettings,
    rank: int = 0,
    world_size: int = 1,
) -> list[StepInputs]:
    """This process's share, in batches of twice the training token budget (no gradients to hold)."""
    mine = sentences[rank::world_size]
    lengths = [len(s) + 2 for s in mine]
    groups = length_sorted_batches(lengths, training.max_batch_sentences, 2 * training.batch_tokens)
    return [encoder.encode([mine[i] for i in group]) for group in groups]


def dev_perplexity(bilm: BiLM, batches: Sequence[StepInputs], context: Distributed) -> Optional[DevScores]:
    """Each process scores its own batches and the sums are added up; None without any."""
    was_training = bilm.training
    bilm.eval()
    totals = torch.zeros(3, dtype=torch.float64)
    with torch.no_grad():
        for batch in batches:
            batch = batch.to(context.device)
            sums = exact_direction_nll(bilm, batch.char_ids, batch.lengths, batch.targets)
            totals += torch.tensor([float(sums[0]), float(sums[1]), batch.n_tokens], dtype=torch.float64)
    bilm.train(was_training)
    context.all_reduce_sum(totals)
    nll_forward, nll_backward, n = totals.tolist()
    return DevScores(exp(nll_forward / n), exp(nll_backward / n), int(n)) if n else None


@dataclass(frozen=True)
class SavedModelScores:
    model: Path
    dev: str
    scores: DevScores

    def to_dict(self) -> dict[str, Any]:
        scores = self.scores
        return {
            "model": str(self.model),
            "dev": self.dev,
            "forward": scores.perplexity_forward,
            "backward": scores.perplexity_backward,
            "perplexity": scores.perplexity,
            "tokens": scores.n_tokens,
        }


def saved_model_perplexity(
    path: Union[str, Path],
    dev: Optional[Union[str, Path]] = None,
    model_name: Optional[str] = None,
    config: Optional[Union[str, Path]] = None,
) -> SavedModelScores:
    """Score a run's ``model_name`` or a model folder on dev text read as the run read it."""
    path = Path(path)
    if is_run_folder(path) and (path / CONFIG_FILE).is_file():
        model_path, run_config = path / (model_name or MODEL_BEST), path / CONFIG_FILE
    else:
        model_path, run_config = path, path.parent / CONFIG_FILE
        if not (is_run_folder(path.parent) and run_config.is_file()):
            run_config = None
    config = config if config is not None else run_config
    settings = settings_from_config(load_config(config)) if config is not None else None
    corpus = settings.corpus if settings else CorpusSettings()
    training = settings.training if settings else TrainingSettings()
    run_dev = settings.paths.dev if settings else None
    dev_text = str(dev) if dev is not None else run_dev
    if not dev_text:
        raise ValueError(f"No dev text: {path} names none (paths.dev); give one")
    try:
        model = load_existing_model(model_path)
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f"{model_path} holds no biLM to score: expected a spacy-elmo model directory "
            "(config.json + weights.hdf5) or AllenNLP files (options.json + one .hdf5)"
        ) from err
    vocab = vocabulary_of(model)
    if vocab is None:
        raise ValueError(f"{model_path} holds no output vocabulary to score (an AllenNLP model?)")
    sentences = read_dev_sentences(dev_text, corpus, SentenceSplitter(corpus), training.max_dev_sentences)
    scores = dev_perplexity(model, dev_batches(sentences, StepInputBuilder(vocab), training), Distributed())
    if scores is None:
        raise ValueError(f"The dev text {dev_text} has no sentences")
    return SavedModelScores(model_path, dev_text, scores)
