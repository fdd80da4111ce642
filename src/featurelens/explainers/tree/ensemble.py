"""Reading tree models into the IR of :mod:`.paths`: the scikit-learn trees and ensembles here,
LightGBM and XGBoost boosters in :mod:`.boosters`, and :func:`build_ensemble`, which picks the
reader. Every model becomes an :class:`~.paths.Ensemble`: one :class:`~.paths.Paths` per tree,
the constant added to the sum of trees and the output layout.
"""

from __future__ import annotations

import weakref

import numpy as np

from .paths import Ensemble, Paths, extract_paths, forest_paths
from .raw_boosters import RawBooster

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
    "IsolationForest",
)


# the LightGBM and XGBoost scikit-learn wrappers (read by .boosters); their raw ``Booster``
# objects are accepted by the functions too, but are no scikit-learn estimators
_BOOSTERS = (
    "LGBMRegressor",
    "LGBMClassifier",
    "LGBMRanker",
    "XGBRegressor",
    "XGBClassifier",
    "XGBRanker",
    "XGBRFRegressor",
    "XGBRFClassifier",
)


def supported_tree_models() -> tuple[str, ...]:
    """Names of the estimator classes :func:`tree_shap_values` accepts.

    Returns
    -------
    tuple of str
        The scikit-learn trees and ensembles and the LightGBM / XGBoost scikit-learn wrappers. Raw
        ``lightgbm.Booster`` and ``xgboost.Booster`` objects (what ``lgb.train`` / ``xgb.train``
        return and a saved model file loads into) are accepted as well, by the functions and by
        the explainer ``tree_shap`` (through ``featurelens.explainers.tree.booster_estimator``).
    """
    return _SKLEARN_TREES + _BOOSTERS


def _sklearn_tree_part(tree, scale, normalize, column=None, n_out=1) -> tuple:
    """A scikit-learn tree as the arguments of :func:`~.paths.extract_paths`: its node arrays,
    its leaf values (class fractions for a classifier; with ``column``, the single output placed
    in that column of ``n_out``) and ``scale``."""
    t = tree.tree_
    value = np.asarray(t.value, dtype=np.float64)  # (nodes, n_outputs, max_classes)
    if normalize:  # classifier: its class counts or fractions, made fractions by _class_fractions
        value = value[:, 0, :]
    elif column is None:
        value = value[:, :, 0]
    elif n_out == 1:
        value = value[:, 0, :1]
    else:
        placed = np.zeros((value.shape[0], n_out))
        placed[:, column] = value[:, 0, 0]
        value = placed
    nan_left = getattr(t, "missing_go_to_left", None)
    if nan_left is None:
        nan_left = np.zeros(t.node_count, dtype=np.uint8)
    return (t.children_left, t.children_right, t.feature, t.threshold, nan_left,
            t.weighted_n_node_samples, value, scale)


def _class_fractions(parts) -> list:
    """``parts`` with each node's class values divided by their sum (class fractions; recent
    scikit-learn stores fractions already), for all trees in one step."""
    values = np.concatenate([part[6] for part in parts])
    sums = values.sum(axis=1, keepdims=True)
    values = values / np.where(sums > 0, sums, 1.0)
    bounds = np.cumsum([len(part[6]) for part in parts])[:-1]
    return [part[:6] + (v,) + part[7:] for part, v in zip(parts, np.split(values, bounds))]


def _numeric_ensemble(parts, offset, n_out, squeeze, float32, allow_nan, d, **kwargs) -> Ensemble:
    """The :class:`~.paths.Ensemble` of trees with numerical splits only (``parts``: the
    arguments of :func:`~.paths.extract_paths` per tree): read by one compiled walk where numba
    is installed (:func:`~.paths.forest_paths`, the compiled engine's arrays built at once), else
    tree by tree in Python."""
    forest = forest_paths(parts)
    if forest is None:
        return Ensemble([extract_paths(*part) for part in parts], offset, n_out, squeeze, float32,
                        allow_nan, d, **kwargs)
    paths, packed = forest
    ens = Ensemble(paths, offset, n_out, squeeze, float32, allow_nan, d, **kwargs)
    ens.packed = packed
    return ens


