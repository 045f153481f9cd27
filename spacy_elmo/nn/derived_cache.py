"""Tensors derived from parameters, rebuilt only when one changes (its storage or version counter).

The cache pins the sources' storages, so a new tensor never reuses an old address and passes for
the old weights. Key, pins and value are swapped in one assignment, and a lock lets one thread
build while the others wait for it."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Hashable, Optional, Sequence, TypeVar

import torch

T = TypeVar("T")


def parameter_versions(params: Sequence[torch.Tensor]) -> Optional[tuple[Hashable, ...]]:
    """Identity and version of each tensor, or None when a tensor has no version counter.

    Tensors created under ``torch.inference_mode`` have no version counter: in-place changes to
    them cannot be detected, so nothing derived from them may be cached.
    """
    key = []
    for param in params:
        try:
            version = param._version
        except RuntimeError:
            return None
        key.append((param.data_ptr(), version, param.dtype, param.device, tuple(param.shape)))
    return tuple(key)


class _StartsEmptyWhenCopied:
    """Derived data is cheap to rebuild and would otherwise double the size of a saved model (and
    locks cannot be copied): a copy or an unpickled object starts empty."""

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()  # type: ignore[misc]

    def __deepcopy__(self, memo: dict):
        return type(self)()


class DerivedTensors(_StartsEmptyWhenCopied):
    """Holds one value computed from a list of parameters; ``get`` rebuilds it when they change."""

    def __init__(self) -> None:
        self._state: Optional[tuple[Hashable, tuple[torch.Tensor, ...], Any]] = None  # key, pins, value
        self._lock = threading.Lock()

    def get(self, params: Sequence[torch.Tensor], build: Callable[[], T], extra_key: Hashable = None) -> T:
        """The cached value for ``params`` (and ``extra_key``), calling ``build()`` on a change."""
        versions = parameter_versions(params)
        if versions is None:
            self.clear()
            with torch.no_grad():
                return build()
        key = (versions, extra_key)
        state = self._state
        if state is not None and state[0] == key:
            return state[2]
        with self._lock:
            state = self._state
            if state is not None and state[0] == key:
                return state[2]  # built by another thread while this one waited
            self._state = None  # free the old value before building the new one
            with torch.no_grad():
                value = build()
            self._state = (key, tuple(p.detach() for p in params), value)
            return value

    def clear(self) -> None:
        self._state = None

    @property
    def value(self) -> Any:
        """The value held now (None when empty)."""
        state = self._state
        return None if state is None else state[2]


class HeldElsewhere(_StartsEmptyWhenCopied):
    """Caches that other objects keep of values derived from a module's weights (an embedder's
    word cache), cleared together with the module's own; referenced weakly, so registering
    keeps nothing alive. Copies and pickles start empty: the caches belong to their owners."""

    def __init__(self) -> None:
        self._caches: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, cache: Any) -> None:
        with self._lock:
            self._caches.add(cache)

    def clear(self) -> None:
        with self._lock:
            caches = list(self._caches)
        for cache in caches:
            cache.clear()
