"""The report's PNG figures (matplotlib, no display needed).

Every function takes plain values (see ``data``), writes one PNG and returns its
path. Error bars are the sample standard deviation over seeds, where there are several.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .data import Summary  # noqa: E402

BASELINE_COLOUR = "#9e9e9e"
ELMO_COLOUR = "#1f77b4"


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _paired_bars(
    ax, labels: Sequence[str], baseline: Sequence[Optional[Summary]], elmo: Sequence[Optional[Summary]]
) -> None:
    positions = list(range(len(labels)))
    width = 0.38
    for offset, summaries, colour, name in (
        (-width / 2, baseline, BASELINE_COLOUR, "baseline"),
        (width / 2, elmo, ELMO_COLOUR, "ELMo"),
    ):
        heights = [s.mean * 100 if s else 0.0 for s in summaries]
        errors = [s.std * 100 if s else 0.0 for s in summaries]
        bars = ax.bar([p + offset for p in positions], heights, width, yerr=errors, capsize=3, color=colour, label=name)
        for bar, summary in zip(bars, summaries):
            if summary:
                ax.annotate(
                    f"{summary.mean * 100:.1f}",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    ax.set_xticks(positions)
    ax.set_xticklabels(labels, fontsize=8)
    ax.legend(fontsize=8)


def plot_scores(groups: List[Tuple[str, List[Tuple[str, Optional[Summary]]]]], path: Path) -> Path:
    """One group of bars per task and size, one bar per setting variant (mean, std over seeds).

    groups = [(group label, [(variant, summary), ...]), ...]; a variant has the same colour
    in every group.
    """
    variants: List[str] = []
    for _, bars in groups:
        variants += [variant for variant, _ in bars if variant not in variants]
    others = [variant for variant in variants if variant != "baseline"]
    colours = {variant: plt.cm.tab10(index % 10) for index, variant in enumerate(others)}
    colours["baseline"] = BASELINE_COLOUR
    fig, ax = plt.subplots(figsize=(max(5.0, 0.7 * sum(len(b) for _, b in groups) + 1.5), 3.8))
    width = 0.8 / max(1, max((len(bars) for _, bars in groups), default=1))
    labelled = set()
    for position, (_, bars) in enumerate(groups):
        for index, (variant, summary) in enumerate(bars):
            x = position - 0.4 + width * (index + 0.5)
            height = summary.mean * 100 if summary else 0.0
            ax.bar(
                x,
                height,
                width,
                yerr=summary.std * 100 if summary else 0.0,
                capsize=3,
                color=colours[variant],
                label=None if variant in labelled else variant,
            )
            labelled.add(variant)
            if summary:
                ax.annotate(
                    f"{height:.1f}",
                    (x, height),
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    ax.set_xticks(list(range(len(groups))))
    ax.set_xticklabels([label for label, _ in groups], fontsize=8)
    ax.set_ylabel("test score (%)")
    ax.set_ylim(bottom=0)
    ax.set_title("Test scores per setting (mean and std over seeds)")
    ax.legend(fontsize=7)
    return _save(fig, path)


def plot_differences(rows: List[Tuple[str, float, float, float, str]], path: Path) -> Path:
    """One row per comparison: the difference in points and its 95% interval.

    rows = [(label, difference, interval low, interval high, verdict)]; gains and losses
    (p < 0.05) are drawn filled, the rest hollow.
    """
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(rows) + 1.4))
    for y, (_, difference, low, high, verdict) in enumerate(reversed(rows)):
        colour = {"gain": "#2ca02c", "loss": "#d62728"}.get(verdict, "#555555")
        ax.errorbar(
            [difference],
            [y],
            xerr=[[difference - low], [high - difference]],
            fmt="o",
            capsize=3,
            color=colour,
            markerfacecolor=colour if verdict in ("gain", "loss") else "white",
        )
    ax.axvline(0.0, color="black", linewidth=0.8, linestyle=":")
    ax.set_yticks(list(range(len(rows))))
    ax.set_yticklabels([row[0] for row in reversed(rows)], fontsize=7)
    ax.set_xlabel("difference in test score (points), 95% interval")
    ax.set_title("Paired differences (filled: p < 0.05)")
    return _save(fig, path)


def plot_price(panels: List[Tuple[str, List[Tuple[str, float, Summary]]]], path: Path) -> Path:
    """Test score against words per CPU-second (log scale), one panel per task.

    panels = [(task label, [(setting, words per CPU-second, score summary over seeds)])]; one
    point per setting, its error bar the std of the score over seeds (the price is one seed's).
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    for ax, (label, points) in zip(axes[0], panels):
        for index, (setting, speed, summary) in enumerate(points):
            colour = BASELINE_COLOUR if setting.endswith("-baseline") else plt.cm.tab10(index % 10)
            ax.errorbar([speed], [summary.mean * 100], yerr=[summary.std * 100], fmt="o", capsize=3, color=colour)
            ax.annotate(setting, (speed, summary.mean * 100), fontsize=6, xytext=(4, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.margins(x=0.25, y=0.15)
        ax.set_xlabel("words per CPU-second (one thread, log scale)")
        ax.set_ylabel("test score (%), mean and std over seeds")
        ax.set_title(label, fontsize=9)
    fig.suptitle("Score against speed per setting", fontsize=10)
    return _save(fig, path)


def plot_per_type(per_type: Dict[str, Tuple[Optional[Summary], Optional[Summary]]], title: str, path: Path) -> Path:
    """Per entity type F1, baseline vs ELMo."""
    labels = sorted(per_type)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels)), 3.6))
    _paired_bars(ax, labels, [per_type[label][0] for label in labels], [per_type[label][1] for label in labels])
    ax.set_ylabel("F1 (%)")
    ax.set_title(title)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    return _save(fig, path)


