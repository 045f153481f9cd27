"""The ``elmo`` spaCy component and its Doc attributes (:mod:`.elmo`), its weights (:mod:`.weights`),
and what a trained pipeline holds (:mod:`.mixes`)."""

from .elmo import DEFAULT_ELMO_MODEL, Elmo, install_extensions, make_elmo, set_vector_hooks
from .weights import load_bilm_weights

__all__ = ["DEFAULT_ELMO_MODEL", "Elmo", "install_extensions", "load_bilm_weights", "make_elmo", "set_vector_hooks"]
