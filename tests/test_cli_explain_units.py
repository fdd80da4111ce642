"""``featurelens explain``: the values' units come from the Explanation, f(x) is computed in those
units, the efficiency line says "holds" only within its tolerance, and CSV data reach a float64
model without being rounded to float32 (Unix timestamps, 1e308)."""

import numpy as np
import pytest

import featurelens as fl
from featurelens.cli.explain_report import (
    EFFICIENCY_TOLERANCE, efficiency_gap, efficiency_text, explained_outputs, explained_units,
)
from featurelens.cli import main
from featurelens.models import Model

pd = pytest.importorskip("pandas")
sio = pytest.importorskip("skops.io")


def test_efficiency_is_called_holding_only_within_the_tolerance():
    base = np.array([0.5, -0.25])
    values = np.array([[0.1, 0.2], [0.3, -0.05]])
    exact = base + values.sum(axis=1)
    gap = efficiency_gap(base, values, exact)
    assert gap["max"] <= 1e-15 and efficiency_text(gap, "raw").startswith("holds")
    off = exact + np.array([0.0, 3 * EFFICIENCY_TOLERANCE])
    gap = efficiency_gap(base, values, off)
    assert gap["max"] == pytest.approx(3 * EFFICIENCY_TOLERANCE, rel=1e-6)
    text = efficiency_text(gap, "log_odds")
    assert "does NOT hold" in text and "holds:" not in text and "log_odds" in text
    # relative to max(1, |f(x)|): a gap of 1 on outputs of 1e300 holds; of 1e295 it does not
    big = np.array([1e300])
    assert efficiency_text(efficiency_gap(big - 1.0, np.zeros((1, 1)), big), "raw").startswith("holds")
    assert "does NOT hold" in efficiency_text(efficiency_gap(big * 0.99, np.zeros((1, 1)), big), "raw")
    # values of 1e308 summed without overflowing to inf
    huge = efficiency_gap(np.array([0.0]), np.array([[1e308, 1e308, -1e308]]), np.array([1e308]))
    assert np.isfinite(huge["max"]) and huge["relative"] < 1e-12


def test_units_are_read_from_the_explanation():
    e = fl.Explanation(values=np.zeros((2, 3)), method="m", output="log_odds")
    assert explained_units(e) == "log_odds"
    e = fl.Explanation(values=np.zeros((2, 3)), method="m", params={"output": "log_odds"})
    assert explained_units(e) == "log_odds"  # an explainer that recorded its units in params
    e = fl.Explanation(values=np.zeros((2, 3)), method="m", params={"output": "probability"}, output="log_odds")
    assert explained_units(e) == "log_odds"  # the Explanation's own field wins when it is not raw
    assert explained_units(fl.Explanation(values=np.zeros((2, 3)), method="m")) == "raw"


def _binary(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_log_odds_f_x_is_the_boosting_margin_itself():
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = _binary()
    gb = GradientBoostingClassifier(n_estimators=60, max_depth=3, learning_rate=0.5, random_state=0).fit(X, y)
    margin = gb.decision_function(X)
    assert np.abs(margin).max() > 15  # where log(p / (1 - p)) read back from predict_proba loses digits
    t = (margin > 0).astype(np.int64)
    f = explained_outputs(Model(gb), X, t, "log_odds")
    np.testing.assert_allclose(f, np.where(t == 1, margin, -margin), rtol=0, atol=1e-12)
    # units the Model already has come from the Model: predict_proba as it is
    np.testing.assert_allclose(explained_outputs(Model(gb), X, t, "raw"), gb.predict_proba(X)[np.arange(60), t],
                               rtol=0, atol=0)


@pytest.mark.parametrize("package", ["lightgbm", "xgboost"])
def test_log_odds_f_x_of_lightgbm_and_xgboost_is_their_raw_margin(package):
    lib = pytest.importorskip(package)
    X, y = _binary()
    if package == "lightgbm":
        model = lib.LGBMClassifier(n_estimators=20, num_leaves=4, min_child_samples=3, verbose=-1).fit(X, y)
        margin = model.predict(X, raw_score=True)
    else:
        model = lib.XGBClassifier(n_estimators=20, max_depth=2, n_jobs=1).fit(X, y)
        margin = model.predict(X, output_margin=True)
    t = np.zeros(len(X), dtype=np.int64)
    t[::2] = 1
    f = explained_outputs(Model(model), X, t, "log_odds")
    np.testing.assert_allclose(f, np.where(t == 1, margin, -margin), rtol=0, atol=1e-12)


def test_csv_timestamps_reach_a_float64_model_unrounded(tmp_path, capsys):
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    t = 1.7e9 + rng.integers(0, 10**6, size=30) + rng.random(30)  # Unix timestamps with fractions
    X = np.column_stack([t, rng.normal(size=30)])
    model = LinearRegression().fit(X, (t - 1.7e9) * 1e-3 + X[:, 1])
    assert abs(np.float32(t[0]) - t[0]) > 1  # float32 would move this timestamp by more than a second
    pd.DataFrame(X, columns=["when", "x"]).to_csv(tmp_path / "d.csv", index=False)
    sio.dump(model, tmp_path / "lin.skops")
    out = tmp_path / "rep"
    assert main(["explain", "--model", str(tmp_path / "lin.skops"), "--data", str(tmp_path / "d.csv"),
                 "--method", "exact_shapley", "--background", "6", "--rows", "5", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    printed = capsys.readouterr().out
    rows = pd.read_csv(tmp_path / "d.csv").to_numpy()[:5]  # float64, as the CSV holds them
    values = pd.read_csv(out / "values.csv")
    total = values["base_value"].to_numpy() + values[["when", "x"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, model.predict(rows), rtol=0, atol=1e-9)
    e = fl.load_explanation(out / "explanation.npz")
    np.testing.assert_array_equal(e.data, rows)  # the explained rows are the CSV's, bit for bit
    assert "efficiency: holds" in printed


def test_a_column_of_1e308_passes_through(tmp_path, capsys):
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    rng = np.random.default_rng(1)
    big = np.where(rng.random(24) < 0.5, 1e308, 5e307)
    X = np.column_stack([big, rng.normal(size=24)])
    # scaled by its largest |value| first, so that nothing in the model overflows
    model = make_pipeline(MaxAbsScaler(), LinearRegression()).fit(X, (big > 6e307) * 2.0 + X[:, 1])
    pd.DataFrame(X, columns=["huge", "x"]).to_csv(tmp_path / "d.csv", index=False)
    from featurelens._loading import load_data

    Xl, _, names = load_data(tmp_path / "d.csv")
    assert Xl.dtype == np.float64 and np.array_equal(Xl, pd.read_csv(tmp_path / "d.csv").to_numpy())
    sio.dump(model, tmp_path / "big.skops")
    out = tmp_path / "rep"
    rc = main(["explain", "--model", str(tmp_path / "big.skops"), "--data", str(tmp_path / "d.csv"), "--method", "exact_shapley", "--background", "6", "--rows", "4",
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    total = values["base_value"].to_numpy() + values[["huge", "x"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, model.predict(Xl[:4]), rtol=0, atol=1e-9)
    assert np.isfinite(values[["huge", "x"]].to_numpy()).all()
