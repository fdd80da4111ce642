"""``featurelens explain`` on a CSV with text columns and a pipeline that one-hot encodes them:
values per original column that add up to the pipeline's probability, the waterfall labelled with
the categories, and a clear refusal for a model that cannot take text."""

import numpy as np
import pytest

from featurelens.cli import main

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import joblib
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    folder = tmp_path_factory.mktemp("explain_text")
    rng = np.random.default_rng(0)
    n = 120
    X = pd.DataFrame({"age": rng.normal(40, 10, n).round(1), "city": rng.choice(["Lima", "Oslo", "Rome"], n),
                      "plan": rng.choice(["basic", "pro"], n)})
    y = ((X["age"] > 40) ^ (X["city"] == "Rome")).astype(int)
    pipe = Pipeline([("ct", ColumnTransformer([("num", StandardScaler(), ["age"]),
                                               ("cat", OneHotEncoder(), ["city", "plan"])])),
                     ("gb", GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0))]).fit(X, y)
    table = X.copy()
    table["churn"] = y
    table.to_csv(folder / "customers.csv", index=False)
    joblib.dump(pipe, folder / "pipe.joblib")
    return {"folder": folder, "csv": str(folder / "customers.csv"), "model": str(folder / "pipe.joblib"),
            "pipe": pipe, "X": X}


