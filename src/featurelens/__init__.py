"""featurelens: which features drive a model, can the explanation be trusted, and which features
did the network learn. See README.md for a tour.

The public names are loaded on first use (PEP 562), so that ``import featurelens`` and the command
line's ``--help`` do not import torch; ``fl.explainer``, ``fl.audit``, ``fl.datasets``, ... behave
as if they had been imported eagerly.
"""

import importlib

from ._version import __version__

# public name -> (module relative to featurelens, attribute or None for the module itself)
_LAZY = {
    "approximators": (".approximators", None),
    "audit": ("._audit", "audit"),
    "datasets": (".datasets", None),
    "explainers": (".explainers", None),
    "games": (".games", None),
    "interactions": (".interactions", None),
    "learning": (".learning", None),
    "metrics": (".metrics", None),
    "parallel": (".parallel", None),
    "plots": (".plots", None),
    "selection": (".selection", None),
    "text": (".text", None),
    "Explainer": (".explainers", "Explainer"),
    "explainer": ("._factory", "explainer"),
    "list_explainers": (".explainers", "list_explainers"),
    "Explanation": (".explanation", "Explanation"),
    "load_explanation": (".explanation", "load_explanation"),
    "Interactions": (".interactions", "Interactions"),
    "Model": (".models", "Model"),
    "SumOfParts": (".explainers.sop", "SumOfParts"),
    "fit_sop": (".explainers.sop", "fit_sop"),
}

__all__ = [
    "Explainer",
    "Explanation",
    "Interactions",
    "Model",
    "SumOfParts",
    "approximators",
    "audit",
    "datasets",
    "explainer",
    "explainers",
    "fit_sop",
    "games",
    "interactions",
    "learning",
    "list_explainers",
    "load_explanation",
    "metrics",
    "parallel",
    "plots",
    "selection",
    "text",
]


def __getattr__(name):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'featurelens' has no attribute {name!r}") from None
    value = importlib.import_module(module, __name__)
    if attr is not None:
        value = getattr(value, attr)
    # Cache the function/class; a submodule is already set as an attribute by the import itself.
    # ("audit" is the function: the audit's package is featurelens._audit, so the two never clash.)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
