"""What a trained pipeline holds: each component's learned mix of the biLM layers (the paper reads
them to see which layers a task uses; ``spacy-elmo inspect`` prints them) and its biLMs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Union

from spacy.language import Language
from thinc.api import Model

from ..models.doc_layers import get_bilm
from ..models.listener import ElmoLayersListener
from ..models.scalar_mix import mix_softmax_weights
from ..nn.bilm import BiLM


@dataclass(frozen=True)
class LearnedMix:
    component: str
    upstream: Optional[str]  # None: the component owns a copy of the biLM (replace_listeners)
    grad_factor: float
    weights: tuple[float, ...]
    gamma: float
    fixed: bool = False  # weights given in the config (fixed_layer_weights), not learned
    layer_norm: bool = False  # each layer normalized per token before mixing


def elmo_mix_nodes(model: Model) -> list[tuple[Model, Model]]:
    """(source, mix) for every ELMo feature chain in a component's model: a listener, or the
    standalone ``elmo_layers`` that ``nlp.replace_listeners`` put in its place, followed by its
    ``spacy_elmo.scalar_mix.v1``."""
    pairs = []
    for node in model.walk():
        for source, following in zip(node.layers, node.layers[1:]):
            is_source = isinstance(source, ElmoLayersListener) or source.name == "elmo_layers"
            if is_source and following.name == "elmo_scalar_mix":
                pairs.append((source, following))
    return pairs


def learned_mixes(nlp: Language) -> list[LearnedMix]:
    """One entry per ELMo listener in the pipeline, in pipeline order (uninitialized ones skipped)."""
    return [
        LearnedMix(
            component=name,
            upstream=source.upstream_name if isinstance(source, ElmoLayersListener) else None,
            grad_factor=float(source.attrs["grad_factor"]),
            weights=tuple(float(w) for w in mix.ops.to_numpy(mix_softmax_weights(mix))),
            gamma=float(mix.ops.to_numpy(mix.get_param("gamma"))[0]),
            fixed=mix.attrs["fixed_layer_weights"] is not None,
            layer_norm=bool(mix.attrs["layer_norm"]),
        )
        for name, model in ((name, getattr(component, "model", None)) for name, component in nlp.pipeline)
        if isinstance(model, Model)
        for source, mix in elmo_mix_nodes(model)
        if mix.has_param("gamma")  # initialized (fixed-weight mixes have no "a")
    ]


def pyplot() -> Any:
    """matplotlib's pyplot, drawing into files; without matplotlib, an error that says how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise RuntimeError("Plotting needs matplotlib: pip install matplotlib") from err
    return plt


def plot_mixes(mixes: list[LearnedMix], path: Union[str, Path]) -> None:
    """A bar chart of each component's layer weights (gamma in the title), saved as PNG."""
    plt = pyplot()
    if not mixes:
        raise ValueError("No learned ELMo layer mixes to plot")
    fig, axes = plt.subplots(1, len(mixes), figsize=(3.2 * len(mixes), 3.0), squeeze=False)
    for ax, mix in zip(axes[0], mixes):
        layers = range(len(mix.weights))
        ax.bar(layers, mix.weights, color="tab:blue")
        ax.set_xticks(list(layers))
        ax.set_xlabel("biLM layer (0 = char-CNN)")
        ax.set_ylim(0, max(1.0, max(mix.weights)))
        ax.set_title(f"{mix.component}: gamma = {mix.gamma:.3f}")
    axes[0][0].set_ylabel("softmax weight")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def pipeline_bilm(nlp: Language, component: Optional[str] = None) -> BiLM:
    """The biLM of ``component`` (an ``elmo`` one, or one with a copy), or the only one; else an error."""
    bilms: Dict[str, BiLM] = {}
    for name, pipe in nlp.components:
        model = getattr(pipe, "model", None)
        if isinstance(model, Model):
            copies = [n.layers[0] for n in model.walk() if n.name == "elmo_layers"]
            holders = [model] if model.name == "elmo_bilm" else copies
            bilm = get_bilm(holders[0]) if len(holders) == 1 else None
            if bilm is not None:
                bilms[name] = bilm
    if component is not None:
        if component not in bilms:
            raise ValueError(
                f"the pipeline's component '{component}' holds no biLM; those that do: {', '.join(bilms) or 'none'}"
            )
        return bilms[component]
    if len(bilms) != 1:
        raise ValueError(
            "the pipeline holds no biLM (no elmo component, no copy from replace_listeners)"
            if not bilms
            else f"the pipeline holds several biLMs ({', '.join(bilms)}): choose one with --component"
        )
    return next(iter(bilms.values()))
