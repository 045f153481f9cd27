"""Train an ELMo config once per biLM layer, the task seeing only that layer.

The ``probe`` workflow (``python -m scripts train-probes``). For each layer j, the component's ELMo listener
(``components.COMPONENT.model.tok2vec.elmo``, a ``spacy_elmo.ElmoListener.v1``) gets
``fixed_layer_weights`` = the one-hot vector of layer j (0 = char-CNN, j = LSTM layer j): the
task sees that layer times a learned gamma, and the weights are never trained. The number of
biLM layers comes from the weights at ``paths.elmo`` (the override, else the config's), or from
``[components.elmo.model] n_layers`` for a random biLM. The resulting config is written to
``OUTPUT_DIR/layer{j}.cfg`` and trained into ``OUTPUT_DIR/layer{j}``. A layer that finished
earlier with the same inputs is skipped. The ``probe-report`` command reads the dev scores from each
``model-best/meta.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence

from thinc.api import Config

from .runs import train_unless_done

LISTENER = "spacy_elmo.ElmoListener.v1"


def one_hot(layer: int, n_layers: int) -> List[float]:
    """Fixed layer weights that keep only ``layer`` of ``n_layers`` (char-CNN included)."""
    if not 0 <= layer < n_layers:
        raise SystemExit(f"layer {layer} asked for, but the biLM has layers 0..{n_layers - 1}")
    return [1.0 if j == layer else 0.0 for j in range(n_layers)]


def probe_config(config: Config, component: str, layer: int, n_layers: int) -> Config:
    """A copy of config whose component reads only ``layer`` of the biLM."""
    probe = Config().from_str(config.to_str(), interpolate=False)
    try:
        listener = dict(probe["components"][component]["model"]["tok2vec"]["elmo"])
    except (KeyError, TypeError):
        raise SystemExit(f"the config has no ELMo listener at components.{component}.model.tok2vec.elmo")
    if listener.get("@architectures") != LISTENER:
        raise SystemExit(f"components.{component}.model.tok2vec.elmo must be {LISTENER}, "
                         f"not {listener.get('@architectures')}")
    listener["fixed_layer_weights"] = one_hot(layer, n_layers)
    listener["layer_dropout"] = 0.0  # nothing to drop from a single fixed layer
    probe["components"][component]["model"]["tok2vec"]["elmo"] = listener
    return probe


def bilm_layer_count(config: Config, overrides: Dict[str, Any]) -> int:
    """Layers the biLM will output (char-CNN + LSTM layers): loaded weights bring their own."""
    weights = overrides.get("paths.elmo", config.get("paths", {}).get("elmo"))
    if weights:
        from spacy_elmo.pipeline.weights import load_bilm_weights

        return load_bilm_weights(weights).config.n_output_layers
    try:
        return int(config["components"]["elmo"]["model"]["n_layers"]) + 1
    except (KeyError, TypeError, ValueError):
        raise SystemExit("no ELMo weights (paths.elmo) and no [components.elmo.model] n_layers: "
                         "cannot tell how many biLM layers to probe")


def train_probes(config_path: Path, output_dir: Path, component: str, layers: Sequence[int],
                 overrides: Dict[str, Any]) -> None:
    """One run per layer: ``OUTPUT_DIR/layer{j}.cfg`` trained into ``OUTPUT_DIR/layer{j}``."""
    config = Config().from_disk(config_path, interpolate=False)
    n_layers = bilm_layer_count(config, overrides)
    probes = {layer: probe_config(config, component, layer, n_layers) for layer in layers}
    output_dir.mkdir(parents=True, exist_ok=True)
    for layer, probe in probes.items():  # every layer checked before the first run
        layer_config = output_dir / f"layer{layer}.cfg"
        probe.to_disk(layer_config)
        train_unless_done(layer_config, output_dir / f"layer{layer}", overrides)
