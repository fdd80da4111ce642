"""``featurelens explain`` options: --output (units, efficiency in those units; tree_shap's
probability units and the units it refuses),
--format csv|parquet, and --trust-type for skops files (the refusal prints the flags that load it)."""

import numpy as np
import pytest

from featurelens.cli import main

pd = pytest.importorskip("pandas")
sio = pytest.importorskip("skops.io")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    folder = tmp_path_factory.mktemp("explain_options")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    y = (X[:, 0] - 0.7 * X[:, 1] + 0.3 * rng.normal(size=40) > 0).astype(int)
    names = ["alpha", "beta", "gamma", "delta"]
    table = pd.DataFrame(X, columns=names)
    table["label"] = y
    table.to_csv(folder / "data.csv", index=False)
    Xl = table[names].to_numpy().astype(np.float32).astype(np.float64)  # the rows as load_data reads them
    logreg = LogisticRegression().fit(Xl, y)
    sio.dump(logreg, folder / "logreg.skops")
    table[names].iloc[20:32].to_csv(folder / "background.csv", index=False)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(Xl, y)
    sio.dump(tree, folder / "tree.skops")
    return {"csv": str(folder / "data.csv"), "names": names, "X": Xl, "logreg": logreg, "tree": tree,
            "logreg_file": str(folder / "logreg.skops"), "tree_file": str(folder / "tree.skops"),
            "background": str(folder / "background.csv")}


def _args(files, model, out, *extra):
    return ["explain", "--model", files[model], "--data", files["csv"], "--labels", "label", "--rows", "5",
            "--background", "10", "--target", "1", "--out", str(out), *extra]


