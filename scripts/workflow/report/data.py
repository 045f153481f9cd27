"""What the report reads: the workflow's outputs as plain Python values.

* scores: the ``evaluate`` step's JSON files, grouped by setting (one entry per seed), and
  the per-document counts beside them (``SETTING[.seedN].docs.json``);
* the settings compared (``comparisons``): task, training-set size (read from each
  pipeline's config), scores, and the paired test of each comparison (``paired_stats``);
* the biLM's pretraining curve (``metrics.jsonl``) and how pretraining ended (``run.json``);
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

from ..evaluation import paired_stats

# Settings are named TASK[-small]-VARIANT (conll-small-elmo, tagger-small-baseline, ...): TASK is
# conll (CoNLL-2003 NER), ner (WNUT-16 NER), tagger (UPOS on Brown) or textcat. Each variant
# is compared with the baseline of its task and size, each "X-adapted" also with "X" (the same
# setting on the biLM before domain adaptation), and ELMo also with spaCy's own pretraining
# (the baseline's tok2vec pretrained by `spacy pretrain` for the biLM's CPU time: the choice a
# user has); a comparison is made only when both settings were scored. ELMo distilled into the
# baseline's tok2vec (`spacy pretrain` with the PretrainElmo.v1 objective, then init_tok2vec) is
# also compared with spaCy's pretraining and with ELMo itself. A student of ELMo's predictions
# (the baseline config on gold + an ELMo teacher's silver) is also compared with the self-training
# control (the same with the baseline as teacher), ELMo and the distilled ELMo. A new variant
# needs no code: it sorts after the known ones.
SETTING_NAME = re.compile(r"^(?P<task>conll|ner|tagger|textcat)(?P<small>-small)?-(?P<variant>[a-z0-9][a-z0-9-]*)$")
TASKS = ("conll", "ner", "tagger", "textcat")
# what a task's per-document counts are, for the paired statistics (evaluation.scoring.task_of)
COUNTED_AS = {"conll": "ner"}
SIZES = ("full", "small")
SPACY_PRETRAIN = "spacy-pretrain"
DISTILLED = "elmo-distilled"
ELMO_SILVER = "elmo-silver"
SELF_TRAINING = "self-training"
VARIANTS = (
    "baseline",
    SPACY_PRETRAIN,
    "elmo",
    "elmo-adapted",
    "elmo-published",
    DISTILLED,
    SELF_TRAINING,
    ELMO_SILVER,
)
VARIANT_LABELS = {
    "baseline": "baseline",
    SPACY_PRETRAIN: "spaCy pretraining",
    "elmo": "ELMo",
    "elmo-adapted": "ELMo, adapted biLM",
    "elmo-published": "ELMo, published weights",
    DISTILLED: "ELMo distilled",
    SELF_TRAINING: "self-training",
    ELMO_SILVER: "ELMo's silver",
}
ADAPTED_SUFFIX = "-adapted"
# besides the baseline, a variant is compared with these variants of its task and size
ALSO_COMPARED_WITH = {
    "elmo": (SPACY_PRETRAIN,),
    DISTILLED: (SPACY_PRETRAIN, "elmo"),
    ELMO_SILVER: (SELF_TRAINING, "elmo", DISTILLED),
}
# the targets of one run: (task, size, gain in points over the baseline); a target is met by an
# ELMo variant other than the published weights (and the distilled ELMo and the students, which
# have targets of their own: report.distill, report.silver), with p < 0.05. The targets over
# biLMs and folds: report.targets
TARGETS: Tuple[Tuple[str, str, float], ...] = (
    ("conll", "small", 2.0),
    ("tagger", "small", 3.0),
    ("tagger", "full", 0.5),
)
NOT_FOR_TARGETS = ("elmo-published", SPACY_PRETRAIN, DISTILLED, SELF_TRAINING, ELMO_SILVER)
# the score a task is compared on, in order of preference, with its name in the report;
# the project's tagger predicts UPOS stored in token.tag_ (preprocess_brown.py), so tag_acc is
# UPOS accuracy (pos_acc would be a morphologizer's)
MAIN_SCORES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "conll": (("ents_f", "NER F1"),),
    "ner": (("ents_f", "NER F1"),),
    "tagger": (("tag_acc", "UPOS accuracy"), ("pos_acc", "UPOS accuracy")),
    # exclusive genres: spaCy's micro F is the accuracy (cats_score would be the macro F)
    "textcat": (("cats_micro_f", "genre accuracy"),),
}
BANK_TEXTS = ("The bank raised interest rates.", "They sat by the river bank.")
BANK_SENTENCES = (
    ("The", "bank", "raised", "interest", "rates", "."),
    ("They", "sat", "by", "the", "river", "bank", "."),
)
SEED_SUFFIX = re.compile(r"^(?P<setting>.+)\.seed(?P<seed>\d+)$")
# A setting trained on another biLM (the robustness workflow): SETTING@bilmN, N being that
# biLM's pretraining seed; SETTING itself is trained on the `all` workflow's biLM. Such names
# are no TASK[-small]-VARIANT (parse_setting: None), so the tables of one run leave them out;
# the pooled comparisons (``pooled_groups``) gather them with SETTING.
BILM_SUFFIX = re.compile(r"^(?P<setting>.+)@bilm(?P<seed>\d+)$")
# A setting's pipelines run with their elmo component at another precision (the
# evaluate-precision step): SETTING@PRECISION. No biLM (BILM_SUFFIX needs "@bilmN") and no
# TASK[-small]-VARIANT either: only the low-precision section (``report.precision``) reads them.
PRECISION_SUFFIX = re.compile(r"^(?P<setting>.+)@(?P<precision>float32|bfloat16|int8)$")
DOCS_SUFFIX = ".docs.json"
# summed per-document counts must give the run's own score back to this precision
COUNTS_TOLERANCE = 1e-9


def counted_as(task: str) -> str:
    """The task whose counts and scores ``paired_stats`` knows: ``ner`` for CoNLL-2003."""
    return COUNTED_AS.get(task, task)


def setting_name(task: str, size: str, variant: str) -> str:
    return f"{task}{'-small' if size == 'small' else ''}-{variant}"


def parse_setting(name: str) -> Optional[Tuple[str, str, str]]:
    """``(task, size, variant)`` of a setting name, None for other names."""
    match = SETTING_NAME.match(name)
    if not match:
        return None
    return match["task"], "small" if match["small"] else "full", match["variant"]


def variant_label(variant: str) -> str:
    return VARIANT_LABELS.get(variant, variant)


def comparisons(names: Sequence[str]) -> List[Tuple[str, str, str, str]]:
    """``(task, size label, baseline setting, other setting)`` for the settings present.

    Order: task, size, then the other setting's variant (known variants first), and within
    a variant the comparison with the baseline, then with the unadapted setting, then with
    spaCy's pretraining.
    """
    present = set(names)
    parsed = {name: parse_setting(name) for name in present}
    found = []
    for name, parts in parsed.items():
        if parts is None or parts[2] == "baseline":
            continue
        task, size, variant = parts
        order = (
            TASKS.index(task),
            SIZES.index(size),
            VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS),
            variant,
        )
        baseline = setting_name(task, size, "baseline")
        if baseline in present:
            found.append((order + (0,), (task, size, baseline, name)))
        if variant.endswith(ADAPTED_SUFFIX):
            unadapted = setting_name(task, size, variant[: -len(ADAPTED_SUFFIX)])
            if unadapted in present:
                found.append((order + (1,), (task, size, unadapted, name)))
        for rank, reference in enumerate(ALSO_COMPARED_WITH.get(variant, ()), start=2):
            if setting_name(task, size, reference) in present:
                found.append((order + (rank,), (task, size, setting_name(task, size, reference), name)))
    return [comparison for _, comparison in sorted(found)]


def split_bilm(name: str) -> Tuple[str, Optional[int]]:
    """``("ner-elmo", 1)`` for ``ner-elmo@bilm1``; ``(name, None)`` for a name without a biLM."""
    match = BILM_SUFFIX.match(name)
    return (match["setting"], int(match["seed"])) if match else (name, None)


def split_precision(name: str) -> Tuple[str, Optional[str]]:
    """``("ner-elmo", "int8")`` for ``ner-elmo@int8``; ``(name, None)`` for a name without one."""
    match = PRECISION_SUFFIX.match(name)
    return (match["setting"], match["precision"]) if match else (name, None)


def bilm_setting_name(setting: str, seed: int) -> str:
    """The name of ``setting`` trained on the biLM pretrained with ``seed``."""
    return f"{setting}@bilm{seed}"


def pooled_groups(names: Sequence[str]) -> List[Tuple[str, str, str, str, List[str]]]:
    """``(task, size, baseline setting, setting, members)`` for each setting that was also trained
    on other biLMs (``SETTING@bilmN``) and whose baseline was scored: ``members`` are SETTING
    (if scored) and its ``@bilmN`` settings by N. A group needs two members or more."""
    present = set(names)
    members: Dict[str, List[Tuple[int, str]]] = {}
    for name in present:
        base, seed = split_bilm(name)
        if seed is not None:
            members.setdefault(base, []).append((seed, name))
    found = []
    for base, others in members.items():
        parts = parse_setting(base)
        if parts is None or parts[2] == "baseline":
            continue
        task, size, variant = parts
        baseline = setting_name(task, size, "baseline")
        group = ([base] if base in present else []) + [name for _, name in sorted(others)]
        if baseline not in present or len(group) < 2:
            continue
        order = (
            TASKS.index(task),
            SIZES.index(size),
            VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS),
        )
        found.append((order + (variant,), (task, size, baseline, base, group)))
    return [group for _, group in sorted(found)]


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
    docs: Dict[Optional[int], dict] = field(default_factory=dict)  # seed: the .docs.json file

    def run_of(self, seed: Optional[int]) -> dict:
        return self.runs[self.seeds.index(seed)]

    def summary(self, key: str) -> Optional[Summary]:
        values = [run[key] for run in self.runs if isinstance(run.get(key), (int, float))]
        return Summary(values) if values else None

    def per_type(self, metric: str = "f") -> Dict[str, Summary]:
        """Per entity type: the metric (p, r or f) over the seeds."""
        labels = sorted({label for run in self.runs for label in (run.get("ents_per_type") or {})})
        result = {}
        for label in labels:
            values = [
                run["ents_per_type"][label][metric] for run in self.runs if label in (run.get("ents_per_type") or {})
            ]
            result[label] = Summary(values)
        return result


def _split_stem(stem: str) -> Tuple[str, Optional[int]]:
    match = SEED_SUFFIX.match(stem)
    return (match["setting"], int(match["seed"])) if match else (stem, None)


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return value


def load_settings(metrics_dir: Path) -> Dict[str, Setting]:
    """``{setting: Setting}`` from ``SETTING.json`` / ``SETTING.seed{N}.json`` files, with the
    per-document counts of ``SETTING[.seed{N}].docs.json`` where present."""
    settings: Dict[str, Setting] = {}
    docs_files = []
    for path in sorted(metrics_dir.glob("*.json")):
        if path.name.endswith(DOCS_SUFFIX):
            docs_files.append(path)
            continue
        name, seed = _split_stem(path.stem)
        setting = settings.setdefault(name, Setting(name))
        setting.runs.append(_read_json(path))
        setting.seeds.append(seed)
    for path in docs_files:
        name, seed = _split_stem(path.name[: -len(DOCS_SUFFIX)])
        if name in settings and seed in settings[name].seeds:
            docs = _read_json(path)
            docs["path"] = str(path)
            settings[name].docs[seed] = docs
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


def elmo_of(model_dir: Path) -> Optional[str]:
    """The biLM a pipeline was trained on: its config's ``paths.elmo``; None if it has none."""
    from thinc.api import Config

    try:
        config = Config().from_disk(model_dir / "config.cfg", interpolate=False)
        value = config["paths"]["elmo"]
    except (OSError, KeyError, ValueError, TypeError):
        return None
    return str(value) if value else None


