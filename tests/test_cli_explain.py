"""``featurelens explain``: efficiency against the model's own probabilities, the files it writes,
safe loading, --out checked first, --help without torch, and the page rendered in a browser."""

import base64
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from featurelens.cli import main

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    folder = tmp_path_factory.mktemp("explain")
    data = load_breast_cancer(as_frame=True)
    X, y = data.data.iloc[:60], data.target.iloc[:60]
    table = X.copy()
    table["diagnosis"] = y.to_numpy()
    table.to_csv(folder / "cancer.csv", index=False)
    Xa = X.to_numpy()
    logreg = LogisticRegression(max_iter=5000).fit(Xa / Xa.max(axis=0), y)
    # A model fitted on scaled columns would need a Pipeline; scale the data instead, so the
    # skops file holds only default-trusted types and the CSV keeps the breast_cancer names.
    scaled = table.copy()
    scaled[list(X.columns)] = Xa / Xa.max(axis=0)
    scaled.to_csv(folder / "scaled.csv", index=False)
    gb = GradientBoostingClassifier(n_estimators=15, max_depth=2, random_state=0).fit(Xa, y)
    files = {"folder": folder, "csv": str(folder / "cancer.csv"), "scaled": str(folder / "scaled.csv"),
             "names": list(X.columns), "logreg": logreg, "gb": gb}
    sio = pytest.importorskip("skops.io")
    sio.dump(logreg, folder / "logreg.skops")
    files["logreg_file"] = str(folder / "logreg.skops")
    import joblib

    joblib.dump(gb, folder / "gb.joblib")
    files["gb_file"] = str(folder / "gb.joblib")
    return files


def _rows_as_loaded(csv, n):
    """The rows the command explains: the CSV's feature columns as float32 (load_data), in float64."""
    table = pd.read_csv(csv).drop(columns="diagnosis")
    return table.to_numpy().astype(np.float32).astype(np.float64)[:n]


