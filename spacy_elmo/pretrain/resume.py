"""Resuming a pretraining run: ``--resume`` and ``--auto-resume``, and what they check first.

``--resume`` (:func:`open_output`) continues the run saved in ``OUTPUT_DIR`` exactly where its
checkpoint stopped: weights, optimizer, data positions and every process's random states
(:func:`restore_random_states`) come from the checkpoint, the vocabulary from the folder
(:func:`saved_vocabulary`), and ``metrics.jsonl`` is cut back to the checkpoint's step
(:func:`truncate_metrics`), since the steps after it are trained again.

Another run's checkpoint. A ``checkpoint.pt`` copied from elsewhere would otherwise resume with
its own sizes, silently, or fail deep in ``load_state_dict``. Before anything is loaded, the
checkpoint's model config is compared with the architecture the run began with (its
``config.cfg``'s ``[model]``, or the ``--init-from`` model's) and its vocabulary (size, and the
words' SHA-256 in checkpoints that record it) with the run's ``vocab.json``; a mismatch is
refused with both files named (:func:`check_checkpoint_fits`).

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

``--auto-resume`` (:func:`resume_or_start_over`): continue an interrupted run of the same
settings, else start over. A run started this way first records what identifies it in
``OUTPUT_DIR/inputs.json`` (:func:`describe_run`): every setting after the config and the
command line are parsed and resolved, and the SHA-256 of the content of every file or folder a
``paths.*`` setting names (so the config's own path, the order of the options, ``--key=value``
for ``--key value`` and a relative for an absolute path change nothing). The next call resumes
when these are equal and a checkpoint is there. Otherwise an earlier run is never deleted: it
is moved aside to ``OUTPUT_DIR.previous-N`` (the first free N), with a warning naming each
setting that differs, and a fresh run starts (only a run of the very same settings that never
reached its first checkpoint is cleared). A folder that does not look like a pretraining run
(none of the files only a run writes) is left alone: that is an error. A workflow can therefore
rerun its pretraining step blindly.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import itertools
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Optional, Union

from ..config import BiLMConfig
from ..corpora.files import list_corpus_files
from ..durable import write_bytes_atomically
from .checkpoint import CheckpointState, restore_rng
from .distributed import Distributed, run_on_main
from .errors import CheckpointMismatchError, PretrainError, ResumeSettingsError, reading, writing
from .initialization import load_existing_model
from .output_folder import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    INPUTS_FILE,
    METRICS_FILE,
    VOCAB_FILE,
    is_run_folder,
    read_metrics,
    remove_leftover_temporaries_of_run,
)
from .settings import PretrainSettings, load_config, settings_from_config
from .softmax import SoftmaxLoss
from .vocab import Vocabulary

logger = logging.getLogger("spacy_elmo.pretrain")

FileFingerprint = dict[str, object]  # {"file": relative name, "size": bytes, "sha256": hex}
RunInputs = dict[str, Any]  # what identifies a run for --auto-resume (see describe_run)


# ---------------------------------------------------------------- --resume
def open_output(
    settings: PretrainSettings, out: Path, context: Distributed, resume: bool, config_text: str
) -> Optional[CheckpointState]:
    """The checkpoint to resume from (None for a new run, whose folder is made here)."""
    checkpoint_path = out / CHECKPOINT_FILE
    if resume:
        if not checkpoint_path.is_file():
            raise PretrainError(f"--resume: no checkpoint in {out} ({CHECKPOINT_FILE} is missing)")
        if context.is_main:
            remove_leftover_temporaries_of_run(out)
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
        remove_leftover_temporaries_of_run(out)
        with writing(out / METRICS_FILE):
            (out / METRICS_FILE).unlink(missing_ok=True)
        if config_text:
            with writing(out / CONFIG_FILE):
                write_bytes_atomically(out / CONFIG_FILE, config_text.encode("utf8"))
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
    with writing(path):
        write_bytes_atomically(path, "".join(json.dumps(r) + "\n" for r in kept).encode("utf8"))


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
    old, new = _resolved(_flatten(dataclasses.asdict(saved))), _resolved(_flatten(dataclasses.asdict(current)))
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


# ---------------------------------------------------------------- another run's checkpoint
def run_architecture(out: Path, settings: PretrainSettings) -> tuple[Optional[BiLMConfig], str]:
    """The model sizes the run in ``out`` began with and where they are written: its
    ``config.cfg``'s ``[model]``, or the ``--init-from`` model's config (None, with a warning,
    when that model can no longer be read)."""
    saved_config = out / CONFIG_FILE
    saved = _saved_settings(saved_config)
    began = saved or settings
    if not began.paths.init_from:
        return began.model, f"{saved_config if saved is not None else 'the config'} [model]"
    try:
        return load_existing_model(began.paths.init_from).config, f"the --init-from model {began.paths.init_from}"
    except PretrainError as err:
        logger.warning(
            "--resume cannot compare the checkpoint's model sizes with the run's: its --init-from model %s "
            "cannot be read (%s)",
            began.paths.init_from,
            err,
        )
        return None, ""


def check_checkpoint_fits(
    resumed: CheckpointState,
    checkpoint: Path,
    vocab: Vocabulary,
    vocab_file: Path,
    architecture: Optional[BiLMConfig],
    architecture_source: str,
) -> None:
    """Refuse, with :class:`CheckpointMismatchError`, a checkpoint whose model has other sizes
    than ``architecture`` (the run's; None: not known) or predicts another vocabulary than
    ``vocab``: it was copied from another run."""
    try:
        found = BiLMConfig.from_dict(resumed.model_config)
    except (TypeError, ValueError) as err:
        raise CheckpointMismatchError(f"{checkpoint}: its model config cannot be used ({err})") from err
    problems = []
    if architecture is not None:
        theirs, ours = found.to_dict(), architecture.to_dict()
        problems += [
            f"{key} {theirs.get(key)!r} where {architecture_source} has {ours.get(key)!r}"
            for key in sorted(theirs.keys() | ours.keys())
            if key != "vocab_size" and theirs.get(key) != ours.get(key)
        ]
    if found.vocab_size != len(vocab):
        problems.append(f"a softmax over {found.vocab_size:,} words where {vocab_file} has {len(vocab):,}")
    elif resumed.vocab_sha256 is not None and resumed.vocab_sha256 != vocab.digest():
        problems.append(f"other words than {vocab_file} (as many, another SHA-256)")
    if problems:
        raise CheckpointMismatchError(
            f"{checkpoint} is another run's checkpoint: its model has {'; '.join(problems)}. Put this run's "
            "own checkpoint back, or resume that one in its own folder"
        )


def _saved_settings(saved_config: Path) -> Optional[PretrainSettings]:
    """The settings of a run's ``config.cfg``; None when it is missing or unreadable (the
    settings comparison warns about that)."""
    if not saved_config.is_file():
        return None
    try:
        return settings_from_config(load_config(saved_config))
    except (ValueError, OSError):
        return None


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


def _resolved(flat: dict[str, Any]) -> dict[str, Any]:
    """The settings with the paths of :data:`FILE_SETTINGS` made absolute: ``corpus/train.txt``
    and its absolute spelling are one setting."""
    return {
        key: str(Path(value).expanduser().resolve()) if key in FILE_SETTINGS and value else value
        for key, value in flat.items()
    }


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
RUN_RECORD_FORMAT = 2  # inputs.json of releases before it held the command's words (format 1, unmarked)
FILE_SETTINGS = ("paths.train", "paths.dev", "paths.vocab", "paths.init_from")  # compared by content


def describe_run(settings: PretrainSettings) -> RunInputs:
    """What identifies a run for ``--auto-resume``: every parsed setting, except that the files
    and folders named by ``paths.*`` are given by their content (SHA-256) and absolute path,
    and an existing ``corpus.pipeline`` folder by its absolute path."""
    flat = _flatten(dataclasses.asdict(settings))
    files: dict[str, Any] = {}
    for key in FILE_SETTINGS:
        value = flat.pop(key, None)
        if value is not None:
            path = Path(value).expanduser()
            digest = content_digest(path) if path.exists() else None
            files[key] = {"path": str(path.resolve()), "sha256": digest}
    pipeline = flat.get("corpus.pipeline")
    if pipeline is not None and Path(pipeline).expanduser().exists():
        flat["corpus.pipeline"] = str(Path(pipeline).expanduser().resolve())
    record = {"format": RUN_RECORD_FORMAT, "settings": flat, "files": files}
    return json.loads(json.dumps(record))  # as it reads back from inputs.json (lists for tuples)


def describe_differences(recorded: Optional[RunInputs], current: RunInputs) -> list[str]:
    """One line per setting in which the run ``recorded`` differs from ``current`` (empty: the
    same run); one line saying why when the record cannot be compared."""
    if recorded is None:
        return [f"it has no readable {INPUTS_FILE} (it was not started with --auto-resume)"]
    if not isinstance(recorded, dict) or recorded.get("format") != RUN_RECORD_FORMAT:
        return [f"its {INPUTS_FILE} was written by an older spacy-elmo and cannot be compared with these settings"]
    old, new = recorded.get("settings") or {}, current["settings"]
    lines = [
        f"{key}: {_shown(old, key)} -> {_shown(new, key)}"
        for key in sorted(old.keys() | new.keys())
        if old.get(key, _ABSENT) != new.get(key, _ABSENT)
    ]
    old_files, new_files = recorded.get("files") or {}, current["files"]
    for key in sorted(old_files.keys() | new_files.keys()):
        before, now = old_files.get(key) or {}, new_files.get(key) or {}
        if before.get("sha256") == now.get("sha256") and bool(before) == bool(now):
            continue
        if before and now and before.get("sha256") and now.get("sha256"):
            same_place = before.get("path") == now.get("path")
            where = f"{now.get('path')}" if same_place else f"{before.get('path')} -> {now.get('path')}"
            lines.append(f"{key}: other content ({where})")
        else:
            lines.append(f"{key}: {_file_shown(before)} -> {_file_shown(now)}")
    return lines


_ABSENT = object()


def _shown(values: dict[str, Any], key: str) -> str:
    return repr(values[key]) if key in values else "(not set)"


def _file_shown(entry: dict[str, Any]) -> str:
    if not entry:
        return "(not set)"
    return str(entry.get("path")) + ("" if entry.get("sha256") else " (missing)")


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


def resume_or_start_over(output_dir: Path, run: RunInputs) -> bool:
    """True when ``output_dir`` holds an interrupted run of ``run`` (:func:`describe_run`) to
    resume. Otherwise False, once the folder is ready for a new run with ``inputs.json`` in
    it: an earlier run of other settings is moved aside (:func:`move_aside`), with a warning
    naming each difference; one of the same settings without a checkpoint is cleared."""
    differences = describe_differences(recorded_inputs(output_dir), run) if output_dir.exists() else []
    if not differences and (output_dir / CHECKPOINT_FILE).is_file():
        return True
    _make_room(output_dir, differences)
    with writing(output_dir / INPUTS_FILE):
        output_dir.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(output_dir / INPUTS_FILE, (json.dumps(run, indent=2) + "\n").encode("utf-8"))
    return False


def recorded_inputs(output_dir: Path) -> Optional[RunInputs]:
    """The inputs the run in ``output_dir`` was started with (None if it has no record)."""
    try:
        return json.loads((output_dir / INPUTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def move_aside(output_dir: Path) -> Path:
    """Rename ``output_dir`` to ``OUTPUT_DIR.previous-N``, N the first number whose name is free;
    never onto anything that exists (the name is claimed with ``mkdir`` first)."""
    for number in itertools.count(1):
        aside = output_dir.with_name(f"{output_dir.name}.previous-{number}")
        try:
            aside.mkdir()  # claims the name: fails if anything (a link included) is there
        except FileExistsError:
            continue
        try:
            os.rename(output_dir, aside)  # onto the empty folder made just now, which it replaces
        except OSError as err:
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST):
                continue  # something was put into it meanwhile: leave that and take the next name
            aside.rmdir()
            raise
        return aside
    raise AssertionError("unreachable")


def _make_room(output_dir: Path, differences: list[str]) -> None:
    """Empty ``output_dir`` for a new run: a run of other settings is moved aside, a run of the
    same settings that never reached a checkpoint is deleted, anything else is refused."""
    if not output_dir.exists():
        return
    if not output_dir.is_dir():
        raise PretrainError(f"{output_dir} is a file, not an output folder")
    if not any(output_dir.iterdir()):
        return
    if not is_run_folder(output_dir):
        raise PretrainError(
            f"{output_dir} is not empty and holds no pretraining run: not touching it; choose another output folder"
        )
    here = Path(os.getcwd()).resolve()
    if output_dir.resolve() in (here, *here.parents):
        raise PretrainError(f"{output_dir} holds the current folder: not moving it; choose another output folder")
    with writing(output_dir):
        if not differences:
            shutil.rmtree(output_dir)  # these very settings, stopped before their first checkpoint
            return
        aside = move_aside(output_dir)
    logger.warning(
        "--auto-resume: %s holds a run of other settings, kept as %s; starting a new run.", output_dir, aside
    )
    for line in differences:
        logger.warning("  %s", line)


def _add_file(digest: Any, path: Path) -> None:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
