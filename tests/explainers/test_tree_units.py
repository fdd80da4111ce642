"""tree_shap's units recorded truthfully (log-odds margins, class fractions, multi-class margins),
output="probability" by interventional TreeSHAP against shap, feature_perturbation= as shap
spells it, scikit-learn Pipelines ending in trees, and clusterers / outlier detectors treated
explicitly by the Model adapter."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import tree_shap_values

E = pytest.importorskip("sklearn.ensemble")


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    logit = 1.5 * X[:, 0] - X[:, 1] * (X[:, 2] > 0) + 0.5 * X[:, 3]
    y = (logit + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _binary_boosters(X, y):
    models = [E.GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0).fit(X, y),
              E.HistGradientBoostingClassifier(max_iter=8, max_depth=3).fit(X, y)]
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models.append(lgb.LGBMClassifier(n_estimators=8, num_leaves=7, verbose=-1).fit(X, y))
    models.append(xgb.XGBClassifier(n_estimators=8, max_depth=3).fit(X, y))
    return models


def _margin(model, x):
    if type(model).__module__.startswith("lightgbm"):
        return model.predict(x, raw_score=True)
    if type(model).__module__.startswith("xgboost"):
        return model.predict(x, output_margin=True).astype(np.float64)
    return model.decision_function(x)


def test_binary_booster_margins_are_recorded_as_log_odds():
    X, y = _data()
    x = X[:10]
    for model in _binary_boosters(X, y):
        e = fl.explainer("tree_shap", model).explain(x, target=1)
        assert e.output == "log_odds" and e.params["output"] == "log_odds", type(model).__name__
        tol = 1e-9 if type(model).__module__.startswith("sklearn") else 1e-5  # XGBoost: float32 margin
        np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), _margin(model, x), atol=tol)
        # the margin is the log-odds of predict_proba[:, 1]
        p = model.predict_proba(x)[:, 1]
        np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), np.log(p / (1 - p)), atol=1e-5)
        lo = fl.explainer("tree_shap", model, output="log_odds").explain(x, target=0)
        assert lo.output == "log_odds"
        np.testing.assert_allclose(lo.base_values + lo.values.sum(axis=1), -_margin(model, x), atol=tol)


def test_explicit_raw_on_a_booster_classifier_is_predict_proba_or_refused():
    X, y = _data()
    model = E.GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="output='raw' is predict_proba.*background="):
        fl.explainer("tree_shap", model, output="raw")
    # a Model built with its default units is no request for predict_proba: the margin, recorded
    assert fl.explainer("tree_shap", fl.Model(model, batch_size=4)).explain(X[:3]).output == "log_odds"
    e = fl.explainer("tree_shap", model, output="raw", background=X[100:110]).explain(X[:5], target=1)
    assert e.output == "raw"
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), model.predict_proba(X[:5])[:, 1], atol=1e-12)


def test_forest_and_multiclass_units_and_regressors():
    X, y = _data()
    rf = E.RandomForestClassifier(4, max_depth=3, random_state=0).fit(X, y)
    e = fl.explainer("tree_shap", rf).explain(X[:5], target=1)
    assert e.output == "raw"
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), rf.predict_proba(X[:5])[:, 1], atol=1e-12)
    with pytest.raises(ValueError, match="output='log_odds' is\\s+not exact"):
        fl.explainer("tree_shap", rf, output="log_odds")
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    gb3 = E.GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0).fit(X, y3)
    e3 = fl.explainer("tree_shap", gb3).explain(X[:6], target=2)
    assert e3.output == "margin"
    np.testing.assert_allclose(e3.base_values + e3.values.sum(axis=1), gb3.decision_function(X[:6])[:, 2], atol=1e-9)
    for output in ("probability", "log_odds"):
        with pytest.raises(ValueError, match="softmax"):
            fl.explainer("tree_shap", gb3, output=output)
    reg = E.GradientBoostingRegressor(n_estimators=4, max_depth=2, random_state=0).fit(X, X[:, 0])
    assert fl.explainer("tree_shap", reg).explain(X[:3]).output == "raw"


def test_probability_interventional_equals_shap_and_efficiency():
    shap = pytest.importorskip("shap")
    X, y = _data()
    model = E.GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    bg, x = X[100:125], X[:8]
    e = fl.explainer("tree_shap", model, output="probability", background=bg).explain(x, target=1)
    assert e.output == "probability" and e.params["feature_perturbation"] == "interventional"
    p = model.predict_proba(x)[:, 1]
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), p, atol=1e-12)
    ref = shap.TreeExplainer(model, data=bg, model_output="probability", feature_perturbation="interventional")
    np.testing.assert_allclose(e.values, ref.shap_values(x), atol=1e-9)
    np.testing.assert_allclose(e.base_values, ref.expected_value, atol=1e-9)
    e0 = fl.explainer("tree_shap", model, output="probability", background=bg).explain(x, target=0)
    np.testing.assert_allclose(e0.base_values + e0.values.sum(axis=1), 1 - p, atol=1e-12)
    values, base = tree_shap_values(model, x, background=bg, output="probability")
    np.testing.assert_allclose(values, e.values, atol=1e-15)
    with pytest.raises(ValueError, match="Pass background="):
        fl.explainer("tree_shap", model, output="probability")
    with pytest.raises(ValueError, match="Pass background="):
        tree_shap_values(model, x, output="probability")


def test_probability_of_lightgbm_and_xgboost_efficiency():
    X, y = _data()
    bg, x = X[100:110], X[:6]
    for model in _binary_boosters(X, y)[2:]:
        e = fl.explainer("tree_shap", model, output="probability", background=bg).explain(x, target=1)
        np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), model.predict_proba(x)[:, 1], atol=2e-6)


def test_feature_perturbation_as_shap_spells_it():
    X, y = _data()
    model = E.RandomForestRegressor(3, max_depth=3, random_state=0).fit(X, X[:, 0] * X[:, 1])
    bg = X[100:110]
    e = fl.explainer("tree_shap", model, feature_perturbation="interventional", background=bg).explain(X[:4])
    ref, _ = tree_shap_values(model, X[:4], background=bg)
    np.testing.assert_allclose(e.values, ref, atol=1e-12)
    assert e.params["feature_perturbation"] == "interventional"
    e = fl.explainer("tree_shap", model, feature_perturbation="tree_path_dependent").explain(X[:4])
    assert e.params["feature_perturbation"] == "tree_path_dependent"
    np.testing.assert_allclose(e.values, tree_shap_values(model, X[:4])[0], atol=1e-12)
    with pytest.raises(ValueError, match="interventional.*pass background="):
        fl.explainer("tree_shap", model, feature_perturbation="interventional")
    with pytest.raises(ValueError, match="tree_path_dependent.*takes no background"):
        fl.explainer("tree_shap", model, feature_perturbation="tree_path_dependent", background=bg)
    with pytest.raises(ValueError, match="feature_perturbation must be one of"):
        fl.explainer("tree_shap", model, feature_perturbation="observational")


def test_pipeline_ending_in_trees_is_explained_on_the_transformed_features():
    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X, y = _data()
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["colour"] = np.where(X[:, 3] > 0, "red", "blue")
    pre = ColumnTransformer([("num", StandardScaler(), ["a", "b", "c"]),
                             ("cat", OneHotEncoder(), ["colour"])])
    pipe = Pipeline([("pre", pre), ("gb", E.GradientBoostingClassifier(n_estimators=6, max_depth=2,
                                                                       random_state=0))]).fit(frame, y)
    rows = frame.iloc[:7]
    e = fl.explainer("tree_shap", pipe).explain(rows, target=1)
    assert e.feature_names == list(pipe[:-1].get_feature_names_out()) and e.values.shape == (7, 5)
    assert e.output == "log_odds"
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), pipe.decision_function(rows), atol=1e-9)
    np.testing.assert_allclose(e.data, pipe[:-1].transform(rows), atol=0)
    ep = fl.explainer("tree_shap", pipe).explain(rows)  # the predicted class
    np.testing.assert_array_equal(ep.target, pipe.predict(rows))


def test_clusterers_refused_and_outlier_detectors_explained_through_their_score():
    from sklearn.cluster import KMeans

    X, _ = _data()
    km = KMeans(3, n_init=2, random_state=0).fit(X)
    with pytest.raises(TypeError, match="clusterer.*transform"):
        fl.explainer("kernel_shap", km, background=X[:10])
    d = fl.explainer("kernel_shap", fl.Model(km.transform), background=X[:10], budget=64, seed=0).explain(
        X[:2], target=1)
    np.testing.assert_allclose(d.base_values + d.values.sum(axis=1), km.transform(X[:2])[:, 1], atol=1e-9)
    iso = E.IsolationForest(n_estimators=10, random_state=0).fit(X)
    model = fl.Model(iso)
    assert model.function.__name__ == "decision_function" and model.returns == "regression"
    np.testing.assert_allclose(model.predict(X[:5]).numpy()[:, 0], iso.decision_function(X[:5]))
    with pytest.raises(ValueError, match="output='probability'"):
        fl.Model(iso, output="probability")
    # tree_shap explains its expected path length (tests/explainers/test_tree_isolation_forest.py)
    assert fl.explainer("tree_shap", iso).explain(X[:2]).params["explained"] == "expected_path_length"


def test_a_weighted_background_equals_its_rows_repeated_by_weight():
    """Interventional TreeSHAP is linear in the background distribution: weights (1/4, 3/4) on
    rows (b0, b1) give the values of the uniform background (b0, b1, b1, b1), in the trees' own
    units and in probability; a summarize_background result is taken as is."""
    from sklearn.ensemble import GradientBoostingClassifier

    import featurelens as fl
    from featurelens.games import Background, summarize_background

    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] - X[:, 2] + 0.3 * rng.normal(size=200) > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    b0, b1 = X[:1], X[1:2]
    weighted = Background(np.vstack([b0, b1]), np.array([0.25, 0.75]))
    repeated = np.vstack([b0, b1, b1, b1])
    x = X[10:16]
    for output in (None, "probability"):
        kw = {} if output is None else {"output": output}
        got = fl.explainer("tree_shap", model, background=weighted, **kw).explain(x, target=1)
        want = fl.explainer("tree_shap", model, background=repeated, **kw).explain(x, target=1)
        np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.base_values, want.base_values, rtol=0, atol=1e-12)
        assert got.params["background_weighted"] and not want.params["background_weighted"]
    centres = summarize_background(X, k=8, seed=0)
    e = fl.explainer("tree_shap", model, background=centres).explain(x, target=1)
    np.testing.assert_allclose(e.base_values + e.values.sum(1), model.decision_function(x), rtol=0, atol=1e-9)
    assert e.params["background_rows"] == len(centres)