def test_log_odds_of_a_logistic_regression_add_up_to_its_decision_function(files, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(_args(files, "logreg_file", out, "--output", "log_odds", "--background", files["background"])) == 0, \
        capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert (values["output"] == "log_odds").all()
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    margin = files["logreg"].decision_function(files["X"][:5])  # log(p1 / p0) of a logistic model
    np.testing.assert_allclose(total, margin, rtol=0, atol=1e-6)
    # a logistic model is linear in log-odds: KernelSHAP gives phi_i = w_i (x_i - mean of background_i)
    w = files["logreg"].coef_[0]
    expected = w * (files["X"][:5] - files["X"][20:32].mean(axis=0))
    np.testing.assert_allclose(values[files["names"]].to_numpy(), expected, rtol=0, atol=1e-6)
    import featurelens as fl

    e = fl.load_explanation(out / "explanation.npz")
    assert e.output == "log_odds"
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "output units" in page and "log_odds" in page
    assert "in log_odds units" in capsys.readouterr().out


def test_probability_units_add_up_to_predict_proba_and_differ_from_log_odds(files, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(_args(files, "logreg_file", out, "--output", "probability")) == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert (values["output"] == "probability").all()
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    p1 = files["logreg"].predict_proba(files["X"][:5])[:, 1]
    np.testing.assert_allclose(total, p1, rtol=0, atol=1e-6)
    assert "probability" in (out / "index.html").read_text(encoding="utf-8")


def test_tree_shap_probability_of_a_tree_adds_up_to_predict_proba_and_equals_shap(files, tmp_path, capsys):
    """A decision tree's class fractions are a sum over its leaves: --output probability is
    predict_proba itself, explained by interventional TreeSHAP over the background rows."""
    shap = pytest.importorskip("shap")
    out = tmp_path / "rep"
    assert main(_args(files, "tree_file", out, "--trust-type", "sklearn.tree._tree.Tree", "--method", "tree_shap",
                      "--output", "probability", "--background", files["background"])) == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert (values["output"] == "probability").all()
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, files["tree"].predict_proba(files["X"][:5])[:, 1], rtol=0, atol=1e-9)
    reference = shap.TreeExplainer(files["tree"], data=files["X"][20:32], feature_perturbation="interventional",
                                   model_output="raw").shap_values(files["X"][:5])
    reference = np.asarray(reference)[..., 1] if np.ndim(reference) == 3 else np.asarray(reference[1])
    # shap's C++ TreeSHAP keeps float32 leaf values (digits past 1e-8 are its own rounding)
    np.testing.assert_allclose(values[files["names"]].to_numpy(), reference, rtol=0, atol=1e-7)
    assert "in probability units" in capsys.readouterr().out


def test_tree_shap_probability_of_a_booster_adds_up_to_predict_proba(files, tmp_path, capsys):
    """A binary booster's trees sum to its log-odds; --output probability explains sigmoid of that
    sum exactly (interventional, over the background rows): base + sum = predict_proba[:, 1], and
    the values are shap's model_output='probability'. Without --output: the log-odds margin."""
    import joblib
    from sklearn.ensemble import GradientBoostingClassifier

    shap = pytest.importorskip("shap")
    y = (files["X"][:, 0] - 0.7 * files["X"][:, 1] > 0).astype(int)
    gb = GradientBoostingClassifier(n_estimators=15, max_depth=2, random_state=0).fit(files["X"], y)
    joblib.dump(gb, tmp_path / "gb.joblib")
    files = {**files, "gb_file": str(tmp_path / "gb.joblib")}
    out = tmp_path / "rep"
    args = _args(files, "gb_file", out, "--trust-model-file", "--method", "tree_shap", "--background",
                 files["background"])
    assert main([*args, "--output", "probability"]) == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    assert (values["output"] == "probability").all()
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    p1 = gb.predict_proba(files["X"][:5])[:, 1]
    np.testing.assert_allclose(total, p1, rtol=0, atol=1e-9)
    reference = shap.TreeExplainer(gb, data=files["X"][20:32], feature_perturbation="interventional",
                                   model_output="probability").shap_values(files["X"][:5])
    np.testing.assert_allclose(values[files["names"]].to_numpy(), reference, rtol=0, atol=1e-7)
    assert "efficiency: holds" in capsys.readouterr().out
    assert main([*args, "--overwrite"]) == 0, capsys.readouterr().err  # no --output: the margin
    margin = pd.read_csv(out / "values.csv")
    assert (margin["output"] == "log_odds").all()
    total = margin["base_value"].to_numpy() + margin[files["names"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, gb.decision_function(files["X"][:5]), rtol=0, atol=1e-9)
    # path-dependent TreeSHAP (no background) has no exact probability: refused, naming background=
    import featurelens as fl

    with pytest.raises(ValueError, match="background"):
        fl.explainer("tree_shap", gb, output="probability")


def test_tree_shap_refuses_units_the_trees_do_not_sum_to(files, tmp_path, capsys):
    """The log-odds of a tree's class fractions and the probability of a multi-class (softmax)
    booster are no sums over trees: a usage error (exit 2) naming --output, before any file."""
    import joblib
    from sklearn.ensemble import GradientBoostingClassifier

    out = tmp_path / "rep"
    code = main(_args(files, "tree_file", out, "--trust-type", "sklearn.tree._tree.Tree", "--method", "tree_shap",
                      "--output", "log_odds"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--output log_odds does not apply to tree_shap" in err and "class fractions" in err
    assert "output='probability'" in err and "Traceback" not in err
    y3 = np.digitize(files["X"][:, 0], [-0.5, 0.5])
    gb3 = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(files["X"], y3)
    joblib.dump(gb3, tmp_path / "gb3.joblib")
    for units in ("probability", "log_odds"):
        code = main(_args({**files, "gb3": str(tmp_path / "gb3.joblib")}, "gb3", out, "--trust-model-file",
                          "--method", "tree_shap", "--output", units, "--target", "2"))
        err = capsys.readouterr().err
        assert code == 2, err
        assert f"--output {units} does not apply to tree_shap" in err and "softmax" in err and "Traceback" not in err
    assert not out.exists()


def test_format_parquet_without_a_writer_names_the_package_to_install(files, tmp_path, capsys, monkeypatch):
    import featurelens.cli.explain as explain_cli
    import featurelens._loading as loading

    def no_loading(*a, **k):
        raise AssertionError("loaded before checking for a parquet writer")

    monkeypatch.setattr(explain_cli, "parquet_engine", lambda: None)
    monkeypatch.setattr(loading, "load_model", no_loading)
    out = tmp_path / "rep"
    assert main(_args(files, "logreg_file", out, "--format", "parquet")) == 2
    err = capsys.readouterr().err
    assert "pip install pyarrow" in err and "fastparquet" in err and "Traceback" not in err
    assert not out.exists()


def test_parquet_engine_sees_what_is_installed():
    import importlib.util

    from featurelens.cli.explain_report import parquet_engine

    installed = [m for m in ("pyarrow", "fastparquet") if importlib.util.find_spec(m) is not None]
    assert parquet_engine() == (installed[0] if installed else None)


def test_format_parquet_round_trip(files, tmp_path, capsys):
    from featurelens.cli.explain_report import parquet_engine

    if parquet_engine() is None:
        pytest.skip("neither pyarrow nor fastparquet is installed")
    csv_out, pq_out = tmp_path / "csv", tmp_path / "pq"
    assert main(_args(files, "logreg_file", csv_out)) == 0, capsys.readouterr().err
    assert main(_args(files, "logreg_file", pq_out, "--format", "parquet")) == 0, capsys.readouterr().err
    assert not (pq_out / "values.csv").exists()
    from_parquet = pd.read_parquet(pq_out / "values.parquet")
    from_csv = pd.read_csv(csv_out / "values.csv")
    assert list(from_parquet.columns) == files["names"] + ["base_value", "target", "output"]
    np.testing.assert_allclose(from_parquet[files["names"]].to_numpy(), from_csv[files["names"]].to_numpy(),
                               rtol=1e-12, atol=1e-12)
    assert 'href="values.parquet"' in (pq_out / "index.html").read_text(encoding="utf-8")


def test_csv_is_the_default_format(files, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(_args(files, "logreg_file", out)) == 0, capsys.readouterr().err
    assert (out / "values.csv").exists() and not (out / "values.parquet").exists()
    assert 'href="values.csv"' in (out / "index.html").read_text(encoding="utf-8")


def test_skops_tree_is_refused_with_the_flags_that_load_it_and_they_do(files, tmp_path, capsys):
    import re

    untrusted = sio.get_untrusted_types(file=files["tree_file"])
    assert "sklearn.tree._tree.Tree" in untrusted  # not trusted by skops by default
    out = tmp_path / "rep"
    args = _args(files, "tree_file", out, "--method", "tree_shap")
    assert main(args) == 2
    err = capsys.readouterr().err
    flags = " ".join(f"--trust-type {t}" for t in untrusted)
    assert flags in err and "Traceback" not in err
    assert not out.exists()
    # only part of the flags: still refused, naming what is left
    if len(untrusted) > 1:
        assert main(args + ["--trust-type", untrusted[0]]) == 2
        assert "still untrusted" in capsys.readouterr().err
    # the printed flags, pasted as they are, load and explain the file
    pasted = re.search(r"pass ((?:--trust-type \S+ ?)+)", err).group(1).split()
    assert main(args + pasted) == 0, capsys.readouterr().err
    values = pd.read_csv(out / "values.csv")
    total = values["base_value"].to_numpy() + values[files["names"]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, files["tree"].predict_proba(files["X"][:5])[:, 1], rtol=0, atol=1e-6)


def test_trust_type_adds_to_the_default_trusted_types(files):
    from featurelens._loading import LoadError, load_model

    with pytest.raises(LoadError, match=r"--trust-type sklearn\.tree\._tree\.Tree"):
        load_model(files["tree_file"])
    with pytest.raises(LoadError, match="still untrusted"):
        load_model(files["tree_file"], trusted_types=["some.other.Type"])
    model, _ = load_model(files["tree_file"], trusted_types=["sklearn.tree._tree.Tree"])
    np.testing.assert_array_equal(model.predict(files["X"]), files["tree"].predict(files["X"]))
    # the default trusted types (numpy arrays, the estimator class) need no flag
    logreg, _ = load_model(files["logreg_file"])
    np.testing.assert_allclose(logreg.coef_, files["logreg"].coef_)


def test_explain_help_lists_the_new_options(capsys):
    assert main(["explain", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--output", "--format", "--trust-type", "log_odds", "parquet"):
        assert flag in text
