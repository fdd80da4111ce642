"""Explainers, one module per family.

The package imports none of them: ``fl.list_explainers()`` reads the table of
``featurelens.explainers._catalog``, and an explainer's module is imported (and its class
registered) when it is first built, so that listing them or building TreeSHAP imports no torch.
"""

from ._base import Explainer, explainer, explainer_class, explainer_needs, list_explainers, register
from .game_explainer import GameExplainer

__all__ = ["Explainer", "GameExplainer", "explainer", "explainer_class", "explainer_needs", "list_explainers",
           "register"]
