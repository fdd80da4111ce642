"""Exact TreeSHAP of a fitted scikit-learn Pipeline's final tree model, on the transformed features
(:func:`explain_pipeline_final_step`); the explainer ``tree_shap`` runs it for a Pipeline."""

from __future__ import annotations

import numpy as np

from featurelens._validation import as_numpy, check_bool

from .engine import interaction_values, shap_values
from .ensemble import build_ensemble
from .paths import prepare_rows

__all__ = ["explain_pipeline_final_step"]


def _dense_rows(arr, name):
    """A transformer's output as a float64 numpy array (sparse matrices and DataFrames densified)."""
    if hasattr(arr, "toarray"):  # scipy.sparse
        arr = arr.toarray()
    return as_numpy(arr, name)


def explain_pipeline_final_step(pipeline, X, background=None, interactions=False):
    """Exact TreeSHAP of a fitted scikit-learn Pipeline's final tree model, on the transformed features.

    The features the trees split on are the outputs of ``pipeline[:-1]`` (for example a
    ColumnTransformer's scaled and passed-through columns), so this explains the final step on
    ``pipeline[:-1].transform(X)``: the values are those of
    :func:`~featurelens.explainers.tree.tree_shap_values` (path-dependent TreeSHAP, Lundberg et al.
    2020, for ``background=None``; interventional TreeSHAP, Janzing et al. 2020, on the transformed
    ``background`` otherwise). Since the pipeline's raw output is the final step's raw output on the
    transformed rows, ``base_values + values.sum(axis=-1)`` equals the pipeline's raw output (its
    ``decision_function`` for gradient boosting, ``predict`` / ``predict_proba`` for trees and
    forests; see :mod:`featurelens.explainers.tree.functions`).

    Parameters
    ----------
    pipeline : a fitted ``sklearn.pipeline.Pipeline`` whose final step is one of
        :func:`~featurelens.explainers.tree.supported_tree_models`.
    X : array-like or DataFrame (n, ...), the rows to explain, as the pipeline takes them.
    background : None, or rows as the pipeline takes them (interventional TreeSHAP).
    interactions : also compute the SHAP interaction values
        (:func:`~featurelens.explainers.tree.tree_shap_interaction_values`) into
        ``extra["interactions"]``.

    Returns
    -------
    Explanation with ``values`` (n, d_out) for single-output final steps, or (n, k, d_out) with
    ``target`` 0..k-1 per row for k outputs (the layout of ``Explanation.from_shap``); ``data`` the
    transformed rows; ``feature_names`` from ``pipeline[:-1].get_feature_names_out()`` where the
    transformers provide it (else None); ``base_values`` per row ((n,) or (n, k)); ``method``
    "tree_shap" and ``output`` "raw".
    """
    from featurelens.explanation import Explanation

    if type(pipeline).__name__ != "Pipeline" or not type(pipeline).__module__.startswith("sklearn."):
        raise TypeError(f"pipeline must be a fitted sklearn.pipeline.Pipeline; got {type(pipeline).__name__}")
    interactions = check_bool(interactions, "interactions")
    final = pipeline.steps[-1][1]
    ens = build_ensemble(final)  # TypeError naming the supported models for anything else
    head = pipeline[:-1] if len(pipeline.steps) > 1 else None

    def transform(rows, name):
        if head is None:
            return _dense_rows(rows, name)
        try:
            out = head.transform(rows)
        except Exception as err:
            raise ValueError(f"{name} could not be transformed by the pipeline's first steps "
                             f"({type(err).__name__}: {err})") from err
        return _dense_rows(out, name)

    z = transform(X, "X")
    x = prepare_rows(z, "X (transformed)", ens)  # (float32-rounded for scikit-learn trees, as they compare)
    z = np.asarray(z, dtype=np.float64).reshape(x.shape)  # the transformed rows as they are
    bg = None if background is None else prepare_rows(transform(background, "background"),
                                                  "background (transformed)", ens)
    values, base = shap_values(ens, x, bg, 256)
    n = x.shape[0]
    names = None
    try:
        names = [str(c) for c in (head.get_feature_names_out() if head is not None
                                  else getattr(final, "feature_names_in_", None))]
    except (AttributeError, TypeError, ValueError):  # a step without names: no names
        names = None
    if names is not None and len(names) != ens.n_features:
        names = None
    extra, target = {}, None
    if interactions:
        extra["interactions"], _ = interaction_values(ens, x, bg, 256)
    if values.ndim == 3:  # k outputs: (n, k, d), one target per output
        values = np.moveaxis(values, -1, 1)
        base_values = np.tile(np.asarray(base, dtype=np.float64), (n, 1))
        target = np.tile(np.arange(values.shape[1]), (n, 1))
        if interactions:
            extra["interactions"] = np.moveaxis(extra["interactions"], -1, 1)
    else:
        base_values = np.full(n, float(base))
    params = {
        "feature_perturbation": "tree_path_dependent" if bg is None else "interventional",
        "background_rows": None if bg is None else int(bg.shape[0]),
        "interactions": interactions,
        "final_step": type(final).__name__,
    }
    # the units of the trees' sum: "raw" for regressors and class fractions (predict_proba),
    # "log_odds" for a binary booster's margin, "margin" for a multi-class booster's margins
    units = "raw" if ens.units == "probability" else ens.units
    params["output"] = units
    if ens.explained is not None:  # an IsolationForest: "raw" is its expected path length
        params["explained"] = ens.explained
    if ens.isolation is not None:
        params.update(ens.isolation)
    return Explanation(values=values, method="tree_shap", params=params, target=target, extra=extra,
                       feature_names=names, data=z, base_values=base_values, output=units)
