"""``spacy train`` runs that a rerun skips when finished: the training steps (one run per seed,
per probed layer, per recipe variant) go on where a failure stopped them.

``train_unless_done(config, output_dir, overrides)`` runs ``spacy train`` (in this process,
the same function the ``python -m spacy train`` command calls) unless ``output_dir`` already
holds a finished run of exactly these inputs. A finished run is marked by
``output_dir/inputs.json``, written after training succeeded, holding the overrides, the
SHA-256 of the config and of every file or folder the overrides name, and the SHA-256 of what
the run made (``model-best``). So when one run of several fails, rerunning the step redoes only
the runs that did not finish; and a run whose product was changed or damaged since (a file cut
short, removed or edited) is trained again, with a warning naming the folder, never reused.
"""
from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Sequence

from wasabi import msg

from ..checksums import sha256_of_path

DONE_FILE = "inputs.json"


def parse_overrides(args: Sequence[str]) -> Dict[str, Any]:
    """``--section.key value`` pairs parsed as ``spacy train`` parses them."""
    from spacy.cli._util import parse_config_overrides

    return parse_config_overrides(list(args))


def describe_run(config: Path, overrides: Dict[str, Any]) -> dict:
    """What identifies a run: config and overrides, with the content of every path they name."""
    contents = {str(config): sha256_of_path(config)}
    for value in overrides.values():
        if isinstance(value, str) and value and Path(value).exists():
            contents[value] = sha256_of_path(Path(value))
    return {"config": str(config), "overrides": overrides, "sha256": contents}


def is_done(output_dir: Path, description: dict, product: str = "model-best") -> bool:
    """Whether output_dir holds a finished run of exactly this description whose ``product`` is
    what that run made (its SHA-256 as recorded); a product changed since is said, by name."""
    try:
        stored = json.loads((output_dir / DONE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(stored, dict) or stored.get("inputs") != json.loads(json.dumps(description)):
        return False
    made = output_dir / product
    if stored.get("product") != product or not made.exists():
        return False
    if sha256_of_path(made) != stored.get("product_sha256"):
        msg.warn(f"{made} is not what the finished run made there (changed or damaged since): running it again")
        return False
    return True


def mark_done(output_dir: Path, description: dict, product: str = "model-best") -> None:
    """Record that output_dir holds a finished run of this description, and the SHA-256 of its
    ``product`` (after the run succeeded)."""
    record = {"inputs": description, "product": product, "product_sha256": sha256_of_path(output_dir / product)}
    (output_dir / DONE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def train_unless_done(config: Path, output_dir: Path, overrides: Dict[str, Any], use_gpu: int = -1) -> bool:
    """Train into output_dir unless it holds this very run already; True if it trained.

    The device is not part of a run's identity: a run finished on a GPU counts on a CPU too.
    """
    from spacy.cli.train import train

    description = describe_run(config, overrides)
    if is_done(output_dir, description):
        msg.good(f"{output_dir}: finished earlier with the same inputs, skipping")
        return False
    if output_dir.exists():
        shutil.rmtree(output_dir)
    msg.divider(f"spacy train {config} --output {output_dir}")
    train(config, output_dir, use_gpu=use_gpu, overrides=overrides)
    mark_done(output_dir, description)
    gc.collect()
    return True


def parse_int_list(text: str) -> List[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; spaces allowed, at least one number."""
    values = [int(part) for part in text.replace(" ", ",").split(",") if part.strip()]
    if not values:
        raise ValueError(f"expected comma-separated integers, got {text!r}")
    return values


def gpu_id(choice: str) -> int:
    """``spacy train``'s ``--gpu-id`` from ``auto`` (GPU 0 when torch sees a GPU and CuPy is
    installed, else the CPU) or a number (-1: the CPU)."""
    if choice.strip().lower() != "auto":
        return int(choice)
    import importlib.util

    import torch

    return 0 if torch.cuda.is_available() and importlib.util.find_spec("cupy") is not None else -1


FOLD = "{fold}"  # in an override's value: the fold's number (train_seeds' ``folds``)


def train_seeds(config: Path, output_dir: Path, seeds: Sequence[int], overrides: Dict[str, Any],
                use_gpu: int = -1, jobs: int = 1, folds: Sequence[int] = ()) -> None:
    """One run per seed into ``output_dir/seed{N}`` (``system.seed`` = N); finished seeds are
    skipped. The spread over seeds is what the report shows.

    With ``folds`` (cross-validation), one run per fold and seed into
    ``output_dir/fold{K}/seed{N}``, ``{fold}`` in an override's value replaced by K (the fold's
    corpora: ``--paths.train corpus/tweets/fold{fold}/train.spacy``).

    A training corpus (``paths.train``) in a folder whose dataset was left out
    (``datasets.left_out``) trains nothing: ``output_dir`` then holds the marker alone.

    ``jobs`` > 1 trains that many runs at a time, each in its own process (CPU only: on a GPU
    they take turns); a run's weights do not depend on it (tested).
    """
    from ..datasets.left_out import MARKER, left_out, mark
    from ..parallel.pool import run_parallel

    train = overrides.get("paths.train")
    dataset = left_out(Path(str(train).replace(FOLD, str(folds[0] if folds else 0)))) if train else None
    if dataset is not None:
        if output_dir.exists():
            shutil.rmtree(output_dir)
        mark(output_dir, dataset)
        msg.info(f"{train}: {dataset} was left out, nothing to train ({output_dir / MARKER})")
        return
    (output_dir / MARKER).unlink(missing_ok=True)
    if folds:
        runs = [
            (config, output_dir / f"fold{fold}" / f"seed{seed}",
             {**{key: value.replace(FOLD, str(fold)) if isinstance(value, str) else value
                 for key, value in overrides.items()}, "system.seed": seed}, use_gpu)
            for fold in folds for seed in seeds
        ]
    else:
        runs = [(config, output_dir / f"seed{seed}", {**overrides, "system.seed": seed}, use_gpu) for seed in seeds]
    run_parallel(train_unless_done, runs, jobs if use_gpu < 0 else 1)
