"""Resuming a pretraining run: ``--resume`` and ``--auto-resume``, and what they check first.

``--resume`` (:func:`open_output`) continues the run saved in ``OUTPUT_DIR`` exactly where its
checkpoint stopped: weights, optimizer, data positions and every process's random states
(:func:`restore_random_states`) come from the checkpoint, the vocabulary from the folder
(:func:`saved_vocabulary`), and ``metrics.jsonl`` is cut back to the checkpoint's step
(:func:`truncate_metrics`), since the steps after it are trained again.

Changed settings. The run's folder keeps the config of its first session (``config.cfg``). On
resume the current settings are compared with it, key by key (:func:`compare_resumed_settings`):

- refused: the model's sizes (the checkpoint's weights have the old ones) and the training
  text (the saved data positions point into the old files);
- ignored, with a warning saying so: the seed (random states come from the checkpoint), the
  vocabulary settings (the vocabulary saved in the folder is used), ``paths.init_from`` (the
  weights come from the checkpoint) and ``training.shards`` (the saved data positions fix it);
- anything else applies from the resumed step on, with a warning that the run will no longer
  equal an uninterrupted one. ``max_steps``, ``max_minutes``, ``device`` and ``threads`` are
  expected to change between sessions and are not reported.

Changed text. A checkpoint remembers where each shard stopped as (file number, byte offset). If
the files are rewritten in place (same path, other content), those positions mean nothing: a
resume would silently skip or repeat text. So a run records every training file's name, size
and SHA-256 in its checkpoints (:func:`fingerprint_training_text`), and ``--resume`` refuses to
continue when any differs (:func:`compare_training_text`). Hashing reads the whole text once
per session, about a second per GB; rank 0 does it and tells the others.

``--auto-resume`` (:func:`resume_or_start_over`): continue an interrupted run of the same inputs,
else start over. A run started this way first records what it was started with in
``OUTPUT_DIR/inputs.json``: the config's path, the command-line overrides, and the SHA-256 of the
config and of every file or folder the overrides name. The next call with ``--auto-resume``
resumes when those inputs are unchanged and a checkpoint is there; otherwise it deletes the old
run and starts a fresh one. A folder that does not look like a pretraining run (none of the
files only a run writes) is never deleted: that is an error. A workflow can therefore rerun its
pretraining step blindly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ..corpora.files import list_corpus_files
from .checkpoint import CheckpointState, restore_rng
from .distributed import Distributed, run_on_main
from .errors import PretrainError, ResumeSettingsError, reading, writing
from .output_folder import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    INPUTS_FILE,
    METRICS_FILE,
    VOCAB_FILE,
    is_run_folder,
    read_metrics,
)
from .settings import PretrainSettings, load_config, settings_from_config
from .softmax import SoftmaxLoss
from .vocab import Vocabulary

logger = logging.getLogger("spacy_elmo.pretrain")

FileFingerprint = dict[str, object]  # {"file": relative name, "size": bytes, "sha256": hex}
RunInputs = dict[str, Any]  # what identifies a run for --auto-resume (see describe_inputs)


# ---------------------------------------------------------------- --resume
def open_output(
    settings: PretrainSettings, out: Path, context: Distributed, resume: bool, config_text: str
) -> Optional[CheckpointState]:
    """The checkpoint to resume from (None for a new run, whose folder is made here)."""
    checkpoint_path = out / CHECKPOINT_FILE
    if resume:
        if not checkpoint_path.is_file():
            raise PretrainError(f"--resume: no checkpoint in {out} ({CHECKPOINT_FILE} is missing)")
        resumed = CheckpointState.load(checkpoint_path)
        step = resumed.progress.step
        for message in compare_resumed_settings(out / CONFIG_FILE, settings, step):
            logger.warning(message)
        if context.is_main:
            truncate_metrics(out / METRICS_FILE, step)
        logger.info("Resuming from step %d of %s", step, checkpoint_path)
        return resumed
    if checkpoint_path.exists():
        raise PretrainError(
            f"{out} already holds a pretraining run ({CHECKPOINT_FILE}); "
            "pass --resume to continue it or choose another output folder"
        )
    if context.is_main:
        with writing(out):
            out.mkdir(parents=True, exist_ok=True)
        with writing(out / METRICS_FILE):
            (out / METRICS_FILE).unlink(missing_ok=True)
        if config_text:
            with writing(out / CONFIG_FILE):
                (out / CONFIG_FILE).write_text(config_text, encoding="utf8")
    return None


def restore_random_states(resumed: CheckpointState, loss: SoftmaxLoss, rank: int) -> None:
    """This process's random states (and its negative sampler's) as the checkpoint saved them."""
    if rank < len(resumed.rng):
        restore_rng(resumed.rng[rank], loss.generator)
    else:
        logger.warning("The checkpoint has no random state for process %d: reseeded", rank)


def saved_vocabulary(out: Path) -> Vocabulary:
    """The vocabulary the run began with (its folder's ``vocab.json``)."""
    return Vocabulary.from_disk(out / VOCAB_FILE)


def truncate_metrics(path: Union[str, Path], last_step: int) -> None:
    """Drop records after ``last_step``: a resumed run redoes those steps and logs them again."""
    path = Path(path)
    if not path.is_file():
        return
    kept = [r for r in read_metrics(path) if int(r.get("step", 0)) <= last_step]
    tmp = path.with_name(path.name + ".tmp")
    with writing(path):
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf8")
        os.replace(tmp, path)


# ---------------------------------------------------------------- changed settings
REFUSED = {
    "model": "the checkpoint's weights have the sizes the run began with",
    "paths.train": "the saved data positions point into the files the run began with",
}
IGNORED = {
    "system.seed": "random states are restored from the checkpoint",
    "vocab": "the vocabulary saved in the run's folder is used",
    "paths.vocab": "the vocabulary saved in the run's folder is used",
    "paths.init_from": "the weights come from the checkpoint",
    "training.shards": "the number of data shards is fixed by the checkpoint",
}
NOT_REPORTED = {"training.max_steps", "training.max_minutes", "system.device", "system.threads"}


def compare_resumed_settings(saved_config: Path, current: PretrainSettings, step: int) -> list[str]:
    """Warnings for the changes a resume accepts; raise :class:`ResumeSettingsError` for the
    ones it cannot honour. A folder without its saved config gets one warning."""
    if not saved_config.is_file():
        return [f"{saved_config} is missing: changed settings cannot be detected on this resume"]
    try:
        saved = settings_from_config(load_config(saved_config))
    except (ValueError, OSError) as err:
        return [f"{saved_config} cannot be read ({err}): changed settings cannot be detected on this resume"]
    old, new = _flatten(dataclasses.asdict(saved)), _flatten(dataclasses.asdict(current))
    changed = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key) and key not in NOT_REPORTED)
    refused = [key for key in changed if _rule(key, REFUSED)]
    if refused:
        details = "; ".join(f"{key}: {old.get(key)!r} -> {new.get(key)!r} ({_rule(key, REFUSED)})" for key in refused)
        raise ResumeSettingsError(
            f"--resume cannot honour changed settings: {details}. Resume with the settings in {saved_config}, "
            "or start a new run in another folder"
        )
    warnings = []
    for key in changed:
        reason = _rule(key, IGNORED)
        if reason:
            warnings.append(f"--resume ignores the changed {key} ({old.get(key)!r} -> {new.get(key)!r}): {reason}")
        else:
            warnings.append(
                f"--resume: {key} changed ({old.get(key)!r} -> {new.get(key)!r}); it applies from step {step} on, "
                "so the run will not equal an uninterrupted one"
            )
    return warnings


