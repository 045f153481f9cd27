"""Train an ELMo config once per biLM layer, the task seeing only that layer.

Usage: ``train_probes.py CONFIG OUTPUT_DIR --component tagger --layers 0,1,2
[spacy train overrides...]``. For each layer j, the component's ELMo listener block
(``components.COMPONENT.model.tok2vec.elmo``) is switched to
``spacy_elmo_project.ElmoSingleLayer.v1`` with ``layer = j`` (fixed one-hot layer weights,
see ``probe_layers.py``); the resulting config is written to ``OUTPUT_DIR/layer{j}.cfg`` and
trained into ``OUTPUT_DIR/layer{j}``. A layer that finished earlier with the same inputs is
skipped. ``probe_report.py`` reads the dev scores from each ``model-best/meta.json``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from thinc.api import Config

import probe_layers
from train_runs import parse_int_list, parse_overrides, train_unless_done


def probe_config(config: Config, component: str, layer: int) -> Config:
    """A copy of config whose component reads only ``layer`` of the biLM."""
    probe = Config().from_str(config.to_str(), interpolate=False)
    try:
        listener = dict(probe["components"][component]["model"]["tok2vec"]["elmo"])
    except (KeyError, TypeError):
        raise SystemExit(f"the config has no ELMo listener at components.{component}.model.tok2vec.elmo")
    listener["@architectures"] = probe_layers.ARCHITECTURE
    listener["layer"] = layer
    probe["components"][component]["model"]["tok2vec"]["elmo"] = listener
    return probe


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("config", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--component", required=True, help="the pipe whose listener is probed, e.g. ner")
    parser.add_argument("--layers", type=parse_int_list, default=[0, 1, 2],
                        help="comma-separated biLM layers (default 0,1,2)")
    args, extra = parser.parse_known_args(argv)
    overrides = parse_overrides(extra)
    config = Config().from_disk(args.config, interpolate=False)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for layer in args.layers:
        layer_config = args.output_dir / f"layer{layer}.cfg"
        probe_config(config, args.component, layer).to_disk(layer_config)
        train_unless_done(layer_config, args.output_dir / f"layer{layer}", overrides)
    return 0


if __name__ == "__main__":
    sys.exit(main())