def main_score(task: str, runs: Sequence[dict]) -> Tuple[Optional[str], str]:
    """The key and display name of the score a task is compared on."""
    for key, label in MAIN_SCORES[task]:
        if runs and all(isinstance(run.get(key), (int, float)) for run in runs):
            return key, label
    return None, MAIN_SCORES[task][0][1]


# -- paired tests -----------------------------------------------------------------------------


def doc_counts(setting: Setting, seed: Optional[int], task: str, key: str) -> numpy.ndarray:
    """The per-document counts of one run, checked against the run's own score.

    Raises ValueError naming the file when they are missing, of another model or test file,
    or do not sum to the score spaCy reported.
    """
    task = counted_as(task)
    run = setting.run_of(seed)
    docs = setting.docs.get(seed)
    label = f"{setting.name}" + (f" seed {seed}" if seed is not None else "")
    if docs is None:
        raise ValueError(f"no per-document counts for {label}: rerun the evaluate step")
    where = docs["path"]
    if docs.get("model_sha256") != run.get("model_sha256") or docs.get("test_data") != run.get("test_data"):
        raise ValueError(f"{where}: counts of another model or test file than its scores")
    fields = tuple(docs.get("fields", ()))
    if fields != paired_stats.FIELDS[task]:
        raise ValueError(f"{where}: fields {list(fields)}, expected {list(paired_stats.FIELDS[task])}")
    try:
        counts = numpy.asarray(docs["counts"], dtype=numpy.int64).reshape(-1, len(fields))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{where}: 'counts' is not a list of {len(fields)} integers per document") from e
    from_counts = float(paired_stats.SCORES[task](counts.sum(axis=0)))
    if not isinstance(run.get(key), (int, float)) or abs(from_counts - run[key]) > COUNTS_TOLERANCE:
        raise ValueError(f"{where}: the counts give {key} = {from_counts!r}, the scores {run.get(key)!r}")
    return counts


