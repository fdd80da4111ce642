"""The per-process cache of :meth:`featurelens.models.Model.from_factory`: a model built once per
process and key, so a Model can travel to workers as its recipe instead of its weights."""

from __future__ import annotations

import functools
import threading

#: Models built by :meth:`Model.from_factory` in this process, by key.
_FACTORY_CACHE: dict = {}
_FACTORY_LOCK = threading.RLock()  # a factory may itself build a factory model


def factory_key(factory) -> str:
    """The default cache key: module and qualified name (a partial's function with its arguments)."""
    if isinstance(factory, functools.partial):
        args = [repr(a) for a in factory.args] + [f"{k}={v!r}" for k, v in sorted(factory.keywords.items())]
        return f"{factory_key(factory.func)}({', '.join(args)})"
    qualname = getattr(factory, "__qualname__", None)
    if qualname is None or "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(
            f"factory {getattr(factory, '__name__', type(factory).__name__)!r} is a lambda, a local function "
            "or a callable object, whose name does not identify the model it builds; give key= (a string "
            "naming the model), or use a top-level function"
        )
    return f"{getattr(factory, '__module__', None) or '?'}.{qualname}"


def factory_build(factory, key: str):
    """What ``factory()`` returns, built once per process and key (concurrent first uses wait for
    one build)."""
    with _FACTORY_LOCK:
        if key in _FACTORY_CACHE:
            return _FACTORY_CACHE[key]
        built = factory()
        _FACTORY_CACHE[key] = built
        return built