def _average_path_length(n) -> np.ndarray:
    """c(n), the average path length of an unsuccessful search in a binary search tree of n
    keys, which is the expected depth at which an isolation tree grown on n points isolates one
    (Liu, Ting and Zhou 2008, eq. 1): ``2 H(n - 1) - 2 (n - 1) / n`` with the harmonic number
    ``H(i) ~ ln(i) + 0.5772156649`` (Euler's constant), ``c(2) = 1`` and ``c(n) = 0`` for n <= 1;
    the same formula as scikit-learn's ``IsolationForest``, so leaf values match its scores."""
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros(n.shape)
    out[n == 2] = 1.0
    big = n > 2
    out[big] = 2.0 * (np.log(n[big] - 1.0) + np.euler_gamma) - 2.0 * (n[big] - 1.0) / n[big]
    return out


def _node_depths(left, right) -> np.ndarray:
    """Depth of every node of a tree (root 0), by a walk from the root."""
    depth = np.zeros(len(left), dtype=np.int64)
    stack = [0]
    while stack:
        node = stack.pop()
        if left[node] >= 0:
            for child in (int(left[node]), int(right[node])):
                depth[child] = depth[node] + 1
                stack.append(child)
    return depth


def _isolation_tree_part(tree, features, scale) -> tuple:
    """One isolation tree of an IsolationForest as the arguments of :func:`~.paths.extract_paths`,
    its leaves holding its path length.

    A point reaching a leaf at depth ``k`` that held ``m`` of the tree's training samples (the
    unweighted ``n_node_samples``, as scikit-learn counts them) has path length ``h = k + c(m)``
    (Liu, Ting and Zhou 2008, section 4: the depth plus the average depth at which the ``m``
    samples left unseparated would be isolated, :func:`_average_path_length`). ``features`` maps
    the tree's columns to the forest's (``estimators_features_``: with ``max_features < 1`` each
    tree sees a subset of the features). The cover of path-dependent TreeSHAP is
    ``weighted_n_node_samples`` (bootstrap counts and sample weights included), as for every
    scikit-learn tree.
    """
    t = tree.tree_
    left, right = np.asarray(t.children_left), np.asarray(t.children_right)
    value = (_node_depths(left, right) + _average_path_length(t.n_node_samples))[:, None]
    features = np.asarray(features, dtype=np.int64)
    feature = np.asarray(t.feature, dtype=np.int64)
    feature = np.where(feature >= 0, features[np.maximum(feature, 0)], feature)
    nan_left = getattr(t, "missing_go_to_left", None)
    if nan_left is None:
        nan_left = np.zeros(t.node_count, dtype=np.uint8)
    return (left, right, feature, t.threshold, nan_left, t.weighted_n_node_samples, value, scale)


def _isolation_forest(model, name, d) -> Ensemble:
    """An IsolationForest as the mean of its trees' path lengths, ``E[h(x)]`` (see
    :func:`_isolation_tree_part`); its scores are functions of that mean:
    ``score_samples = -2 ** (-E[h(x)] / c(max_samples_))`` and ``decision_function =
    score_samples - offset_`` (recorded in ``ens.isolation`` for the explainer's params)."""
    trees = model.estimators_
    parts = [_isolation_tree_part(t, f, 1.0 / len(trees))
             for t, f in zip(trees, model.estimators_features_)]
    nan = _sklearn_allows_nan(model)
    ens = _numeric_ensemble(parts, np.zeros(1), 1, True, True, nan, d)
    ens.units = "raw"
    ens.explained = "expected_path_length"
    ens.isolation = {"c_max_samples": float(_average_path_length([model._max_samples])[0]),
                     "offset": float(model.offset_)}
    return _nan_rule(ens, name, nan)


