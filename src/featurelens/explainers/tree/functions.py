"""Exact TreeSHAP for scikit-learn tree models and LightGBM / XGBoost boosters, as plain functions.

:func:`tree_shap_values` computes exact Shapley values of a tree ensemble's output in two games:

* **path-dependent** (``background=None``): the value of a coalition S is the tree's expectation
  given x_S, computed by following x on the splits of features in S and averaging both children by
  their training cover on the others (Lundberg et al. 2020, Algorithm 1, "EXPVALUE"). The cover is
  ``tree_.weighted_n_node_samples`` for scikit-learn trees, so bootstrap draws and sample weights
  of random forests count, the node ``count`` for HistGradientBoosting predictors, LightGBM's
  ``internal_count`` / ``leaf_count`` and XGBoost's ``cover`` (hessian sum), the covers the
  libraries' own TreeSHAP (``pred_contrib`` / ``pred_contribs``) and shap use;
* **interventional** (``background`` given): v(S) = mean over background rows b of f(x_S, b_notS)
  (Janzing, Minorics and Bloebaum 2020), the mean of the single-reference Shapley values.

The algorithm (per-path product games evaluated at Gauss-Legendre nodes) is in
:mod:`.engine`; the readers of the models in :mod:`.ensemble` and :mod:`.boosters`.

Outputs of :func:`tree_shap_values` (``output="raw"``; ``output="probability"`` for a binary booster
is :func:`probability_shap`) and return shapes:

==========================================  ============================  ====================
model                                       f(x)                          values / base
==========================================  ============================  ====================
DecisionTree/RandomForest/ExtraTrees        ``predict``                   (n, d) / float
Regressor, one output
the same with k outputs                     ``predict``                   (n, d, k) / (k,)
DecisionTree/RandomForest/ExtraTrees        ``predict_proba`` (class      (n, d, k) / (k,)
Classifier (k classes, also k = 2)          fractions averaged over trees)
GradientBoostingRegressor,                  ``decision_function`` /       (n, d) / float
HistGradientBoostingRegressor               ``_raw_predict`` (margin)
GradientBoostingClassifier,                 ``decision_function``         (n, d) / float
HistGradientBoostingClassifier, binary      (log-odds margin)
the same, k > 2 classes                     ``decision_function``         (n, d, k) / (k,)
LGBMRegressor/LGBMRanker, LGBMClassifier    ``predict(raw_score=True)``   (n, d) / float
binary, lightgbm.Booster (one output)       (margin; log-odds)
XGBRegressor/XGBRanker/XGBRF*,              ``predict(output_margin=     (n, d) / float
XGBClassifier binary, xgboost.Booster       True)`` (margin; log-odds)
LGBMClassifier / XGBClassifier, k > 2       the margins, one per class    (n, d, k) / (k,)
IsolationForest                             E[h(x)], the expected path    (n, d) / float
                                            length (see below)
==========================================  ============================  ====================

IsolationForest (Liu, Ting and Zhou 2008) is explained as shap's TreeExplainer explains it: the
trees' output is the path length ``h_t(x) = depth of x's leaf + c(m)``, where ``m`` is the number
of training samples the leaf held (``n_node_samples``) and ``c(m)`` the average path length of an
unsuccessful binary-search-tree search among m keys (``2 H(m - 1) - 2 (m - 1) / m``, ``c(2) = 1``,
``c(1) = 0``), the depth at which the unseparated samples would have been isolated; each tree reads
its own columns (``estimators_features_``). The explained output is their mean ``E[h(x)]`` over the
trees, in units of tree levels (large: normal, small: isolated quickly, anomalous). It is *not*
the model's score, which is a monotone increasing, nonlinear function of it:
``score_samples(x) = -2 ** (-E[h(x)] / c(max_samples_))`` and ``decision_function(x) =
score_samples(x) - offset_``; no sum over trees equals those, so their TreeSHAP values are not
exact (explain ``decision_function`` with a black-box explainer, e.g. kernel_shap, for them).

LightGBM and XGBoost models are read from their documented dumps with each library's own
comparison and missing-value rules (LightGBM: ``x <= t`` in float64, NaN by ``missing_type``
None/Zero/NaN, categorical splits with the category truncated to an int; XGBoost: ``float32(x) <
t``, NaN or the wrapper's ``missing`` value the default way, categorical splits); the details are
in :mod:`featurelens.explainers.tree.boosters`. Categorical features are given as their integer
codes. Linear trees (LightGBM ``linear_tree=True``) and XGBoost's ``gblinear`` are refused.
HistGradientBoosting models with categorical features (pandas ``category`` columns or
``categorical_features=``) take the rows as ``predict`` does (a DataFrame with categories): the
model's own preprocessor encodes them, categorical nodes route by their category bitsets (unseen
categories and NaN as missing), and the values come back in the input's column order.

In every case ``base + values.sum(axis=1) == f(x)`` up to rounding (additivity). The base value is
the cover-weighted mean leaf value plus the ensemble's constant (path-dependent) or the mean of f
over the background (interventional).

References
----------
- S. M. Lundberg, G. Erion, H. Chen, A. DeGrave, J. M. Prutkin, B. Nair, R. Katz, J. Himmelfarb,
  N. Bansal, S.-I. Lee, "From local explanations to global understanding with explainable AI for
  trees", Nature Machine Intelligence 2:56-67, 2020 (arXiv 1905.04610).
- R. Mitchell, E. Frank, G. Holmes, "GPUTreeShap: massively parallel exact calculation of SHAP
  scores for tree ensembles", PeerJ Computer Science 8:e880, 2022 (arXiv 2010.13972).
- D. Janzing, L. Minorics, P. Bloebaum, "Feature relevance quantification in explainable AI: a
  causal problem", AISTATS 2020.
- P. Yu, C. Xu, A. Bifet, J. Read, "Linear TreeShap", NeurIPS 2022 (arXiv 2209.08192).
- F. T. Liu, K. M. Ting, Z.-H. Zhou, "Isolation forest", IEEE ICDM 2008, 413-422 (path lengths
  and c(n)).
"""