def one_test_file(
    task: str, key: str, settings: Sequence[Setting], seeds: Sequence[int]
) -> List[Dict[int, numpy.ndarray]]:
    """The per-document counts of ``seeds`` of each setting (``doc_counts``), checked to come
    from one test file; a ValueError naming the settings if they do not."""
    counts = [{seed: doc_counts(setting, seed, task, key) for seed in seeds} for setting in settings]
    files = {setting.docs[seed].get("test_data_sha256") for setting in settings for seed in seeds}
    if len(files) != 1:
        raise ValueError(f"{', '.join(s.name for s in settings)} were scored on different test files")
    return counts


def paired_test(
    task: str, key: str, baseline: Setting, other: Setting, **options
) -> Tuple[Optional[paired_stats.PairedResult], Optional[str]]:
    """The paired test of two settings, or None and the reason it could not be made."""
    try:
        pairs = paired_stats.pair_seeds(baseline.seeds, other.seeds)
        counts_a = {a: doc_counts(baseline, a, task, key) for a, _ in pairs}
        counts_b = {b: doc_counts(other, b, task, key) for _, b in pairs}
        test_files = {
            docs.get("test_data_sha256")
            for setting, seeds in ((baseline, counts_a), (other, counts_b))
            for seed, docs in setting.docs.items()
            if seed in seeds
        }
        if len(test_files) != 1:
            raise ValueError(f"{baseline.name} and {other.name} were scored on different test files")
        return paired_stats.compare(counted_as(task), counts_a, counts_b, **options), None
    except ValueError as e:
        return None, str(e)