def test_text_columns_reach_the_pipeline_and_values_add_up(files, tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["explain", "--model", files["model"], "--trust-model-file", "--data", files["csv"],
                 "--labels", "churn", "--rows", "4", "--background", "10", "--target", "1",
                 "--method", "exact_shapley", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert list(values.columns)[:3] == ["age", "city", "plan"]
    table = pd.read_csv(files["csv"]).drop(columns="churn").iloc[:4]
    p1 = files["pipe"].predict_proba(table)[:, 1]
    total = values["base_value"].to_numpy() + values[["age", "city", "plan"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, p1, atol=1e-9)
    html = (out / "index.html").read_text()
    assert "waterfall.png" in html


def test_the_waterfall_shows_the_category(files, tmp_path, capsys, monkeypatch):
    """The first row's bars are labelled "city = <its city>" (the decoded value, not a code)."""
    from featurelens import plots

    seen = {}
    original = plots.waterfall

    def spy(*args, **kwargs):
        ax = original(*args, **kwargs)
        seen["labels"] = [t.get_text() for t in ax.get_yticklabels()]
        return ax

    monkeypatch.setattr(plots, "waterfall", spy)
    assert main(["explain", "--model", files["model"], "--trust-model-file", "--data", files["csv"],
                 "--labels", "churn", "--rows", "2", "--background", "5", "--method", "exact_shapley",
                 "--out", str(tmp_path / "rep")]) == 0, capsys.readouterr().err
    city = pd.read_csv(files["csv"])["city"].iloc[0]
    assert f"city = {city}" in seen["labels"]


def test_a_model_without_an_encoder_is_refused_clearly(files, tmp_path, capsys):
    import joblib
    from sklearn.linear_model import LogisticRegression

    numeric = LogisticRegression().fit(np.random.default_rng(0).normal(size=(20, 3)), [0, 1] * 10)
    joblib.dump(numeric, tmp_path / "lr.joblib")
    code = main(["explain", "--model", str(tmp_path / "lr.joblib"), "--trust-model-file", "--data",
                 files["csv"], "--labels", "churn", "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert code != 0 and "non-numeric" in err and "city" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------------
# CSV text columns typed as the booster was fitted: its own categories, in its order


def _booster_frame(n=60, seed=1):
    rng = np.random.default_rng(seed)
    size = pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"])  # not sorted
    code = pd.Categorical(rng.choice([3, 10, 20], n))  # integer categories: "10" in the CSV is 10
    flag = rng.random(n) < 0.5
    x = rng.normal(size=n)
    y = ((size == "L") + (code == 10) + flag + x > 1.5).astype(int)
    return pd.DataFrame({"size": size, "code": code, "flag": flag, "x": x}), y


def _fit_booster(kind, frame, y):
    if kind == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        return lgb.LGBMClassifier(n_estimators=5, num_leaves=4, min_child_samples=2, verbose=-1).fit(frame, y)
    if kind == "xgboost":
        xgb = pytest.importorskip("xgboost")
        return xgb.XGBClassifier(n_estimators=5, max_depth=2, n_jobs=1, enable_categorical=True,
                                 tree_method="hist").fit(frame, y)
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype", random_state=0).fit(frame, y)


@pytest.mark.parametrize("kind", ["lightgbm", "xgboost", "hist_gradient_boosting"])
def test_csv_columns_get_the_model_categories_in_its_order(kind, tmp_path):
    from featurelens._loading import fitted_categories, load_data

    frame, y = _booster_frame()
    model = _fit_booster(kind, frame, y)
    frame.to_csv(tmp_path / "data.csv", index=False)
    X, _, names = load_data(tmp_path / "data.csv", keep_text=True, allow_missing=True, model=model)
    assert names == ["size", "code", "flag", "x"]
    # the model's own order: as fitted for the boosters, sorted by HistGradientBoosting's encoder
    order = ["L", "M", "S"] if kind == "hist_gradient_boosting" else ["S", "M", "L"]
    assert list(X["size"].cat.categories) == order
    assert list(X["code"].cat.categories) == [3, 10, 20] and X["flag"].dtype == bool
    assert (X["size"].astype(str) == frame["size"].astype(str)).all()
    np.testing.assert_array_equal(X["code"].cat.codes, frame["code"].cat.codes)
    assert sorted(k for k in fitted_categories(model) if k != "lightgbm") == ([] if kind == "lightgbm" else [0, 1])
    # the loaded frame is what the model was fitted on: the same predictions, bit for bit
    np.testing.assert_array_equal(model.predict_proba(X), model.predict_proba(frame))


@pytest.mark.parametrize("kind", ["lightgbm", "xgboost"])
def test_an_unseen_category_is_missing_with_a_warning_and_an_empty_bool_cell_is_nan(kind, tmp_path, capsys):
    from featurelens._loading import LoadWarning, load_data

    frame, y = _booster_frame()
    model = _fit_booster(kind, frame, y)
    table = frame.astype({"size": object, "flag": object})
    table.loc[2, "size"] = "XXL"
    table.loc[5, "size"] = "XXL"
    table.loc[3, "flag"] = None
    table.to_csv(tmp_path / "data.csv", index=False)
    with pytest.warns(LoadWarning, match=r"column 'size' holds 2 value\(s\) the model was not fitted on: 'XXL' "
                                         r"\(2 cells\).*read as missing \(NaN\)"):
        X, _, _ = load_data(tmp_path / "data.csv", keep_text=True, allow_missing=True, model=model)
    assert X["size"].isna().tolist() == [i in (2, 5) for i in range(len(frame))]
    assert X["flag"].dtype == np.float64 and np.isnan(X["flag"][3])
    np.testing.assert_array_equal(X["flag"].drop(index=3), frame["flag"].drop(index=3).astype(float))
    # the model's own prediction of the loaded frame is that of the frame with the cell missing
    expected = frame.assign(flag=frame["flag"].astype(float))
    expected.loc[3, "flag"] = np.nan
    expected["size"] = expected["size"].astype(object).where(~expected.index.isin([2, 5]), None)
    expected["size"] = pd.Categorical(expected["size"], categories=["S", "M", "L"])
    np.testing.assert_array_equal(model.predict_proba(X), model.predict_proba(expected))
    # the command prints the warning as one line and explains the rows
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    out = tmp_path / "rep"
    assert main(["explain", "--model", str(tmp_path / "model.joblib"), "--trust-model-file", "--data",
                 str(tmp_path / "data.csv"), "--method", "tree_shap", "--rows", "6", "--target", "1",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "featurelens explain: warning:" in err and "'XXL' (2 cells)" in err and "UserWarning" not in err
    values = pd.read_csv(out / "values.csv")
    names = ["size", "code", "flag", "x"]
    total = values["base_value"].to_numpy() + values[names].to_numpy().sum(axis=1)
    margin = (model.predict(expected.iloc[:6], raw_score=True) if kind == "lightgbm"
              else model.predict(expected.iloc[:6], output_margin=True))
    np.testing.assert_allclose(total, margin, rtol=0, atol=1e-6)


def test_a_model_without_categories_keeps_a_csv_as_it_is(tmp_path):
    """A booster fitted on numbers only: nothing is re-typed (its columns stay numbers)."""
    from featurelens._loading import fitted_categories, load_data

    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"u": rng.normal(size=30), "v": rng.integers(0, 3, 30)})
    model = lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(frame, (frame["u"] > 0).astype(int))
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert fitted_categories(model) == {}
    X, _, _ = load_data(tmp_path / "data.csv", keep_text=True, model=model)
    assert isinstance(X, np.ndarray) and X.shape == (30, 2)
