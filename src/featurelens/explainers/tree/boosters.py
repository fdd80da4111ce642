"""LightGBM and XGBoost models read into the tree ensemble IR (:mod:`.paths`).

Both libraries are read from their documented model dumps, never from private attributes:
LightGBM from ``Booster.dump_model()`` (JSON), XGBoost from ``Booster.save_raw(raw_format="json")``
(the JSON model schema: per-tree node arrays with float32 values written exactly) and
``Booster.save_config()``. Accepted: ``lightgbm.LGBMRegressor/LGBMClassifier/LGBMRanker``, a raw
``lightgbm.Booster``, ``xgboost.XGBRegressor/XGBClassifier/XGBRanker/XGBRFRegressor/XGBRFClassifier``
and a raw ``xgboost.Booster`` (``gbtree`` and ``dart``).

What the values explain is the model's raw margin: LightGBM ``predict(raw_score=True)``, XGBoost
``predict(output_margin=True)``; one output per class for multi-class models (trees interleaved
per class, tree i adds to class ``i % num_class`` for LightGBM and ``tree_info[i]`` for XGBoost).
Both libraries store leaf values with the learning rate applied.

LightGBM semantics (its ``Tree::NumericalDecision`` / ``CategoricalDecision``)
-----------------------------------------------------------------------------
- reading a row: ``predict`` passes a dense row to the trees as the values with
  ``|x| > 1e-35`` (kZeroThreshold) or NaN; every other value is read as 0.0 (so -1e-36 is 0.0,
  which matters for the +-1.0000000180025095e-35 thresholds LightGBM puts around zero);
- numerical split (``decision_type "<="``): left iff ``x <= threshold``, compared in float64 (the
  dump prints thresholds with 17 significant digits, so they are exact);
- missing values, per split ``missing_type``: ``"NaN"``: NaN goes the default side
  (``default_left``); ``"None"``: NaN is read as 0.0 and compared (so NaN goes left iff
  ``0 <= threshold``); ``"Zero"``: NaN and zeros (``|x| <= 1e-35``, LightGBM's kZeroThreshold) go
  the default side. Zeros on a "Zero" feature are mapped to NaN before the trees are walked (an
  ``input_map`` of the ensemble), so the IR needs no third missing-value case; LightGBM gives all
  splits on a feature its bin mapper's missing type, and a model mixing "Zero" with another type
  on one feature is refused;
- categorical split (``decision_type "=="``, ``threshold "a||b||c"``): x is truncated toward zero
  to an int (``static_cast<int>``; 2.7 is category 2, -0.5 is category 0); NaN and negative values go
  right; the listed categories go left and every other category right;
- cover (path-dependent game): ``internal_count`` / ``leaf_count``, the number of training rows at
  each node, as LightGBM's own ``pred_contrib`` and shap's TreeExplainer use;
- offset: 0 (LightGBM has no separate base score: with ``boost_from_average`` the first tree's
  leaves hold the initial score); ``average_output`` (``boosting_type="rf"``) scales each tree by
  1 / iterations: the margin is the trees' mean, what ``predict()`` returns (regression) or
  transforms (LightGBM's ``predict(raw_score=True)`` returns their sum in this mode);
- iterations: ``dump_model()`` dumps the best iteration when one exists, like ``predict`` by default;
- dart: the stored trees are already normalised, so they are summed like gbdt trees;
- linear trees (``linear_tree=True``) are refused: their leaves are linear functions of x.

XGBoost semantics (its ``GetNextNode`` / ``common::Decision``)
--------------------------------------------------------------
- numerical split: left iff ``float32(x) < threshold`` (XGBoost stores thresholds and reads data in
  float32): represented as ``x <= nextafter(threshold, -inf)`` (the next float32 below) with the
  ensemble's ``float32`` rounding of the rows, so x equal to a threshold goes right;
- missing values: NaN (and, for a scikit-learn wrapper with ``missing=m`` not NaN, the value m)
  goes the default side (``default_left``);
- categorical split (``enable_categorical=True``, ``split_type`` 1): the stored categories go
  right, every other category left; negative values go left (an invalid category) and non-integer
  values are truncated (2.7 is category 2); the inputs are the categories' integer codes (a
  ``pandas.Categorical`` column's codes as XGBoost saw them in training);
- cover: ``sum_hessian`` (XGBoost's ``cover``), as its ``pred_contribs`` and shap use;
- offset: ``base_score`` from the saved configuration, in margin space: the logit for
  ``binary:logistic`` / ``reg:logistic``, the log for ``count:poisson``, ``reg:gamma``,
  ``reg:tweedie``, ``survival:cox``; as stored otherwise (per class for multi-class models);
- iterations: a scikit-learn wrapper fitted with early stopping predicts with its
  ``best_iteration`` (trees up to it); a raw Booster with all trees, like their ``predict``;
- dart: each tree scaled by its ``weight_drop``; ``num_parallel_tree`` (random forests): every
  tree of an iteration summed; ``gblinear`` and multi-output trees (``multi_strategy=
  "multi_output_tree"``) are refused.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .paths import Ensemble, extract_paths, forest_paths

_LGBM_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float): |x| <= it reads as 0.0


def build_booster(model) -> Ensemble:
    """The :class:`Ensemble` of a fitted LightGBM or XGBoost model (see the module docstring)."""
    package = type(model).__module__.split(".")[0]
    name = type(model).__name__
    if package == "lightgbm":
        return _lightgbm(model, name)
    if package == "xgboost":
        return _xgboost(model, name)
    raise TypeError(f"tree_shap_values does not support model type {type(model).__module__}.{name}")


def _unfitted(name, err):
    return ValueError(f"model ({name}) is not fitted; call fit before tree_shap_values ({err})")


# --------------------------------------------------------------------------------------------------
# LightGBM


def _lightgbm(model, name) -> Ensemble:
    if name == "Booster":
        booster = model
    elif name in ("LGBMRegressor", "LGBMClassifier", "LGBMRanker", "LGBMModel"):
        try:
            booster = model.booster_
        except (AttributeError, ValueError) as err:  # LGBMNotFittedError is both
            raise _unfitted(name, err) from err
    else:
        raise TypeError(f"tree_shap_values does not support lightgbm.{name}; pass a fitted "
                        "LGBMRegressor, LGBMClassifier, LGBMRanker or lightgbm.Booster")
    params = getattr(booster, "params", None) or {}
    if params.get("linear_tree") in (True, 1, "true", "True"):
        raise TypeError(f"tree_shap_values does not support LightGBM linear trees ({name} fitted with "
                        "linear_tree=True): their leaves are linear functions of x, not constants")
    dump = booster.dump_model()
    k_out = int(dump.get("num_tree_per_iteration", 1))
    d = int(dump["max_feature_idx"]) + 1
    trees = dump["tree_info"]
    if not trees:
        raise ValueError(f"model ({name}) has no trees")
    scale = 1.0 / math.ceil(len(trees) / k_out) if dump.get("average_output") else 1.0
    missing_types: dict[int, set] = {}
    cat_features: set = set()
    parts = [_lgbm_tree(tree["tree_structure"], i % k_out, k_out, scale, missing_types, cat_features, name)
             for i, tree in enumerate(trees)]
    zero_features = sorted(f for f, types in missing_types.items() if "Zero" in types)
    mixed = [f for f in zero_features if len(missing_types[f]) > 1]
    if mixed:
        raise TypeError(
            f"tree_shap_values does not support this LightGBM model: feature(s) {mixed} have splits "
            f"with missing_type 'Zero' and others with {sorted(missing_types[mixed[0]] - {'Zero'})}"
        )
    zero_idx = np.array(zero_features, dtype=np.int64)
    cat_idx = np.array(sorted(cat_features), dtype=np.int64)

    def input_map(x):
        # LightGBM's predict passes a dense row on as (index, value) pairs of the values with
        # |x| > kZeroThreshold or NaN; the others are read as 0.0
        x = np.where(np.abs(x) <= _LGBM_ZERO, 0.0, x)
        if zero_idx.size:
            part = x[:, zero_idx]
            x[:, zero_idx] = np.where(part == 0.0, np.nan, part)
        if cat_idx.size:
            x[:, cat_idx] = np.trunc(x[:, cat_idx])  # static_cast<int>: toward zero; NaN stays NaN
        return x

    ens = _ensemble(parts, np.zeros(k_out), k_out, k_out == 1, False, True, d, input_map=input_map)
    # pandas category columns: LightGBM codes them by the categories it saw in training
    # (``pandas_categorical``, zipped with the frame's category columns in order), else cat.codes
    pandas_categorical = getattr(booster, "pandas_categorical", None)
    objective = str(dump.get("objective", "")).split()
    sigmoid = [float(t.split(":")[1]) for t in objective[1:] if t.startswith("sigmoid:")]
    if objective and objective[0] in ("binary", "cross_entropy", "xentropy") and sigmoid in ([], [1.0]):
        ens.units = "log_odds"  # predict_proba = sigmoid(raw score)
    elif objective and objective[0] in ("binary", "multiclass", "multiclassova", "lambdarank",
                                        "rank_xendcg", "cross_entropy_lambda", "xentlambda"):
        ens.units = "margin"
    ens.frame_categories = ("lightgbm", [list(c) for c in pandas_categorical]) if pandas_categorical else "codes"
    return ens


def _lgbm_tree(root, k, k_out, scale, missing_types, cat_features, name):
    left, right, feature, threshold, nan_left, cover, value = [], [], [], [], [], [], []
    categorical = {}

    def add(node):
        idx = len(left)
        for arr in (left, right, feature, threshold, nan_left, cover):
            arr.append(0)
        value.append(0.0)
        if "split_index" not in node:  # a leaf (a stump tree has no leaf_count: cover unused)
            if "leaf_const" in node or "leaf_coeff" in node:
                raise TypeError(f"tree_shap_values does not support LightGBM linear trees ({name}): "
                                "their leaves are linear functions of x, not constants")
            left[idx] = right[idx] = -1
            value[idx] = float(node["leaf_value"])
            cover[idx] = float(node.get("leaf_count", 0.0))
            return idx
        f = int(node["split_feature"])
        feature[idx] = f
        cover[idx] = float(node["internal_count"])
        if node["decision_type"] == "==":
            cats = {int(c) for c in str(node["threshold"]).split("||") if c != ""}
            categorical[idx] = (cats, False)  # other values (negative, unlisted) go right
            nan_left[idx] = False  # NaN goes right
            cat_features.add(f)
        elif node["decision_type"] == "<=":
            t = float(node["threshold"])
            threshold[idx] = t
            mtype = str(node.get("missing_type", "None"))
            if mtype not in ("None", "Zero", "NaN"):
                raise TypeError(f"unknown LightGBM missing_type {mtype!r} in {name}")
            missing_types.setdefault(f, set()).add(mtype)
            # "None": NaN is read as 0.0; "Zero"/"NaN": NaN (and zeros, mapped to NaN) go default
            nan_left[idx] = (0.0 <= t) if mtype == "None" else bool(node["default_left"])
        else:
            raise TypeError(f"unknown LightGBM decision_type {node['decision_type']!r} in {name}")
        left[idx] = add(node["left_child"])
        right[idx] = add(node["right_child"])
        return idx

    add(root)
    vals = np.zeros((len(value), k_out))
    vals[:, k] = value
    if cover[0] <= 0:  # a stump: any positive cover (a single leaf's ratio is never used)
        cover[0] = 1.0
    return (np.array(left), np.array(right), np.array(feature), np.array(threshold, float),
            np.array(nan_left, bool), np.array(cover, float), vals, scale, categorical or None)


def _ensemble(parts, offset, n_out, squeeze, float32, allow_nan, d, **kwargs) -> Ensemble:
    """The Ensemble of the trees ``parts`` (the arguments of :func:`~.paths.extract_paths`): read by
    one compiled walk when no tree splits on a category (:func:`~.paths.forest_paths`), else tree
    by tree."""
    if not any(part[8] for part in parts):
        forest = forest_paths([part[:8] for part in parts])
        if forest is not None:
            ens = Ensemble(forest[0], offset, n_out, squeeze, float32, allow_nan, d, **kwargs)
            ens.packed = forest[1]
            return ens
    return Ensemble([extract_paths(*part[:8], categorical=part[8]) for part in parts], offset, n_out,
                    squeeze, float32, allow_nan, d, **kwargs)


# --------------------------------------------------------------------------------------------------
# XGBoost

_XGB_LOGIT = ("binary:logistic", "reg:logistic")
_XGB_LOG = ("count:poisson", "reg:gamma", "reg:tweedie", "survival:cox")
_XGB_IDENTITY = (
    "reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror", "reg:absoluteerror",
    "reg:linear", "binary:logitraw", "binary:hinge", "multi:softprob",
    "multi:softmax", "rank:pairwise", "rank:ndcg", "rank:map",
)


def _xgboost(model, name) -> Ensemble:
    missing = float("nan")
    iteration_end = None
    if name == "Booster":
        booster = model
    elif name in ("XGBRegressor", "XGBClassifier", "XGBRanker", "XGBRFRegressor", "XGBRFClassifier",
                  "XGBModel"):
        try:
            booster = model.get_booster()
        except Exception as err:  # sklearn's NotFittedError (a ValueError and AttributeError)
            raise _unfitted(name, err) from err
        m = getattr(model, "missing", None)
        missing = float("nan") if m is None else float(m)
        try:  # the scikit-learn wrapper predicts with the best iteration after early stopping
            iteration_end = int(model.best_iteration) + 1
        except (AttributeError, TypeError, ValueError):
            iteration_end = None
    else:
        raise TypeError(f"tree_shap_values does not support xgboost.{name}; pass a fitted "
                        "XGBRegressor, XGBClassifier, XGBRanker, XGBRF* or xgboost.Booster")
    raw = json.loads(bytes(booster.save_raw(raw_format="json")).decode("utf-8"))
    learner = raw["learner"]
    config = json.loads(booster.save_config())["learner"]
    gb = learner["gradient_booster"]
    kind = gb.get("name", "gbtree")
    if kind == "gblinear":
        raise TypeError(f"tree_shap_values does not support XGBoost's gblinear booster ({name}): it "
                        "is a linear model, not trees")
    if kind == "dart":
        tree_model = gb["gbtree"]["model"]
        weights = [float(w) for w in gb.get("weight_drop", [])]
    elif kind == "gbtree":
        tree_model = gb["model"]
        weights = None
    else:
        raise TypeError(f"tree_shap_values does not support XGBoost booster {kind!r} ({name})")
    mparam = learner["learner_model_param"]
    d = int(mparam["num_feature"])
    k_out = max(1, int(mparam.get("num_class", 0)), int(mparam.get("num_target", 1)))
    objective = config["objective"]["name"]
    base = np.atleast_1d(np.asarray(json.loads(mparam["base_score"].replace("E", "e"))
                                    if mparam["base_score"].startswith("[")
                                    else float(mparam["base_score"]), dtype=np.float64))
    if objective in _XGB_LOGIT:
        offset = np.log(base / (1.0 - base))
    elif objective in _XGB_LOG:
        offset = np.log(base)
    elif objective in _XGB_IDENTITY:
        offset = base
    else:
        raise TypeError(f"tree_shap_values does not support the XGBoost objective {objective!r} "
                        f"({name}): its base_score's margin transform is not known here")
    offset = np.broadcast_to(np.float32(offset).astype(np.float64), (k_out,)).copy()
    trees = tree_model["trees"]
    info = [int(c) for c in tree_model["tree_info"]]
    indptr = tree_model.get("iteration_indptr")
    n_trees = len(trees)
    if iteration_end is not None and indptr is not None and iteration_end < len(indptr):
        n_trees = int(indptr[iteration_end])
    parts = [_xgb_tree(trees[i], info[i], k_out, 1.0 if weights is None else weights[i], name)
             for i in range(n_trees)]
    input_map = _xgb_input_map(missing, trees[:n_trees])
    ens = _ensemble(parts, offset, k_out, k_out == 1, True, True, d, input_map=input_map)
    ens.frame_categories = _xgb_categories(booster)
    if objective in _XGB_LOGIT and k_out == 1:
        ens.units = "log_odds"  # predict_proba = sigmoid(margin)
    elif objective.startswith(("multi:", "binary:", "rank:")):
        ens.units = "margin"
    return ens


def _xgb_categories(booster):
    """How XGBoost codes a DataFrame's category columns: by the categories stored in the model
    (XGBoost 3.1 and later re-code a frame's categories to the training ones; an unseen value is
    an invalid category), else by the frame's own ``cat.codes``."""
    from ..._fitted_categories import xgboost_stored_categories

    table = xgboost_stored_categories(booster)
    return ("xgboost", table) if table else "codes"


