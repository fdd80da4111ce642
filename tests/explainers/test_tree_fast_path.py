"""The short path of ``tree_shap``'s ``explain`` (``explainers/tree/fast.py``: rows of numbers with a
given target, no model call) gives the explanation of the general path field by field, for every
kind of tree model and input it takes, and leaves every other input (and every refusal) to the
general path."""

from __future__ import annotations

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import explainer as tree_explainer
from sklearn import ensemble as E

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(240, 5))
    yb = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    y3 = np.digitize(X[:, 0] - X[:, 3], [-0.6, 0.6])
    yr = np.column_stack([X[:, 0] * 2 - X[:, 2], X[:, 1] ** 2])
    return X, yb, y3, yr


def _models(data):
    X, yb, y3, yr = data
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    out = [
        ("gb binary (frame)", E.GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0).fit(frame, yb), {}),
        ("gb multiclass", E.GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y3), {}),
        ("rf classifier", E.RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, y3), {}),
        ("rf 2 outputs", E.RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, yr), {}),
        ("hgb", E.HistGradientBoostingClassifier(max_iter=6, random_state=0).fit(X, yb), {}),
        ("isolation", E.IsolationForest(n_estimators=6, random_state=0).fit(X), {}),
        ("gb interactions", E.GradientBoostingRegressor(n_estimators=6, max_depth=3, random_state=0).fit(X, yr[:, 0]),
         {"interactions": True}),
        ("rf background", E.RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X, yr[:, 0]),
         {"background": X[100:120]}),
        ("gb probability", E.GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, yb),
         {"background": X[100:115], "output": "probability"}),
    ]
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    out.append(("lgbm", lgb.LGBMClassifier(n_estimators=6, num_leaves=5, verbose=-1).fit(X, yb), {}))
    out.append(("xgb", xgb.XGBClassifier(n_estimators=6, max_depth=2, n_jobs=1).fit(X, y3), {}))
    return out, frame


def _explain_both(model, params, x, target, monkeypatch):
    ex = fl.explainer("tree_shap", model, **params)
    fast = ex.explain(x, target=target)
    with monkeypatch.context() as m:
        m.setattr(tree_explainer, "fast_explanation", lambda *a, **k: None)
        general = ex.explain(x, target=target)
    return fast, general


def _same(fast, general):
    np.testing.assert_allclose(fast.values, general.values, rtol=0, atol=1e-13)
    np.testing.assert_allclose(fast.base_values, general.base_values, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(fast.target, general.target)
    np.testing.assert_array_equal(fast.data, general.data)
    assert fast.data.dtype == general.data.dtype
    assert fast.feature_names == general.feature_names
    assert fast.output == general.output
    assert set(fast.extra) == set(general.extra)
    for k in fast.extra:
        np.testing.assert_allclose(fast.extra[k], general.extra[k], rtol=0, atol=1e-13)
    assert fast.params.keys() == general.params.keys()
    for k in fast.params:
        if k != "base_values":
            assert fast.params[k] == general.params[k], k
    np.testing.assert_allclose(fast.params["base_values"], general.params["base_values"], rtol=0, atol=1e-13)
    assert fast.model_calls == 0 and general.model_calls > 0


def test_short_path_equals_the_general_path(data, monkeypatch):
    X = data[0]
    models, frame = _models(data)
    for name, model, params in models:
        n_out = len(getattr(model, "classes_", [0]))
        targets = [0] if n_out == 1 or "isolation" in name else [1, np.arange(12) % n_out]
        if "2 outputs" in name:
            targets = [1, np.array([0, 1] * 6)]
        rows = frame.iloc[:12] if "(frame)" in name else X[:12]
        for target in targets:
            fast, general = _explain_both(model, params, rows, target, monkeypatch)
            _same(fast, general)
    # float32 rows keep their dtype in data, as the general path keeps them
    model = models[2][1]
    fast, general = _explain_both(model, {}, X[:7].astype(np.float32), 2, monkeypatch)
    _same(fast, general)
    assert fast.data.dtype == np.float32


def test_short_path_names_given_feature_names_and_frame_columns(data):
    models, frame = _models(data)
    model = models[0][1]  # fitted on the frame
    e = fl.explainer("tree_shap", model).explain(frame.iloc[:3], target=1)
    assert e.feature_names == list(frame.columns) and e.model_calls == 0
    names = ["a", "b", "c", "d", "e"]
    e = fl.explainer("tree_shap", model).explain(frame.to_numpy()[:3], target=1, feature_names=names)
    assert e.feature_names == names
    # integer and bool columns are numbers too
    mixed = frame.iloc[:4].assign(c0=[1, 2, 3, 4], c1=[True, False, True, True])
    fast = fl.explainer("tree_shap", model).explain(mixed, target=1)
    assert fast.model_calls == 0
    np.testing.assert_array_equal(fast.data[:, 1], [1.0, 0.0, 1.0, 1.0])


def test_other_inputs_take_the_general_path_with_its_messages(data):
    X = data[0]
    models, frame = _models(data)
    model = models[2][1]  # a 3-class forest on arrays
    ex = fl.explainer("tree_shap", model)
    with pytest.raises(ValueError, match=r"target 3 is out of range"):
        ex.explain(X[:4], target=3)
    with pytest.raises(ValueError, match=r"target must be an int or hold one int per sample \(4\); got shape \(3,\)"):
        ex.explain(X[:4], target=[0, 1, 2])
    with pytest.raises(TypeError, match=r"target must be None, an int or one int per sample; got 1.5"):
        ex.explain(X[:4], target=1.5)
    bad = X[:4].copy()
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"x contains (NaN or )?inf values"):
        ex.explain(bad, target=0)
    e = ex.explain(X[:4])  # target None: the predicted class, one model pass
    np.testing.assert_array_equal(e.target, model.predict(X[:4]))
    assert e.model_calls == 4
    e = ex.explain(X[:4], target=np.array([[0, 1]] * 4))  # (n, k) targets: the general path
    assert e.values.shape == (4, 2, 5)
    with pytest.raises(ValueError, match=r"first_row"):
        ex.explain(X[:4], target=0, first_row=-1)
    gb = models[0][1]  # fitted on a frame: other columns are the Model's error
    with pytest.raises(ValueError, match=r"column"):
        fl.explainer("tree_shap", gb).explain(frame.iloc[:3].rename(columns={"c0": "zz"}), target=1)


def test_a_refit_model_is_read_again(data):
    """The reading of a model is kept per explainer (and a GradientBoosting's constant per fitted
    init): a new explainer of the same object after a refit explains the new model."""
    X, yb, y3, _ = data
    model = E.GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=0).fit(X, yb)
    fl.explainer("tree_shap", model).explain(X[:5], target=1)
    model.fit(X[:120], 1 - yb[:120])  # another prior, other trees
    e = fl.explainer("tree_shap", model).explain(X[:5], target=1)
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), model.decision_function(X[:5]), atol=1e-10)
