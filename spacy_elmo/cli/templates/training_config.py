"""A complete ``spacy train`` config with ELMo features, wired as the shipped configs are.

``spacy init config --pipeline elmo,ner`` cannot know that ``ner`` should listen to ``elmo``:
it builds an ``elmo`` component nothing reads. Here every task's tok2vec is
``spacy_elmo.ElmoTok2Vec.v1`` with a ``spacy_elmo.ElmoListener.v1`` inside (its own learned mix
of the biLM layers), and the weights are read once, in ``[initialize.components.elmo]``. The
template holds only what differs from spaCy's defaults; spaCy fills the rest, as ``spacy init
config`` does, so every setting is written out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Union

from thinc.api import Config

from ...formats.resolve import messages_for
from ...pipeline.elmo import DEFAULT_ELMO_MODEL
from ...pipeline.weights import weights_config, write_bilm_sizes
from .task_blocks import LAYER_NORM, TASK_MODELS, refusal

#: A GPU fits larger biLM batches, and the word cache is left off.
GPU_MODEL_SETTINGS = {"batch_max_tokens": 8192, "word_cache_words": 0}
SECTION_ORDER = ("paths", "system", "nlp", "components", "corpora", "training", "pretraining", "initialize")


def training_config(
    pipeline: Sequence[str],
    *,
    weights: Optional[Union[str, Path]] = None,
    gpu: bool = False,
    lang: str = "en",
) -> Config:
    """The filled config for ``elmo`` followed by ``pipeline`` (any of
    :data:`~.task_blocks.TASK_MODELS`, e.g. ``["parser", "ner", "textcat"]``), each with its own
    ELMo listener. ``weights``: the default of ``[paths] elmo``; ``gpu``: settings for ``spacy
    train --gpu-id 0``."""
    from spacy.util import get_lang_class, load_model_from_config

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
    try:
        get_lang_class(lang)  # "xx" is spaCy's multi-language class (an ELMoForManyLangs model reads any script)
    except ImportError:
        raise ValueError(
            f"--lang {lang}: spaCy has no language '{lang}' (use 'xx' for a multi-language pipeline)"
        ) from None
    elmo_model = {**DEFAULT_ELMO_MODEL, **(GPU_MODEL_SETTINGS if gpu else {})}
    if weights is not None:  # their sizes, so that the config describes the biLM it will hold
        write_bilm_sizes(elmo_model, weights_config(weights, messages_for("--weights")))
    config = Config(
        {
            "paths": {"train": None, "dev": None, "elmo": None if weights is None else str(weights)},
            "system": {"gpu_allocator": "pytorch"},
            "nlp": {"lang": lang, "pipeline": ["elmo", *tasks], "batch_size": 128},
            "components": {"elmo": {"factory": "elmo", "model": elmo_model}, **{t: _task_block(t) for t in tasks}},
            "initialize": {"components": {"elmo": {"weights": "${paths.elmo}"}}},
        },
        is_interpolated=False,
    )
    filled = load_model_from_config(config, auto_fill=True, validate=False).config
    return Config({key: filled[key] for key in [*SECTION_ORDER, *filled] if key in filled})


def _task_block(name: str) -> Dict[str, Any]:
    settings = TASK_MODELS[name]
    tok2vec = {
        "@architectures": "spacy_elmo.ElmoTok2Vec.v1",
        "elmo": {
            "@architectures": "spacy_elmo.ElmoListener.v1",
            "upstream": "elmo",
            "layer_norm": LAYER_NORM.get(name, False),
        },
        "embed": {
            "@architectures": "spacy.MultiHashEmbed.v2",
            "width": f"${{components.{name}.model.tok2vec.encode.width}}",
            "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
            "rows": [5000, 1000, 2500, 2500],
            "include_static_vectors": False,
        },
        "encode": {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": 96,
            "depth": 4,
            "window_size": 1,
            "maxout_pieces": 3,
        },
    }
    return {"factory": name, **settings, "model": {**settings.get("model", {}), "tok2vec": tok2vec}}


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
