"""Exact TreeSHAP for scikit-learn tree models, as plain functions (numpy only).

:func:`tree_shap_values` computes exact Shapley values of a tree ensemble's output in two games:

* **path-dependent** (``background=None``): the value of a coalition S is the tree's expectation
  given x_S, computed by following x on the splits of features in S and averaging both children by
  their training cover on the others (Lundberg et al. 2020, Algorithm 1, "EXPVALUE"). The cover is
  ``tree_.weighted_n_node_samples`` for scikit-learn trees, so bootstrap draws and sample weights
  of random forests count, and the node ``count`` for HistGradientBoosting predictors;
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

Outputs (``output="raw"``, the only unit for now) and return shapes:

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
==========================================  ============================  ====================

In every case ``base + values.sum(axis=1) == f(x)`` up to rounding (additivity). The base value is
the cover-weighted mean leaf value plus the ensemble's constant (path-dependent) or the mean of f
over the background (interventional).
"""

from __future__ import annotations

import numpy as np

from featurelens._validation import as_numpy, check_bool, check_int, check_option

from ._base import Explainer, Requires, register

__all__ = [
    "tree_shap_values",
    "tree_shap_interaction_values",
    "supported_tree_models",
    "explain_pipeline_final_step",
    "TreeShap",
]

_SKLEARN_TREES = (
    "DecisionTreeRegressor",
    "DecisionTreeClassifier",
    "ExtraTreeRegressor",
    "ExtraTreeClassifier",
    "RandomForestRegressor",
    "RandomForestClassifier",
    "ExtraTreesRegressor",
    "ExtraTreesClassifier",
    "GradientBoostingRegressor",
    "GradientBoostingClassifier",
    "HistGradientBoostingRegressor",
    "HistGradientBoostingClassifier",
)


def supported_tree_models() -> tuple[str, ...]:
    """Names of the scikit-learn estimator classes :func:`tree_shap_values` accepts."""
    return _SKLEARN_TREES


# --------------------------------------------------------------------------------------------------
# the tree IR: one array set per tree, one row per root-to-leaf path


class _Paths:
    """Root-to-leaf paths of one tree with repeated features merged.

    ``feature`` (P, D) int (padding: feature 0 with ``valid`` False), ``lower``/``upper`` (P, D):
    x satisfies the element iff lower < x <= upper; ``nan_ok`` (P, D): whether NaN satisfies it;
    ``zero`` (P, D): product of cover ratios of its splits (1 for padding); ``value`` (P, K): leaf
    value times the tree's scale.
    """

    __slots__ = ("feature", "lower", "upper", "nan_ok", "zero", "valid", "value")

    def __init__(self, feature, lower, upper, nan_ok, zero, valid, value):
        self.feature, self.lower, self.upper = feature, lower, upper
        self.nan_ok, self.zero, self.valid, self.value = nan_ok, zero, valid, value


def _extract_paths(left, right, feature, threshold, nan_left, cover, leaf_value, scale) -> _Paths:
    """Walk a tree (arrays indexed by node; ``left[n] < 0`` at leaves) into merged paths.

    Going left means ``x <= threshold`` (or NaN with ``nan_left``); going right ``x > threshold``.
    ``leaf_value`` is (n_nodes, K); ``cover`` (n_nodes,) the training weight at each node.
    """
    rows = []  # (list of elements {f: [lo, hi, nan_ok, zero]}, leaf value)
    stack = [(0, {})]
    while stack:
        node, elems = stack.pop()
        if left[node] < 0:
            rows.append((elems, leaf_value[node] * scale))
            continue
        f = int(feature[node])
        t = float(threshold[node])
        parent = float(cover[node])
        for child, is_left in ((int(left[node]), True), (int(right[node]), False)):
            ratio = float(cover[child]) / parent if parent > 0 else 0.0
            lo, hi, nan_ok, zero = elems.get(f, (-np.inf, np.inf, True, 1.0))
            if is_left:
                hi = min(hi, t)
                nan_ok = nan_ok and bool(nan_left[node])
            else:
                lo = max(lo, t)
                nan_ok = nan_ok and not bool(nan_left[node])
            new = dict(elems)
            new[f] = (lo, hi, nan_ok, zero * ratio)
            stack.append((child, new))
    n_paths = len(rows)
    depth = max(1, max(len(e) for e, _ in rows))
    k = np.asarray(rows[0][1]).size
    feat = np.zeros((n_paths, depth), dtype=np.int64)
    lower = np.full((n_paths, depth), -np.inf)
    upper = np.full((n_paths, depth), np.inf)
    nan_ok = np.ones((n_paths, depth), dtype=bool)
    zero = np.ones((n_paths, depth))
    valid = np.zeros((n_paths, depth), dtype=bool)
    value = np.zeros((n_paths, k))
    for p, (elems, val) in enumerate(rows):
        value[p] = np.ravel(val)
        for j, (f, (lo, hi, ok, z)) in enumerate(sorted(elems.items())):
            feat[p, j], lower[p, j], upper[p, j], nan_ok[p, j], zero[p, j] = f, lo, hi, ok, z
            valid[p, j] = True
    return _Paths(feat, lower, upper, nan_ok, zero, valid, value)


