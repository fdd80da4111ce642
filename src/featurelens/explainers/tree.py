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

Algorithm (the per-path view of GPUTreeShap, Mitchell, Frank and Holmes 2022): a tree's output is
a sum over its leaves of ``value_leaf * prod_{f on the path} g_f``, where the splits on the same
feature are merged into one interval and, for a coalition S, ``g_f = o_f = 1[x satisfies every
split on f]`` if f is in S and ``g_f = q_f`` otherwise; ``q_f`` is the product of the cover ratios
(child / parent) of the splits on f (path-dependent) or ``1[b satisfies every split on f]`` for one
background row b (interventional). Each leaf term is a product game whose exact Shapley value is
``phi_i = (o_i - q_i) * sum_k w_k e_k``, with ``w_k = k!(d-k-1)!/d!`` and ``e_k`` the elementary
symmetric polynomials of the other features' (o_j, q_j) pairs. Because ``w_k = int_0^1 t^k
(1-t)^(d-1-k) dt`` this sum equals ``int_0^1 prod_{j != i} (q_j + t (o_j - q_j)) dt``, the integral
of a polynomial of degree <= depth - 1, evaluated exactly with ceil(depth / 2) Gauss-Legendre nodes
(the same "polynomial at nodes" evaluation Linear TreeShap uses for stability; all factors lie in
[0, 1]). Leave-one-out products come from prefix and suffix products (never a division), so the
work is O(rows x leaves x depth x depth/2), vectorised over rows and leaves.

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

Outputs of :func:`tree_shap_values` (``output="raw"``; ``output="probability"`` for a binary booster
is :func:`_probability_shap`) and return shapes:

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
in :mod:`featurelens.explainers._tree_boosters`. Categorical features are given as their integer
codes. Linear trees (LightGBM ``linear_tree=True``) and XGBoost's ``gblinear`` are refused.
HistGradientBoosting models with categorical features (pandas ``category`` columns or
``categorical_features=``) take the rows as ``predict`` does (a DataFrame with categories): the
model's own preprocessor encodes them, categorical nodes route by their category bitsets (unseen
categories and NaN as missing), and the values come back in the input's column order.

