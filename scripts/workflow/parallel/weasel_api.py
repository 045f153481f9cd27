"""Every use the workflow makes of weasel (the runner behind ``spacy project``) beyond its
command line, in one place.

These functions are weasel's own internals, not a documented API, so weasel is pinned in
``pyproject.toml`` (``PINNED``) and ``tests/project/workflow/parallel/test_weasel_api.py``
checks their signatures and their behaviour on a tiny project: when a new weasel changes
them, that test fails, and this module is the only one to mend.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

PINNED = "1.0.1"

# A step's script lines, run by weasel's own runner in a process of their own: each line as
# `spacy project run` runs it ("python" means this interpreter; a failing line ends the step).
STEP_PROCESS = "import json, sys; from weasel.cli.run import run_commands; run_commands(json.loads(sys.argv[1]))"


def load_project(project_dir: Path, overrides: Mapping[str, Any]) -> Dict[str, Any]:
    """project.yml of ``project_dir``, validated, with its variables filled in and ``overrides``
    (``{"vars.NAME": value}``) applied, as ``spacy project run`` reads it. Weasel fills the
    overrides into the commands but leaves the ``vars`` section as written; here that section
    gets them too, so that what the runner reads from it is what the commands see."""
    from weasel.util import load_project_config

    config = load_project_config(Path(project_dir), overrides=dict(overrides))
    variables = config.setdefault("vars", {})
    for key, value in overrides.items():
        name = key[len("vars.") :] if key.startswith("vars.") else ""
        if name in variables:
            variables[name] = value
    return config


def parse_overrides(args: Sequence[str]) -> Dict[str, Any]:
    """``--vars.NAME VALUE`` (or ``--vars.NAME=VALUE``) arguments, read as ``spacy project run`` reads them."""
    from weasel.util import parse_config_overrides

    return parse_config_overrides(list(args))


def needs_rerun(project_dir: Path, command: Dict[str, Any]) -> bool:
    """Whether ``spacy project run`` would run ``command`` again: ``project.lock`` has no entry
    for it, or its script, dependencies or outputs changed since."""
    from weasel.cli.run import check_rerun

    return bool(check_rerun(Path(project_dir), command))


def record_success(project_dir: Path, command: Dict[str, Any]) -> None:
    """Write ``command``'s ``project.lock`` entry (its script and the checksums of its files),
    as ``spacy project run`` does after the command succeeded."""
    from weasel.cli.run import update_lockfile

    update_lockfile(Path(project_dir), command)


def step_process_argv(script: Sequence[str]) -> List[str]:
    """The command line of a process that runs a step's script lines as weasel does."""
    return [sys.executable, "-c", STEP_PROCESS, json.dumps(list(script))]