def _sklearn_tree_paths(tree, scale, normalize, out_index=None) -> _Paths:
    t = tree.tree_
    value = np.asarray(t.value, dtype=np.float64)  # (nodes, n_outputs, max_classes)
    if normalize:  # classifier: class fractions (already fractions in recent scikit-learn)
        sums = value.sum(axis=2, keepdims=True)
        value = value / np.where(sums > 0, sums, 1.0)
        value = value[:, 0, :]
    elif out_index is None:
        value = value[:, :, 0]
    else:
        value = value[:, out_index : out_index + 1, 0]
    nan_left = getattr(t, "missing_go_to_left", np.zeros(t.node_count, dtype=np.uint8))
    return _extract_paths(
        t.children_left, t.children_right, t.feature, t.threshold, nan_left,
        np.asarray(t.weighted_n_node_samples, dtype=np.float64), value, scale,
    )


def _hgb_paths(predictor, k_out, n_out) -> _Paths:
    nodes = predictor.nodes
    if np.any(nodes["is_categorical"]):
        raise TypeError(
            "tree_shap_values does not support HistGradientBoosting models with categorical "
            "features yet; fit without categorical_features (e.g. one-hot encode them)"
        )
    left = np.where(nodes["is_leaf"].astype(bool), -1, nodes["left"].astype(np.int64))
    value = np.zeros((len(nodes), n_out))
    value[:, k_out] = nodes["value"]
    return _extract_paths(
        left, nodes["right"], nodes["feature_idx"], nodes["num_threshold"],
        nodes["missing_go_to_left"], nodes["count"].astype(np.float64), value, 1.0,
    )


class _Ensemble:
    """Paths of every tree, the constant added to the sum of trees, the output layout."""

    def __init__(self, paths, offset, n_out, squeeze, float32, allow_nan, n_features):
        self.paths = paths
        self.offset = np.asarray(offset, dtype=np.float64).reshape(n_out)
        self.n_out = n_out
        self.squeeze = squeeze  # return (n, d) and a float when True
        self.float32 = float32  # scikit-learn trees compare float32(x) <= threshold
        self.allow_nan = allow_nan
        self.n_features = n_features


def _check_fitted(model, name):
    if not hasattr(model, "n_features_in_"):
        raise ValueError(f"model ({name}) is not fitted; call fit before tree_shap_values")


def _constant_init(model, name, n_features):
    init = model.init_
    if isinstance(init, str) and init == "zero":
        return None
    if type(init).__name__ not in ("DummyRegressor", "DummyClassifier"):
        raise TypeError(
            f"tree_shap_values supports {name} only with a constant init (the default prior/mean "
            f"or init='zero'); got init={type(init).__name__}, whose output depends on x"
        )
    return model._raw_predict_init(np.zeros((1, n_features)))[0]