# -- pretraining -------------------------------------------------------------------------

STOP_REASONS = ("max_tokens", "max_steps", "max_minutes", "signal")


def read_run_info(bilm_dir: Path) -> Optional[dict]:
    """``BILM_DIR/run.json`` (how pretraining ended), None if absent; an error naming the file
    if it is not a JSON object."""
    path = bilm_dir / "run.json"
    return _read_json(path) if path.is_file() else None


def _of(value, limit, unit: str = "") -> str:
    """``"1,200 of 5,000 tokens"``, or ``"1,200 tokens"`` without a limit."""
    text = f"{value:,}" if isinstance(value, int) else str(value)
    if isinstance(limit, (int, float)) and limit > 0:
        text += f" of {limit:,}"
    return text + (f" {unit}" if unit else "")


def describe_run(info: dict, name: str = "Pretraining") -> Tuple[str, bool]:
    """How pretraining ended, in words, and whether the reader must be warned (it was cut
    short by the time guard or a signal, so the biLM is weaker than its configuration asks)."""
    reason = info.get("stopped_by")
    steps, tokens = info.get("steps", "?"), info.get("tokens", "?")
    minutes = info.get("minutes")
    took = f" after {minutes:.1f} min" if isinstance(minutes, (int, float)) else ""
    if reason == "max_minutes":
        limit = info.get("max_minutes")
        guard = f" ({limit:g} min)" if isinstance(limit, (int, float)) else ""
        return (
            f"{name} was cut by the time guard{guard} at step "
            f"{_of(steps, info.get('max_steps'))}, {_of(tokens, info.get('max_tokens'), 'tokens')}: "
            f"the biLM saw less text than its configuration asks for.",
            True,
        )
    if reason == "signal":
        return (
            f"{name} was stopped by a signal at step {_of(steps, info.get('max_steps'))}, "
            f"{_of(tokens, info.get('max_tokens'), 'tokens')}{took}: the biLM saw less text than its "
            f"configuration asks for.",
            True,
        )
    if reason == "max_tokens":
        return (
            f"{name} ended at its token budget: {_of(tokens, None, 'tokens')} in {_of(steps, None)} steps{took}.",
            False,
        )
    if reason == "max_steps":
        return (
            f"{name} ran its {_of(steps, None)} steps ({_of(tokens, info.get('max_tokens'), 'tokens')}){took}.",
            False,
        )
    return f"{name} ended (stopped_by: {reason!r}) at step {steps}, {tokens} tokens{took}.", False


