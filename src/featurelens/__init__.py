"""featurelens: which features drive a model, can the explanation be trusted, and which features
did the network learn. See README.md for a tour."""

from . import datasets, explainers, learning, metrics, selection
from ._audit import audit
from . import games
from . import interactions
from .explainers import Explainer, explainer, list_explainers
from .explanation import Explanation, load_explanation
from .interactions import Interactions
from .models import Model

__version__ = "0.1.0"

__all__ = [
    "Explainer",
    "Explanation",
    "Interactions",
    "Model",
    "audit",
    "datasets",
    "explainer",
    "explainers",
    "games",
    "interactions",
    "learning",
    "list_explainers",
    "load_explanation",
    "metrics",
    "selection",
]