def compare_training_text(
    recorded: Optional[list[FileFingerprint]], current: list[FileFingerprint], checkpoint: Path
) -> list[str]:
    """Refuse a resume whose training files changed since the checkpoint's run began; a warning
    when the checkpoint is too old to say."""
    if recorded is None:
        return [
            f"{checkpoint} records no fingerprint of the training text (an older spacy-elmo wrote it): "
            "rewritten training files cannot be detected on this resume"
        ]
    change = describe_change(recorded, current)
    if change is not None:
        raise ResumeSettingsError(
            f"--resume cannot continue {checkpoint}: the training text changed since the run began ({change}), "
            "so its saved data positions no longer mean anything. Restore the text the run began with, "
            "or start a new run in another folder"
        )
    return []


def _rule(key: str, rules: dict[str, str]) -> str:
    section = key.split(".", 1)[0]
    return rules.get(key) or rules.get(section) or ""


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = _plain(value)
    return flat


def _plain(value: Any) -> Any:
    """Tuples and lists compare equal when their items do (configs give lists, code tuples)."""
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


# ---------------------------------------------------------------- changed text
def fingerprint_training_text(path: Union[str, Path]) -> list[FileFingerprint]:
    """Every file read from ``path`` (a file or a folder), in reading order."""
    root = Path(path)
    prints = []
    with reading(root):
        files = list_corpus_files(root)
    for file in files:
        digest = hashlib.sha256()
        with reading(file):
            _add_file(digest, file)
            size = file.stat().st_size
        name = file.name if file == root else str(file.relative_to(root))
        prints.append({"file": name, "size": size, "sha256": digest.hexdigest()})
    return prints


