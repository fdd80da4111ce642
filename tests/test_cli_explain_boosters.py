"""Acceptance: ``featurelens explain`` of binary GradientBoosting, HistGradientBoosting, LightGBM and
XGBoost classifiers from a CSV with NaN, bool and category columns (the category columns typed with
the model's own categories): the values equal shap's TreeExplainer (exact interventional Shapley
values by enumeration where shap refuses categorical splits), the units
are the log-odds margin, base + sum equals the model's own margin to 1e-9, the waterfall ends at
the printed f(x), and the page renders in headless Chromium where it is installed (the LightGBM case:
its rendered text holds the units and f(x))."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import featurelens as fl
from featurelens.cli import main

pd = pytest.importorskip("pandas")
shap = pytest.importorskip("shap")


def _table(n=80, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    a[rng.random(n) < 0.15] = np.nan
    flag = rng.random(n) < 0.5
    colour = rng.choice(["red", "green", "blue"], size=n)
    b = rng.normal(size=n)
    y = ((np.nan_to_num(a) + flag + (colour == "red") * 1.5 + 0.5 * b + 0.3 * rng.normal(size=n)) > 1).astype(int)
    return pd.DataFrame({"a": a, "flag": flag, "colour": colour, "b": b}), y


def _fit(kind, frame, y, folder):
    """The fitted model, its file and the extra flags the loader needs."""
    if kind == "gradient_boosting":  # no NaN support in scikit-learn's GradientBoosting: no NaN column
        from sklearn.ensemble import GradientBoostingClassifier

        sio = pytest.importorskip("skops.io")
        frame = frame.assign(a=frame["a"].fillna(0.0), colour=(frame["colour"] == "red").astype(float))
        model = GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=0).fit(frame, y)
        sio.dump(model, folder / "model.skops")
        return model, frame, folder / "model.skops", ["--trust-type", "sklearn.tree._tree.Tree"]
    import joblib

    frame = frame.assign(colour=frame["colour"].astype("category"))
    if kind == "hist_gradient_boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        model = HistGradientBoostingClassifier(max_iter=15, max_depth=2, categorical_features="from_dtype",
                                               random_state=0).fit(frame, y)
    elif kind == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        model = lgb.LGBMClassifier(n_estimators=20, num_leaves=4, min_child_samples=3, verbose=-1).fit(frame, y)
    else:
        xgb = pytest.importorskip("xgboost")
        model = xgb.XGBClassifier(n_estimators=20, max_depth=2, n_jobs=1, enable_categorical=True,
                                  tree_method="hist").fit(frame, y)
    joblib.dump(model, folder / "model.joblib")  # these load as trusted pickles only
    return model, frame, folder / "model.joblib", ["--trust-model-file"]


def _xgboost_float64_margin(model, frame):
    """XGBoost's margin summed in float64: the leaf each tree sends each row to (XGBoost's own
    routing, ``pred_leaf=True``), the leaves' values from the saved model and the logit of its
    ``base_score``, each a float32 (the saved text is its shortest float32 form), added in float64."""
    import json

    import xgboost as xgb

    booster = model.get_booster()
    saved = json.loads(booster.save_raw("json"))["learner"]
    leaves = booster.predict(xgb.DMatrix(frame, enable_categorical=True), pred_leaf=True).astype(int)
    trees = saved["gradient_booster"]["model"]["trees"]
    p = float(json.loads(saved["learner_model_param"]["base_score"].replace("E", "e"))[0])
    total = np.full(len(frame), float(np.float32(np.log(p / (1 - p)))))
    for t, tree in enumerate(trees):
        total += np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)[leaves[:, t]]
    return total


def _interventional_shapley(margin, rows, background):
    """Exact interventional Shapley values by enumeration, from the model's own margins: v(S) is the
    mean margin over background rows b of the row (x_S, b_rest) (Janzing et al. 2020), built as a
    DataFrame that keeps every column's dtype (the categories included)."""
    from itertools import product
    from math import factorial

    n, d, m = len(rows), rows.shape[1], len(background)
    coalitions = list(product((False, True), repeat=d))
    parts = []
    for mask in coalitions:
        for i in range(n):
            columns = {c: (rows.iloc[[i] * m, j] if mask[j] else background.iloc[:, j]).reset_index(drop=True)
                       for j, c in enumerate(rows.columns)}
            parts.append(pd.DataFrame(columns))
    hybrid = pd.concat(parts, ignore_index=True)
    assert list(hybrid.dtypes) == list(rows.dtypes)
    v = np.asarray(margin(hybrid), dtype=np.float64).reshape(len(coalitions), n, m).mean(axis=2)
    index = {mask: k for k, mask in enumerate(coalitions)}
    phi = np.zeros((n, d))
    for mask in coalitions:
        size = sum(mask)
        for j in range(d):
            if not mask[j]:
                weight = factorial(size) * factorial(d - size - 1) / factorial(d)
                with_j = tuple(True if k == j else mask[k] for k in range(d))
                phi[:, j] += weight * (v[index[with_j]] - v[index[mask]])
    return phi, v[index[(False,) * d]]


