"""The biLMs inside a trained pipeline (each ``elmo`` component's, each copy from
``nlp.replace_listeners``), for ``spacy-elmo export-allennlp``."""

from __future__ import annotations

from typing import Dict, Optional

from spacy.language import Language
from thinc.api import Model

from ..models.doc_layers import get_bilm
from ..nn.bilm import BiLM
from .elmo import Elmo


def pipeline_bilms(nlp: Language) -> Dict[str, BiLM]:
    """``{component name: biLM}`` in pipeline order, for every component that holds one."""
    found: Dict[str, BiLM] = {}
    for name, component in nlp.components:
        if isinstance(component, Elmo):
            bilm = component.bilm
        else:
            model = getattr(component, "model", None)
            copies = (
                [node.layers[0] for node in model.walk() if node.name == "elmo_layers"]
                if isinstance(model, Model)
                else []
            )
            bilm = get_bilm(copies[0]) if len(copies) == 1 else None
        if bilm is not None:
            found[name] = bilm
    return found


def pipeline_bilm(nlp: Language, component: Optional[str] = None) -> BiLM:
    """The biLM of ``component``, or the pipeline's only one; an error naming the choices."""
    bilms = pipeline_bilms(nlp)
    if component is not None:
        if component not in bilms:
            raise ValueError(
                f"the pipeline's component '{component}' holds no biLM; those that do: {', '.join(bilms) or 'none'}"
            )
        return bilms[component]
    if len(bilms) != 1:
        raise ValueError(
            "the pipeline holds no biLM (no elmo component, no copy from replace_listeners)"
            if not bilms
            else f"the pipeline holds several biLMs ({', '.join(bilms)}): choose one with --component"
        )
    return next(iter(bilms.values()))