from __future__ import annotations

import numpy as np

from featurelens._validation import check_int, check_option

from .engine import interaction_values, shap_values
from .ensemble import build_ensemble
from .paths import prepare_rows

__all__ = ["tree_shap_values", "tree_shap_interaction_values", "probability_shap", "probability_refusal"]


def _sigmoid(z):
    z = np.asarray(z, dtype=np.float64)
    return np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))


def probability_shap(ens, x, bg, batch_size):
    """Interventional TreeSHAP of the probability ``sigmoid(margin)`` of a binary booster.

    For each background row b the exact single-reference TreeSHAP values of the margin,
    phi_b (summing to m(x) - m(b)), are rescaled by ``(sigmoid(m(x)) - sigmoid(m(b))) / (m(x) -
    m(b))`` (1 where the margins are equal), so that they sum to ``sigmoid(m(x)) -
    sigmoid(m(b))``; the values are their mean over the background and the base value the mean
    of ``sigmoid(m(b))``. This is the per-reference rescaling shap's TreeExplainer applies for
    ``model_output="probability"`` with ``feature_perturbation="interventional"`` (Lundberg et
    al. 2020, the "dense independent" algorithm; the rescale rule of DeepLIFT, Shrikumar et al.
    2017): efficiency holds exactly, ``base + values.sum(axis=1) == predict_proba[:, 1]``, while
    the values are not the Shapley values of the game ``v(S) = sigmoid(m(x_S, b_notS))``, which
    no polynomial tree algorithm computes.
    """
    n, d = x.shape
    values = np.zeros((n, d))
    base = 0.0
    for r in range(bg.shape[0]):
        phi, m_b = shap_values(ens, x, bg[r : r + 1], batch_size)  # (n, d), float: m(b)
        m_x = m_b + phi.sum(axis=1)  # efficiency of the single-reference game
        diff = m_x - m_b
        p_x, p_b = _sigmoid(m_x), _sigmoid(m_b)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(diff != 0.0, (p_x - p_b) / np.where(diff != 0.0, diff, 1.0), 1.0)
        values += phi * factor[:, None]
        base += float(p_b)
    return values / bg.shape[0], base / bg.shape[0]


def probability_refusal(ens, name, background) -> str | None:
    """Why ``output="probability"`` cannot be explained for this ensemble, or None."""
    if ens.units == "raw":
        return f"{name} is a regressor: it has no probabilities; use output='raw'"
    if ens.units == "margin":
        return (f"{name}'s trees sum to margins whose probabilities are not one logistic function of "
                "one margin (a multi-class softmax, or another link); explain the margins "
                "(output='raw') or use a black-box explainer (kernel_shap) with output='probability'")
    if ens.units == "log_odds" and background is None:
        return (f"{name}'s trees sum to the log-odds margin; path-dependent TreeSHAP values "
                "coalitions by expectations of the margin, and the expectation of its sigmoid is no "
                "sum over trees, so there is no exact path-dependent value of the probability. Pass "
                "background= (interventional TreeSHAP explains the probability exactly: base + sum = "
                "predict_proba[:, 1]), or explain the log-odds (output='log_odds')")
    return None


