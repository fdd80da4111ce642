"""``featurelens explain --model`` on LightGBM text (``booster.save_model("model.txt")``) and XGBoost
JSON / UBJSON (``save_model("model.json")`` / ``"model.ubj"``) model files: they load as data (no
``--trust-model-file``), and the report's values equal the library's own TreeSHAP
(``pred_contrib`` / ``pred_contribs``, the expected value last) in the objective's units; a missing
library, a file of another kind and a file cut short are refused with a message and exit code 1,
never a crash of the process (LightGBM's text parser and XGBoost's UBJSON reader abort or crash on
cut files, so their layout is checked first)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from featurelens.cli import main
from featurelens.explainers.tree.booster_files import lightgbm_text_problem, ubjson_problem

pd = pytest.importorskip("pandas")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    clean = np.nan_to_num(X)
    y2 = (clean[:, 0] + clean[:, 1] > 0).astype(int)
    y3 = np.digitize(clean[:, 0] - clean[:, 2], [-0.5, 0.5])
    yr = 3 * clean[:, 0] - clean[:, 3]
    return pd.DataFrame(X, columns=["age", "dose", "bmi", "score"]), y2, y3, yr


def _files(tmp_path, table):
    frame, y2, y3, yr = table
    frame.to_csv(tmp_path / "data.csv", index=False)
    X = frame.to_numpy()
    models = {
        "binary.txt": lgb.train({"objective": "binary", "num_leaves": 6, "verbose": -1}, lgb.Dataset(X, y2), 12),
        "regression.txt": lgb.train({"objective": "regression", "num_leaves": 6, "verbose": -1}, lgb.Dataset(X, yr), 12),
        "multi.json": xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "nthread": 1},
                                xgb.DMatrix(X, y3), 12),
        "binary.ubj": xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y2), 12),
    }
    for name, booster in models.items():
        booster.save_model(str(tmp_path / name))
    return X, models


def _contributions(booster, x):
    if isinstance(booster, lgb.Booster):
        return np.asarray(booster.predict(x, pred_contrib=True))
    return np.asarray(booster.predict(xgb.DMatrix(x), pred_contribs=True))


@pytest.mark.parametrize("name, target, units", [("binary.txt", 1, "log_odds"), ("regression.txt", 0, "raw"),
                                                 ("multi.json", 2, "margin"), ("binary.ubj", 1, "log_odds")])
def test_booster_files_load_as_data_and_the_report_equals_shap(name, target, units, table, tmp_path, capsys):
    """The command explains with interventional TreeSHAP over ``--background`` rows: the values equal
    shap's TreeExplainer on the same Booster and background (NaN-free rows: shap's interventional
    walker routes NaN differently from LightGBM, see test_tree_boosters), and base + sum equals the
    Booster's own margin (``raw_score`` / ``output_margin``)."""
    shap = pytest.importorskip("shap")
    frame = table[0].fillna(0.0)
    X, models = _files(tmp_path, (frame,) + table[1:])
    frame.iloc[100:140].to_csv(tmp_path / "background.csv", index=False)
    out = tmp_path / "report"
    rc = main(["explain", "--model", str(tmp_path / name), "--data", str(tmp_path / "data.csv"),
               "--method", "tree_shap", "--rows", "15", "--target", str(target), "--background",
               str(tmp_path / "background.csv"), "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    library = "LightGBM" if name.endswith(".txt") else "XGBoost"
    kind = {"txt": "text", "json": "JSON", "ubj": "UBJSON"}[name.rsplit(".", 1)[1]]
    assert f"model: {library} model {name} ({kind}, read as data)" in captured.out
    values = pd.read_csv(out / "values.csv")
    assert (values["output"] == units).all() and (values["target"] == target).all()
    booster = models[name]
    explainer = shap.TreeExplainer(booster, X[100:140], feature_perturbation="interventional", model_output="raw")
    reference = np.asarray(explainer.shap_values(X[:15], check_additivity=False))
    if name == "multi.json":
        reference = reference[..., target]

    def margin(rows):
        if isinstance(booster, lgb.Booster):
            out = booster.predict(rows, raw_score=True)
        else:
            out = booster.predict(xgb.DMatrix(rows), output_margin=True)
        return out[:, target] if out.ndim == 2 else out

    # the interventional base value is the mean margin over the background (shap 0.51's
    # expected_value of a multi-class XGBoost Booster is not: its base + sum misses the margin)
    base = float(margin(X[100:140]).mean())
    margin = margin(X[:15])
    atol = 1e-6 if library == "LightGBM" else 1e-6 * max(1.0, float(np.abs(margin).max()))  # XGBoost: float32
    names = ["age", "dose", "bmi", "score"]
    np.testing.assert_allclose(values[names].to_numpy(), reference, rtol=0, atol=atol)
    np.testing.assert_allclose(values["base_value"].to_numpy(), base, rtol=0, atol=atol)
    np.testing.assert_allclose(values["base_value"] + values[names].sum(axis=1), margin, rtol=0, atol=atol)
    for file in ("index.html", "beeswarm.png", "waterfall.png", "explanation.npz"):
        assert (out / file).is_file(), file
    assert "efficiency: holds" in captured.out


def test_a_booster_file_with_missing_values_keeps_efficiency(table, tmp_path, capsys):
    """NaN cells (LightGBM routes them by each split's missing type): base + sum = the Booster's
    own margin on every explained row."""
    X, models = _files(tmp_path, table)
    out = tmp_path / "report"
    rc = main(["explain", "--model", str(tmp_path / "binary.txt"), "--data", str(tmp_path / "data.csv"),
               "--method", "tree_shap", "--rows", "40", "--target", "1", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert np.isnan(X[:40]).any()
    margin = models["binary.txt"].predict(X[:40], raw_score=True)
    total = values["base_value"] + values[["age", "dose", "bmi", "score"]].sum(axis=1)
    np.testing.assert_allclose(total, margin, rtol=0, atol=1e-9)


def test_a_booster_file_without_its_library_names_the_package(table, tmp_path):
    _files(tmp_path, table)
    script = ("import sys; sys.modules['lightgbm'] = None\n"
              "from featurelens.cli import main\n"
              f"sys.exit(main(['explain', '--model', {str(tmp_path / 'binary.txt')!r}, '--data', "
              f"{str(tmp_path / 'data.csv')!r}, '--out', {str(tmp_path / 'rep')!r}]))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "binary.txt needs lightgbm, which is not installed: pip install lightgbm" in run.stderr


@pytest.mark.parametrize("name, content, message", [
    ("notes.txt", b"hello, this is not a model\n", r"notes.txt is not a LightGBM model file"),
    ("config.json", b'{"hello": [1, 2, 3]}', r"config.json is not an XGBoost model file"),
    ("empty.ubj", b"", r"empty.ubj is not an XGBoost model file"),
])
def test_files_of_another_kind_are_refused(name, content, message, table, tmp_path, capsys):
    _files(tmp_path, table)
    (tmp_path / name).write_bytes(content)
    rc = main(["explain", "--model", str(tmp_path / name), "--data", str(tmp_path / "data.csv"),
               "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert rc == 1
    assert pytest.importorskip("re").search(message, err), err


@pytest.mark.parametrize("name", ["binary.txt", "binary.ubj", "multi.json"])
def test_files_cut_short_are_refused_without_a_crash(name, table, tmp_path):
    """Cut inside the trees: each run is a separate process, which must exit 1 with the message
    (LightGBM and XGBoost alone crash the process on some of these)."""
    _files(tmp_path, table)
    data = (tmp_path / name).read_bytes()
    for share in (0.3, 0.55, 0.8):
        cut = tmp_path / f"cut_{share}{name[name.index('.'):]}"
        cut.write_bytes(data[: int(len(data) * share)])
        script = ("import sys\nfrom featurelens.cli import main\n"
                  f"sys.exit(main(['explain', '--model', {str(cut)!r}, '--data', {str(tmp_path / 'data.csv')!r}, "
                  f"'--method', 'tree_shap', '--out', {str(tmp_path / 'rep')!r}]))")
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        assert run.returncode == 1, (share, run.returncode, run.stderr[-2000:])
        assert "corrupt or cut short" in run.stderr or "is not an XGBoost model file" in run.stderr, run.stderr


def test_layout_checks_refuse_every_cut_and_accept_the_whole_file(table, tmp_path):
    _files(tmp_path, table)
    text = (tmp_path / "binary.txt").read_bytes()
    assert lightgbm_text_problem(text) is None
    end = text.index(b"end of trees")
    assert all(lightgbm_text_problem(text[:k]) is not None for k in range(0, end, 11))
    ubj = (tmp_path / "binary.ubj").read_bytes()
    assert ubjson_problem(ubj) is None
    assert all(ubjson_problem(ubj[:k]) is not None for k in range(0, len(ubj), 7))
    assert "bytes after the document" in ubjson_problem(ubj + b"Z")
    # a count far beyond the document (what made XGBoost allocate without bound)
    huge = ubj.replace(b"#L", b"#L\x7f", 1)[: len(ubj)]
    assert ubjson_problem(huge) is not None