def shared_fingerprint(context: Distributed, path: Union[str, Path]) -> list[FileFingerprint]:
    """:func:`fingerprint_training_text` computed once, on rank 0, and given to every process."""
    value = run_on_main(context, lambda: fingerprint_training_text(path), lambda: None)
    return context.gather(value)[0]


def describe_change(recorded: list[FileFingerprint], current: list[FileFingerprint]) -> Optional[str]:
    """None when the text is the one recorded, else what differs first, in words."""
    if recorded == current:
        return None
    old = {str(item["file"]): item for item in recorded}
    new = {str(item["file"]): item for item in current}
    gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    if gone or added:
        parts = ([f"{', '.join(gone)} gone"] if gone else []) + ([f"{', '.join(added)} new"] if added else [])
        return "the training files are not the same: " + "; ".join(parts)
    for name in old:
        if old[name]["size"] != new[name]["size"]:
            return f"{name} changed size ({old[name]['size']:,} -> {new[name]['size']:,} bytes)"
        if old[name]["sha256"] != new[name]["sha256"]:
            return f"{name} has other content (same size, another SHA-256)"
    return "the training files are read in another order"


# ---------------------------------------------------------------- --auto-resume
def describe_inputs(config_path: Path, overrides: Sequence[str]) -> RunInputs:
    """What identifies a run: the config, the overrides as given, and the content of every
    existing path among the override values (``--paths.train DIR`` or ``--paths.train=DIR``)."""
    contents = {str(config_path): content_digest(config_path)}
    for arg in overrides:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if value and not value.startswith("-") and Path(value).exists():
            contents[value] = content_digest(Path(value))
    return {"config": str(config_path), "overrides": list(overrides), "sha256": contents}


def content_digest(path: Path) -> str:
    """SHA-256 of a file's bytes; for a folder, of each file's path inside it (sorted) and bytes."""
    digest = hashlib.sha256()
    with reading(path):
        if path.is_file():
            _add_file(digest, path)
            return digest.hexdigest()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
            _add_file(digest, file)
    return digest.hexdigest()


def resume_or_start_over(output_dir: Path, inputs: RunInputs) -> bool:
    """True when ``output_dir`` holds an interrupted run of ``inputs`` to resume. Otherwise the
    old run (if any) is deleted, the folder made anew with ``inputs.json`` in it, and False."""
    if recorded_inputs(output_dir) == inputs and (output_dir / CHECKPOINT_FILE).is_file():
        return True
    _delete_old_run(output_dir)
    with writing(output_dir / INPUTS_FILE):
        output_dir.mkdir(parents=True)
        (output_dir / INPUTS_FILE).write_text(json.dumps(inputs, indent=2) + "\n", encoding="utf-8")
    return False


def recorded_inputs(output_dir: Path) -> Optional[RunInputs]:
    """The inputs the run in ``output_dir`` was started with (None if it has no record)."""
    try:
        return json.loads((output_dir / INPUTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _delete_old_run(output_dir: Path) -> None:
    if not output_dir.exists():
        return
    if not output_dir.is_dir():
        raise PretrainError(f"{output_dir} is a file, not an output folder")
    if not any(output_dir.iterdir()):
        output_dir.rmdir()
        return
    if not is_run_folder(output_dir):
        raise PretrainError(
            f"{output_dir} is not empty and holds no pretraining run: not deleting it; choose another output folder"
        )
    here = Path(os.getcwd()).resolve()
    if output_dir.resolve() in (here, *here.parents):
        raise PretrainError(f"{output_dir} holds the current folder: not deleting it; choose another output folder")
    with writing(output_dir):
        shutil.rmtree(output_dir)


def _add_file(digest: Any, path: Path) -> None:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
