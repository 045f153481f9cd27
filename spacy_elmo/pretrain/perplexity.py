"""The exact dev perplexity of a saved biLM, measured apart from any training run.

A check of a run's own ``metrics.jsonl``: the dev text is read as the run read it (its
``config.cfg`` says how, where the text is and how many sentences count) and the saved weights
are scored with the full softmax, as the run's evaluations are. What ``spacy-elmo perplexity``
runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from .data.passes import read_dev_sentences
from .data.sentences import SentenceSplitter
from .data.step_inputs import StepInputBuilder
from .distributed import Distributed
from .evaluate import DevScores, dev_batches, dev_perplexity
from .initialization import load_existing_model, vocabulary_of
from .output_folder import CONFIG_FILE, MODEL_BEST, is_run_folder
from .settings import CorpusSettings, TrainingSettings, load_config, settings_from_config


@dataclass(frozen=True)
class SavedModelScores:
    """The dev perplexities of the model at ``model`` on the text at ``dev``."""

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
    """Score a saved biLM on dev text.

    ``path`` is a pretraining run's folder (``model_name`` inside it is scored, ``model-best``
    by default) or a model folder. The reading settings (``[corpus]``, and ``[training]``'s dev-sentence cap and batch
    sizes) and the default ``dev`` come from ``config``, else from the run's ``config.cfg``
    (beside the model for a model folder inside a run), else from the defaults.
    """
    path = Path(path)
    if is_run_folder(path) and (path / CONFIG_FILE).is_file():
        model_path, run_config = path / (model_name or MODEL_BEST), path / CONFIG_FILE
    else:
        model_path, run_config = path, path.parent / CONFIG_FILE
        if not (is_run_folder(path.parent) and run_config.is_file()):
            run_config = None
    corpus, training, run_dev = _reading_settings(config if config is not None else run_config)
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
    sentences, _ = read_dev_sentences(dev_text, corpus, SentenceSplitter(corpus), training.max_dev_sentences)
    scores = dev_perplexity(model, dev_batches(sentences, StepInputBuilder(vocab), training), Distributed())
    if scores is None:
        raise ValueError(f"The dev text {dev_text} has no sentences")
    return SavedModelScores(model_path, dev_text, scores)


def _reading_settings(config: Optional[Union[str, Path]]) -> tuple[CorpusSettings, TrainingSettings, Optional[str]]:
    if config is None:
        return CorpusSettings(), TrainingSettings(), None
    settings = settings_from_config(load_config(config))
    return settings.corpus, settings.training, settings.paths.dev