def _build(model) -> _Ensemble:
    name = type(model).__name__
    module = type(model).__module__
    if not module.startswith("sklearn.") or name not in _SKLEARN_TREES:
        raise TypeError(
            f"tree_shap_values does not support model type {module}.{name}; supported are the "
            f"scikit-learn estimators {', '.join(_SKLEARN_TREES)}"
        )
    _check_fitted(model, name)
    d = int(model.n_features_in_)
    if name.startswith("HistGradientBoosting"):
        baseline = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
        n_out = baseline.size
        paths = [
            _hgb_paths(pred, k, n_out) for stage in model._predictors for k, pred in enumerate(stage)
        ]
        if getattr(model, "_preprocessor", None) is not None:
            raise TypeError(
                f"tree_shap_values does not support {name} with categorical features yet "
                "(its columns are reordered by an internal preprocessor)"
            )
        return _Ensemble(paths, baseline, n_out, n_out == 1, False, True, d)
    if name.startswith("GradientBoosting"):
        stages = model.estimators_  # (n_stages, K) DecisionTreeRegressors
        n_out = stages.shape[1]
        lr = float(model.learning_rate)
        paths = []
        for stage in stages:
            for k, tree in enumerate(stage):
                p = _sklearn_tree_paths(tree, lr, False)
                value = np.zeros((p.value.shape[0], n_out))
                value[:, k] = p.value[:, 0]
                p.value = value
                paths.append(p)
        init = _constant_init(model, name, d)
        offset = np.zeros(n_out) if init is None else np.asarray(init, dtype=np.float64)
        return _Ensemble(paths, offset, n_out, n_out == 1, True, False, d)
    trees = model.estimators_ if hasattr(model, "estimators_") else [model]
    scale = 1.0 / len(trees)
    if name.endswith("Classifier"):
        if int(getattr(model, "n_outputs_", 1)) != 1:
            raise TypeError(f"tree_shap_values does not support multi-output {name} (n_outputs_ > 1)")
        n_out = len(model.classes_)
        paths = [_sklearn_tree_paths(t, scale, True) for t in trees]
        return _Ensemble(paths, np.zeros(n_out), n_out, False, True, False, d)
    n_out = int(getattr(model, "n_outputs_", 1))
    paths = [_sklearn_tree_paths(t, scale, False) for t in trees]
    return _Ensemble(paths, np.zeros(n_out), n_out, n_out == 1, True, False, d)


# --------------------------------------------------------------------------------------------------
# the engine


def _satisfies(paths: _Paths, x: np.ndarray) -> np.ndarray:
    """(n, P, D) float: 1 where row x satisfies the path element (padding: 1)."""
    xv = x[:, paths.feature]  # (n, P, D)
    with np.errstate(invalid="ignore"):
        ok = (xv > paths.lower) & (xv <= paths.upper)
    nan = np.isnan(xv)
    ok = np.where(nan, paths.nan_ok, ok) | ~paths.valid
    return ok.astype(np.float64)


def _gauss_legendre(depth: int):
    m = max(1, (depth + 1) // 2)
    t, w = np.polynomial.legendre.leggauss(m)
    return (t + 1.0) / 2.0, w / 2.0  # on [0, 1]


def _path_phi(o, q, paths: _Paths, nodes, weights, n_features):
    """Shapley values of the leaf product games, summed: (n, d, K).

    ``o`` (n, P, D) and ``q`` (n or 1, P, D) are the "in coalition" and "out of coalition" factors.
    """
    n, P, D = o.shape
    diff = o - q  # (n, P, D)
    # factors at each quadrature node: (Q, n, P, D)
    fac = q[None] + nodes[:, None, None, None] * diff[None]
    prefix = np.ones_like(fac)
    suffix = np.ones_like(fac)
    if D > 1:
        prefix[..., 1:] = np.cumprod(fac[..., :-1], axis=-1)
        suffix[..., :-1] = np.cumprod(fac[..., :0:-1], axis=-1)[..., ::-1]
    loo = np.tensordot(weights, prefix * suffix, axes=(0, 0))  # (n, P, D)
    contrib = (diff * loo).reshape(n, P * D)  # padding elements have diff 0
    onehot = np.zeros((P * D, n_features))
    onehot[np.arange(P * D), paths.feature.ravel()] = 1.0
    # phi[n, f, k] = sum_e contrib[n, e] * value[e, k] * onehot[e, f]
    val = np.repeat(paths.value, D, axis=0)  # (P*D, K)
    return np.einsum("ne,ek,ef->nfk", contrib, val, onehot, optimize=True)


def _tree_output(factors, paths: _Paths):
    """sum over leaves of value * prod of factors: (n, K)."""
    return np.prod(factors, axis=-1) @ paths.value


def _prepare(X, name, ens: _Ensemble, allow_empty=False):
    arr = as_numpy(X, name)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be a numeric array; got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != ens.n_features:
        raise ValueError(
            f"{name} must have shape (n_rows, {ens.n_features}) (the model was fitted on "
            f"{ens.n_features} features); got shape {tuple(as_numpy(X, name).shape)}"
        )
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name} must have at least one row; got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains inf values; expected finite numbers")
    if np.isnan(arr).any() and not ens.allow_nan:
        raise ValueError(
            f"{name} contains NaN values; expected finite numbers (only HistGradientBoosting "
            "models route missing values in tree_shap_values)"
        )
    if ens.float32:
        arr = arr.astype(np.float32).astype(np.float64)
    return arr


