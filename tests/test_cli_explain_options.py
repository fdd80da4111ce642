"""``featurelens explain`` options: --output (units, efficiency in those units, tree_shap raw only),
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


def test_tree_shap_refuses_units_it_cannot_compute(files, tmp_path, capsys):
    # a tree classifier's class fractions are predict_proba itself (probability units); their
    # log-odds are no sum over the tree's leaves: refused, naming the units that apply
    out = tmp_path / "rep"
    code = main(_args(files, "tree_file", out, "--trust-type", "sklearn.tree._tree.Tree",
                      "--method", "tree_shap", "--output", "log_odds"))
    assert code != 0
    err = capsys.readouterr().err
    assert "log_odds" in err and "tree_shap" in err and "probability" in err and "Traceback" not in err
    assert not out.exists()


def test_format_parquet_without_a_writer_names_the_package_to_install(files, tmp_path, capsys, monkeypatch):
    import featurelens._explain_cli as explain_cli
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

    from featurelens._explain_cli import parquet_engine

    installed = [m for m in ("pyarrow", "fastparquet") if importlib.util.find_spec(m) is not None]
    assert parquet_engine() == (installed[0] if installed else None)


def test_format_parquet_round_trip(files, tmp_path, capsys):
    from featurelens._explain_cli import parquet_engine

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
