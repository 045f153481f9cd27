"""What ``pretrain --resume`` does with settings that differ from those the run began with.

The run's folder keeps the config of its first session (``config.cfg``). On resume the current
settings are compared with it, key by key:

- refused: the model's sizes (the checkpoint's weights have the old ones) and the training
  text (the saved data positions point into the old files);
- ignored, with a warning saying so: the seed (random states come from the checkpoint), the
  vocabulary settings (the vocabulary saved in the folder is used), ``paths.init_from`` (the
  weights come from the checkpoint) and ``training.shards`` (the saved data positions fix it);
- anything else applies from the resumed step on, with a warning that the run will no longer
  equal an uninterrupted one. ``max_steps``, ``max_minutes``, ``device`` and ``threads`` are
  expected to change between sessions and are not reported.

The training text is also compared by content (:func:`compare_training_text`): the same path
holding rewritten files is refused like another path.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from .settings import PretrainSettings, load_config, settings_from_config
from .resume import FileFingerprint, describe_change

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


class ResumeSettingsError(ValueError):
    """A resumed run asked for a change that cannot be honoured."""


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