def tree_shap_values(model, X, background=None, output="raw", *, batch_size=256):
    """Exact TreeSHAP values of a fitted scikit-learn tree model (see the module docstring).

    Parameters
    ----------
    model : a fitted DecisionTree*, ExtraTree*, RandomForest*, ExtraTrees*, GradientBoosting* or
        HistGradientBoosting* regressor or classifier (HistGradientBoosting without categorical
        features). Anything else raises a TypeError.
    X : array-like (n, d) or (d,), the rows to explain. NaN only for HistGradientBoosting (missing
        values follow ``missing_go_to_left``).
    background : None for path-dependent TreeSHAP (cover-weighted, Lundberg et al. 2020), or an
        array-like (R, d) for interventional TreeSHAP (the mean of the single-reference values).
    output : "raw" (the model's margin, or class fractions for forest classifiers).
    batch_size : rows (times background rows) processed at a time, to bound memory.

    Returns
    -------
    values : float64 array, (n, d) for single-output models (regressors, binary gradient boosting
        margins) or (n, d, k) with k the number of outputs / classes.
    base_value : float for single-output models, else (k,) float64 array, so that
        ``base_value + values.sum(axis=1) == f(x)``.
    """
    check_option(output, "output", ("raw",))
    return _shap(*_inputs(model, X, background, batch_size))


def _inputs(model, X, background, batch_size):
    """``(ensemble, rows, background rows or None, batch_size)``, checked, for the public functions."""
    batch_size = check_int(batch_size, "batch_size", low=1)
    ens = _build(model)
    x = _prepare(X, "X", ens)
    bg = None if background is None else _prepare(background, "background", ens)
    return ens, x, bg, batch_size


