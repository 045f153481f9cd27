"""Training curves from ``metrics.jsonl`` as a PNG (matplotlib is imported only here)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from .output_folder import METRICS_FILE, read_metrics


def plot_training(output_dir: Union[str, Path], image_path: Optional[Union[str, Path]] = None) -> Path:
    """Plot train loss and perplexities against steps; returns the PNG's path."""
    output_dir = Path(output_dir)
    records = [r for r in read_metrics(output_dir / METRICS_FILE) if "step" in r]
    if not records:
        raise ValueError(f"No metrics to plot in {output_dir / METRICS_FILE}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise RuntimeError("plot-training needs matplotlib: pip install matplotlib") from err

    steps = [r["step"] for r in records]
    sampled = any(r.get("softmax") == "sampled" for r in records)
    train_label = "train (sampled-softmax estimate)" if sampled else "train"
    figure, (loss_axis, ppl_axis) = plt.subplots(1, 2, figsize=(11, 4))
    loss_axis.plot(steps, [_value(r, "train_loss") for r in records], marker="o", label=f"{train_label} loss")
    loss_axis.set(xlabel="step", ylabel="NLL per token (mean of directions)", title="Training loss")
    loss_axis.grid(alpha=0.3)
    loss_axis.legend()
    for key, label in (
        ("train_perplexity", train_label),
        ("dev_perplexity_forward", "dev, forward LM"),
        ("dev_perplexity_backward", "dev, backward LM"),
    ):
        values = [_value(r, key) for r in records]
        if any(v == v for v in values):
            ppl_axis.plot(steps, values, marker="o", label=label)
    ppl_axis.set(xlabel="step", ylabel="perplexity", title="Perplexity", yscale="log")
    ppl_axis.grid(alpha=0.3, which="both")
    ppl_axis.legend()
    figure.tight_layout()
    target = Path(image_path) if image_path is not None else output_dir / "training.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=120)
    plt.close(figure)
    return target


def _value(record: dict, key: str) -> float:
    value = record.get(key)
    return float(value) if isinstance(value, (int, float)) else float("nan")