def _hgb_paths(predictor, k_out, n_out) -> Paths:
    """A HistGradientBoosting predictor's tree. Categorical nodes send the categories whose bit is
    set in ``raw_left_cat_bitsets[bitset_idx]`` (eight 32-bit words: category c is bit c % 32 of
    word c // 32) left and every other category right; NaN, which is also what the model's
    preprocessor makes of categories unseen in training, follows ``missing_go_to_left``."""
    nodes = predictor.nodes
    is_leaf = nodes["is_leaf"].astype(bool)
    left = np.where(is_leaf, -1, nodes["left"].astype(np.int64))
    value = np.zeros((len(nodes), n_out))
    value[:, k_out] = nodes["value"]
    categorical = None
    cat_nodes = np.flatnonzero(nodes["is_categorical"].astype(bool) & ~is_leaf)
    if cat_nodes.size:
        words = np.asarray(predictor.raw_left_cat_bitsets, dtype=np.uint64)
        bits = (words[:, :, None] >> np.arange(32, dtype=np.uint64)[None, None, :]) & np.uint64(1)
        members = bits.reshape(words.shape[0], -1).astype(bool)  # (n_bitsets, 256): category c goes left
        categorical = {int(node): (set(np.flatnonzero(members[int(nodes["bitset_idx"][node])]).tolist()), False)
                       for node in cat_nodes}
    return extract_paths(
        left, nodes["right"], nodes["feature_idx"], nodes["num_threshold"],
        nodes["missing_go_to_left"], nodes["count"].astype(np.float64), value, 1.0,
        categorical=categorical,
    )


def _hgb_part(predictor, k_out, n_out) -> tuple:
    """A HistGradientBoosting predictor's tree without categorical nodes as the arguments of
    :func:`~.paths.extract_paths` (see :func:`_hgb_paths`)."""
    nodes = predictor.nodes
    is_leaf = nodes["is_leaf"].astype(bool)
    value = np.zeros((len(nodes), n_out))
    value[:, k_out] = nodes["value"]
    return (np.where(is_leaf, -1, nodes["left"].astype(np.int64)), nodes["right"], nodes["feature_idx"],
            nodes["num_threshold"], nodes["missing_go_to_left"], nodes["count"].astype(np.float64), value, 1.0)


def _hgb_preprocessor(model, d):
    """``(preprocess, tree_columns)`` for a HistGradientBoosting model with categorical features:
    its own preprocessor (a ColumnTransformer that ordinal-encodes the categorical columns, unseen
    categories to NaN, and puts them first) and, for each column the trees split on, the input
    column it comes from. ``(None, None)`` without categorical features."""
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return None, None
    order = []
    for _name, _transformer, columns in pre.transformers_:
        if isinstance(_transformer, str) and _transformer == "drop":
            continue
        cols = np.asarray(columns)
        order.extend((np.flatnonzero(cols) if cols.dtype == bool else cols.astype(np.int64)).tolist())
    order = np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(d)):
        raise TypeError(f"{type(model).__name__}'s preprocessor does not map its {d} columns one to one; "
                        "tree_shap_values cannot attribute to the input columns")
    return pre.transform, order


def _check_fitted(model, name):
    if not hasattr(model, "n_features_in_"):
        raise ValueError(f"model ({name}) is not fitted; call fit before tree_shap_values")


#: The raw constant of a fitted GradientBoosting model, by its ``init_`` (a new estimator object
#: every fit, so a refit model is never read from here): scikit-learn's ``_raw_predict_init``
#: validates its input like a predict call, half the cost of reading a small ensemble.
_INITS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _constant_init(model, name, n_features):
    init = model.init_
    if isinstance(init, str) and init == "zero":
        return None
    if type(init).__name__ not in ("DummyRegressor", "DummyClassifier"):
        raise TypeError(
            f"tree_shap_values supports {name} only with a constant init (the default prior/mean "
            f"or init='zero'); got init={type(init).__name__}, whose output depends on x"
        )
    try:
        return _INITS[init].copy()
    except (KeyError, TypeError):
        pass
    value = np.asarray(model._raw_predict_init(np.zeros((1, n_features)))[0], dtype=np.float64)
    try:
        _INITS[init] = value
    except TypeError:  # an init that takes no weak reference: read it every time
        pass
    return value.copy()


