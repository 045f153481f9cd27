"""``--resume`` and ``--auto-resume``: what a run checks before it trusts the folder it continues
(the rules are in docs/pretraining.md#checkpoints-and---resume)."""

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
from ..durable import file_sha256
from .checkpoint import CheckpointState
from .distributed import Distributed
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
    write_file,
)
from .settings import PretrainSettings, load_config, settings_from_config
from .vocab import Vocabulary

logger = logging.getLogger("spacy_elmo.pretrain")

FileFingerprint = dict[str, object]  # {"file": relative name, "size": bytes, "sha256": hex}
RunInputs = dict[str, Any]  # what identifies a run for --auto-resume (see describe_run)
#: Settings that name files: compared as absolute paths, and by content for --auto-resume.
FILE_SETTINGS = ("paths.train", "paths.dev", "paths.vocab", "paths.init_from")
RUN_RECORD_FORMAT = 2

#: Changed settings a resume refuses, and why ...
REFUSED = {
    "model": "the checkpoint's weights have the sizes the run began with",
    "paths.train": "the saved data positions point into the files the run began with",
}
#: ... the ones it ignores; any other applies from the resumed step on.
IGNORED = {
    "system.seed": "random states are restored from the checkpoint",
    "vocab": "the vocabulary saved in the run's folder is used",
    "paths.vocab": "the vocabulary saved in the run's folder is used",
    "paths.init_from": "the weights come from the checkpoint",
    "training.shards": "the number of data shards is fixed by the checkpoint",
}
#: Settings expected to change between sessions.
NOT_REPORTED = {"training.max_steps", "training.max_minutes", "system.device", "system.threads"}


# ---------------------------------------------------------------- --resume
def start_output(out: Path, context: Distributed, config_text: str) -> None:
    """A new run's folder (made by rank 0), refused where a run is."""
    if (out / CHECKPOINT_FILE).exists():
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
            write_file(out / CONFIG_FILE, config_text.encode("utf8"))


def resume_output(
    settings: PretrainSettings, out: Path, context: Distributed, train_files: list[FileFingerprint]
) -> tuple[CheckpointState, Vocabulary]:
    """The run's checkpoint and vocabulary once they are checked to belong to it; the metrics logged
    after the checkpoint go (those steps are logged again)."""
    checkpoint = out / CHECKPOINT_FILE
    if not checkpoint.is_file():
        raise PretrainError(f"--resume: no checkpoint in {out} ({CHECKPOINT_FILE} is missing)")
    if context.is_main:
        remove_leftover_temporaries_of_run(out)
    resumed = CheckpointState.load(checkpoint)
    step = resumed.progress.step
    try:
        saved: Optional[PretrainSettings] = settings_from_config(load_config(out / CONFIG_FILE))
    except (ValueError, OSError) as err:
        saved = None
        logger.warning("%s cannot be read (%s): changed settings cannot be detected on this resume", out, err)
    if saved is not None:
        _compare_settings(saved, settings, out / CONFIG_FILE, step)
    vocab = Vocabulary.from_disk(out / VOCAB_FILE)
    _check_belongs(resumed, out, saved, settings, vocab, train_files)
    if context.is_main and (out / METRICS_FILE).is_file():
        metrics = [r for r in read_metrics(out / METRICS_FILE) if int(r.get("step", 0)) <= step]
        write_file(out / METRICS_FILE, "".join(json.dumps(r) + "\n" for r in metrics).encode("utf8"))
    logger.info("Resuming from step %d of %s", step, checkpoint)
    return resumed, vocab


