"""What the workflow needs of weasel (the runner behind ``spacy project``), through its public
side alone: ``project.yml`` as ``weasel run`` reads it (variables filled in, ``--vars.NAME
VALUE`` overrides applied, with Thinc's config system as weasel does), and a step run by weasel's
command line, ``python -m weasel run STEP``, which checks the step's deps, skips it when
``project.lock`` says nothing changed, runs its script and writes its ``project.lock`` entry.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

import srsly
from thinc.api import Config

PROJECT_LOCK = "project.lock"


def skipped_line(name: str) -> str:
    """What weasel prints for a step whose inputs, outputs and script did not change."""
    return f"Skipping '{name}': nothing changed"


def load_project(project_dir: Path, overrides: Mapping[str, Any]) -> Dict[str, Any]:
    """project.yml of ``project_dir`` with its variables filled in and ``overrides``
    (``{"vars.NAME": value}``) applied, as ``weasel run`` reads it. Its ``vars`` section gets
    the overrides too (of the variables it defines), so that what the runner reads there is
    what the commands see."""
    config = srsly.read_yaml(Path(project_dir) / "project.yml")
    env = {name: _value(os.environ.get(variable, "")) for name, variable in config.get("env", {}).items()}
    sections = Config({"project": config, "vars": config.get("vars", {}), "env": env})
    filled = Config().from_str(sections.to_str(), overrides=dict(overrides)).interpolate()
    project = dict(filled["project"])
    project["vars"] = {name: filled["vars"][name] for name in config.get("vars", {})}
    project["env"] = dict(filled["env"])
    return project


def parse_overrides(args: Sequence[str]) -> Dict[str, Any]:
    """``--vars.NAME VALUE`` (or ``--vars.NAME=VALUE``) arguments, read as ``weasel run`` reads
    them: values as JSON where they parse, else strings; a flag without a value is true."""
    result: Dict[str, Any] = {}
    items = list(args)
    while items:
        option = items.pop(0)
        if not option.startswith("--") or "." not in option:
            raise ValueError(f"{option!r}: overrides look like --vars.NAME VALUE")
        name, has_value, value = option[2:].partition("=")
        if not has_value:
            value = "true" if not items or items[0].startswith("--") else items.pop(0)
        result[name.replace("-", "_")] = _value(value)
    return result


def override_args(overrides: Mapping[str, Any]) -> List[str]:
    """``overrides`` as the arguments that :func:`parse_overrides` reads back."""
    return [arg for key, value in overrides.items() for arg in (f"--{key}", _text(value))]


def step_argv(project_dir: Path, name: str, overrides: Mapping[str, Any], force: bool = False) -> List[str]:
    """The command line of a process that runs the step ``name`` as ``spacy project run`` does."""
    argv = [sys.executable, "-m", "weasel", "run", name, str(Path(project_dir).resolve()), *override_args(overrides)]
    return argv + (["--force"] if force else [])


def recorded_steps(project_dir: Path) -> set:
    """The steps that ``project.lock`` has an entry for."""
    path = Path(project_dir) / PROJECT_LOCK
    return set(srsly.read_yaml(path) or {}) if path.exists() else set()


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _text(value: Any) -> str:
    return value if isinstance(value, str) and _value(value) == value else json.dumps(value)
