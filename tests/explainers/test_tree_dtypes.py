"""One column rule for DataFrames on every tree path: bool and int columns are numbers, pandas
category columns the codes the library itself uses, object strings a clear error; LightGBM's
renamed columns (spaces to underscores) match the frame's. Checked against each library's own
prediction and TreeSHAP (LightGBM ``pred_contrib``, XGBoost ``pred_contribs``) and shap."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import featurelens as fl
from featurelens.explainers.tree import tree_shap_values

pd = pytest.importorskip("pandas")


def _mixed_frame(n=200, seed=0, categories=True):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "f": rng.normal(size=n),
        "i": rng.integers(0, 5, n),
        "b": rng.random(n) > 0.5,
    })
    if categories:
        frame["c"] = pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"])
    y = frame["f"] + 0.5 * frame["i"] - 1.0 * frame["b"]
    if categories:
        y = y + 2.0 * (frame["c"] == "mid")
    return frame, y.to_numpy(dtype=np.float64)


def test_xgboost_int_bool_float_frame_equals_xgboost_and_shap():
    xgb = pytest.importorskip("xgboost")
    frame, y = _mixed_frame(categories=False)
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3).fit(frame, y)
    rows = frame.iloc[:20]
    values, base = tree_shap_values(model, rows)  # was refused: the frame became an object array
    own = model.get_booster().predict(xgb.DMatrix(rows), pred_contribs=True)
    np.testing.assert_allclose(values, own[:, :-1], atol=2e-6)
    np.testing.assert_allclose(base + values.sum(axis=1), model.predict(rows, output_margin=True), atol=2e-6)
    e = fl.explainer("tree_shap", model).explain(rows)
    np.testing.assert_allclose(e.values, values, atol=1e-12)
    assert e.feature_names == ["f", "i", "b"]
    shap = pytest.importorskip("shap")
    np.testing.assert_allclose(values, shap.TreeExplainer(model).shap_values(rows.astype(float)), atol=2e-6)


def test_lightgbm_category_column_uses_its_pandas_categorical_codes():
    lgb = pytest.importorskip("lightgbm")
    frame, y = _mixed_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lgb.LGBMRegressor(n_estimators=10, num_leaves=7, min_child_samples=5, verbose=-1).fit(frame, y)
    assert model.booster_.pandas_categorical == [["lo", "mid", "hi"]]
    # rows whose category dtype lists the categories in another order (and one unseen value):
    # LightGBM re-codes them by the training categories, so must the trees here
    rows = frame.iloc[:20].copy()
    values_ = rows["c"].astype(str).tolist()
    values_[0] = "new"
    rows["c"] = pd.Categorical(values_, categories=["hi", "new", "mid", "lo"])
    values, base = tree_shap_values(model, rows)
    np.testing.assert_allclose(base + values.sum(axis=1), model.predict(rows, raw_score=True), atol=1e-9)
    np.testing.assert_allclose(values, model.predict(rows, pred_contrib=True)[:, :-1], atol=1e-9)
    e = fl.explainer("tree_shap", model).explain(frame.iloc[:20])
    np.testing.assert_allclose(e.values, model.predict(frame.iloc[:20], pred_contrib=True)[:, :-1], atol=1e-9)


def test_xgboost_category_column_recoded_like_xgboost():
    xgb = pytest.importorskip("xgboost")
    frame, y = _mixed_frame()
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3, enable_categorical=True, tree_method="hist",
                             max_cat_to_onehot=1).fit(frame, y)
    rows = frame.iloc[:20].copy()
    rows["c"] = pd.Categorical(rows["c"].astype(str), categories=["mid", "hi", "lo"])  # other order
    values, base = tree_shap_values(model, rows)
    np.testing.assert_allclose(base + values.sum(axis=1), model.predict(rows, output_margin=True), atol=2e-5)
    e = fl.explainer("tree_shap", model).explain(frame.iloc[:20])
    own = model.get_booster().predict(xgb.DMatrix(frame.iloc[:20], enable_categorical=True), pred_contribs=True)
    np.testing.assert_allclose(e.values, own[:, :-1], atol=2e-5)


def test_object_strings_are_refused_naming_the_column():
    from sklearn.ensemble import RandomForestRegressor

    frame, y = _mixed_frame(categories=False)
    model = RandomForestRegressor(3, max_depth=3, random_state=0).fit(frame.astype(float), y)
    rows = frame.astype(float).iloc[:5].astype({"i": object})
    rows["i"] = ["a", "b", "c", "d", "e"]
    with pytest.raises(TypeError, match="X column 'i' has dtype (object|str).*Pipeline"):
        tree_shap_values(model, rows)
    # a category column for a model that takes no categories
    rows = frame.astype(float).iloc[:5].copy()
    rows["i"] = pd.Categorical(["a", "b", "a", "b", "a"])
    with pytest.raises(TypeError, match="column 'i' is a pandas category column"):
        tree_shap_values(model, rows)


def test_lightgbm_fitted_on_names_with_spaces_takes_the_frame():
    lgb = pytest.importorskip("lightgbm")
    from sklearn.datasets import load_breast_cancer

    frame, y = load_breast_cancer(return_X_y=True, as_frame=True)  # bundled with scikit-learn
    frame = frame.iloc[:, :6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lgb.LGBMClassifier(n_estimators=6, num_leaves=5, verbose=-1).fit(frame, y)
    assert list(model.feature_names_in_) != list(frame.columns)  # renamed: spaces -> underscores
    rows = frame.iloc[:8]
    e = fl.explainer("tree_shap", model).explain(rows, target=1)
    assert e.feature_names == list(frame.columns)
    np.testing.assert_allclose(e.values, model.predict(rows, pred_contrib=True)[:, :-1], atol=1e-9)
    k = fl.explainer("kernel_shap", model, background=frame.iloc[100:110], budget=64, seed=0).explain(
        rows.iloc[:2], target=1)
    assert k.feature_names == list(frame.columns)
    p = model.predict_proba(rows.iloc[:2])[:, 1]
    np.testing.assert_allclose(k.base_values + k.values.sum(axis=1), p, atol=1e-6)
    # other column names are still refused
    with pytest.raises(ValueError, match="columns must be the ones the model was fitted on"):
        fl.explainer("tree_shap", model).explain(rows.rename(columns={"mean radius": "radius"}))
