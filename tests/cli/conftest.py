"""Fixtures of the command tests: ``init-config``'s configs are trained with the component
tests' tiny weights and toy corpus (defined once, in ``tests/pipeline/conftest.py``)."""

from ..pipeline.conftest import CONFIGS, tiny_weights, toy_corpus, train_with_config  # noqa: F401
