"""``fl.explainer("tree_shap", booster)`` on raw LightGBM and XGBoost Boosters (what ``lgb.train`` /
``xgb.train`` return and what a saved model file loads into): the values and base values equal the
libraries' own TreeSHAP (``booster.predict(X, pred_contrib=True)``, ``booster.predict(DMatrix(X),
pred_contribs=True)``, the expected value in the last column) to 1e-6, in the units the objective
gives (binary: log-odds, multi-class: the margin of each class, regression: the raw score), for
boosters trained in memory and loaded from their files; the scikit-learn-style estimator around a
Booster (``booster_estimator``) predicts as the Booster does; bad inputs are refused naming them."""

from __future__ import annotations

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import booster_estimator

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 6))
    X[rng.random(X.shape) < 0.08] = np.nan
    clean = np.nan_to_num(X)
    binary = (clean[:, 0] + clean[:, 1] * clean[:, 2] > 0).astype(int)
    three = np.digitize(clean[:, 0] - clean[:, 3], [-0.6, 0.6])
    counts = rng.poisson(np.exp(0.5 * clean[:, 0] + 0.3 * clean[:, 4]))
    regression = 2.0 * clean[:, 0] - clean[:, 2] ** 2 + 0.1 * rng.normal(size=len(X))
    return X, {"binary": binary, "multiclass": three, "poisson": counts, "regression": regression}


LGB_PARAMS = {
    "binary": ({"objective": "binary"}, "log_odds", 1),
    "multiclass": ({"objective": "multiclass", "num_class": 3}, "margin", 3),
    "regression": ({"objective": "regression"}, "raw", 1),
    "poisson": ({"objective": "poisson"}, "raw", 1),
}
XGB_PARAMS = {
    "binary": ({"objective": "binary:logistic"}, "log_odds", 1),
    "multiclass": ({"objective": "multi:softprob", "num_class": 3}, "margin", 3),
    "regression": ({"objective": "reg:squarederror"}, "raw", 1),
    "poisson": ({"objective": "count:poisson"}, "raw", 1),
}


