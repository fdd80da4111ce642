"""Exact TreeSHAP of scikit-learn's IsolationForest: the expected path length E[h(x)] (each tree's
leaf depth plus c(samples in the leaf), averaged over trees), against shap's TreeExplainer, against
the path lengths read from scikit-learn's own trees, against brute-force interventional Shapley
values of E[h] recovered from ``score_samples``, and through ``fl.explainer``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import tree_shap_interaction_values, tree_shap_values

E = pytest.importorskip("sklearn.ensemble")
from sklearn.ensemble._iforest import _average_path_length as sk_c  # noqa: E402  (scikit-learn's own c(n))

SETTINGS = [
    {},
    {"max_samples": 48, "max_features": 0.6},
    {"max_samples": 0.3, "max_features": 3, "bootstrap": True},
]


def _data(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:5] *= 4.0  # a few outliers
    return X


def _forest(X, **kw):
    return E.IsolationForest(n_estimators=12, random_state=0, **kw).fit(X)


def _mean_path_length(iso, X):
    """E[h(x)] from scikit-learn's own trees: the nodes on x's decision path (minus the root) plus
    scikit-learn's c(n_node_samples of the leaf), each tree on its own columns, averaged."""
    total = np.zeros(X.shape[0])
    for tree, feats in zip(iso.estimators_, iso.estimators_features_):
        rows = np.asarray(X[:, feats], dtype=np.float32)
        depth = np.asarray(tree.decision_path(rows).sum(axis=1)).ravel() - 1.0
        leaf = tree.apply(rows)
        total += depth + sk_c(tree.tree_.n_node_samples[leaf])
    return total / len(iso.estimators_)


def _path_length_from_scores(iso, X):
    """E[h(x)] read back from score_samples = -2 ** (-E[h] / c(max_samples))."""
    return -sk_c([iso._max_samples])[0] * np.log2(-iso.score_samples(X))


@pytest.mark.parametrize("kw", SETTINGS)
def test_values_equal_shap_tree_explainer(kw):
    shap = pytest.importorskip("shap")
    X = _data()
    iso = _forest(X, **kw)
    x, bg = X[:12], X[50:70]
    values, base = tree_shap_values(iso, x)
    explainer = shap.TreeExplainer(iso)
    np.testing.assert_allclose(values, explainer.shap_values(x), rtol=0, atol=1e-9)
    if not kw.get("bootstrap"):  # shap's base counts samples unweighted (bootstrap draws once)
        assert base == pytest.approx(float(np.ravel(explainer.expected_value)[0]), abs=1e-9)
    values_i, base_i = tree_shap_values(iso, x, background=bg)
    inter = shap.TreeExplainer(iso, data=bg, feature_perturbation="interventional")
    np.testing.assert_allclose(values_i, inter.shap_values(x), rtol=0, atol=1e-6)  # shap: float32 sums
    assert base_i == pytest.approx(float(np.ravel(inter.expected_value)[0]), abs=1e-6)


@pytest.mark.parametrize("kw", SETTINGS)
def test_efficiency_equals_the_mean_path_length_of_sklearns_trees(kw):
    X = _data()
    iso = _forest(X, **kw)
    x = X[:30]
    want = _mean_path_length(iso, x)
    np.testing.assert_allclose(want, _path_length_from_scores(iso, x), rtol=0, atol=1e-9)
    for bg in (None, X[100:115]):
        values, base = tree_shap_values(iso, x, background=bg)
        assert values.shape == x.shape
        np.testing.assert_allclose(base + values.sum(axis=1), want, rtol=0, atol=1e-9)
    # path-dependent base: the cover-weighted mean path length, the trees' mean on their own
    # (unbootstrapped) training samples
    if not kw.get("bootstrap"):
        means = []
        for tree, feats, rows in zip(iso.estimators_, iso.estimators_features_, iso.estimators_samples_):
            means.append(_mean_path_length_one(tree, X[rows][:, feats]))
        assert tree_shap_values(iso, x)[1] == pytest.approx(np.mean(means), abs=1e-9)


def _mean_path_length_one(tree, rows):
    rows = np.asarray(rows, dtype=np.float32)
    depth = np.asarray(tree.decision_path(rows).sum(axis=1)).ravel() - 1.0
    return float(np.mean(depth + sk_c(tree.tree_.n_node_samples[tree.apply(rows)])))


def test_features_a_tree_never_sees_get_zero():
    """With max_features=2 of 5 every tree splits on its own two columns: a column no tree was
    given has value 0 exactly, and the trees' column numbers are mapped back (shap agrees)."""
    X = _data(d=5)
    iso = E.IsolationForest(n_estimators=3, max_features=2, random_state=1).fit(X)
    seen = set(np.concatenate(iso.estimators_features_).tolist())
    unseen = sorted(set(range(5)) - seen)
    assert unseen, "the draw should leave a column out"
    values, _ = tree_shap_values(iso, X[:10], background=X[20:30])
    np.testing.assert_array_equal(values[:, unseen], 0.0)
    assert np.abs(values[:, sorted(seen)]).sum() > 0


