"""Exact TreeSHAP for scikit-learn tree models and LightGBM / XGBoost boosters.

The package, bottom up: :mod:`.paths` (the IR: a tree's root-to-leaf paths, an ensemble of them,
the rows it explains), :mod:`.ensemble` and :mod:`.boosters` (scikit-learn, LightGBM and XGBoost
models read into it; :mod:`.raw_boosters`: raw LightGBM / XGBoost Boosters as estimators),
:mod:`.engine` with :mod:`.numba_kernels` and :mod:`.numba_walk` (the exact values of both games;
the compiled kernels, cached on disk), :mod:`.functions` (the plain functions, their units and
outputs), :mod:`.pipeline` (a Pipeline's final step), :mod:`.fast` (the short path of
``explain``) and :mod:`.explainer` (the registered explainer ``tree_shap``).
"""

from .ensemble import supported_tree_models
from .explainer import TreeShap
from .functions import tree_shap_interaction_values, tree_shap_values
from .pipeline import explain_pipeline_final_step
from .raw_boosters import booster_estimator

__all__ = [
    "booster_estimator",
    "tree_shap_values",
    "tree_shap_interaction_values",
    "supported_tree_models",
    "explain_pipeline_final_step",
    "TreeShap",
]
