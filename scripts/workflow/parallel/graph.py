"""A workflow of ``project.yml`` as a graph: which step must wait for which.

A step waits for an earlier step of the workflow when one of its ``deps`` is, contains or lies
inside one of the earlier step's ``outputs``: it reads what that step writes. Steps with no
such link are independent and may run side by side (the biLM's pretraining and the baselines,
the seeds of different settings, ...). Declared files are the only links, so a step must list
every file it reads that another step of the workflow writes, as spaCy projects already ask.

Each step also gets a priority: the longest chain of work from its start to the end of the
workflow (its own cost plus that of the costliest chain of steps waiting for it), so that
long chains start first and the cores are not left with one long step at the end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set


@dataclass
class Step:
    """One command of ``project.yml`` (variables filled in) and the steps it waits for."""

    name: str
    command: Dict[str, Any]  # as weasel reads it: name, script, deps, outputs, ...
    after: Set[str] = field(default_factory=set)
    priority: float = 0.0

    @property
    def deps(self) -> List[str]:
        return list(self.command.get("deps", []))

    @property
    def outputs(self) -> List[str]:
        return list(self.command.get("outputs", []))


def _parts(path: str) -> tuple:
    return Path(os.path.normpath(path)).parts


def overlaps(a: str, b: str) -> bool:
    """Whether two project paths name the same file or one lies inside the other."""
    pa, pb = _parts(a), _parts(b)
    shorter = min(len(pa), len(pb))
    return pa[:shorter] == pb[:shorter]


def workflow_steps(config: Mapping[str, Any], workflow: str) -> List[Step]:
    """The steps of ``workflow`` in its order, each with the earlier steps it waits for."""
    workflows = config.get("workflows", {})
    if workflow not in workflows:
        raise ValueError(f"no workflow {workflow!r} in project.yml (workflows: {', '.join(workflows) or 'none'})")
    commands = {command["name"]: command for command in config.get("commands", [])}
    missing = [name for name in workflows[workflow] if name not in commands]
    if missing:
        raise ValueError(f"workflow {workflow!r} names commands that project.yml does not define: {missing}")
    steps: List[Step] = []
    for name in workflows[workflow]:
        step = Step(name, commands[name])
        step.after = {
            earlier.name for earlier in steps if any(overlaps(dep, out) for dep in step.deps for out in earlier.outputs)
        }
        steps.append(step)
    return steps


def set_priorities(steps: Sequence[Step], costs: Optional[Mapping[str, float]] = None) -> None:
    """Each step's priority: the cost of the costliest chain from it to the end of the workflow.

    ``costs``: seconds per step (e.g. the CPU times of the last run); a step without one
    counts as the mean of the known costs, or 1 when none is known.
    """
    known = [cost for cost in (costs or {}).values() if cost and cost > 0]
    default = sum(known) / len(known) if known else 1.0
    waiting: Dict[str, List[Step]] = {step.name: [] for step in steps}
    for step in steps:
        for name in step.after:
            waiting[name].append(step)
    for step in reversed(steps):  # a step's waiters come later in the workflow
        own = (costs or {}).get(step.name) or default
        step.priority = own + max((later.priority for later in waiting[step.name]), default=0.0)