def test_interventional_values_equal_brute_force_shapley_of_the_path_length():
    """v(S) = mean over background rows b of E[h](x_S, b_rest), with E[h] read back from
    scikit-learn's score_samples; exact Shapley values by enumerating all 2^4 coalitions."""
    X = _data(d=4, seed=2)
    iso = _forest(X, max_samples=64)
    x, bg = X[:3], X[40:46]
    d = 4
    want = np.zeros((x.shape[0], d))
    for r, row in enumerate(x):
        def v(S):
            mixed = bg.copy()
            mixed[:, list(S)] = row[list(S)]
            return _path_length_from_scores(iso, mixed).mean()

        for i in range(d):
            others = [j for j in range(d) if j != i]
            for k in range(d):
                for S in itertools.combinations(others, k):
                    w = math.factorial(k) * math.factorial(d - k - 1) / math.factorial(d)
                    want[r, i] += w * (v(S + (i,)) - v(S))
    values, base = tree_shap_values(iso, x, background=bg)
    np.testing.assert_allclose(values, want, rtol=0, atol=1e-9)
    assert base == pytest.approx(_path_length_from_scores(iso, bg).mean(), abs=1e-9)


def test_missing_values_routed_as_sklearn_routes_them():
    X = _data()
    iso = _forest(X, max_features=0.8)
    x = X[:8].copy()
    x[0, 1] = x[3, 0] = x[5, 4] = np.nan
    want = _path_length_from_scores(iso, x)
    for bg in (None, X[60:70]):
        values, base = tree_shap_values(iso, x, background=bg)
        np.testing.assert_allclose(base + values.sum(axis=1), want, rtol=0, atol=1e-9)


def test_interaction_rows_sum_to_the_values():
    X = _data()
    iso = _forest(X, max_features=0.8)
    inter, base = tree_shap_interaction_values(iso, X[:4])
    values, base_v = tree_shap_values(iso, X[:4])
    np.testing.assert_allclose(inter.sum(axis=2), values, rtol=0, atol=1e-9)
    np.testing.assert_allclose(inter, np.swapaxes(inter, 1, 2), rtol=0, atol=1e-12)
    assert base == pytest.approx(base_v, abs=1e-12)


def test_explainer_explains_the_expected_path_length_and_names_it():
    """fl.explainer('tree_shap', iso): E[h(x)] (output 'raw', params['explained']), with the
    constants that map it to score_samples and decision_function; interventional with a
    background; probability refused; kernel_shap still explains decision_function."""
    X = _data()
    iso = _forest(X, max_samples=64, max_features=0.8)
    x = X[:6]
    want = _mean_path_length(iso, x)
    for kw in ({}, {"background": X[80:95]}):
        e = fl.explainer("tree_shap", iso, **kw).explain(x)
        assert e.output == "raw" and e.params["explained"] == "expected_path_length"
        assert e.params["feature_perturbation"] == ("interventional" if kw else "tree_path_dependent")
        h = e.base_values + e.values.sum(axis=1)
        np.testing.assert_allclose(h, want, rtol=0, atol=1e-9)
        score = -(2.0 ** (-h / e.params["c_max_samples"]))
        np.testing.assert_allclose(score, iso.score_samples(x), rtol=0, atol=1e-12)
        np.testing.assert_allclose(score - e.params["offset"], iso.decision_function(x), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="output='probability'"):
        fl.explainer("tree_shap", iso, output="probability")
    k = fl.explainer("kernel_shap", iso, background=X[:10], budget=64, seed=0).explain(x[:2])
    np.testing.assert_allclose(k.base_values + k.values.sum(axis=1), iso.decision_function(x[:2]),
                               rtol=0, atol=1e-9)


def test_explain_command_reads_f_x_as_the_expected_path_length(tmp_path, capsys):
    """featurelens explain --method tree_shap on an IsolationForest: f(x) is E[h(x)] read back from
    the model's decision_function, so base + sum = f(x) (not the score, which is no tree sum)."""
    pd = pytest.importorskip("pandas")
    sio = pytest.importorskip("skops.io")
    from featurelens.cli import main

    X = _data(n=60, d=3)
    iso = _forest(X)
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(tmp_path / "d.csv", index=False)
    sio.dump(iso, tmp_path / "iso.skops")
    out = tmp_path / "rep"
    assert main(["explain", "--model", str(tmp_path / "iso.skops"), "--data", str(tmp_path / "d.csv"),
                 "--method", "tree_shap", "--rows", "4", "--out", str(out),
                 "--trust-type", "sklearn.tree._tree.Tree"]) == 0, capsys.readouterr().err
    assert "efficiency: holds" in capsys.readouterr().out
    page = (out / "index.html").read_text()
    assert "expected path length E[h(x)]" in page
    assert "raw (the model&#x27;s own outputs)" not in page and "raw (the model's own outputs)" not in page
    values = pd.read_csv(out / "values.csv")
    total = values["base_value"].to_numpy() + values[["a", "b", "c"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, _mean_path_length(iso, X[:4]), rtol=0, atol=1e-9)


def test_compiled_and_numpy_engines_agree(monkeypatch):
    from featurelens.explainers.tree import engine as tree_engine

    X = _data()
    iso = _forest(X, max_features=0.6)
    x, bg = X[:5], X[30:40]
    got = {}
    for engine in ("numpy", "auto"):
        monkeypatch.setattr(tree_engine, "ENGINE", engine)
        got[engine] = [tree_shap_values(iso, x), tree_shap_values(iso, x, background=bg)]
    for (a, base_a), (b, base_b) in zip(got["numpy"], got["auto"]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        assert base_a == pytest.approx(base_b, abs=1e-12)
    np.testing.assert_allclose(got["numpy"][0][1] + got["numpy"][0][0].sum(axis=1), _mean_path_length(iso, x),
                               rtol=0, atol=1e-9)