def _shap(ens: _Ensemble, x: np.ndarray, bg: np.ndarray | None, batch_size: int):
    """tree_shap_values on a built ensemble and prepared rows (see there)."""
    n, d, K = x.shape[0], ens.n_features, ens.n_out
    values = np.zeros((n, d, K))
    base = ens.offset.copy()
    for paths in ens.paths:
        nodes, weights = _gauss_legendre(paths.feature.shape[1])
        if bg is None:
            q = paths.zero[None]
            base += (np.prod(paths.zero, axis=1) @ paths.value)
            for start in range(0, n, batch_size):
                o = _satisfies(paths, x[start : start + batch_size])
                values[start : start + batch_size] += _path_phi(o, q, paths, nodes, weights, d)
        else:
            qb = _satisfies(paths, bg)  # (R, P, D)
            R = qb.shape[0]
            base += _tree_output(qb, paths).mean(axis=0)
            step = max(1, batch_size // R)
            for start in range(0, n, step):
                o = _satisfies(paths, x[start : start + step])  # (m, P, D)
                m = o.shape[0]
                oo = np.repeat(o, R, axis=0)  # (m*R, P, D)
                qq = np.tile(qb, (m, 1, 1))
                phi = _path_phi(oo, qq, paths, nodes, weights, d).reshape(m, R, d, K)
                values[start : start + m] += phi.mean(axis=1)
    if ens.squeeze:
        return values[:, :, 0], float(base[0])
    return values, base


# --------------------------------------------------------------------------------------------------
# interaction values


def _path_pair(o, q, paths: _Paths, nodes, weights, n_features, out):
    """Shapley interaction indices of the leaf product games, summed into ``out`` (n, d*d, K).

    For a product game v(S) = prod_f g_f the Shapley interaction index (Grabisch and Roubens 1999)
    of the elements at path positions a != b is ``(o_a - q_a)(o_b - q_b) * int_0^1 prod_{k != a, b}
    (q_k + t (o_k - q_k)) dt`` (the weights |S|!(m-|S|-2)!/(m-1)! are Beta integrals of
    t^|S| (1-t)^(m-2-|S|)); the leave-two-out products come from prefix and suffix products of the
    factors with factor a set to 1 (no division).
    """
    n, P, D = o.shape
    K = paths.value.shape[1]
    diff = o - q
    fac = q[None] + nodes[:, None, None, None] * diff[None]  # (Q, n, P, D)
    pair = np.zeros((n, P, D, D))
    for a in range(D):
        fa = fac.copy()
        fa[..., a] = 1.0
        prefix = np.ones_like(fa)
        suffix = np.ones_like(fa)
        prefix[..., 1:] = np.cumprod(fa[..., :-1], axis=-1)
        suffix[..., :-1] = np.cumprod(fa[..., :0:-1], axis=-1)[..., ::-1]
        l2o = np.tensordot(weights, prefix * suffix, axes=(0, 0))  # (n, P, D): prod_{k != a, b}
        pair[:, :, a, :] = diff[..., a : a + 1] * diff * l2o
        pair[:, :, a, a] = 0.0
    # scatter (p, a, b) -> (feature[p, a], feature[p, b]); padding elements have diff 0
    idx = (paths.feature[:, :, None] * n_features + paths.feature[:, None, :]).ravel()  # (P*D*D,)
    order = np.argsort(idx, kind="stable")
    uniq, starts = np.unique(idx[order], return_index=True)
    flat = pair.reshape(n, P * D * D)[:, order]
    val = np.repeat(paths.value, D * D, axis=0)[order]  # (P*D*D, K)
    for k in range(K):
        out[:, uniq, k] += np.add.reduceat(flat * val[:, k], starts, axis=1)


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


def _interactions(ens: _Ensemble, x: np.ndarray, bg: np.ndarray | None, batch_size: int):
    """tree_shap_interaction_values on a built ensemble and prepared rows (see there)."""
    n, d, K = x.shape[0], ens.n_features, ens.n_out
    pairs = np.zeros((n, d * d, K))
    for paths in ens.paths:
        depth = paths.feature.shape[1]
        nodes, weights = _gauss_legendre(depth)
        rows = max(1, batch_size // depth)  # the pair array is depth times the Shapley one
        if bg is None:
            q = paths.zero[None]
            for start in range(0, n, rows):
                o = _satisfies(paths, x[start : start + rows])
                _path_pair(o, q, paths, nodes, weights, d, pairs[start : start + rows])
        else:
            qb = _satisfies(paths, bg)  # (R, P, D)
            R = qb.shape[0]
            step = max(1, rows // R)
            for start in range(0, n, step):
                o = _satisfies(paths, x[start : start + step])
                m = o.shape[0]
                part = np.zeros((m * R, d * d, K))
                _path_pair(np.repeat(o, R, axis=0), np.tile(qb, (m, 1, 1)), paths, nodes, weights,
                           d, part)
                pairs[start : start + m] += part.reshape(m, R, d * d, K).mean(axis=1)
    values = pairs.reshape(n, d, d, K) / 2.0
    phi, base = _shap(ens, x, bg, batch_size)
    phi = phi.reshape(n, d, K)
    diag = np.arange(d)
    values[:, diag, diag, :] = 0.0  # (a feature never pairs with itself on a merged path)
    values[:, diag, diag, :] = phi - values.sum(axis=2)
    if ens.squeeze:
        return values[..., 0], base
    return values, base


# --------------------------------------------------------------------------------------------------
# the registered explainer


@register("tree_shap")
class TreeShap(Explainer):
    """Exact TreeSHAP (Lundberg et al. 2020) of a fitted scikit-learn tree model; the algorithm is
    :func:`tree_shap_values` (per-path products evaluated with Gauss-Legendre nodes, after
    GPUTreeShap, Mitchell et al. 2022, and Linear TreeShap, Yu et al. 2022).

    ``background=None``: path-dependent TreeSHAP (coalitions valued by the trees' training cover,
    shap's ``feature_perturbation="tree_path_dependent"``); an array or DataFrame of rows:
    interventional TreeSHAP (the mean of the single-reference values over those rows, Janzing et
    al. 2020). ``batch_size``: rows per model call (target resolution) and rows (times background
    rows) per vectorised step of the tree computation.

    Units (``Explanation.output == "raw"``): the model's own output for forests and trees
    (``predict``; ``predict_proba`` class fractions for classifiers) and the margin for gradient
    boosting (``decision_function``, log-odds for binary classifiers). ``target`` picks the output
    as everywhere else (None: the predicted class); for a binary gradient boosting classifier
    wrapped through ``predict_proba``, target 1 explains the log-odds margin and target 0 its
    negative (the log-odds of class 0). ``params["base_values"]`` holds one base value per row, so
    ``base_values + values.sum(axis=1)`` equals that output (additivity).

    ``interactions=True`` also computes the SHAP interaction values of the same output
    (:func:`tree_shap_interaction_values`, Lundberg et al. 2020) into
    ``Explanation.extra["interactions"]``, shape (n, d, d), each row summing to ``values``.

    Model calls: the trees are read directly; the only model calls are the base class's target
    resolution (all rows when ``target`` is None, one row otherwise). NaN inputs are refused like
    for every explainer (``Model.to_tensor``), also for HistGradientBoosting, whose missing-value
    routing :func:`tree_shap_values` itself supports.
    """

    requires = Requires(gradients=False, estimators=_SKLEARN_TREES)
    accepts: frozenset = frozenset()  # no shared harness options (no seed, baseline or groups)

    outputs = ("raw",)  # values come from the trees, not the Model's forward passes

    def __init__(self, model, background=None, batch_size: int | None = None,
                 interactions: bool = False):
        super().__init__(model, batch_size=batch_size)
        self.interactions = check_bool(interactions, "interactions")
        reason = self.requires.why_not(self.model, (self.model.estimator.n_features_in_,)
                                       if hasattr(self.model.estimator, "n_features_in_") else (1,))
        if reason is not None:
            raise TypeError(f"explainer 'tree_shap' {reason}")
        self._ensemble = _build(self.model.estimator)
        if background is None:
            self.background = None
        else:
            bg = self.model.to_tensor(background, "background")
            bg = bg.detach().cpu().numpy() if hasattr(bg, "detach") else np.asarray(bg)
            self.background = _prepare(bg.reshape(bg.shape[0], -1), "background", self._ensemble)

    def params(self) -> dict:
        params = super().params()
        params["feature_perturbation"] = (
            "tree_path_dependent" if self.background is None else "interventional"
        )
        params["background_rows"] = None if self.background is None else int(self.background.shape[0])
        params["interactions"] = self.interactions
        return params

    def _attribute(self, x, target, outputs=None, **kwargs):
        if kwargs:
            raise TypeError(f"tree_shap's explain got unknown argument(s) {', '.join(kwargs)}")
        arr = x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
        if arr.ndim != 2:
            raise ValueError(f"tree_shap explains tabular rows, shape (n, d); got x of shape {arr.shape}")
        rows = _prepare(arr, "x", self._ensemble)
        step = 256 if self.model.auto_batch else int(self.model.batch_size)
        values, base = _shap(self._ensemble, rows, self.background, step)
        inter = None
        if self.interactions:
            inter, _ = _interactions(self._ensemble, rows, self.background, step)
        t = target.detach().cpu().numpy().astype(np.int64)
        n = rows.shape[0]
        if values.ndim == 3:  # one column per output: pick the target's
            values = values[np.arange(n), :, t]
            base = np.asarray(base)[t]
            if inter is not None:
                inter = inter[np.arange(n), :, :, t]
        else:
            base = np.full(n, float(base))
            est = self.model.estimator
            through = getattr(self.model.function, "__name__", "")
            if len(getattr(est, "classes_", ())) == 2 and through != "decision_function":
                sign = np.where(t == 1, 1.0, -1.0)  # the margin is class 1's log-odds
                values = values * sign[:, None]
                base = base * sign
                if inter is not None:
                    inter = inter * sign[:, None, None]
        extra = {"base_values": [float(b) for b in base]}
        if inter is not None:
            extra["arrays"] = {"interactions": inter}
        return values, extra


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
    return Explanation(values=values, method="tree_shap", params=params, target=target, extra=extra,
                       feature_names=names, data=z, base_values=base_values, output="raw")