def _lgb(task, X, y):
    params, units, k = LGB_PARAMS[task]
    booster = lgb.train({**params, "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1},
                        lgb.Dataset(X, y[task]), num_boost_round=15)
    return booster, units, k


def _xgb(task, X, y):
    params, units, k = XGB_PARAMS[task]
    booster = xgb.train({**params, "max_depth": 3, "eta": 0.3, "nthread": 1}, xgb.DMatrix(X, y[task]),
                        num_boost_round=15)
    return booster, units, k


def _contributions(booster, x, k):
    """The library's own TreeSHAP as (n, k, d + 1), the expected value last."""
    if type(booster).__module__.startswith("lightgbm"):
        out = booster.predict(x, pred_contrib=True)
    else:
        out = booster.predict(xgb.DMatrix(x), pred_contribs=True)
    return np.asarray(out, dtype=np.float64).reshape(len(x), k, -1)


def _tolerance(library, reference):
    """1e-6; XGBoost computes its contributions in float32, so for it 1e-6 per unit of the largest
    contribution (its float32 sums are off by a few float32 epsilons, 1.2e-7, of their size)."""
    return 1e-6 if library == "lightgbm" else 1e-6 * max(1.0, float(np.abs(reference).max()))


def _targets(units, k):
    return range(k) if k > 1 else [1 if units == "log_odds" else 0]


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("task", ["binary", "multiclass", "regression", "poisson"])
def test_raw_booster_equals_the_library_contributions(library, task, data, tmp_path):
    X, y = data
    booster, units, k = (_lgb if library == "lightgbm" else _xgb)(task, X, y)
    path = tmp_path / ("model.txt" if library == "lightgbm" else "model.json")
    booster.save_model(str(path))
    loaded = lgb.Booster(model_file=str(path)) if library == "lightgbm" else xgb.Booster(model_file=str(path))
    x = X[:40]
    reference = _contributions(booster, x, k)
    for model in (booster, loaded):
        ex = fl.explainer("tree_shap", model)
        for target in _targets(units, k):
            e = ex.explain(x, target=target)
            column = target if k > 1 else 0
            assert e.output == units and e.params["output"] == units
            atol = _tolerance(library, reference)
            np.testing.assert_allclose(e.values, reference[:, column, :-1], rtol=0, atol=atol)
            np.testing.assert_allclose(e.base_values, reference[:, column, -1], rtol=0, atol=atol)
            assert e.model_calls == 0


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_binary_target_zero_is_the_negative_margin_and_none_the_predicted_class(library, data):
    X, y = data
    booster, _, _ = (_lgb if library == "lightgbm" else _xgb)("binary", X, y)
    x = X[:25]
    margin = _contributions(booster, x, 1)[:, 0, :].sum(axis=1)
    ex = fl.explainer("tree_shap", booster)
    e0 = ex.explain(x, target=0)
    np.testing.assert_allclose(e0.base_values + e0.values.sum(axis=1), -margin, atol=1e-6)
    e = ex.explain(x)  # the predicted class: one model pass over the rows
    np.testing.assert_array_equal(e.target, (margin > 0).astype(int))
    assert e.model_calls == len(x)


def test_xgboost_interactions_equal_pred_interactions(data):
    X, y = data
    booster, _, _ = _xgb("regression", X, y)
    x = X[:15]
    e = fl.explainer("tree_shap", booster, interactions=True).explain(x, target=0)
    ref = booster.predict(xgb.DMatrix(x), pred_interactions=True)  # (n, d + 1, d + 1), bias last
    np.testing.assert_allclose(e.extra["interactions"], ref[:, :-1, :-1], rtol=0, atol=_tolerance("xgboost", ref))


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_booster_estimator_predicts_as_the_booster(library, data):
    X, y = data
    binary = (_lgb if library == "lightgbm" else _xgb)("binary", X, y)[0]
    multi = (_lgb if library == "lightgbm" else _xgb)("multiclass", X, y)[0]
    regression = (_lgb if library == "lightgbm" else _xgb)("regression", X, y)[0]
    x = X[:30]

    def own(booster, **kw):
        if library == "lightgbm":
            return booster.predict(x, **{"raw_score": True} if kw.get("margin") else {})
        return booster.predict(xgb.DMatrix(x), output_margin=bool(kw.get("margin")))

    est = booster_estimator(binary)
    assert type(est).__name__ == "BoosterClassifier" and list(est.classes_) == [0, 1]
    assert est.n_features_in_ == X.shape[1]
    np.testing.assert_allclose(est.predict_proba(x)[:, 1], own(binary), atol=1e-12)
    np.testing.assert_allclose(est.decision_function(x), own(binary, margin=True), atol=1e-12)
    est = booster_estimator(multi)
    assert list(est.classes_) == [0, 1, 2]
    np.testing.assert_allclose(est.predict_proba(x), own(multi), atol=1e-12)
    est = booster_estimator(regression)
    assert type(est).__name__ == "BoosterRegressor" and not hasattr(est, "predict_proba")
    np.testing.assert_allclose(est.predict(x), own(regression, margin=True), atol=1e-12)


def test_probability_and_log_odds_through_booster_estimator(data):
    """``output=`` needs the Booster seen as a classifier: ``booster_estimator(booster)``."""
    X, y = data
    booster, _, _ = _lgb("binary", X, y)
    est = booster_estimator(booster)
    x = X[:10]
    e = fl.explainer("tree_shap", est, output="probability", background=X[200:260]).explain(x, target=1)
    assert e.output == "probability"
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), booster.predict(x), atol=1e-9)
    e = fl.explainer("tree_shap", est, output="log_odds").explain(x, target=1)
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), booster.predict(x, raw_score=True), atol=1e-9)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_output_asked_of_the_raw_booster_itself(library, data):
    """``output=`` given with the raw Booster (no ``booster_estimator``): the units are checked
    against the classifier the objective makes, not the Booster's ``predict``; a regression
    objective is refused by name."""
    X, y = data
    make = _lgb if library == "lightgbm" else _xgb
    booster, _, _ = make("binary", X, y)
    x = X[:10]
    margin = booster.predict(x, raw_score=True) if library == "lightgbm" else booster.predict(
        xgb.DMatrix(x), output_margin=True)
    e = fl.explainer("tree_shap", booster, output="log_odds").explain(x, target=1)
    assert e.output == "log_odds"
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), margin, atol=1e-5)
    e = fl.explainer("tree_shap", booster, output="probability", background=X[200:260]).explain(x, target=1)
    prob = booster.predict(x) if library == "lightgbm" else booster.predict(xgb.DMatrix(x))
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), prob, atol=1e-5)
    regressor, _, _ = make("regression", X, y)
    with pytest.raises(ValueError, match="needs a classifier.*Booster"):
        fl.explainer("tree_shap", regressor, output="log_odds")


def test_why_not_takes_a_model_around_a_raw_booster(data):
    """What the command line and the audit ask before building the explainer."""
    from featurelens._harness import why_not

    X, y = data
    booster, _, _ = _xgb("binary", X, y)
    assert why_not("tree_shap", booster_estimator(booster), (X.shape[1],)) is None