def tree_shap_values(model, X, background=None, output="raw", *, batch_size=256):
    """Exact TreeSHAP values of a fitted tree model (see the module docstring).

    Parameters
    ----------
    model : a fitted DecisionTree*, ExtraTree*, RandomForest*, ExtraTrees*, GradientBoosting* or
        HistGradientBoosting* regressor or classifier (categorical features included), an
        IsolationForest (its expected path length E[h(x)], see the module docstring), a LightGBM LGBMRegressor / LGBMClassifier / LGBMRanker or ``lightgbm.Booster``,
        or an XGBoost XGBRegressor / XGBClassifier / XGBRanker / XGBRF* or ``xgboost.Booster``
        (:func:`~featurelens.explainers.tree.supported_tree_models`). Anything else raises a TypeError.
    X : array-like or DataFrame (n, d) or (d,), the rows to explain. NaN where the library's own
        predict takes it (HistGradientBoosting, LightGBM, XGBoost, scikit-learn trees and forests
        with NaN support): missing values follow each split's stored default direction.
        DataFrame columns: see :func:`featurelens.explainers.tree.paths.frame_rows`.
    background : None for path-dependent TreeSHAP (cover-weighted, Lundberg et al. 2020), or an
        array-like (R, d) for interventional TreeSHAP (the mean of the single-reference values).
    output : "raw" (the model's margin, class fractions for forest classifiers, the expected path
        length E[h(x)] for an IsolationForest) or
        "probability": the class fractions of tree and forest classifiers (the same as "raw"), or
        for a binary booster with a logistic link (GradientBoosting / HistGradientBoosting /
        LGBM / XGB classifiers, two classes) ``predict_proba[:, 1]``, explained exactly by
        interventional TreeSHAP (needs ``background``; see :func:`probability_shap`).
    batch_size : rows (times background rows) processed at a time, to bound memory.

    Returns
    -------
    values : float64 array, (n, d) for single-output models (regressors, binary gradient boosting
        margins) or (n, d, k) with k the number of outputs / classes.
    base_value : float for single-output models, else (k,) float64 array, so that
        ``base_value + values.sum(axis=1) == f(x)``.
    """
    output = check_option(output, "output", ("raw", "probability"))
    ens, x, bg, batch_size = _inputs(model, X, background, batch_size)
    if output == "probability":
        reason = probability_refusal(ens, type(model).__name__, bg)
        if reason is not None:
            raise ValueError(f"output='probability': {reason}")
        if ens.units == "log_odds":
            return probability_shap(ens, x, bg, batch_size)
    return shap_values(ens, x, bg, batch_size)


def _inputs(model, X, background, batch_size):
    """``(ensemble, rows, background rows or None, batch_size)``, checked, for the public functions."""
    batch_size = check_int(batch_size, "batch_size", low=1)
    ens = build_ensemble(model)
    x = prepare_rows(X, "X", ens)
    bg = None if background is None else prepare_rows(background, "background", ens)
    return ens, x, bg, batch_size


def tree_shap_interaction_values(model, X, background=None, *, batch_size=256):
    """Exact TreeSHAP interaction values of a fitted scikit-learn tree model.

    The games are those of :func:`tree_shap_values` (path-dependent for ``background=None``,
    Lundberg et al. 2020; interventional, the mean over background rows, otherwise). The matrix
    follows Lundberg et al. 2020 (SHAP interaction values, as shap's ``shap_interaction_values``):
    the off-diagonal entry (i, j) is half the Shapley interaction index (Grabisch and Roubens 1999)

        Phi_ij = sum_{S subset N minus {i, j}} |S|! (d - |S| - 2)! / (d - 1)!
                 * [v(S + ij) - v(S + i) - v(S + j) + v(S)],

    so the matrix is symmetric, and the diagonal entry (i, i) is phi_i minus the other entries of
    row i, so each row sums to the Shapley value phi_i and the whole matrix to f(x) - base.

    Algorithm: each leaf term is a product game prod_f g_f (see the module docstring); its
    interaction index for two features i != j on the path is ``(o_i - q_i)(o_j - q_j) int_0^1
    prod_{k != i, j} (q_k + t (o_k - q_k)) dt``, a polynomial of degree <= depth - 2 integrated
    exactly with the same Gauss-Legendre nodes as the Shapley values; features not on the path
    (dummies) and pairs of which one is off the path get 0. The work is depth times that of
    :func:`tree_shap_values`, vectorised over rows and leaves.

    Parameters
    ----------
    model, X, background : as for :func:`tree_shap_values`.
    batch_size : bounds memory like for :func:`tree_shap_values`; since the pair terms are depth
        times larger, each step takes ``batch_size // depth`` rows (times background rows).

    Returns
    -------
    values : float64 array, (n, d, d) for single-output models or (n, d, d, k) with k outputs.
    base_value : float or (k,) array, the same as :func:`tree_shap_values`' (so
        ``base_value + values.sum(axis=(1, 2)) == f(x)``).

    References
    ----------
    - S. M. Lundberg et al., "From local explanations to global understanding with explainable AI
      for trees", Nature Machine Intelligence 2:56-67, 2020 (SHAP interaction values).
    - M. Grabisch, M. Roubens, "An axiomatic approach to the concept of interaction among players
      in cooperative games", International Journal of Game Theory 28:547-565, 1999.
    """
    return interaction_values(*_inputs(model, X, background, batch_size))
