"""The ``price`` step: one pipeline per setting measured by ``pipeline_price``, one file each.

Why one seed: the seeds of a setting share the architecture, so they cost the same to run; the
step measures ``seed{N}/model-best`` of the chosen seed (0 by default), or ``model-best`` of a
setting trained once, and writes ``PRICE_DIR/SETTING.json`` with the pipeline's checksum. A
pipeline measured earlier with the same checksum, test file and options is not measured again.
The pipelines are measured one after another, each in a fresh process with one thread, so that
no measurement shares its core with another. With a ``precision`` (the ELMo settings at
bfloat16 and int8), each pipeline runs with its ``elmo`` component's precision set to it and the
file is ``PRICE_DIR/SETTING@PRECISION.json``, the name of its scores (``scoring.precision_name``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from wasabi import msg

from ..checksums import sha256_of_path
from .pipeline_price import MAX_DOCS, measure_in_subprocess
from .scoring import SEED_DIR, pipelines_of, precision_name, test_file_for


def pipeline_of_seed(training_dir: Path, setting: str, seed: int) -> Tuple[Path, Optional[int]]:
    """The pipeline of ``seed`` (or the one pipeline of a setting trained once) and its seed."""
    found = pipelines_of(training_dir, setting)
    if len(found) == 1 and found[0][1].parent.name == setting:
        return found[0][1], None
    for _, model in found:
        match = SEED_DIR.search(model.parent.name)
        if match and int(match.group(1)) == seed:
            return model, seed
    raise FileNotFoundError(f"setting {setting!r} has no seed{seed}/model-best under {training_dir / setting}")


def is_current(path: Path, expected: dict) -> bool:
    """Whether ``path`` holds a price of the same pipeline checksum, test file and options."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return all(stored.get(key) == value for key, value in expected.items())


def price_settings(
    training_dir: Path,
    price_dir: Path,
    settings: Sequence[str],
    ner_test: Optional[Path],
    tagger_test: Optional[Path],
    textcat_test: Optional[Path] = None,
    seed: int = 0,
    max_docs: int = MAX_DOCS,
    precision: Optional[str] = None,
    conll_test: Optional[Path] = None,
) -> List[Path]:
    """Measure each setting's pipeline of ``seed`` into ``PRICE_DIR/SETTING.json`` (with a
    ``precision``: ``SETTING@PRECISION.json``); the files. A setting whose dataset was left out
    is not measured, and its old file is removed."""
    from ..datasets.left_out import left_out

    todo = []
    for setting in settings:
        dataset = left_out(training_dir / setting)
        if dataset is not None:
            msg.info(f"Setting {setting!r}: {dataset} was left out, nothing to measure")
            (price_dir / f"{precision_name(setting, precision)}.json").unlink(missing_ok=True)
            continue
        model, model_seed = pipeline_of_seed(training_dir, setting, seed)
        test_data = test_file_for(setting, ner_test, tagger_test, textcat_test, conll_test)
        todo.append((setting, model, model_seed, test_data))
    price_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for index, (setting, model, model_seed, test_data) in enumerate(todo, 1):
        name = precision_name(setting, precision)
        out = price_dir / f"{name}.json"
        expected = {
            "model_sha256": sha256_of_path(model),
            "test_data": str(test_data),
            "max_docs": max_docs,
            "precision": precision,
        }
        written.append(out)
        if is_current(out, expected):
            msg.good(f"[{index}/{len(todo)}] {name}: measured earlier ({out}), skipping")
            continue
        price = measure_in_subprocess(model, test_data, max_docs, precision)
        price.update(expected, setting=setting, seed=model_seed)
        out.write_text(json.dumps(price, indent=2) + "\n", encoding="utf-8")
        msg.good(
            f"[{index}/{len(todo)}] {name}: {price['words_per_cpu_second']:,.0f} words per CPU second "
            f"({price['words']:,} words, {price['cpu_seconds']:.1f} s), peak {price['peak_memory_mib']:.0f} MiB, "
            f"{price['size_mib']:.1f} MiB on disk -> {out}"
        )
    return written
