"""``spacy-elmo init-config``: a complete ``spacy train`` config wired as the shipped ones, since
``spacy init config --pipeline elmo,ner`` builds an ``elmo`` component nothing listens to. The
template holds what differs from spaCy's defaults; spaCy fills in the rest (docs/training.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Union

import typer

from ._app import app

if TYPE_CHECKING:
    from thinc.api import Config


def _pooled_textcat(exclusive_classes: bool) -> Dict[str, Any]:
    """Pooled token vectors, no bag of words: with and without ELMo differ in token vectors alone."""
    reduce = {"use_reduce_first": False, "use_reduce_last": False, "use_reduce_max": True, "use_reduce_mean": True}
    return {"model": {"@architectures": "spacy.TextCatReduce.v1", "exclusive_classes": exclusive_classes, **reduce}}


#: factory -> its settings beyond spaCy's defaults (spaCy's own model for the task otherwise)
TASK_MODELS: Dict[str, Dict[str, Any]] = {
    "ner": {},
    "tagger": {},
    "parser": {"model": {"hidden_width": 128, "maxout_pieces": 3}},
    "textcat": _pooled_textcat(True),
    "textcat_multilabel": _pooled_textcat(False),
    "spancat": {},
    "morphologizer": {"label_smoothing": 0.05},
    "senter": {},
    "trainable_lemmatizer": {},
}
#: The listener's ``layer_norm`` per component: for ``ner`` as the project's dev split chose it
#: (configs/*_elmo.cfg say how); the listener's default elsewhere.
LAYER_NORM: Dict[str, bool] = {"ner": True}
_RULE_BASED = "is rule-based: it has no model that could read ELMo features"
#: Why a known spaCy factory gets no ELMo listener.
_REFUSALS: Dict[str, str] = {
    "tok2vec": "is spaCy's shared embedding layer: the elmo component and each component's own "
    "ElmoTok2Vec take its place, so list the components that should read ELMo",
    "lemmatizer": "is the rule-based (lookup table) lemmatizer; the trained one is 'trainable_lemmatizer'",
    "entity_linker": "needs a knowledge base that init-config cannot build: give its "
    "model.tok2vec a spacy_elmo.ElmoTok2Vec.v1 by hand",
    "span_finder": "has no ELMo config here yet: give its model.tok2vec a spacy_elmo.ElmoTok2Vec.v1 by hand",
    "transformer": "is a transformer: it does not read ELMo features",
    "curated_transformer": "is a transformer: it does not read ELMo features",
    **dict.fromkeys(
        (
            "sentencizer",
            "entity_ruler",
            "span_ruler",
            "attribute_ruler",
            "doc_cleaner",
            "merge_entities",
            "merge_noun_chunks",
            "merge_subtokens",
            "token_splitter",
        ),
        _RULE_BASED,
    ),
}
#: A GPU fits larger biLM batches, and the word cache is left off.
GPU_MODEL_SETTINGS = {"batch_max_tokens": 8192, "word_cache_words": 0}
SECTION_ORDER = ("paths", "system", "nlp", "components", "corpora", "training", "pretraining", "initialize")


@app.command("init-config")
def init_config_cli(
    output_file: Path = typer.Argument(
        ..., help="Where to write the config ('-' for stdout)", dir_okay=False, allow_dash=True
    ),
    pipeline: str = typer.Option(
        "ner",
        "--pipeline",
        "-p",
        help="Comma-separated components that read ELMo features: parser, ner, tagger, morphologizer, senter, "
        "trainable_lemmatizer, textcat, textcat_multilabel, spancat",
    ),
    weights: Optional[Path] = typer.Option(
        None,
        "--weights",
        "-w",
        help="ELMo weights ([paths] elmo): spacy-elmo model dir, AllenNLP dir, or .hdf5 with options.json beside it",
    ),
    gpu: bool = typer.Option(False, "--gpu", "-G", help="Settings for training on a GPU (spacy train --gpu-id 0)"),
    lang: str = typer.Option("en", "--lang", "-l", help="Language code of the pipeline"),
    force: bool = typer.Option(False, "--force", "-F", help="Overwrite OUTPUT_FILE if it exists"),
) -> None:
    """Write a spacy train config: elmo first, each component with an ELMo listener in its tok2vec."""
    names = [name.strip() for name in pipeline.split(",") if name.strip()]
    if str(output_file) != "-" and output_file.exists() and not force:
        raise ValueError(f"{output_file} already exists: pass --force (-F) to overwrite it")
    config = training_config(names, weights=None if weights is None else weights.resolve(), gpu=gpu, lang=lang)
    elmo = "" if weights is not None else " --paths.elmo WEIGHTS"
    text = (
        f"# Written by spacy-elmo init-config --pipeline {','.join(names)}{' --gpu' if gpu else ''}. Train with:\n"
        "#   python -m spacy train CONFIG --output OUTPUT --paths.train TRAIN.spacy --paths.dev DEV.spacy"
        f"{elmo}{' --gpu-id 0' if gpu else ''}\n\n{config_text(config)}"
    )
    if str(output_file) == "-":
        typer.echo(text, nl=False)
        return
    created = not output_file.parent.exists()
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text(text, encoding="utf8")
    except OSError as err:
        raise ValueError(f"cannot write {output_file}: {err.strerror or err}") from err
    if created:
        typer.echo(f"Created the folder {output_file.parent}", err=True)
    typer.echo(f"Wrote {output_file}", err=True)


def training_config(
    pipeline: Sequence[str], *, weights: Optional[Union[str, Path]] = None, gpu: bool = False, lang: str = "en"
) -> Config:
    """The filled config for ``elmo`` followed by ``pipeline`` (any of :data:`TASK_MODELS`), each
    with its own listener; ``weights``: the default of ``[paths] elmo``, whose sizes it gets."""
    from spacy.util import get_lang_class, load_model_from_config
    from thinc.api import Config

    from ..formats.resolve import messages_for
    from ..pipeline.elmo import DEFAULT_ELMO_MODEL
    from ..pipeline.weights import weights_config, write_bilm_sizes

    tasks = [name for name in pipeline if name != "elmo"]
    if not tasks:
        raise ValueError(f"--pipeline needs at least one component that listens to ELMo, from {', '.join(TASK_MODELS)}")
    unknown = "is not a spaCy component that init-config knows"
    refused = [f"'{task}' {_REFUSALS.get(task, unknown)}" for task in tasks if task not in TASK_MODELS]
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
    sizes = None if weights is None else weights_config(weights, messages_for("--weights"))
    if sizes is not None:  # the weights', so that the config describes the biLM it will hold
        write_bilm_sizes(elmo_model, sizes)
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
    """``config.to_str()`` with each section followed by its subsections, as a person writes a config."""
    blocks = config.to_str(interpolate=False).strip().split("\n\n")
    names = [block.split("\n", 1)[0].strip("[]") for block in blocks]
    rank = {name: i for i, name in enumerate(names)}

    def key(name: str) -> tuple:
        parts = name.split(".")
        return tuple(rank.get(".".join(parts[: i + 1]), -1) for i in range(len(parts)))

    return "\n\n".join(block for _, block in sorted(zip(map(key, names), blocks))) + "\n"
