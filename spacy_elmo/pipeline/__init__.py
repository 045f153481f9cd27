"""The ``elmo`` spaCy component (:mod:`.elmo`), what it sets on Docs (:mod:`.doc_attributes`), its
weights (:mod:`.weights`), its ``replace_listeners`` hooks (:mod:`.listener_copies`) and what a
trained pipeline holds (:mod:`.mixes`)."""

from .doc_attributes import install_extensions, set_vector_hooks
from .elmo import DEFAULT_ELMO_MODEL, Elmo, make_elmo
from .weights import load_bilm_weights

__all__ = ["DEFAULT_ELMO_MODEL", "Elmo", "install_extensions", "load_bilm_weights", "make_elmo", "set_vector_hooks"]
