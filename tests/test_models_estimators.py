"""scikit-learn estimators and pipelines as models: the Model adapter calls them
through predict_proba / decision_function / predict, with a DataFrame of their fitted columns
(no feature-name warnings), in float64 for float64 inputs."""

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

COLUMNS = ["age", "income", "score", "height", "weight"]


def _frame(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, len(COLUMNS))) * [10, 1000, 1, 0.1, 5] + [40, 5000, 0, 1.7, 70],
                     columns=COLUMNS)
    y = ((X["age"] - 40) / 10 + (X["score"]) + (X["income"] - 5000) / 1000 > 0).astype(int).to_numpy()
    return X, y


@pytest.fixture(scope="module")
def data():
    return _frame()


@pytest.fixture(scope="module")
def gbc(data):
    X, y = data
    return GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def pipe(data):
    X, y = data
    ct = ColumnTransformer([("scale", StandardScaler(), ["age", "income", "score"])], remainder="passthrough")
    return Pipeline([("ct", ct), ("lr", LogisticRegression())]).fit(X, y)


EXPLAINERS = [
    ("kernel_shap", {"budget": 64, "seed": 0}),
    ("permutation_shap", {"budget": 64, "seed": 0}),
    ("exact_shapley", {}),
]


@pytest.mark.parametrize("which", ["gbc", "pipe"])
@pytest.mark.parametrize("name,kwargs", EXPLAINERS, ids=[e[0] for e in EXPLAINERS])
def test_estimators_explained_without_warnings(request, data, which, name, kwargs):
    # Before: "model must be a torch.nn.Module or a callable"; as bare callables, 'X does not have
    # valid feature names' warnings, and the ColumnTransformer failed on arrays.
    est = request.getfixturevalue(which)
    X, _ = data
    x, background = X.iloc[:3], X.iloc[10:18]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = fl.explainer(name, est, background=background, **kwargs).explain(x, target=1)
        values = np.asarray(e.values)
        assert values.shape == (3, len(COLUMNS))
        # Efficiency against the estimator's own probabilities: sum phi = f(x) - E_b f(b).
        p = est.predict_proba(x)[:, 1]
        eb = est.predict_proba(background)[:, 1].mean()
        np.testing.assert_allclose(values.sum(1), p - eb, atol=1e-8)
        # numpy rows work too (the Model rebuilds the DataFrame).
        e2 = fl.explainer(name, est, background=background.to_numpy(), **kwargs).explain(x.to_numpy(), target=1)
    np.testing.assert_allclose(np.asarray(e2.values), values, atol=1e-12)


def test_exact_shapley_of_linear_regression_float64():
    # Before: numpy models ran in float32, so additivity missed by ~1e-6.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 6)) * [1, 10, 100, 0.1, 3, 1000]
    y = X @ rng.normal(size=6) + 0.5
    lr = LinearRegression().fit(X, y)
    x, background = X[:4], X[20:35]
    expected = lr.coef_ * (x - background.mean(0))
    for name, kwargs in EXPLAINERS:
        e = fl.explainer(name, lr, background=background, **kwargs).explain(x, target=0)
        values = np.asarray(e.values)
        np.testing.assert_allclose(values, expected, rtol=0, atol=1e-8, err_msg=name)
        np.testing.assert_allclose(values.sum(1), lr.predict(x) - lr.predict(background).mean(), rtol=0,
                                   atol=1e-10 if name == "exact_shapley" else 1e-8, err_msg=name)


def test_outputs_regressor_one_classifier_all_classes(data, gbc):
    X, y = data
    lr = LinearRegression().fit(X, y)
    out = fl.Model(lr).predict(X)
    assert out.shape == (len(X), 1) and out.dtype == torch.float64
    np.testing.assert_allclose(out[:, 0].numpy(), lr.predict(X), rtol=1e-12, atol=1e-13)  # BLAS order may differ (atol: entries near 0)
    out = fl.Model(gbc).predict(X)
    np.testing.assert_allclose(out.numpy(), gbc.predict_proba(X), rtol=1e-12)
    A = ((X - X.mean()) / X.std()).to_numpy()
    three = LogisticRegression().fit(A, np.arange(len(X)) % 3)  # fitted on arrays
    np.testing.assert_allclose(fl.Model(three).predict(A).numpy(), three.predict_proba(A), rtol=1e-12)
    assert three.predict_proba(A).shape == (len(X), 3)
    svc = LinearSVC().fit(A, y)  # no predict_proba: its margins
    np.testing.assert_allclose(fl.Model(svc).predict(A)[:, 0].numpy(), svc.decision_function(A), rtol=1e-12)