def test_booster_estimator_refusals(data):
    X, y = data
    with pytest.raises(TypeError, match=r"booster must be a lightgbm.Booster or an xgboost.Booster; got .*list"):
        booster_estimator([1, 2])
    est = booster_estimator(_lgb("regression", X, y)[0])
    with pytest.raises(ValueError, match=r"X must have shape \(n_rows, 6\).*got shape \(3, 4\)"):
        est.predict(X[:3, :4])
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X[:3], columns=list("abcdef")).assign(a=["x", "y", "z"])
    with pytest.raises(TypeError, match=r"X column\(s\) \['a'\] are not numbers"):
        est.predict(frame)


def test_raw_booster_refuses_text_columns_in_explain(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    booster, _, _ = _lgb("regression", X, y)
    frame = pd.DataFrame(X[:4], columns=list("abcdef")).assign(b=["p", "q", "p", "q"])
    with pytest.raises(TypeError, match=r"x has non-numeric column\(s\) \['b'\]; a raw Booster takes numbers"):
        fl.explainer("tree_shap", booster).explain(frame, target=0)
    with pytest.raises(TypeError, match=r"background has non-numeric column\(s\) \['b'\]; a raw Booster"):
        fl.explainer("tree_shap", booster, background=frame)


def test_xgboost_values_are_exact_in_float64_where_xgboost_sums_in_float32():
    """XGBoost's own contributions (and shap's, which are XGBoost's) carry float32 rounding; the
    values here equal exact Shapley values of the path-dependent game computed by enumeration over
    every coalition, with Lundberg et al.'s EXPVALUE recursion on the saved trees (float32
    thresholds and leaves, as XGBoost stores them, summed in float64)."""
    import itertools
    import json
    import math

    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1}, xgb.DMatrix(X, y), 20)
    saved = json.loads(bytes(booster.save_raw(raw_format="json")))["learner"]
    trees = saved["gradient_booster"]["model"]["trees"]
    p = float(json.loads(saved["learner_model_param"]["base_score"].replace("E", "e"))[0])
    offset = float(np.float32(np.log(p / (1 - p))))

    def expvalue(tree, x, S, node=0):
        left, right = tree["left_children"], tree["right_children"]
        if left[node] < 0:
            return float(np.float32(tree["split_conditions"][node]))
        f, cover = tree["split_indices"][node], tree["sum_hessian"]
        if f in S:  # XGBoost: float32(x) < threshold goes left (no NaN here)
            go = left[node] if np.float32(x[f]) < np.float32(tree["split_conditions"][node]) else right[node]
            return expvalue(tree, x, S, go)
        return (cover[left[node]] * expvalue(tree, x, S, left[node])
                + cover[right[node]] * expvalue(tree, x, S, right[node])) / cover[node]

    d = X.shape[1]
    rows = X[:4]
    exact = np.zeros((len(rows), d))
    for n, x in enumerate(rows):
        v = {S: sum(expvalue(t, x, set(S)) for t in trees)
             for r in range(d + 1) for S in itertools.combinations(range(d), r)}
        for i in range(d):
            rest = [j for j in range(d) if j != i]
            for r in range(d):
                for S in itertools.combinations(rest, r):
                    w = math.factorial(r) * math.factorial(d - r - 1) / math.factorial(d)
                    exact[n, i] += w * (v[tuple(sorted(S + (i,)))] - v[S])
    e = fl.explainer("tree_shap", booster).explain(rows, target=1)
    np.testing.assert_allclose(e.values, exact, rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.base_values, v[()] + offset, rtol=0, atol=1e-12)
    own = _contributions(booster, rows, 1)[:, 0, :-1]
    assert np.abs(own - exact).max() > 1e-12  # XGBoost's float32 sums are not exact ...
    np.testing.assert_allclose(own, exact, rtol=0, atol=1e-6)  # ... but within its precision


def test_a_model_around_a_raw_booster_is_explained_as_the_booster(data):
    """``fl.Model(booster)`` (what the audit builds) is re-read as the Booster's estimator; its
    ``output="raw"`` is the raw score, the margin."""
    from featurelens.models import Model

    X, y = data
    booster, _, _ = _lgb("binary", X, y)
    x = X[:6]
    for model in (Model(booster), Model(booster, output="raw")):
        e = fl.explainer("tree_shap", model).explain(x, target=1)
        assert e.output == "log_odds"
        np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), booster.predict(x, raw_score=True),
                                   atol=1e-9)
