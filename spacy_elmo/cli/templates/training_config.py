"""A complete ``spacy train`` config with ELMo features, wired as the shipped configs are.

``spacy init config --pipeline elmo,ner`` cannot know that ``ner`` should listen to ``elmo``:
it builds an ``elmo`` component nothing reads. Here every task's tok2vec is
``spacy_elmo.ElmoTok2Vec.v1`` with a ``spacy_elmo.ElmoListener.v1`` inside (its own learned mix
of the biLM layers), and the weights are read once, in ``[initialize.components.elmo]``. The
result is filled by spaCy, as ``spacy init config`` does, so every default is written out.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Optional, Sequence, Union

from thinc.api import Config

from ...embedding.embedder import DEFAULT_WORD_CACHE_WORDS
from ...pipeline.elmo import DEFAULT_ELMO_MODEL
from .task_blocks import LAYER_NORM, TASK_MODELS, refusal

TOK2VEC = """
[components.$name.model.tok2vec]
@architectures = "spacy_elmo.ElmoTok2Vec.v1"
maxout_pieces = 3
elmo_output = null

[components.$name.model.tok2vec.elmo]
@architectures = "spacy_elmo.ElmoListener.v1"
upstream = "elmo"
layer_norm = $layer_norm
layer_dropout = 0.0
grad_factor = 0.0
fixed_layer_weights = null
mix_dropout = 0.0
weights_l2 = 0.0

[components.$name.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = $${components.$name.model.tok2vec.encode.width}
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [5000, 1000, 2500, 2500]
include_static_vectors = false

[components.$name.model.tok2vec.encode]
@architectures = "spacy.MaxoutWindowEncoder.v2"
width = 96
depth = 4
window_size = 1
maxout_pieces = 3
"""

BASE = """
[paths]
train = null
dev = null
vectors = null
init_tok2vec = null
elmo = $weights

[system]
gpu_allocator = "pytorch"
seed = 0

[nlp]
lang = "$lang"
pipeline = $pipeline
batch_size = 128

[components]

[components.elmo]
factory = "elmo"
weights = null
layer_weights = null
gamma = 1.0
mix_from = null
set_vector_hooks = true
feature_cache_mb = 1024
feature_cache_dir = null
feature_cache_disk_mb = 10240
precision = "float32"

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = $${paths.train}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = $${paths.dev}

[training]
dev_corpus = "corpora.dev"
train_corpus = "corpora.train"
seed = $${system.seed}
gpu_allocator = $${system.gpu_allocator}
dropout = 0.1
accumulate_gradient = 1
patience = 1600
max_epochs = 0
max_steps = 20000
eval_frequency = 200
frozen_components = []
annotating_components = []
before_to_disk = null
before_update = null

[training.batcher]
@batchers = "spacy.batch_by_words.v1"
discard_oversize = false
tolerance = 0.2
get_length = null

[training.batcher.size]
@schedules = "compounding.v1"
start = 100
stop = 1000
compound = 1.001
t = 0.0

[training.logger]
@loggers = "spacy.ConsoleLogger.v1"
progress_bar = false

[training.optimizer]
@optimizers = "Adam.v1"
beta1 = 0.9
beta2 = 0.999
L2_is_weight_decay = true
L2 = 0.01
grad_clip = 1.0
use_averages = false
eps = 1e-08
learn_rate = 0.001

[initialize]
vectors = $${paths.vectors}
init_tok2vec = $${paths.init_tok2vec}
vocab_data = null
lookups = null
before_init = null
after_init = null

[initialize.components]

# the weights are read once, at initialization; the trained pipeline carries its own copy
[initialize.components.elmo]
weights = $${paths.elmo}
"""

# GPU settings: larger biLM batches fit, and the word cache is left off.
HARDWARE = {
    False: {"batch_max_tokens": 2048, "word_cache_words": DEFAULT_WORD_CACHE_WORDS},
    True: {"batch_max_tokens": 8192, "word_cache_words": 0},
}


def training_config(
    pipeline: Sequence[str],
    *,
    weights: Optional[Union[str, Path]] = None,
    gpu: bool = False,
    lang: str = "en",
) -> Config:
    """The filled config for ``elmo`` followed by ``pipeline``: any of
    :data:`~.task_blocks.TASK_MODELS` (e.g. ``["parser", "ner", "textcat"]``), each with its
    own ELMo listener.

    weights: the default of ``[paths] elmo`` (``None``: give ``--paths.elmo`` to spacy train).
    gpu: settings for training on a GPU (``spacy train --gpu-id 0``).
    """
    from spacy.util import load_model_from_config

    tasks = [name for name in pipeline if name != "elmo"]
    if not tasks:
        raise ValueError(f"--pipeline needs at least one component that listens to ELMo, from {', '.join(TASK_MODELS)}")
    refused = [reason for reason in map(refusal, tasks) if reason is not None]
    if refused:
        raise ValueError(
            f"--pipeline takes components that can listen to ELMo ({', '.join(TASK_MODELS)}): {'; '.join(refused)}"
        )
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"--pipeline names a component twice: {', '.join(pipeline)}")
    _check_language(lang)
    text = Template(BASE).substitute(
        weights=_config_value(None if weights is None else str(weights)),
        lang=lang,
        pipeline=_config_value(["elmo", *tasks]),
    )
    for name in tasks:
        text += Template(TASK_MODELS[name] + TOK2VEC).substitute(name=name, layer_norm=LAYER_NORM.get(name, "false"))
    config = Config().from_str(text, interpolate=False)
    # the factory's default biLM (the original size), with the hardware's batch and cache
    config["components"]["elmo"]["model"] = {**DEFAULT_ELMO_MODEL, **HARDWARE[gpu]}
    nlp = load_model_from_config(config, auto_fill=True, validate=False)
    filled = nlp.config
    return Config({key: filled[key] for key in [*SECTION_ORDER, *filled] if key in filled})


def _check_language(lang: str) -> None:
    """spaCy must have the language: ``xx`` is its multi-language class, for the languages it
    lacks (an ELMoForManyLangs model reads any script)."""
    from spacy.util import get_lang_class

    try:
        get_lang_class(lang)
    except ImportError:
        raise ValueError(
            f"--lang {lang}: spaCy has no language '{lang}' (use 'xx' for a multi-language pipeline)"
        ) from None


SECTION_ORDER = ("paths", "system", "nlp", "components", "corpora", "training", "pretraining", "initialize")


def config_text(config: Config) -> str:
    """``config.to_str()`` with every section followed by its subsections, as a person writes
    a config (Thinc writes all sections of one depth before the next)."""
    blocks = config.to_str(interpolate=False).strip().split("\n\n")
    names = [block.split("\n", 1)[0].strip("[]") for block in blocks]
    rank = {name: i for i, name in enumerate(names)}

    def key(name: str) -> tuple:
        parts = name.split(".")
        return tuple(rank.get(".".join(parts[: i + 1]), -1) for i in range(len(parts)))

    return "\n\n".join(block for _, block in sorted(zip(map(key, names), blocks))) + "\n"


def _config_value(value) -> str:
    """A Python value in config syntax (JSON, with null)."""
    import json

    return json.dumps(value)