def _check_belongs(
    resumed: CheckpointState,
    out: Path,
    saved: Optional[PretrainSettings],
    settings: PretrainSettings,
    vocab: Vocabulary,
    train_files: list[FileFingerprint],
) -> None:
    """Refuse a checkpoint copied from another run (other sizes than the run began with, another
    vocabulary), or one whose training text was rewritten since."""
    checkpoint = out / CHECKPOINT_FILE
    if resumed.train_files is None:
        logger.warning(
            "%s records no fingerprint of the training text (an older spacy-elmo wrote it): "
            "rewritten training files cannot be detected on this resume",
            checkpoint,
        )
    elif (change := describe_change(resumed.train_files, train_files)) is not None:
        raise ResumeSettingsError(
            f"--resume cannot continue {checkpoint}: the training text changed since the run began ({change}), "
            "so its saved data positions no longer mean anything. Restore the text the run began with, "
            "or start a new run in another folder"
        )
    try:
        found = BiLMConfig.from_dict(resumed.model_config)
    except (TypeError, ValueError) as err:
        raise CheckpointMismatchError(f"{checkpoint}: its model config cannot be used ({err})") from err
    began = saved or settings
    architecture: Optional[BiLMConfig] = began.model
    source = f"{out / CONFIG_FILE if saved is not None else 'the config'} [model]"
    if began.paths.init_from:
        source = f"the --init-from model {began.paths.init_from}"
        try:
            architecture = load_existing_model(began.paths.init_from).config
        except PretrainError as err:
            architecture = None
            logger.warning(
                "--resume cannot compare the checkpoint's model sizes with the run's: its --init-from model %s "
                "cannot be read (%s)",
                began.paths.init_from,
                err,
            )
    problems = []
    if architecture is not None:
        theirs, ours = found.to_dict(), architecture.to_dict()
        problems += [
            f"{key} {theirs.get(key)!r} where {source} has {ours.get(key)!r}" for key in found.differences(architecture)
        ]
    vocab_file = out / VOCAB_FILE
    if found.vocab_size != len(vocab):
        problems.append(f"a softmax over {found.vocab_size:,} words where {vocab_file} has {len(vocab):,}")
    elif resumed.vocab_sha256 is not None and resumed.vocab_sha256 != vocab.digest():
        problems.append(f"other words than {vocab_file} (as many, another SHA-256)")
    if problems:
        raise CheckpointMismatchError(
            f"{checkpoint} is another run's checkpoint: its model has {'; '.join(problems)}. Put this run's "
            "own checkpoint back, or resume that one in its own folder"
        )


def _compare_settings(saved: PretrainSettings, current: PretrainSettings, saved_config: Path, step: int) -> None:
    """Warn about the changes a resume accepts; raise :class:`ResumeSettingsError` for the others."""
    changes = _changes(_resolved(_flat_settings(saved)), _resolved(_flat_settings(current)))
    changes = {key: change for key, change in changes.items() if key not in NOT_REPORTED}
    refused = [f"{key}: {change} ({_rule(key, REFUSED)})" for key, change in changes.items() if _rule(key, REFUSED)]
    if refused:
        raise ResumeSettingsError(
            f"--resume cannot honour changed settings: {'; '.join(refused)}. Resume with the settings in "
            f"{saved_config}, or start a new run in another folder"
        )
    for key, change in changes.items():
        if _rule(key, IGNORED):
            logger.warning("--resume ignores the changed %s (%s): %s", key, change, _rule(key, IGNORED))
        else:
            logger.warning(
                "--resume: %s changed (%s); it applies from step %d on, so the run will not equal an uninterrupted one",
                key,
                change,
                step,
            )


def _changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    """``"old -> new"`` for each setting that differs (one side may lack it)."""
    return {
        key: f"{_shown(old, key)} -> {_shown(new, key)}"
        for key in sorted(old.keys() | new.keys())
        if key not in old or key not in new or old[key] != new[key]
    }


def _rule(key: str, rules: dict[str, str]) -> str:
    return rules.get(key) or rules.get(key.split(".", 1)[0]) or ""


def _flat_settings(settings: PretrainSettings) -> dict[str, Any]:
    """Every setting under its dotted name, as JSON reads it back."""
    sections = dataclasses.asdict(settings)
    return json.loads(
        json.dumps({f"{name}.{key}": v for name, values in sections.items() for key, v in values.items()})
    )


def _resolved(flat: dict[str, Any]) -> dict[str, Any]:
    """``corpus/train.txt`` and its absolute spelling are one setting."""
    return {
        key: str(Path(value).expanduser().resolve()) if key in FILE_SETTINGS and value else value
        for key, value in flat.items()
    }