def _xgb_tree(tree, k, k_out, scale, name):
    size_leaf = int(tree["tree_param"].get("size_leaf_vector", "1"))
    if size_leaf > 1:
        raise TypeError(f"tree_shap_values does not support XGBoost multi-output trees ({name} fitted "
                        "with multi_strategy='multi_output_tree')")
    left = np.asarray(tree["left_children"], dtype=np.int64)
    right = np.asarray(tree["right_children"], dtype=np.int64)
    feature = np.asarray(tree["split_indices"], dtype=np.int64)
    cond = np.asarray(tree["split_conditions"], dtype=np.float32)
    # x < t in float32  <=>  x <= the largest float32 below t (x is float32-rounded by prepare_rows)
    threshold = np.nextafter(cond, np.float32(-np.inf)).astype(np.float64)
    nan_left = np.asarray(tree["default_left"], dtype=bool)
    cover = np.asarray(tree["sum_hessian"], dtype=np.float64)
    leaf = left < 0
    value = np.zeros((left.size, k_out))
    value[leaf, k] = cond[leaf].astype(np.float64)
    categorical = None
    split_type = np.asarray(tree.get("split_type", []), dtype=np.int64)
    if split_type.size and np.any(split_type == 1):
        cats = np.asarray(tree["categories"], dtype=np.int64)
        seg = tree["categories_segments"]
        size = tree["categories_sizes"]
        categorical = {}
        for j, node in enumerate(tree["categories_nodes"]):
            right_set = {int(c) for c in cats[int(seg[j]) : int(seg[j]) + int(size[j])]}
            # the listed categories go right; others (unlisted, negative, too large) go left
            categorical[int(node)] = (right_set, True, False)
        for node in np.flatnonzero(split_type == 1):
            categorical.setdefault(int(node), (set(), True, False))  # no category listed: all left
    return (left, right, feature, threshold, nan_left, cover, value, scale, categorical)


def _xgb_input_map(missing, trees):
    cat_features = set()
    for tree in trees:
        split_type = np.asarray(tree.get("split_type", []), dtype=np.int64)
        if split_type.size:
            cat_features.update(int(f) for f in np.asarray(tree["split_indices"])[split_type == 1])
    cat_idx = np.array(sorted(cat_features), dtype=np.int64)
    if np.isnan(missing) and cat_idx.size == 0:
        return None
    missing32 = float(np.float32(missing))

    def input_map(x):
        x = x.copy()
        if not np.isnan(missing):
            x[x == missing32] = np.nan  # rows are float32-rounded: compare as XGBoost does
        if cat_idx.size:
            part = x[:, cat_idx]
            with np.errstate(invalid="ignore"):  # negative: an invalid category (goes left)
                x[:, cat_idx] = np.where(part < 0, -1.0, np.floor(part))
        return x

    return input_map