def build_ensemble(model) -> Ensemble:
    """The :class:`~.paths.Ensemble` of a fitted tree model: scikit-learn trees and ensembles read
    here, LightGBM and XGBoost models by :func:`.boosters.build_booster`; a TypeError naming the
    supported models for anything else, a ValueError for an unfitted one."""
    if isinstance(model, RawBooster):  # a raw Booster seen as an estimator: read its trees
        model = model.booster
    name = type(model).__name__
    module = type(model).__module__
    if module.split(".")[0] in ("lightgbm", "xgboost"):
        from .boosters import build_booster

        return build_booster(model)
    if not module.startswith("sklearn.") or name not in _SKLEARN_TREES:
        raise TypeError(
            f"tree_shap_values does not support model type {module}.{name}; supported are the "
            f"scikit-learn estimators {', '.join(_SKLEARN_TREES)}, the LightGBM and XGBoost "
            f"wrappers {', '.join(_BOOSTERS)} and their raw Boosters"
        )
    _check_fitted(model, name)
    d = int(model.n_features_in_)
    if name.startswith("HistGradientBoosting"):
        baseline = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
        n_out = baseline.size
        preprocess, tree_columns = _hgb_preprocessor(model, d)
        predictors = [(k, pred) for stage in model._predictors for k, pred in enumerate(stage)]
        if any(pred.nodes["is_categorical"].any() for _, pred in predictors):
            ens = Ensemble([_hgb_paths(pred, k, n_out) for k, pred in predictors], baseline, n_out,
                           n_out == 1, False, True, d, preprocess=preprocess, tree_columns=tree_columns)
        else:
            ens = _numeric_ensemble([_hgb_part(pred, k, n_out) for k, pred in predictors], baseline,
                                    n_out, n_out == 1, False, True, d, preprocess=preprocess,
                                    tree_columns=tree_columns)
        ens.units = _classifier_units(name, n_out)
        return ens
    if name.startswith("GradientBoosting"):
        stages = model.estimators_  # (n_stages, K) DecisionTreeRegressors
        n_out = stages.shape[1]
        lr = float(model.learning_rate)
        parts = [_sklearn_tree_part(tree, lr, False, k, n_out) for stage in stages for k, tree in enumerate(stage)]
        init = _constant_init(model, name, d)
        offset = np.zeros(n_out) if init is None else np.asarray(init, dtype=np.float64)
        ens = _numeric_ensemble(parts, offset, n_out, n_out == 1, True, False, d)
        ens.units = _classifier_units(name, n_out)
        ens.nan_reason = (f"scikit-learn's {name} does not accept missing values; "
                          "HistGradientBoosting does")
        return ens
    if name == "IsolationForest":
        return _isolation_forest(model, name, d)
    trees = model.estimators_ if hasattr(model, "estimators_") else [model]
    nan = _sklearn_allows_nan(model)
    scale = 1.0 / len(trees)
    if name.endswith("Classifier"):
        if int(getattr(model, "n_outputs_", 1)) != 1:
            raise TypeError(f"tree_shap_values does not support multi-output {name} (n_outputs_ > 1)")
        n_out = len(model.classes_)
        parts = _class_fractions([_sklearn_tree_part(t, scale, True) for t in trees])
        ens = _numeric_ensemble(parts, np.zeros(n_out), n_out, False, True, nan, d)
        ens.units = "probability"  # class fractions: predict_proba itself
        return _nan_rule(ens, name, nan)
    n_out = int(getattr(model, "n_outputs_", 1))
    parts = [_sklearn_tree_part(t, scale, False) for t in trees]
    return _nan_rule(_numeric_ensemble(parts, np.zeros(n_out), n_out, n_out == 1, True, nan, d), name, nan)


def _classifier_units(name, n_out):
    """A gradient boosting model's margin units: regressors "raw"; binary classifiers (log loss,
    one margin) "log_odds"; multi-class classifiers "margin" (softmax logits)."""
    if not name.endswith("Classifier"):
        return "raw"
    return "log_odds" if n_out == 1 else "margin"


def _sklearn_allows_nan(model) -> bool:
    """Whether scikit-learn's own ``predict`` of this tree or forest takes NaN (its input tag
    ``allow_nan``: since scikit-learn 1.3 a tree built with the "best" splitter routes missing
    values by the ``missing_go_to_left`` it stores per node, which the paths read)."""
    try:
        from sklearn.utils import get_tags

        return bool(get_tags(model).input_tags.allow_nan)
    except Exception:  # an older scikit-learn without get_tags
        return bool(getattr(model, "_get_tags", lambda: {})().get("allow_nan", False))


def _nan_rule(ens, name, nan):
    if not nan:
        ens.nan_reason = (f"scikit-learn's {name} with these settings does not accept missing values; "
                          "HistGradientBoosting and trees with the 'best' splitter do")
    return ens