# ---------------------------------------------------------------- changed text
def fingerprint(path: Union[str, Path]) -> list[FileFingerprint]:
    """Name, size and SHA-256 of every file read from ``path``, in reading order."""
    root = Path(path)
    with reading(root):
        return [
            {
                "file": file.name if file == root else str(file.relative_to(root)),
                "size": file.stat().st_size,
                "sha256": file_sha256(file),
            }
            for file in list_corpus_files(root)
        ]


def describe_change(recorded: list[FileFingerprint], current: list[FileFingerprint]) -> Optional[str]:
    """None when the text is the one recorded, else what differs first."""
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


def content_digest(path: Path) -> str:
    """SHA-256 of a file's bytes; for a folder, of each file's path inside it (sorted) and bytes."""
    with reading(path):
        if path.is_file():
            return file_sha256(path)
        digest = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
            file_sha256(file, digest)
        return digest.hexdigest()


# ---------------------------------------------------------------- --auto-resume
def describe_run(settings: PretrainSettings) -> RunInputs:
    """What ``--auto-resume`` compares: the parsed settings, ``paths.*`` by absolute path and content."""
    flat = _flat_settings(settings)
    files: dict[str, Any] = {}
    for key in FILE_SETTINGS:
        value = flat.pop(key)
        if value is not None:
            path = Path(value).expanduser()
            files[key] = {"path": str(path.resolve()), "sha256": content_digest(path) if path.exists() else None}
    pipeline = flat["corpus.pipeline"]
    if pipeline is not None and Path(pipeline).expanduser().exists():
        flat["corpus.pipeline"] = str(Path(pipeline).expanduser().resolve())
    return {"format": RUN_RECORD_FORMAT, "settings": flat, "files": files}


def describe_differences(recorded: Optional[RunInputs], current: RunInputs) -> list[str]:
    """One line per setting that differs (none: the same run), or why the record cannot be compared."""
    if recorded is None:
        return [f"it has no readable {INPUTS_FILE} (it was not started with --auto-resume)"]
    if not isinstance(recorded, dict) or recorded.get("format") != RUN_RECORD_FORMAT:
        return [f"its {INPUTS_FILE} was written by an older spacy-elmo and cannot be compared with these settings"]
    lines = [
        f"{key}: {change}" for key, change in _changes(recorded.get("settings") or {}, current["settings"]).items()
    ]
    old_files, new_files = recorded.get("files") or {}, current["files"]
    for key in sorted(old_files.keys() | new_files.keys()):
        before, now = old_files.get(key) or {}, new_files.get(key) or {}
        if before.get("sha256") == now.get("sha256") and bool(before) == bool(now):
            continue
        if before.get("sha256") and now.get("sha256"):
            where = now["path"] if before.get("path") == now["path"] else f"{before.get('path')} -> {now['path']}"
            lines.append(f"{key}: other content ({where})")
        else:
            lines.append(f"{key}: {_file_shown(before)} -> {_file_shown(now)}")
    return lines


def _shown(values: dict[str, Any], key: str) -> str:
    return repr(values[key]) if key in values else "(not set)"


def _file_shown(entry: dict[str, Any]) -> str:
    return f"{entry.get('path')}{'' if entry.get('sha256') else ' (missing)'}" if entry else "(not set)"


def resume_or_start_over(output_dir: Path, run: RunInputs) -> bool:
    """Whether to resume; else the folder is made ready for a new run, with ``inputs.json``."""
    try:
        recorded = json.loads((output_dir / INPUTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = None
    differences = describe_differences(recorded, run) if output_dir.exists() else []
    if not differences and (output_dir / CHECKPOINT_FILE).is_file():
        return True
    _make_room(output_dir, differences)
    with writing(output_dir):
        output_dir.mkdir(parents=True, exist_ok=True)
    write_file(output_dir / INPUTS_FILE, (json.dumps(run, indent=2) + "\n").encode("utf-8"))
    return False


def move_aside(output_dir: Path) -> Path:
    """To ``OUTPUT_DIR.previous-N``, N the first free number, never onto anything that exists."""
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
    """Empty ``output_dir``: another run is moved aside, this one without a checkpoint deleted,
    anything else refused."""
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
