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
