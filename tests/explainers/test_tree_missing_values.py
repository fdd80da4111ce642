"""NaN through every tree path: the explainer (fl.explainer("tree_shap", model)) routes missing
values as each library's own predict does, equal to shap's TreeExplainer where it supports them,
and efficiency holds against the library's own prediction; NaN stays refused where the library
refuses it, and for the other explainers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import tree_shap_interaction_values, tree_shap_values

E = pytest.importorskip("sklearn.ensemble")
T = pytest.importorskip("sklearn.tree")


def _nan_data(n=240, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0]) + 1.5 * np.isnan(X[:, 1]) - np.nan_to_num(X[:, 2]) * (X[:, 3] > 0)
    return X, y


def test_tiny_tree_trained_with_nan_matches_the_planted_values_and_shap():
    # one feature; the one missing row has y = 1, the others 0: the tree splits "missing or not",
    # so the Shapley value is f(x) - E f = 1 - 1/5 for the missing row and 0 - 1/5 for the others
    X = np.array([[np.nan], [1.0], [2.0], [3.0], [4.0]])
    y = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    model = T.DecisionTreeRegressor(random_state=0).fit(X, y)
    e = fl.explainer("tree_shap", model).explain(X)
    np.testing.assert_allclose(e.values[:, 0], [4 / 5, -1 / 5, -1 / 5, -1 / 5, -1 / 5], atol=1e-15)
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), model.predict(X), atol=1e-15)
    shap = pytest.importorskip("shap")
    np.testing.assert_allclose(e.values, shap.TreeExplainer(model).shap_values(X), atol=1e-15)


def _sklearn_models(X, y):
    yc = (y > np.median(y)).astype(int)
    kw = dict(max_depth=4, random_state=0)
    return [
        T.DecisionTreeRegressor(**kw).fit(X, y),
        T.DecisionTreeClassifier(**kw).fit(X, yc),
        E.RandomForestRegressor(5, **kw).fit(X, y),
        E.RandomForestClassifier(5, **kw).fit(X, yc),
        E.ExtraTreesRegressor(5, **kw).fit(X, y),
        E.HistGradientBoostingRegressor(max_iter=6, max_depth=3).fit(X, y),
        E.HistGradientBoostingClassifier(max_iter=6, max_depth=3).fit(X, yc),
    ]


def _library_output(model, x):
    """What tree_shap explains, from the library's own predict."""
    name = type(model).__name__
    if name.startswith("HistGradientBoostingClassifier"):
        return model.decision_function(x)
    if name.endswith("Classifier"):
        return model.predict_proba(x)[:, 1]
    return model.predict(x)


@pytest.mark.parametrize("mode", ["tree_path_dependent", "interventional"])
def test_sklearn_trees_route_nan_on_the_main_path(mode):
    X, y = _nan_data()
    x, bg = X[:12], (X[100:120] if mode == "interventional" else None)
    assert np.isnan(x).any() and (bg is None or np.isnan(bg).any())
    for model in _sklearn_models(X, y):
        e = fl.explainer("tree_shap", model, background=bg).explain(x, target=1 if hasattr(model, "classes_") else 0)
        np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), _library_output(model, x), atol=1e-12,
                                   err_msg=type(model).__name__)
        assert np.isnan(e.data).sum() == np.isnan(x).sum()
        if mode == "tree_path_dependent" and not type(model).__name__.startswith("Hist"):
            shap = pytest.importorskip("shap")
            ref = np.asarray(shap.TreeExplainer(model).shap_values(x))
            ref = ref[..., 1] if ref.ndim == 3 else ref
            np.testing.assert_allclose(e.values, ref, atol=1e-12, err_msg=type(model).__name__)


def test_lightgbm_and_xgboost_route_nan_on_the_main_path():
    X, y = _nan_data()
    x = X[:15]
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    yc = (y > np.median(y)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [
            (lgb.LGBMRegressor(n_estimators=8, num_leaves=7, min_child_samples=5, verbose=-1).fit(X, y),
             lambda m, r: m.predict(r, raw_score=True), lambda m, r: m.predict(r, pred_contrib=True)),
            (lgb.LGBMClassifier(n_estimators=8, num_leaves=7, min_child_samples=5, verbose=-1).fit(X, yc),
             lambda m, r: m.predict(r, raw_score=True), lambda m, r: m.predict(r, pred_contrib=True)),
            (xgb.XGBRegressor(n_estimators=8, max_depth=3).fit(X, y),
             lambda m, r: m.predict(r, output_margin=True),
             lambda m, r: m.get_booster().predict(xgb.DMatrix(r), pred_contribs=True)),
            (xgb.XGBClassifier(n_estimators=8, max_depth=3).fit(X, yc),
             lambda m, r: m.predict(r, output_margin=True),
             lambda m, r: m.get_booster().predict(xgb.DMatrix(r), pred_contribs=True)),
        ]
    for model, margin, contrib in models:
        target = 1 if hasattr(model, "classes_") else 0
        e = fl.explainer("tree_shap", model).explain(x, target=target)
        own = np.asarray(contrib(model, x), dtype=np.float64)
        np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), margin(model, x), atol=1e-5)
        # the library's own TreeSHAP (float32 arithmetic for XGBoost)
        np.testing.assert_allclose(e.values, own[:, :-1], atol=1e-5, err_msg=type(model).__name__)
        ref, _ = tree_shap_values(model, x)
        np.testing.assert_allclose(e.values, ref, atol=1e-12)


def test_interaction_values_with_nan_rows_sum_to_the_shap_values():
    X, y = _nan_data(seed=1)
    model = E.RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, y)
    x = X[:8]
    for bg in (None, X[50:60]):
        inter, base = tree_shap_interaction_values(model, x, background=bg)
        values, base2 = tree_shap_values(model, x, background=bg)
        np.testing.assert_allclose(inter.sum(axis=2), values, atol=1e-12)
        np.testing.assert_allclose(base + inter.sum(axis=(1, 2)), model.predict(x), atol=1e-12)
    shap = pytest.importorskip("shap")
    ref = shap.TreeExplainer(model).shap_interaction_values(x)
    np.testing.assert_allclose(tree_shap_interaction_values(model, x)[0], ref, atol=1e-12)
    e = fl.explainer("tree_shap", model, interactions=True).explain(x)
    np.testing.assert_allclose(e.extra["interactions"].sum(axis=2), e.values, atol=1e-12)


def test_nan_refused_where_the_library_refuses_it_and_for_other_explainers():
    X, y = _nan_data()
    clean = np.nan_to_num(X)
    gb = E.GradientBoostingRegressor(n_estimators=3, max_depth=2, random_state=0).fit(clean, y)
    with pytest.raises(ValueError, match="x contains NaN.*GradientBoostingRegressor does not accept missing"):
        fl.explainer("tree_shap", gb).explain(X[:5])
    rf = E.RandomForestRegressor(3, max_depth=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="inf"):
        fl.explainer("tree_shap", rf).explain(np.full((1, 4), np.inf))
    # a black-box explainer of the same model still refuses NaN rows
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        fl.explainer("kernel_shap", rf, background=clean[:10]).explain(X[:3])
    # the Model handed in is not changed: it still refuses NaN itself
    model = fl.Model(rf)
    fl.explainer("tree_shap", model).explain(X[:3])
    with pytest.raises(ValueError, match="NaN or inf"):
        model.to_tensor(X[:3])
