"""Summarize the layer probes: which biLM layer serves which task (the ``probe-report`` step).

Each probe folder is a ``training.probes`` output (``layer{j}/model-best``); the task's score is the best dev
score spaCy recorded in ``model-best/meta.json`` (``tag_acc``, else ``pos_acc``, for a tagger;
``ents_f`` for NER). Writes ``probe.md`` (a table, layers by task) and ``probe_layers.png``
and prints the table. The ELMo paper's reading: lower layers carry syntax (POS), higher
layers semantics; the table shows whether this biLM agrees.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Sequence, Tuple

from . import plots
from .text import markdown_table

# a tagger predicts token.tag_ (tag_acc); meta.json also lists pos_acc = 0 then, so tag_acc first.
# The project's Brown corpora carry UPOS in tag_ (preprocess_brown.py): tag_acc is UPOS accuracy.
SCORE_KEYS = (("tag_acc", "UPOS accuracy"), ("pos_acc", "UPOS accuracy"), ("ents_f", "NER F1"))
LAYER_DIR = re.compile(r"layer(\d+)$")


def probe_scores(probe_dir: Path) -> Tuple[str, Dict[int, float]]:
    """(score name, {layer: dev score}) of one probe folder."""
    scores: Dict[int, float] = {}
    name = "score"
    for path in sorted(probe_dir.glob("layer*/model-best/meta.json")):
        match = LAYER_DIR.search(path.parent.parent.name)
        if not match:
            continue
        performance = json.loads(path.read_text(encoding="utf-8")).get("performance", {})
        for key, label in SCORE_KEYS:
            if isinstance(performance.get(key), (int, float)):
                scores[int(match.group(1))] = float(performance[key])
                name = label
                break
    return name, scores


def write_probe_report(probe_dirs: Sequence[Path], output_dir: Path) -> str:
    """Write ``probe.md`` and ``probe_layers.png`` into output_dir; returns the table. A probe
    folder without results is a ValueError naming it."""
    by_task: Dict[str, Dict[int, float]] = {}
    for probe_dir in probe_dirs:
        name, scores = probe_scores(probe_dir)
        if not scores:
            raise ValueError(f"no probe results in {probe_dir} (expected layer<N>/model-best/meta.json)")
        by_task[f"{probe_dir.name} ({name}, dev)"] = scores
    layers = sorted({layer for scores in by_task.values() for layer in scores})
    rows = [
        [task]
        + [f"{scores[layer] * 100:.2f}" if layer in scores else "n/a" for layer in layers]
        + [str(max(scores, key=scores.get))]
        for task, scores in by_task.items()
    ]
    headers = ["probe"] + [
        ("layer 0 (char-CNN)" if layer == 0 else f"layer {layer} (LSTM {layer})") for layer in layers
    ]
    table = markdown_table(headers + ["best layer"], rows)
    output_dir.mkdir(parents=True, exist_ok=True)
    figure = plots.plot_probe(by_task, output_dir / "probe_layers.png")
    text = [
        "# Layer probes",
        "",
        "Each task trained on a single biLM layer (fixed one-hot layer weights), scored on dev.",
        "",
        table,
        "",
        f"![probe]({figure.name})",
        "",
    ]
    (output_dir / "probe.md").write_text("\n".join(text), encoding="utf-8")
    return table
