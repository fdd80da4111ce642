"""The ground-truth benchmark behind ``featurelens benchmark``: the XAI-TRIS reference models,
their training, and the runner that explains and scores them against planted masks.

The names load on first use (PEP 562), so that ``featurelens.groundtruth.settings`` is importable
without torch (the command line's ``--help``)."""

import importlib

_LAZY = {
    "LLR": ".models", "MLP": ".models", "CNN": ".models", "build_model": ".models",
    "count_parameters": ".models", "train_model": ".._training", "run_benchmark": ".runner",
    "BenchmarkResult": ".runner", "default_methods": ".methods",
}

__all__ = list(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'featurelens.groundtruth' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