def _margin(kind, model, frame):
    if kind == "lightgbm":
        return model.predict(frame, raw_score=True)
    if kind == "xgboost":
        return model.predict(frame, output_margin=True)
    return model.decision_function(frame)


@pytest.mark.parametrize("kind", ["gradient_boosting", "hist_gradient_boosting", "lightgbm", "xgboost"])
@pytest.mark.slow
def test_boosters_from_a_csv_equal_shap_in_log_odds(kind, tmp_path, capsys):
    table, y = _table()
    model, frame, path, flags = _fit(kind, table, y, tmp_path)
    frame.to_csv(tmp_path / "data.csv", index=False)
    frame.iloc[40:70].to_csv(tmp_path / "background.csv", index=False)
    out = tmp_path / "rep"
    rc = main(["explain", "--model", str(path), *flags, "--data", str(tmp_path / "data.csv"), "--method",
               "tree_shap", "--rows", "12", "--target", "1", "--background", str(tmp_path / "background.csv"),
               "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    values = pd.read_csv(out / "values.csv")
    names = list(frame.columns)
    assert (values["output"] == "log_odds").all()
    margin = _margin(kind, model, frame.iloc[:12])
    total = values["base_value"].to_numpy() + values[names].to_numpy().sum(axis=1)
    if kind == "xgboost":  # XGBoost adds its leaves in float32: its margin has float32's digits only
        np.testing.assert_allclose(total, margin, rtol=0, atol=4 * np.finfo(np.float32).eps * np.abs(margin).max())
        margin = _xgboost_float64_margin(model, frame.iloc[:12])
    np.testing.assert_allclose(total, margin, rtol=0, atol=1e-9)  # efficiency in log-odds units
    data, rows = frame.iloc[40:70], frame.iloc[:12]
    if kind == "gradient_boosting":  # shap reads a scikit-learn model's bool column as objects
        reference = shap.TreeExplainer(model, data=data.astype(float), feature_perturbation="interventional",
                                       model_output="raw").shap_values(rows.astype(float))
        reference = np.asarray(reference[1] if isinstance(reference, list) else reference)
        reference = reference[..., 1] if reference.ndim == 3 else reference
    else:  # shap's interventional TreeExplainer refuses categorical splits: brute force on the model
        exact = _xgboost_float64_margin if kind == "xgboost" else (lambda m, f: _margin(kind, m, f))
        reference, base = _interventional_shapley(lambda f: exact(model, f), rows, data)
        np.testing.assert_allclose(values["base_value"].to_numpy(), base, rtol=0, atol=1e-9)
    np.testing.assert_allclose(values[names].to_numpy(), reference, rtol=0, atol=1e-6)
    # printed f(x) of row 0 = the model's margin = where the waterfall ends (base + sum)
    printed = re.search(r"row 0: base value (\S+) \+ sum of values (\S+) = (\S+); f\(x\) = (\S+) \(log_odds\)",
                        captured.out)
    assert printed is not None, captured.out
    assert float(printed.group(4)) == pytest.approx(margin[0], abs=1e-5)
    assert float(printed.group(3)) == pytest.approx(margin[0], abs=1e-5)
    assert "efficiency: holds" in captured.out
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "log_odds (log(p / (1 - p)))" in page and "raw (the model&#x27;s own outputs)" not in page
    assert f"to f(x) = {margin[0]:.4g}" in page and "efficiency does not hold" not in page
    if kind == "lightgbm":  # one browser run (seconds each): the page with NaN, bool and category cells
        _check_in_chromium(out / "index.html", tmp_path, ["log_odds (log(p / (1 - p)))", f"to f(x) = {margin[0]:.4g}",
                                                          f"f(x) = {float(printed.group(4)):.6g}"])


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _check_in_chromium(page, tmp_path, texts):
    """Open ``page`` in headless Chromium (where installed): the DOM it rendered holds ``texts`` and
    every figure decoded to an image, and a screenshot is drawn (kept as tmp_path / "page.png")."""
    if CHROMIUM is None:
        return
    import html

    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,2400"]
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=False, env=env).stdout
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    text = re.sub(r"\s+", " ", text)
    for wanted in texts:
        assert wanted in text, (wanted, text[:2000])
    assert dom.count("<img") >= 3 and dom.count("data:image/png;base64,") >= 3
    shot = tmp_path / "page.png"
    subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120,
                   check=False, env=env)
    assert shot.exists() and shot.stat().st_size > 10_000  # a drawn page, not an empty canvas
