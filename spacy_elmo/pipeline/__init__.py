"""The ``elmo`` spaCy component and what works around it inside a pipeline.

- :mod:`.elmo`: the component (``make_elmo``): runs the biLM, annotates Docs, feeds listeners;
- :mod:`.doc_attributes`: ``doc._.elmo_layers`` and friends, and the vector hooks;
- :mod:`.weights`: where the component's biLM comes from (its ``weights`` setting, a saved pipeline);
- :mod:`.feature_cache`: a frozen biLM's layers per Doc, computed once per training run;
- :mod:`.config_sizes`: the pipeline's config describes the biLM actually inside it;
- :mod:`.wiring`: why a listener gets no layers, said where the whole pipeline is visible;
- :mod:`.mixes`: the layer weights and gamma each downstream component learned;
- :mod:`.find_bilm`: the biLMs inside a trained pipeline (``spacy-elmo export-allennlp``).

``spacy-elmo init-config``'s templates are the CLI's (:mod:`spacy_elmo.cli.templates`).
"""

from .doc_attributes import install_extensions, set_vector_hooks
from .elmo import DEFAULT_ELMO_MODEL, Elmo, make_elmo
from .weights import load_bilm_weights

__all__ = [
    "DEFAULT_ELMO_MODEL",
    "Elmo",
    "install_extensions",
    "load_bilm_weights",
    "make_elmo",
    "set_vector_hooks",
]
