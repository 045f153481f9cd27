"""Library for ``report.py``: reads what the workflow produced into plain Python values.

* scores: the ``evaluate`` step's JSON files, grouped by setting (one entry per seed);
* the settings compared: task, training-set size (read from each pipeline's config), scores;
* the biLM's pretraining curve (``metrics.jsonl``);
* each ELMo pipeline's learned layer mix (softmax weights and gamma of its listener);
* the "bank" example: cosine of ``bank`` in two contexts, per layer and per mix.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

# (task, size label, baseline setting, ELMo setting): the comparisons of the `all` workflow
COMPARISONS: Tuple[Tuple[str, str, str, str], ...] = (
    ("ner", "full", "ner-baseline", "ner-elmo"),
    ("ner", "small", "ner-small-baseline", "ner-small-elmo"),
    ("tagger", "full", "tagger-baseline", "tagger-elmo"),
    ("tagger", "small", "tagger-small-baseline", "tagger-small-elmo"),
)
# the score a task is compared on, in order of preference, with its name in the report;
# the project's tagger predicts UPOS stored in token.tag_ (preprocess_brown.py), so tag_acc is
# UPOS accuracy (pos_acc would be a morphologizer's)
MAIN_SCORES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "ner": (("ents_f", "NER F1"),),
    "tagger": (("tag_acc", "UPOS accuracy"), ("pos_acc", "UPOS accuracy")),
}
BANK_TEXTS = ("The bank raised interest rates.", "They sat by the river bank.")
BANK_SENTENCES = (
    ("The", "bank", "raised", "interest", "rates", "."),
    ("They", "sat", "by", "the", "river", "bank", "."),
)
SEED_SUFFIX = re.compile(r"^(?P<setting>.+)\.seed(?P<seed>\d+)$")


@dataclass
class Summary:
    """Mean, spread and runs of one score over the seeds of a setting."""

    values: List[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float:
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0

    def as_percent(self) -> str:
        """``"71.23"`` for one run, ``"71.23 ± 0.45"`` (sample std) for several."""
        if len(self.values) == 1:
            return f"{self.mean * 100:.2f}"
        return f"{self.mean * 100:.2f} ± {self.std * 100:.2f}"


@dataclass
class Setting:
    name: str
    runs: List[dict] = field(default_factory=list)  # evaluate's JSON, one per seed
    seeds: List[Optional[int]] = field(default_factory=list)
    train_docs: Optional[int] = None

    def summary(self, key: str) -> Optional[Summary]:
        values = [run[key] for run in self.runs if isinstance(run.get(key), (int, float))]
        return Summary(values) if values else None

    def per_type(self, metric: str = "f") -> Dict[str, Summary]:
        """Per entity type: the metric (p, r or f) over the seeds."""
        labels = sorted({label for run in self.runs for label in (run.get("ents_per_type") or {})})
        result = {}
        for label in labels:
            values = [run["ents_per_type"][label][metric] for run in self.runs
                      if label in (run.get("ents_per_type") or {})]
            result[label] = Summary(values)
        return result


def load_settings(metrics_dir: Path) -> Dict[str, Setting]:
    """``{setting: Setting}`` from ``SETTING.json`` / ``SETTING.seed{N}.json`` files."""
    settings: Dict[str, Setting] = {}
    for path in sorted(metrics_dir.glob("*.json")):
        match = SEED_SUFFIX.match(path.stem)
        name, seed = (match["setting"], int(match["seed"])) if match else (path.stem, None)
        setting = settings.setdefault(name, Setting(name))
        setting.runs.append(json.loads(path.read_text(encoding="utf-8")))
        setting.seeds.append(seed)
    for setting in settings.values():
        setting.train_docs = train_docs_of(Path(setting.runs[0].get("model", "")))
    return settings


def train_docs_of(model_dir: Path) -> Optional[int]:
    """Training examples a pipeline saw: its config's train corpus, after the corpus limit."""
    from spacy.tokens import DocBin
    from thinc.api import Config

    try:
        config = Config().from_disk(model_dir / "config.cfg", interpolate=False)
        train_path = Path(config["paths"]["train"])
        limit = int(config["corpora"]["train"].get("limit", 0) or 0)
        n_docs = len(DocBin().from_disk(train_path))
    except (OSError, KeyError, ValueError, TypeError):
        return None
    return min(n_docs, limit) if limit > 0 else n_docs


def main_score(task: str, runs: Sequence[dict]) -> Tuple[Optional[str], str]:
    """The key and display name of the score a task is compared on."""
    for key, label in MAIN_SCORES[task]:
        if runs and all(isinstance(run.get(key), (int, float)) for run in runs):
            return key, label
    return None, MAIN_SCORES[task][0][1]


# -- pretraining -------------------------------------------------------------------------

def read_pretraining_curve(metrics_jsonl: Path) -> List[dict]:
    """The pretraining evaluations, in step order (one dict per line of metrics.jsonl)."""
    if not metrics_jsonl.is_file():
        return []
    records = [json.loads(line) for line in metrics_jsonl.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    return sorted(records, key=lambda r: r.get("step", 0))


# -- learned layer mixes -------------------------------------------------------------------

def learned_mixes(model_dir: Path) -> Dict[str, Tuple[List[float], float]]:
    """``{component: (softmax layer weights, gamma)}`` for each ELMo listener in a pipeline."""
    import spacy
    from spacy_elmo.pipeline.mixes import learned_mixes as read_mixes

    return {mix.component: (list(mix.weights), mix.gamma) for mix in read_mixes(spacy.load(model_dir))}


# -- the "bank" example ----------------------------------------------------------------------

def cosine(a: numpy.ndarray, b: numpy.ndarray) -> float:
    denominator = float(numpy.linalg.norm(a) * numpy.linalg.norm(b))
    return float(numpy.dot(a, b) / denominator) if denominator else math.nan


def bank_similarities(bilm_dir: Path,
                      mixes: Dict[str, Tuple[List[float], float]]) -> List[Tuple[str, float]]:
    """Cosine of ``bank`` ("The bank raised ..." vs "... the river bank."), per representation.

    Layer 0 is the char-CNN vector, the same in any context: a static vector, cosine 1.
    """
    from spacy_elmo import BiLM, mix_layers

    bilm = BiLM.from_disk(bilm_dir)
    first, second = bilm.embed_layers([list(s) for s in BANK_SENTENCES])
    i, j = BANK_SENTENCES[0].index("bank"), BANK_SENTENCES[1].index("bank")
    rows = [("layer 0 (char-CNN, static)", cosine(first[0, i], second[0, j]))]
    for layer in range(1, first.shape[0]):
        label = f"layer {layer} (LSTM {layer}" + (", top)" if layer == first.shape[0] - 1 else ")")
        rows.append((label, cosine(first[layer, i], second[layer, j])))
    rows.append(("average of all layers", cosine(mix_layers(first)[i], mix_layers(second)[j])))
    for name, (weights, gamma) in mixes.items():
        rows.append((f"{name}'s learned mix",
                     cosine(mix_layers(first, weights, gamma)[i], mix_layers(second, weights, gamma)[j])))
    return rows