def read_pretraining_curve(metrics_jsonl: Path) -> List[dict]:
    """The pretraining evaluations, in step order (one dict per line of metrics.jsonl)."""
    if not metrics_jsonl.is_file():
        return []
    records = [json.loads(line) for line in metrics_jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]
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


def bank_similarities(bilm_dir: Path, mixes: Dict[str, Tuple[List[float], float]]) -> List[Tuple[str, float]]:
    """Cosine of ``bank`` ("The bank raised ..." vs "... the river bank."), per representation.

    Layer 0 is the char-CNN vector, the same in any context: a static vector, cosine 1.
    """
    from spacy_elmo import BiLM, embed_layers, mix_layers

    bilm = BiLM.from_disk(bilm_dir)
    first, second = embed_layers(bilm, [list(s) for s in BANK_SENTENCES])
    i, j = BANK_SENTENCES[0].index("bank"), BANK_SENTENCES[1].index("bank")
    rows = [("layer 0 (char-CNN, static)", cosine(first[0, i], second[0, j]))]
    for layer in range(1, first.shape[0]):
        label = f"layer {layer} (LSTM {layer}" + (", top)" if layer == first.shape[0] - 1 else ")")
        rows.append((label, cosine(first[layer, i], second[layer, j])))
    rows.append(("average of all layers", cosine(mix_layers(first)[i], mix_layers(second)[j])))
    for name, (weights, gamma) in mixes.items():
        rows.append(
            (
                f"{name}'s learned mix",
                cosine(mix_layers(first, weights, gamma)[i], mix_layers(second, weights, gamma)[j]),
            )
        )
    return rows
