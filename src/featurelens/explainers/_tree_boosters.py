"""LightGBM and XGBoost models read into the tree ensemble IR (placeholder, being written)."""

from __future__ import annotations


def build_booster(model):
    raise TypeError(f"tree_shap_values does not support {type(model).__module__}.{type(model).__name__} yet")
