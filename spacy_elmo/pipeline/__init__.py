"""The ``elmo`` spaCy component, its Doc attributes and weight loading."""
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