def plot_pretraining(curve: List[dict], path: Path, title: str = "biLM pretraining") -> Path:
    """Dev perplexity of the forward and backward LMs (log scale) against training step."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    steps = [r["step"] for r in curve]
    for key, label in (("dev_perplexity_forward", "forward LM"), ("dev_perplexity_backward", "backward LM")):
        values = [r.get(key) for r in curve]
        if any(v is not None for v in values):
            ax.plot(steps, values, marker="o", markersize=3, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("dev perplexity")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_layer_weights(mixes: Dict[str, Tuple[List[float], float]], path: Path) -> Path:
    """Each task's softmax layer weights (bars per layer), gamma in the legend."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    names = list(mixes)
    n_layers = max((len(w) for w, _ in mixes.values()), default=0)
    width = 0.8 / max(1, len(names))
    for index, name in enumerate(names):
        weights, gamma = mixes[name]
        xs = [layer - 0.4 + width * (index + 0.5) for layer in range(len(weights))]
        ax.bar(xs, weights, width, label=f"{name} (gamma {gamma:.2f})")
    ax.axhline(1.0 / max(1, n_layers), color="black", linewidth=0.8, linestyle=":", label="even mix")
    ax.set_xticks(list(range(n_layers)))
    ax.set_xticklabels(["0: char-CNN"] + [f"{j}: LSTM {j}" for j in range(1, n_layers)], fontsize=8)
    ax.set_ylabel("softmax weight")
    ax.set_title("Learned ELMo layer weights")
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def plot_probe(scores: Dict[str, Dict[int, float]], path: Path) -> Path:
    """Probe: dev score per single biLM layer, one line per task."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for task, by_layer in scores.items():
        layers = sorted(by_layer)
        ax.plot(layers, [by_layer[layer] * 100 for layer in layers], marker="o", label=task)
    all_layers = sorted({layer for by_layer in scores.values() for layer in by_layer})
    ax.set_xticks(all_layers)
    ax.set_xticklabels(
        [("0: char-CNN" if layer == 0 else f"{layer}: LSTM {layer}") for layer in all_layers], fontsize=8
    )
    ax.set_ylabel("dev score (%)")
    ax.set_title("One biLM layer at a time (fixed one-hot weights)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)
