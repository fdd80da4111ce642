"""Exact TreeSHAP of HistGradientBoosting models with categorical features (pandas ``category``
columns, the default ``categorical_features="from_dtype"``), against brute force.

References, independent of featurelens's path arrays:
- interventional: v(S) = mean over background rows b of ``model.predict`` on the DataFrame whose
  columns in S come from x and the others from b (the model itself, nothing read from its trees);
- path-dependent: Lundberg et al.'s EXPVALUE recursion on the predictor's nodes, categorical nodes
  routed by testing the category's bit in ``raw_left_cat_bitsets`` here, on the rows as the model's
  own preprocessor encodes them, with each input column matched to its encoded column by name.
shap 0.51 cannot explain these models at all (it converts the DataFrame to floats).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import tree_shap_interaction_values, tree_shap_values

pd = pytest.importorskip("pandas")
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor  # noqa: E402

COLUMNS = ["a", "city", "b", "plan"]


def frame(n, seed):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "a": rng.normal(size=n),
        "city": pd.Categorical(rng.choice(["Lima", "Oslo", "Paris", "Rome", "Kyiv"], n)),
        "b": rng.normal(size=n),
        "plan": pd.Categorical(rng.choice(["basic", "pro"], n)),
    })
    X.loc[rng.random(n) < 0.05, "a"] = np.nan
    return X


@pytest.fixture(scope="module")
def data():
    X = frame(500, 0)
    y = X["a"].fillna(0) + X["city"].isin(["Oslo", "Rome"]) * 2.0 - (X["plan"] == "pro") * X["b"]
    return X, y


@pytest.fixture(scope="module")
def regressor(data):
    X, y = data
    return HistGradientBoostingRegressor(max_iter=15, max_depth=3, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def classifier(data):
    X, y = data
    return HistGradientBoostingClassifier(max_iter=10, max_depth=3, random_state=0).fit(X, (y > 1).astype(int))


def rows_to_explain():
    X = frame(4, 7)
    X["city"] = X["city"].cat.add_categories(["Cairo"])
    X.loc[1, "city"] = "Cairo"  # a category the model never saw: routed as missing
    X.loc[2, "city"] = np.nan
    X.loc[3, "a"] = np.nan
    return X


def shapley(v, d):
    phi = np.zeros(d)
    for i in range(d):
        rest = [j for j in range(d) if j != i]
        for r in range(d):
            for S in itertools.combinations(rest, r):
                w = math.factorial(r) * math.factorial(d - r - 1) / math.factorial(d)
                phi[i] += w * (v(frozenset(S) | {i}) - v(frozenset(S)))
    return phi


def encoded_column_of(model):
    """Input column index -> encoded column index: the encoder's columns come first, then the
    numerical ones (the preprocessor's documented layout), each group in input order; checked
    here on the encoded values themselves."""
    cats = [i for i, c in enumerate(COLUMNS) if c in ("city", "plan")]
    nums = [i for i, c in enumerate(COLUMNS) if c not in ("city", "plan")]
    mapping = {i: j for j, i in enumerate(cats + nums)}
    X = rows_to_explain()
    enc = model._preprocessor.transform(X)
    for i in nums:
        np.testing.assert_array_equal(enc[:, mapping[i]], X[COLUMNS[i]].to_numpy())
    return mapping


def goes_left(node, value, bitsets):
    if np.isnan(value):
        return bool(node["missing_go_to_left"])
    if node["is_categorical"]:
        c = int(value)
        return bool((int(bitsets[node["bitset_idx"], c // 32]) >> (c % 32)) & 1)
    return value <= node["num_threshold"]


def expvalue(pred, z, S, node=0):
    nodes = pred.nodes
    nd = nodes[node]
    if nd["is_leaf"]:
        return float(nd["value"])
    f = int(nd["feature_idx"])
    if f in S:
        nxt = nd["left"] if goes_left(nd, z[f], pred.raw_left_cat_bitsets) else nd["right"]
        return expvalue(pred, z, S, int(nxt))
    a, b = int(nd["left"]), int(nd["right"])
    ca, cb = float(nodes[a]["count"]), float(nodes[b]["count"])
    return (ca * expvalue(pred, z, S, a) + cb * expvalue(pred, z, S, b)) / (ca + cb)


def test_path_dependent_values_and_interactions_equal_brute_force(regressor):
    X = rows_to_explain()
    values, base = tree_shap_values(regressor, X)
    inter, _ = tree_shap_interaction_values(regressor, X)
    enc = regressor._preprocessor.transform(X)
    col = encoded_column_of(regressor)
    preds = [p for stage in regressor._predictors for p in stage]
    d = len(COLUMNS)
    for r in range(len(X)):
        def v(S, r=r):
            tree_S = {col[i] for i in S}
            return sum(expvalue(p, enc[r], tree_S) for p in preds) + float(regressor._baseline_prediction.ravel()[0])

        np.testing.assert_allclose(values[r], shapley(v, d), atol=1e-10)
        assert base == pytest.approx(v(frozenset()), abs=1e-10)
        np.testing.assert_allclose(inter[r].sum(axis=1), values[r], atol=1e-10)
    np.testing.assert_allclose(base + values.sum(axis=1), regressor.predict(X), atol=1e-10)


def test_interventional_values_equal_the_model_on_hybrid_frames(classifier):
    X = rows_to_explain()
    bg = frame(6, 3)
    values, base = tree_shap_values(classifier, X, bg)
    d = len(COLUMNS)
    subsets = [frozenset(S) for k in range(d + 1) for S in itertools.combinations(range(d), k)]
    for r in range(len(X)):
        hybrids = []
        for S in subsets:
            hybrid = bg.copy()
            for i in S:
                col = COLUMNS[i]
                if isinstance(hybrid[col].dtype, pd.CategoricalDtype):
                    hybrid[col] = pd.Categorical([X[col].iloc[r]] * len(bg),
                                                 categories=X[col].cat.categories)
                else:
                    hybrid[col] = X[col].iloc[r]
            hybrids.append(hybrid)
        # every coalition's hybrid frame in one call of the model (one call per subset took ~20 s)
        out = classifier.decision_function(pd.concat(hybrids, ignore_index=True)).reshape(len(subsets), len(bg))
        table = dict(zip(subsets, out.mean(axis=1)))
        np.testing.assert_allclose(values[r], shapley(table.__getitem__, d), atol=1e-10)
    np.testing.assert_allclose(base + values.sum(axis=1), classifier.decision_function(X), atol=1e-10)


def test_the_explainer_takes_the_frame_with_no_warnings(classifier):
    X = rows_to_explain().iloc[:3]  # (the Model adapter refuses NaN in numerical columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = fl.explainer("tree_shap", classifier).explain(X, target=1)
    assert e.feature_names == COLUMNS
    values, _ = tree_shap_values(classifier, X)
    np.testing.assert_allclose(e.values, values, atol=1e-12)
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), classifier.decision_function(X), atol=1e-10)


def test_shap_cannot_explain_these_models(regressor):
    shap = pytest.importorskip("shap")
    with pytest.raises((ValueError, TypeError)):
        shap.TreeExplainer(regressor).shap_values(rows_to_explain())


def test_rows_the_preprocessor_cannot_take_are_refused_clearly(regressor):
    with pytest.raises(ValueError, match="preprocessed"):
        tree_shap_values(regressor, rows_to_explain().drop(columns="plan"))