def test_logistic_regression_skops_values_add_up_to_the_probability(files, tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["explain", "--model", files["logreg_file"], "--data", files["scaled"], "--labels", "diagnosis",
                 "--rows", "4", "--background", "8", "--target", "1", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert list(values.columns) == files["names"] + ["base_value", "target", "output"]
    assert (values["output"] == "raw").all()  # predict_proba as it is
    assert len(values) == 4 and (values["target"] == 1).all()
    p1 = files["logreg"].predict_proba(_rows_as_loaded(files["scaled"], 4))[:, 1]
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, p1, rtol=0, atol=1e-6)  # efficiency: base + sum = P(class 1 | x)
    # the base value is E[f(X)] over the 8 background rows drawn from the data
    import featurelens as fl

    e = fl.load_explanation(out / "explanation.npz")
    assert e.params["n_background"] == 8 and e.feature_names == files["names"]
    np.testing.assert_allclose(e.values.sum(axis=1) + e.base_values, p1, atol=1e-6)
    printed = capsys.readouterr().out
    assert "kernel_shap" in printed and "explained 4 of 60 rows" in printed


@pytest.mark.slow
def test_pickled_gradient_boosting_needs_trust_and_explains_the_predicted_class(files, tmp_path, capsys):
    args = ["explain", "--model", files["gb_file"], "--data", files["csv"], "--labels", "diagnosis",
            "--rows", "3", "--background", "6", "--out", str(tmp_path / "rep")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--trust-model-file" in err and "Traceback" not in err
    assert not (tmp_path / "rep").exists()
    assert main(args + ["--trust-model-file"]) == 0, capsys.readouterr().err
    values = pd.read_csv(tmp_path / "rep" / "values.csv")
    proba = files["gb"].predict_proba(_rows_as_loaded(files["csv"], 3))
    predicted = proba.argmax(axis=1)
    np.testing.assert_array_equal(values["target"].to_numpy(), predicted)
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, proba[np.arange(3), predicted], rtol=0, atol=1e-6)


def test_pngs_exist_and_the_page_links_and_embeds_them(files, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["explain", "--model", files["logreg_file"], "--data", files["scaled"], "--labels", "diagnosis",
                 "--rows", "3", "--background", "5", "--out", str(out)]) == 0, capsys.readouterr().err
    page = (out / "index.html").read_text(encoding="utf-8")
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    for name in ("bar.png", "beeswarm.png", "waterfall.png"):
        png = (out / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert f'href="{name}"' in page
        assert base64.b64encode(png).decode("ascii") in embedded  # the page shows the very file
    assert 'href="values.csv"' in page and 'href="explanation.npz"' in page
    # the top-features table ranks by mean |value| read back from values.csv
    values = pd.read_csv(out / "values.csv")[files["names"]]
    top = values.abs().mean().sort_values(ascending=False).index[0]
    assert f'<tr><td class="text">1</td><td>{top}</td>' in page
    # a second run replaces the earlier explain report without --overwrite
    assert main(["explain", "--model", files["logreg_file"], "--data", files["scaled"], "--labels", "diagnosis",
                 "--rows", "2", "--background", "5", "--out", str(out)]) == 0
    assert len(pd.read_csv(out / "values.csv")) == 2


@pytest.mark.parametrize("kind", ["file", "empty", "foreign folder"])
def test_a_bad_out_fails_fast_before_loading(kind, tmp_path, capsys, monkeypatch):
    import featurelens._loading as loading

    def no_loading(*a, **k):
        raise AssertionError("loaded before checking --out")

    monkeypatch.setattr(loading, "load_model", no_loading)
    f = tmp_path / "existing.txt"
    f.write_text("x")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    out = {"file": str(f), "empty": "", "foreign folder": str(foreign)}[kind]
    start = time.perf_counter()
    code = main(["explain", "--model", "m.skops", "--data", "d.csv", "--out", out])
    assert time.perf_counter() - start < 20.0 and code == 2  # before work, not a speed check
    err = capsys.readouterr().err
    assert "--out" in err and "Traceback" not in err
    assert (foreign / "notes.txt").read_text() == "keep"


def test_usage_errors_exit_2(files, tmp_path, capsys):
    base = ["explain", "--model", files["logreg_file"], "--data", files["scaled"], "--labels", "diagnosis",
            "--rows", "2", "--out", str(tmp_path / "rep")]
    # 30 features: exact Shapley (2^30 coalitions) does not apply, and says why
    assert main(base + ["--method", "exact_shapley"]) == 2
    assert "2^n" in capsys.readouterr().err
    assert main(base + ["--method", "no_such_method"]) == 2
    assert "kernel_shap" in capsys.readouterr().err
    assert main(base + ["--target", "2"]) == 2  # a binary classifier has outputs 0 and 1
    assert "out of range" in capsys.readouterr().err
    assert main(base + ["--background", "0"]) == 2
    assert main(base + ["--method", "occlusion", "--background", "5"]) == 2
    assert "--background" in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()


@pytest.mark.slow
def test_explain_help_does_not_import_torch():
    code = ("import sys\nfrom featurelens.cli import main\n"
            "for argv in (['--help'], ['explain', '--help']):\n    main(argv)\n"
            "heavy = [m for m in ('torch', 'featurelens.explainers', 'featurelens.models', 'featurelens._loading') if m in sys.modules]\n"
            "sys.exit(1 if heavy else 0)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "--background" in run.stdout and "--trust-model-file" in run.stdout


@pytest.mark.slow
def test_the_page_renders_in_headless_chromium(files, tmp_path, capsys):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no headless Chromium on this machine (CI installs it with .ci/run)")
    out = tmp_path / "rep"
    assert main(["explain", "--model", files["logreg_file"], "--data", files["scaled"], "--labels", "diagnosis",
                 "--rows", "2", "--background", "4", "--out", str(out)]) == 0, capsys.readouterr().err
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--screenshot={shot}",
         "--window-size=1200,2400", f"file://{out / 'index.html'}"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000  # a page with figures, not a blank