In every case ``base + values.sum(axis=1) == f(x)`` up to rounding (additivity). The base value is
the cover-weighted mean leaf value plus the ensemble's constant (path-dependent) or the mean of f
over the background (interventional).
"""

from __future__ import annotations

import numpy as np

from featurelens._validation import as_numpy, check_bool, check_int, check_option

from ..games import _split_background
from ._base import Explainer, Requires, register
from ._tree_engine import _interactions, _shap
from ._tree_ensemble import _build, _prepare, supported_tree_models

__all__ = [
    "tree_shap_values",
    "tree_shap_interaction_values",
    "supported_tree_models",
    "explain_pipeline_final_step",
    "TreeShap",
]


def _sigmoid(z):
    z = np.asarray(z, dtype=np.float64)
    return np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))


def _probability_shap(ens, x, bg, batch_size):
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
        phi, m_b = _shap(ens, x, bg[r : r + 1], batch_size)  # (n, d), float: m(b)
        m_x = m_b + phi.sum(axis=1)  # efficiency of the single-reference game
        diff = m_x - m_b
        p_x, p_b = _sigmoid(m_x), _sigmoid(m_b)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(diff != 0.0, (p_x - p_b) / np.where(diff != 0.0, diff, 1.0), 1.0)
        values += phi * factor[:, None]
        base += float(p_b)
    return values / bg.shape[0], base / bg.shape[0]


def _probability_refusal(ens, name, background) -> str | None:
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
        (:func:`supported_tree_models`). Anything else raises a TypeError.
    X : array-like or DataFrame (n, d) or (d,), the rows to explain. NaN where the library's own
        predict takes it (HistGradientBoosting, LightGBM, XGBoost, scikit-learn trees and forests
        with NaN support): missing values follow each split's stored default direction.
        DataFrame columns: see :func:`featurelens.explainers._tree_paths._frame_rows`.
    background : None for path-dependent TreeSHAP (cover-weighted, Lundberg et al. 2020), or an
        array-like (R, d) for interventional TreeSHAP (the mean of the single-reference values).
    output : "raw" (the model's margin, class fractions for forest classifiers, the expected path
        length E[h(x)] for an IsolationForest) or
        "probability": the class fractions of tree and forest classifiers (the same as "raw"), or
        for a binary booster with a logistic link (GradientBoosting / HistGradientBoosting /
        LGBM / XGB classifiers, two classes) ``predict_proba[:, 1]``, explained exactly by
        interventional TreeSHAP (needs ``background``; see :func:`_probability_shap`).
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
        reason = _probability_refusal(ens, type(model).__name__, bg)
        if reason is not None:
            raise ValueError(f"output='probability': {reason}")
        if ens.units == "log_odds":
            return _probability_shap(ens, x, bg, batch_size)
    return _shap(ens, x, bg, batch_size)


def _inputs(model, X, background, batch_size):
    """``(ensemble, rows, background rows or None, batch_size)``, checked, for the public functions."""
    batch_size = check_int(batch_size, "batch_size", low=1)
    ens = _build(model)
    x = _prepare(X, "X", ens)
    bg = None if background is None else _prepare(background, "background", ens)
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
    return _interactions(*_inputs(model, X, background, batch_size))


# --------------------------------------------------------------------------------------------------
# the registered explainer


@register("tree_shap")
class TreeShap(Explainer):
    """Exact TreeSHAP (Lundberg et al. 2020) of a fitted tree model; the algorithm is
    :func:`tree_shap_values` (per-path products evaluated with Gauss-Legendre nodes, after
    GPUTreeShap, Mitchell et al. 2022, and Linear TreeShap, Yu et al. 2022).

    ``feature_perturbation`` (as shap spells it): ``"tree_path_dependent"`` (coalitions valued by
    the trees' training cover; takes no background) or ``"interventional"`` (the mean of the
    single-reference values over ``background`` rows, Janzing et al. 2020; needs ``background``).
    None (default) follows ``background``: path-dependent without it, interventional with it.
    ``background`` may be weighted (a :class:`~featurelens.games.Background` from
    :func:`~featurelens.games.summarize_background`, or a ``(rows, weights)`` pair): the values
    are then the weighted sum of the single-reference values, exact for any weights (one pass per
    background row; ``params["background_weighted"]``).
    ``batch_size``: rows per model call (target resolution) and rows (times background rows) per
    vectorised step of the tree computation.

    Units (recorded in ``Explanation.output`` and ``params["output"]``, truthfully):

    - regressors: ``"raw"`` (``predict``; the margin for gradient boosting regressors);
    - tree and forest classifiers: their class fractions, ``predict_proba`` itself, recorded as
      asked (``"raw"`` or ``"probability"``); ``"log_odds"`` of averaged fractions is no sum over
      trees and is refused;
    - binary boosting classifiers (GradientBoosting, HistGradientBoosting, LGBM, XGB with a
      logistic link): the trees sum to the log-odds margin. Without ``output=`` (or with
      ``output="log_odds"``) that margin is explained and recorded as ``"log_odds"`` (target 1:
      the margin; target 0: its negative, the log-odds of class 0). ``output="probability"`` (and
      an explicit ``"raw"``, which for a scikit-learn-style classifier means ``predict_proba``)
      explains ``predict_proba[:, target]`` exactly with interventional TreeSHAP
      (:func:`_probability_shap`; needs ``background``, refused clearly without it);
    - multi-class boosting classifiers: the per-class margins (``decision_function``, softmax
      logits), recorded as ``"margin"``; probabilities and log-odds of a softmax are no sums over
      trees and are refused;
    - IsolationForest: by default (and with ``output="raw"``) the expected path length
      ``E[h(x)]`` (the mean over trees of the leaf depth plus c(samples in the leaf); what shap's
      TreeExplainer explains), exact path-dependent or interventional, recorded as ``"raw"``
      with ``params["explained"] = "expected_path_length"``. It is not the Model's own output
      (``decision_function``), a monotone increasing function of it: ``score_samples =
      -2 ** (-E[h(x)] / params["c_max_samples"])`` and ``decision_function = score_samples -
      params["offset"]`` (``offset_``); higher values in both mean more normal. For attributions
      of ``decision_function`` itself use a black-box explainer (kernel_shap on the model).

    ``params["base_values"]`` holds one base value per row, so ``base_values + values.sum(axis=1)``
    equals that output (additivity).

    Missing values: NaN in ``x`` and the background is routed exactly as the model's own
    ``predict`` routes it (HistGradientBoosting, LightGBM, XGBoost, and scikit-learn trees and
    forests that accept NaN: each split's stored default direction), so only this explainer's
    Model takes NaN (:meth:`featurelens.models.Model.with_missing_values`); inf is refused, and
    models whose library refuses NaN (GradientBoosting*) refuse it here too.

    DataFrames: bool, int and float columns are numbers; pandas ``category`` columns are coded as
    the library codes them (:func:`featurelens.explainers._tree_paths._frame_rows`); object and
    string columns are refused unless the model is a scikit-learn Pipeline that encodes them.

    A fitted scikit-learn ``Pipeline`` whose final step is a tree model is explained on the
    transformed features (:func:`explain_pipeline_final_step`): ``feature_names`` from
    ``pipeline[:-1].get_feature_names_out()``, ``data`` the transformed rows.

    ``interactions=True`` also computes the SHAP interaction values of the same output
    (:func:`tree_shap_interaction_values`, Lundberg et al. 2020) into
    ``Explanation.extra["interactions"]``, shape (n, d, d), each row summing to ``values``
    (not for the probability units).

    Model calls: the trees are read directly; the only model calls are the base class's target
    resolution (all rows when ``target`` is None, one row otherwise).
    """

    requires = Requires(gradients=False, estimators=supported_tree_models())
    accepts: frozenset = frozenset()  # no shared harness options (no seed, baseline or groups)

    outputs = ("raw", "probability", "log_odds")  # which ones apply depends on the trees (above)

    def __init__(self, model, background=None, batch_size: int | None = None,
                 interactions: bool = False, feature_perturbation: str | None = None):
        super().__init__(model, batch_size=batch_size)
        explicit = getattr(self.model, "output_asked", False)  # output="raw" asked, not the default
        self.interactions = check_bool(interactions, "interactions")
        fp = check_option(feature_perturbation, "feature_perturbation",
                          (None, "interventional", "tree_path_dependent"))
        if fp == "interventional" and background is None:
            raise ValueError("feature_perturbation='interventional' averages over background rows; "
                             "pass background= (rows like x), or use feature_perturbation="
                             "'tree_path_dependent' (no background)")
        if fp == "tree_path_dependent" and background is not None:
            raise ValueError("feature_perturbation='tree_path_dependent' values coalitions by the trees' "
                             "training cover and takes no background; drop background= or pass "
                             "feature_perturbation='interventional'")
        est = self.model.estimator
        self._pipeline = None
        if type(est).__name__ == "Pipeline" and type(est).__module__.startswith("sklearn."):
            self._pipeline = est
            self._ensemble = _build(est.steps[-1][1])  # TypeError naming the supported models
            self._pipeline_background = background
        else:
            reason = self.requires.why_not(self.model, (est.n_features_in_,)
                                           if hasattr(est, "n_features_in_") else (1,))
            if reason is not None:
                if type(est).__name__ == "Booster" and type(est).__module__.split(".")[0] in ("lightgbm", "xgboost"):
                    reason += (" (a raw Booster is no scikit-learn estimator: fit the library's scikit-learn "
                               "wrapper, e.g. LGBMRegressor / XGBClassifier, or call "
                               "featurelens.explainers.tree.tree_shap_values(booster, X))")
                raise TypeError(f"explainer 'tree_shap' {reason}")
            self._ensemble = _build(est)
            if self._ensemble.allow_nan:  # the trees route NaN as the model's predict does
                self.model = self.model.with_missing_values()
        self._mode, self._units = self._resolve_units(explicit, background)
        if self._mode == "probability" and self.interactions:
            raise ValueError("interactions=True explains the trees' own output; the probability of a "
                             "booster is explained by rescaled interventional values, which have no "
                             "interaction matrix: use output='log_odds' for interactions")
        if self._pipeline is not None and self._mode == "probability":
            raise ValueError("output='probability' of a Pipeline's booster is not supported; explain the "
                             "margin (output='log_odds'), or the final step on pipeline[:-1].transform(X)")
        self.feature_perturbation = "tree_path_dependent" if background is None else "interventional"
        self.background_weights = None
        if background is None or self._pipeline is not None:
            self.background = None
        else:
            # weighted rows (summarize_background's centres, or a (rows, weights) pair)
            background, weights = _split_background(background)
            if weights is not None and not np.allclose(weights, weights[0], rtol=0, atol=1e-15):
                self.background_weights = np.asarray(weights, dtype=np.float64)
            bg = self.model.to_tensor(background, "background")
            bg = bg.detach().cpu().numpy() if hasattr(bg, "detach") else np.asarray(bg)
            self.background = self._rows(bg.reshape(bg.shape[0], -1), "background")

    def _resolve_units(self, explicit, background):
        """``(mode, units)``: what is computed ("trees": the trees' own sum; "probability": the
        rescaled interventional values of sigmoid(margin)) and the units recorded."""
        ens, asked = self._ensemble, self.model.output
        name = type(self.model.estimator).__name__
        # "raw" of a Model called through decision_function is the margin itself
        raw_is_margin = not explicit or self.model.returns == "margin"
        if ens.units == "raw":
            return "trees", "raw"  # a regressor (the Model refuses other units for it)
        if ens.units == "probability":
            if asked == "log_odds":
                raise ValueError(f"explainer 'tree_shap' explains {name}'s class fractions (predict_proba), "
                                 "a sum over its trees; their log-odds are not, so output='log_odds' is "
                                 "not exact here: use output='probability' (or 'raw'), or a black-box "
                                 "explainer (kernel_shap) with output='log_odds'")
            return "trees", asked
        if ens.units == "log_odds":
            if asked == "log_odds" or (asked == "raw" and raw_is_margin):
                return "trees", "log_odds"
            reason = _probability_refusal(ens, name, background)
            if reason is not None:
                what = ("output='raw' is predict_proba for this classifier, and " if asked == "raw"
                        else "output='probability': ")
                raise ValueError(f"explainer 'tree_shap': {what}{reason}")
            return "probability", asked
        # "margin": multi-class (softmax) margins
        if asked == "raw" and raw_is_margin:
            return "trees", "margin"
        what = "output='raw' is predict_proba for this classifier" if asked == "raw" else f"output={asked!r}"
        raise ValueError(f"explainer 'tree_shap': {what}, and {_probability_refusal(ens, name, None)}; "
                         "without output= the margins are explained (recorded as 'margin')")

    def _rows(self, arr, name):
        """Rows from the Model (numbers, category codes) prepared for the trees. A model with its
        own preprocessing (HistGradientBoosting's categorical features) or with categorical
        columns gets them as it takes them (the Model decodes its codes back to the values
        first), so the trees see the codes the library itself computes."""
        if self._ensemble.preprocess is not None or (self.model.categories and self.model.feature_names):
            arr = self.model.decode(arr)
        return _prepare(arr, name, self._ensemble)

    def params(self) -> dict:
        params = super().params()
        params["output"] = self._units
        params["feature_perturbation"] = self.feature_perturbation
        bg = self._pipeline_background if self._pipeline is not None else self.background
        params["background_rows"] = None if bg is None else int(np.shape(_split_background(bg)[0])[0])
        params["background_weighted"] = self.background_weights is not None
        params["interactions"] = self.interactions
        if self._ensemble.explained is not None:  # what "raw" is here (an IsolationForest)
            params["explained"] = self._ensemble.explained
        if self._ensemble.isolation is not None:
            params.update(self._ensemble.isolation)
        return params

    def explain(self, x, target=None, feature_names=None, *args, **kwargs):
        if self._pipeline is not None:
            if args or kwargs.get("executor") is not None:
                raise TypeError("tree_shap of a Pipeline explains its rows in one call (no executor)")
            return self._explain_pipeline(x, target, feature_names)
        if not self._ensemble.allow_nan:  # the library's own rule, named (before any model call)
            try:
                missing = bool(np.isnan(np.asarray(x, dtype=np.float64)).any())
            except (TypeError, ValueError):  # categorical columns: the Model checks them
                missing = False
            if missing:
                raise ValueError(f"x contains NaN values; expected finite numbers ({self._ensemble.nan_reason})")
        e = super().explain(x, target, feature_names, *args, **kwargs)
        e.output = self._units
        return e

    def _select(self, values, base, inter, t, n):
        """The target's output of the trees' values: ``(values, base per row, interactions)``."""
        if values.ndim == 3:  # one column per output: pick the target's
            values = values[np.arange(n), :, t]
            base = np.asarray(base)[t]
            if inter is not None:
                inter = inter[np.arange(n), :, :, t]
        else:
            base = np.full(n, float(base))
            est = self.model.estimator
            est = est.steps[-1][1] if self._pipeline is not None else est
            through = getattr(self.model.function, "__name__", "")
            if len(getattr(est, "classes_", ())) == 2 and through != "decision_function":
                sign = np.where(t == 1, 1.0, -1.0)  # the margin is class 1's log-odds
                values = values * sign[:, None]
                # the probability of class 0 is 1 - p1: its base is 1 - base
                base = base * sign + (np.where(t == 1, 0.0, 1.0) if self._mode == "probability" else 0.0)
                if inter is not None:
                    inter = inter * sign[:, None, None]
        return values, base, inter

    def _compute(self, rows, bg, step):
        if self.background_weights is not None:
            # Interventional values are linear in the background distribution: the weighted sum
            # of the single-reference values (one background row each), exact for any weights.
            total = None
            for w, row in zip(self.background_weights, bg):
                part = self._compute_uniform(rows, row[None], step)
                total = [None if p is None else w * np.asarray(p, dtype=np.float64) for p in part] if total is None \
                    else [None if t is None else t + w * np.asarray(p, dtype=np.float64) for t, p in zip(total, part)]
            values, base, inter = total
            return values, (float(base) if np.ndim(base) == 0 else base), inter
        return self._compute_uniform(rows, bg, step)

    def _compute_uniform(self, rows, bg, step):
        if self._mode == "probability":
            values, base = _probability_shap(self._ensemble, rows, bg, step)
            return values, base, None
        values, base = _shap(self._ensemble, rows, bg, step)
        inter = _interactions(self._ensemble, rows, bg, step)[0] if self.interactions else None
        return values, base, inter

    def _attribute(self, x, target, outputs=None, **kwargs):
        if kwargs:
            raise TypeError(f"tree_shap's explain got unknown argument(s) {', '.join(kwargs)}")
        arr = x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
        if arr.ndim != 2:
            raise ValueError(f"tree_shap explains tabular rows, shape (n, d); got x of shape {arr.shape}")
        rows = self._rows(arr, "x")
        step = 256 if self.model.auto_batch else int(self.model.batch_size)
        values, base, inter = self._compute(rows, self.background, step)
        t = target.detach().cpu().numpy().astype(np.int64)
        values, base, inter = self._select(values, base, inter, t, rows.shape[0])
        extra = {"base_values": [float(b) for b in base]}
        if inter is not None:
            extra["arrays"] = {"interactions": inter}
        return values, extra

    def _explain_pipeline(self, x, target, feature_names):
        """The final step on the transformed rows (:func:`explain_pipeline_final_step`), the
        target's output picked as for any model (None: the pipeline's predicted class)."""
        import time

        from featurelens._validation import resolve_target
        from featurelens.explanation import Explanation

        start, calls = time.perf_counter(), self.model.calls
        e = explain_pipeline_final_step(self._pipeline, x, background=self._pipeline_background,
                                        interactions=self.interactions)
        n = e.values.shape[0]
        outputs = self.model.predict(self.model.to_tensor(x)) if target is None else None
        if target is None:
            t = outputs.detach().cpu().numpy().argmax(axis=1)
        else:
            n_out = int(self.model.predict(self.model.to_tensor(x)[:1]).shape[1])
            t = np.asarray(resolve_target(target, n, n_out)).astype(np.int64)
        values, base = e.values, e.base_values
        inter = e.extra.get("interactions")
        if values.ndim == 3:  # (n, k, d) -> the trees' layout (n, d, k) for _select
            values, base = np.moveaxis(values, 1, -1), np.asarray(base)[0]
            inter = None if inter is None else np.moveaxis(inter, 1, -1)
        else:
            base = float(np.asarray(base)[0])
        values, base, inter = self._select(values, base, inter, t, n)
        params = dict(self.params())
        params.update(e.params)
        params["output"] = self._units
        params["base_values"] = [float(b) for b in base]
        names = e.feature_names if feature_names is None else list(feature_names)
        return Explanation(values=values, method="tree_shap", params=params, target=t,
                           model_calls=self.model.calls - calls, seconds=time.perf_counter() - start,
                           extra={} if inter is None else {"interactions": inter},
                           feature_names=names, data=e.data, base_values=np.asarray(base, dtype=np.float64),
                           output=self._units)


# --------------------------------------------------------------------------------------------------
# a scikit-learn Pipeline: exact TreeSHAP of its final step on the transformed features


def _dense_rows(arr, name):
    """A transformer's output as a float64 numpy array (sparse matrices and DataFrames densified)."""
    if hasattr(arr, "toarray"):  # scipy.sparse
        arr = arr.toarray()
    return as_numpy(arr, name)


def explain_pipeline_final_step(pipeline, X, background=None, interactions=False):
    """Exact TreeSHAP of a fitted scikit-learn Pipeline's final tree model, on the transformed features.

    The features the trees split on are the outputs of ``pipeline[:-1]`` (for example a
    ColumnTransformer's scaled and passed-through columns), so this explains the final step on
    ``pipeline[:-1].transform(X)``: the values are those of :func:`tree_shap_values` (path-dependent
    TreeSHAP, Lundberg et al. 2020, for ``background=None``; interventional TreeSHAP, Janzing et al.
    2020, on the transformed ``background`` otherwise). Since the pipeline's raw output is the final
    step's raw output on the transformed rows, ``base_values + values.sum(axis=-1)`` equals the
    pipeline's raw output (its ``decision_function`` for gradient boosting, ``predict`` /
    ``predict_proba`` for trees and forests; see the module docstring).

    Parameters
    ----------
    pipeline : a fitted ``sklearn.pipeline.Pipeline`` whose final step is one of
        :func:`supported_tree_models`.
    X : array-like or DataFrame (n, ...), the rows to explain, as the pipeline takes them.
    background : None, or rows as the pipeline takes them (interventional TreeSHAP).
    interactions : also compute the SHAP interaction values (:func:`tree_shap_interaction_values`)
        into ``extra["interactions"]``.

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
    ens = _build(final)  # TypeError naming the supported models for anything else
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
    x = _prepare(z, "X (transformed)", ens)  # (float32-rounded for scikit-learn trees, as they compare)
    z = np.asarray(z, dtype=np.float64).reshape(x.shape)  # the transformed rows as they are
    bg = None if background is None else _prepare(transform(background, "background"),
                                                  "background (transformed)", ens)
    values, base = _shap(ens, x, bg, 256)
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
        extra["interactions"], _ = _interactions(ens, x, bg, 256)
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
