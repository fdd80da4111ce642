"""Non-numeric DataFrame columns through a pipeline's own encoder:
the Model codes them as integers, decodes them before each call, and every original column is one
player of the black-box explainers."""

import math
import warnings

import numpy as np
import pytest
import torch

import featurelens as fl

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from _references import brute_shapley  # noqa: E402  (tests/_references.py)

COLUMNS = ["age", "income", "city", "color"]
CITIES = ["Lima", "Oslo", "Paris", "Rome"]


def _frame(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "age": rng.normal(40, 10, n),
        "income": rng.normal(5, 1, n),
        "city": pd.Series(rng.choice(CITIES, n), dtype=object),
        "color": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
    })
    y = (((X["age"] > 40) ^ (X["city"] == "Rome")) | (X["color"] == "red")).astype(int).to_numpy()
    return X, y


def _pipeline(X, y, depth):
    ct = ColumnTransformer([("num", StandardScaler(), ["age", "income"]), ("cat", OneHotEncoder(), ["city", "color"])])
    gb = GradientBoostingClassifier(n_estimators=15, max_depth=depth, random_state=0)
    return Pipeline([("ct", ct), ("gb", gb)]).fit(X, y)


@pytest.fixture(scope="module")
def data():
    return _frame()


@pytest.fixture(scope="module")
def pipe(data):
    return _pipeline(*data, depth=2)


@pytest.fixture(scope="module")
def stumps(data):
    # Depth-1 trees: the log-odds are a sum of one function per original column (a column's one-hot
    # features split in its own stumps), so every permutation gives the exact Shapley values.
    return _pipeline(*data, depth=1)


def _rows(X):
    """Explained rows and background without 'Lima' (seen only later) and the background."""
    no_lima = X[X["city"] != "Lima"]
    return no_lima.iloc[:3], no_lima.iloc[3:7]


def _brute(pipe, x, bg, units="probability"):
    """Interventional Shapley values computed on the pipeline with DataFrames: v(S) is the mean over
    background rows of f(x_S, b_notS), the hybrid rows built column by column (dtypes kept)."""
    out = []
    B = len(bg)
    for i in range(len(x)):
        rep = x.iloc[[i] * B].reset_index(drop=True)
        base = bg.reset_index(drop=True)

        # v of every coalition in one call (16 hybrids of B rows); brute_shapley reads them.
        masks = [np.array([(r >> j) & 1 for j in range(len(COLUMNS))], dtype=bool) for r in range(2 ** len(COLUMNS))]
        hybrids = []
        for mask in masks:
            hybrid = base.copy()
            for j in np.flatnonzero(mask):
                hybrid[COLUMNS[j]] = rep[COLUMNS[j]]
            hybrids.append(hybrid)
        p = pipe.predict_proba(pd.concat(hybrids, ignore_index=True))[:, 1]
        v = (p if units == "probability" else np.log(p) - np.log1p(-p)).reshape(len(masks), B).mean(1)
        table = {mask.tobytes(): v[r] for r, mask in enumerate(masks)}

        class Game:
            n_players = len(COLUMNS)

            def __call__(self, mask, table=table):
                return np.array([table[np.asarray(mask, dtype=bool).tobytes()]])

        out.append(brute_shapley(Game()))
    return np.array(out)


