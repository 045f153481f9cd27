"""Why a listener gets no ELMo layers, worked out where the whole pipeline is visible.

spaCy links an ``elmo`` component to the listeners of later components whose ``upstream`` names
it. An unlinked listener (a misspelled ``upstream``, a component before ``elmo``) finds out only
when it needs the layers, and cannot see the pipeline; so each time spaCy links the pipeline,
the ``elmo`` component tells it what is wrong, and it raises that when it needs the layers.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence, Tuple

from thinc.api import Model

from ..models.listener import ElmoLayersListener


def listeners_in(component: Any) -> Iterator[ElmoLayersListener]:
    """The ELMo listeners inside a component's model."""
    model = getattr(component, "model", None)
    if isinstance(model, Model):
        for node in model.walk():
            if isinstance(node, ElmoLayersListener):
                yield node


def explain_unlinked(pipeline: Sequence[Tuple[str, Any]], elmo_names: Sequence[str]) -> None:
    """Give each listener in ``pipeline`` the reason it is not linked (``None`` if it is)."""
    names = [name for name, _ in pipeline]
    order = ", ".join(names)
    for index, (name, component) in enumerate(pipeline):
        for listener in listeners_in(component):
            listener.wiring_error = _reason(listener, name, index, names, order, elmo_names)


def _reason(
    listener: ElmoLayersListener, name: str, index: int, names: List[str], order: str, elmo_names: Sequence[str]
) -> Optional[str]:
    upstream = listener.upstream_name
    wanted = [elmo for elmo in elmo_names if upstream in ("*", elmo)]
    if not wanted:
        return (
            f"The ELMo listener of '{name}' has upstream = '{upstream}', but the pipeline ({order}) has no "
            f"elmo component of that name: set upstream to {' or '.join(repr(e) for e in elmo_names)} (or '*')"
        )
    if all(names.index(elmo) > index for elmo in wanted):
        return (
            f"The ELMo listener of '{name}' listens to '{wanted[0]}' (upstream = '{upstream}'), but '{name}' "
            f"comes before '{wanted[0]}' in the pipeline ({order}): add '{wanted[0]}' before '{name}'"
        )
    return None
