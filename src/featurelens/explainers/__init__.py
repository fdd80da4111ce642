"""Explainers, one module per family; importing this package registers them all."""

from ._base import Explainer, explainer, explainer_class, list_explainers, register
from .game_explainer import GameExplainer
from . import gradient, agop, shapley, spex  # noqa: F401  (registration side effect)
from . import perturbation, wavelet  # noqa: F401  (registration side effect)
from . import tree  # noqa: F401  (registration side effect)
from . import deeplift, backprop, lrp, ablation, surrogate  # noqa: F401  (registration side effect)
from . import layer  # noqa: F401  (registration side effect)
from . import sop  # noqa: F401  (registration side effect)

__all__ = ["Explainer", "GameExplainer", "explainer", "explainer_class", "list_explainers", "register"]