def test_bound_method_of_frame_fitted_estimator_gets_a_frame(data, gbc):
    X, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fl.Model(gbc.predict_proba).predict(X.to_numpy())
    np.testing.assert_allclose(out.numpy(), gbc.predict_proba(X), rtol=1e-12)


def test_objects_that_are_not_models_are_refused(data):
    class NotAModel:
        pass

    with pytest.raises(TypeError, match=r"estimator\.predict_proba; got NotAModel"):
        fl.Model(NotAModel())
    with pytest.raises(TypeError, match=r"estimator\.predict_proba; got NotAModel"):
        fl.explainer("kernel_shap", NotAModel())

    class LabelsOnly:
        classes_ = np.array([0, 1])

        def predict(self, X):
            return np.zeros(len(X))

    with pytest.raises(TypeError, match="neither predict_proba nor decision_function"):
        fl.Model(LabelsOnly())
    with pytest.raises(ValueError, match="not fitted"):
        fl.Model(LogisticRegression())


def test_precision_follows_the_input():
    f = lambda a: a.sum(1)  # noqa: E731
    x64 = np.ones((2, 3))
    assert fl.Model(f).to_tensor(x64).dtype == torch.float64
    assert fl.Model(f).predict(x64).dtype == torch.float64
    assert fl.Model(f).predict(x64.astype(np.float32)).dtype == torch.float32
    assert fl.Model(f, accepts="torch").to_tensor(x64).dtype == torch.float32
    net = torch.nn.Linear(3, 2)
    assert fl.Model(net).to_tensor(x64).dtype == torch.float32
    assert fl.Model(net.double()).to_tensor(x64.astype(np.float32)).dtype == torch.float64
    # A sum of 1 + 1e-12 survives in float64 (it would be 1.0 in float32).
    np.testing.assert_array_equal(fl.Model(f).predict(np.array([[1.0, 1e-12, 0.0]])).numpy(), [[1.0 + 1e-12]])


def test_dataframe_inputs(data, gbc):
    X, _ = data
    f = lambda a: a.sum(1)  # noqa: E731
    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5], "c": [True, False]})
    t = fl.Model(f).to_tensor(frame)
    assert t.dtype == torch.float64
    np.testing.assert_array_equal(t.numpy(), [[1, 0.5, 1], [2, 1.5, 0]])
    text = frame.assign(city=["x", "y"])
    with pytest.raises(TypeError, match="non-numeric columns 'city'.*gradient methods"):
        fl.Model(torch.nn.Linear(4, 1)).to_tensor(text)
    # Text columns now travel as category codes (tests/test_categorical_columns.py); one the
    # estimator was not fitted on is still refused, by name.
    with pytest.raises(ValueError, match=r"not fitted on \['city'\]"):
        fl.Model(gbc).to_tensor(X.iloc[:2].assign(city=["x", "y"]))
    with pytest.raises(ValueError, match=r"columns must be the ones the model was fitted on.*another order"):
        fl.Model(gbc).to_tensor(X[COLUMNS[::-1]])
    with pytest.raises(ValueError, match=r"missing \['weight'\]"):
        fl.Model(gbc).to_tensor(X[COLUMNS[:-1]])


def test_integer_columns_reach_the_estimator_as_integers():
    seen = []

    class Recorder:
        feature_names_in_ = np.array(["n", "v"], dtype=object)

        def predict(self, X):
            seen.append(dict(X.dtypes))
            return X["n"].to_numpy() * 2.0 + X["v"].to_numpy()

    frame = pd.DataFrame({"n": np.array([1, 2, 3], dtype=np.int64), "v": [0.5, 1.0, 2.0]})
    m = fl.Model(Recorder())
    out = m.predict(m.to_tensor(frame))
    np.testing.assert_array_equal(out[:, 0].numpy(), [2.5, 5.0, 8.0])
    assert seen[-1]["n"] == np.int64 and seen[-1]["v"] == np.float64
    m.predict(np.array([[1.5, 0.0]]))  # a non-integral value keeps its float column
    assert seen[-1]["n"] == np.float64


def test_gradient_explainers_refuse_estimators_by_name(gbc):
    with pytest.raises(TypeError, match=r"needs gradients.*GradientBoostingClassifier\.predict_proba.*kernel_shap"):
        fl.explainer("saliency", gbc)