@pytest.mark.parametrize("name,kwargs", [("kernel_shap", {"seed": 0}), ("exact_shapley", {})])
def test_pipeline_with_string_columns_equals_brute_force(data, pipe, name, kwargs):
    X, _ = data
    x, bg = _rows(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name (or any other) warning
        ex = fl.explainer(name, pipe, background=bg, output="probability", **kwargs)
        e = ex.explain(x, target=1)
    assert e.values.shape == (3, 4)
    assert e.feature_names == COLUMNS
    np.testing.assert_allclose(e.values, _brute(pipe, x, bg), rtol=0, atol=1e-9)
    f_x = pipe.predict_proba(x)[:, 1]
    np.testing.assert_allclose(e.base_values.ravel() + e.values.sum(1), f_x, rtol=0, atol=1e-9)
    # e.data holds codes; the model's categories and decode give the values back.
    assert ex.model.categories["color"] == ["blue", "green", "red"]  # the category dtype's order
    assert set(ex.model.categories["city"]) == set(x["city"]) | set(bg["city"])
    pd.testing.assert_frame_equal(ex.model.decode(e.data), x.reset_index(drop=True))


def test_permutation_shap_on_an_additive_pipeline(data, stumps):
    X, _ = data
    x, bg = _rows(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = fl.explainer("permutation_shap", stumps, background=bg, output="log_odds", budget=20, seed=0).explain(
            x, target=1
        )
    assert e.values.shape == (3, 4) and e.feature_names == COLUMNS
    np.testing.assert_allclose(e.values, _brute(stumps, x, bg, units="log_odds"), rtol=0, atol=1e-9)
    p = stumps.predict_proba(x)[:, 1]
    np.testing.assert_allclose(e.base_values.ravel() + e.values.sum(1), np.log(p) - np.log1p(-p), rtol=0, atol=1e-9)


def test_an_unseen_category_later_extends_the_list(data, pipe):
    X, _ = data
    x, bg = _rows(X)
    ex = fl.explainer("exact_shapley", pipe, background=bg, output="probability")
    ex.explain(x, target=1)
    before = ex.model.categories["city"]
    assert "Lima" not in before
    later = X[X["city"] == "Lima"].iloc[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = ex.explain(later, target=1)
    after = ex.model.categories["city"]
    assert after[: len(before)] == before and after[len(before):] == ["Lima"]  # earlier codes kept
    assert np.all(e.data[:, 2] == len(before))
    np.testing.assert_allclose(e.values, _brute(pipe, later, bg), rtol=0, atol=1e-9)


class Recorder:
    """An estimator fitted on a DataFrame that records the frames it is called with."""

    def __init__(self, columns):
        self.feature_names_in_ = np.array(columns, dtype=object)
        self.seen = []

    def predict(self, X):
        self.seen.append(X)
        return np.arange(len(X), dtype=np.float64)


def test_values_and_dtypes_round_trip_missing_values_included():
    frame = pd.DataFrame({
        "obj": pd.Series(["b", None, "a", np.nan, "b"], dtype=object),
        "str": pd.Series(["u", "v", None, "u", "w"], dtype="str"),
        "string": pd.Series(["p", pd.NA, "q", "q", "p"], dtype="string"),
        "cat": pd.Categorical(["lo", "hi", None, "hi", "lo"], categories=["lo", "mid", "hi"], ordered=True),
        "flag": pd.Series([True, False, None, True, True], dtype=object),
        "n": np.array([1, 2, 3, 4, 5], dtype=np.int64),
        "v": [0.5, 1.0, 1.5, 2.0, 2.5],
    })
    est = Recorder(list(frame.columns))
    m = fl.Model(est)
    t = m.to_tensor(frame)
    assert t.dtype == torch.float64 and t.shape == (5, 7)
    # Codes: sorted new values, then the missing kinds; a category dtype brings its own order.
    assert m.categories["obj"][:2] == ["a", "b"] and m.categories["obj"][2] is None
    assert isinstance(m.categories["obj"][3], float) and math.isnan(m.categories["obj"][3])
    assert m.categories["cat"][:3] == ["lo", "mid", "hi"]
    np.testing.assert_array_equal(t[:, 0].numpy(), [1, 2, 0, 3, 1])
    m.predict(t)
    got = est.seen[-1]
    assert list(got.columns) == list(frame.columns)
    pd.testing.assert_frame_equal(got, frame)  # values and dtypes, ordered category included
    assert got["obj"][1] is None and isinstance(got["obj"][3], float)  # None and NaN as they were
    assert got["flag"][2] is None and got["flag"][0] is True


def test_codes_are_shared_across_frames_and_derived_models():
    est = Recorder(["c"])
    m = fl.Model(est)
    a = m.to_tensor(pd.DataFrame({"c": ["y", "x"]}))
    b = m.with_batch_size(1).to_tensor(pd.DataFrame({"c": ["z", "x"]}))  # a derived Model shares codes
    np.testing.assert_array_equal(a[:, 0].numpy(), [1, 0])
    np.testing.assert_array_equal(b[:, 0].numpy(), [2, 0])
    assert m.categories == {"c": ["x", "y", "z"]}
    m.predict(torch.cat([a, b]))
    assert est.seen[-1]["c"].tolist() == ["y", "x", "z", "x"]


def test_values_that_are_not_codes_name_the_column(data, pipe):
    X, _ = data
    m = fl.Model(pipe)
    t = m.to_tensor(X.iloc[:3])
    with pytest.raises(ValueError, match=r"column 'city' is categorical.*coded 0\.\.\d.*need numeric columns"):
        m.predict(t + 0.25)
    bad = t.clone()
    bad[0, 2] = 99.0  # out of range
    with pytest.raises(ValueError, match=r"column 'city' is categorical.*given 99\.0"):
        m.predict(bad)
    # A noise-based metric on a black-box explainer reaches the same message.
    ex = fl.explainer("exact_shapley", pipe, background=X.iloc[3:5])
    with pytest.raises(ValueError, match=r"column '(city|color)' is categorical.*noise"):
        fl.metrics.max_sensitivity(ex, X.iloc[:1], target=1, n_samples=1)


def test_gradient_explainers_refuse_such_models(data, pipe):
    X, _ = data
    with pytest.raises(TypeError, match=r"saliency.*needs gradients.*Pipeline\.predict_proba.*kernel_shap"):
        fl.explainer("saliency", pipe)
    m = fl.Model(pipe)
    m.to_tensor(X.iloc[:2])
    with pytest.raises(TypeError, match=r"needs gradients.*columns \['city', 'color'\] are categorical"):
        fl.explainer("smoothgrad", m)


def test_torch_modules_and_callables_still_refuse_text_columns():
    text = pd.DataFrame({"a": [1.0, 2.0], "city": ["x", "y"]})
    with pytest.raises(TypeError, match="non-numeric columns 'city'.*gradient methods"):
        fl.Model(torch.nn.Linear(2, 1)).to_tensor(text)
    with pytest.raises(TypeError, match="non-numeric columns 'city'.*encode these columns first"):
        fl.Model(lambda a: a.sum(1)).to_tensor(text)


def test_bad_columns_are_refused():
    est = Recorder(["when", "c"])
    frame = pd.DataFrame({"when": pd.to_datetime(["2024-01-01", "2024-02-01"]), "c": ["x", "y"]})
    with pytest.raises(TypeError, match=r"unsupported dtypes 'when' \(datetime64.*seconds"):
        fl.Model(est).to_tensor(frame)
    m = fl.Model(Recorder(["c"]))
    m.to_tensor(pd.DataFrame({"c": ["x", "y"]}))
    with pytest.raises(ValueError, match=r"column 'c' has dtype float64, but it was categorical"):
        m.to_tensor(pd.DataFrame({"c": [0.0, 1.0]}))
    m2 = fl.Model(Recorder(["c"]))
    m2.to_tensor(pd.DataFrame({"c": [0.0, 1.0]}))
    with pytest.raises(ValueError, match=r"column 'c' has dtype .*, but it was numeric"):
        m2.to_tensor(pd.DataFrame({"c": ["x", "y"]}))
    with pytest.raises(TypeError, match=r"column 'c' holds values that cannot be used as categories"):
        fl.Model(Recorder(["c"])).to_tensor(pd.DataFrame({"c": [[1], [2]]}))


def test_nullable_integer_and_boolean_columns_keep_their_dtypes():
    frame = pd.DataFrame({
        "i": pd.array([1, 2, 3], dtype="Int64"),
        "b": pd.array([True, False, True], dtype="boolean"),
        "c": ["x", "y", "x"],
    })
    est = Recorder(list(frame.columns))
    m = fl.Model(est)
    m.predict(m.to_tensor(frame))
    pd.testing.assert_frame_equal(est.seen[-1], frame)
    # Numeric only (the plain path) too.
    est2 = Recorder(["i", "b"])
    m2 = fl.Model(est2)
    m2.predict(m2.to_tensor(frame[["i", "b"]]))
    pd.testing.assert_frame_equal(est2.seen[-1], frame[["i", "b"]])


def test_an_estimator_fitted_on_an_array_gets_an_object_array():
    class Plain:
        def predict(self, X):
            self.seen = X
            return np.zeros(len(X))

    est = Plain()
    m = fl.Model(est)
    m.predict(m.to_tensor(pd.DataFrame({"a": [1.5, 2.5], "c": pd.Series(["x", None], dtype=object)})))
    assert est.seen.dtype == object and est.seen.shape == (2, 2)
    assert est.seen[0, 1] == "x" and est.seen[1, 1] is None and est.seen[1, 0] == 2.5


def test_explanation_carries_the_categories_through_save_and_load(data, pipe, tmp_path):
    """e.data holds codes; params["categories"] maps them back, also after a save/load round trip."""
    X, _ = data
    bg = X.iloc[:4]
    e = fl.explainer("exact_shapley", pipe, background=bg).explain(X.iloc[10:12], target=1)
    cats = e.params["categories"]
    assert set(cats) == {"city", "color"}
    city = X.columns.get_loc("city")
    decoded = [cats["city"][int(code)] for code in e.data[:, city]]
    assert decoded == list(X["city"].iloc[10:12])
    from featurelens.explanation import load_explanation

    loaded = load_explanation(e.save(tmp_path / "e"))
    assert loaded.params["categories"]["city"] == cats["city"]


def test_summarize_background_samples_rows_with_categories(data):
    X, _ = data
    bg = fl.games.summarize_background(X, k=5, method="sample", seed=0)
    assert len(bg) == 5 and list(bg.rows.columns) == COLUMNS
    assert bg.rows["city"].isin(CITIES).all()  # rows kept as they are
    np.testing.assert_allclose(bg.weights, 0.2)
    with pytest.raises(ValueError, match="method='sample'"):
        fl.games.summarize_background(X, k=5, method="kmeans")


def test_audit_names_the_non_numeric_columns(data, pipe):
    X, y = data
    with pytest.raises(ValueError, match=r"non-numeric columns \['city', 'color'\]"):
        fl.audit(pipe, X.iloc[:8], y[:8])
