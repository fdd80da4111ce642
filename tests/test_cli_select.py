"""``featurelens select``: planted columns found and written, the same scores as the API, clear
usage errors with exit code 2."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

import featurelens.selection as selection
from featurelens.cli import main
from featurelens.selection import AGOPSelector
from featurelens.cli.select import METHODS

pd = pytest.importorskip("pandas")


@pytest.fixture
def planted_csv(tmp_path):
    X, y = make_classification(n_samples=300, n_features=8, n_informative=2, n_redundant=0, shuffle=False, random_state=0)
    cols = ["signal_a", "signal_b"] + [f"noise_{j}" for j in range(6)]
    frame = pd.DataFrame(X, columns=cols)
    frame.insert(3, "label", np.where(y == 1, "yes", "no"))  # a string target in the middle
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_selects_planted_columns_and_writes_them(planted_csv, tmp_path, capsys):
    path, frame = planted_csv
    out = tmp_path / "sel.csv"
    code = main(["select", str(path), "--target", "label", "-k", "2", "--method", "agop", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "signal_a" in printed and "signal_b" in printed and "noise_" not in printed
    written = pd.read_csv(out)
    assert sorted(written["column"]) == ["signal_a", "signal_b"]
    assert written["rank"].tolist() == [1, 2]
    # the same numbers as the Python API on the same columns
    api = AGOPSelector(k=2, seed=0).fit(frame.drop(columns=["label"]), frame["label"].to_numpy())
    scores = dict(zip(api.feature_names_in_, api.scores_))
    np.testing.assert_allclose(written["score"], [scores[c] for c in written["column"]], rtol=1e-12)


def test_minshap_without_k_selects_by_pvalue(planted_csv, tmp_path, capsys):
    path, frame = planted_csv
    out = tmp_path / "auto.csv"
    assert main(["select", str(path), "--target", "label", "--method", "minshap", "--out", str(out)]) == 0
    assert "k=auto" in capsys.readouterr().out
    written = pd.read_csv(out)
    api = selection.MinShapSelector(seed=0).fit(frame.drop(columns=["label"]), frame["label"].to_numpy())
    expected = sorted(api.get_feature_names_out().tolist())
    assert sorted(written["column"]) == expected
    assert {"signal_a", "signal_b"} <= set(expected)
    assert (written["pvalue"] < 0.05).all()


def test_every_public_selector_is_a_method():
    # HyperDFS is a classifier that selects per row (dynamic selection), not one subset for a file
    public = {n for n in selection.__all__
              if n not in ("stability", "NoiseGainLayer", "DegenerateDataWarning", "HyperDFS")}
    assert {cls for cls, _, _ in METHODS.values()} == public


def test_unsupervised_method_runs(planted_csv, capsys):
    path, _ = planted_csv
    code = main(["select", str(path), "--target", "label", "-k", "3", "--method", "nbse"])
    assert code == 0
    lines = [line for line in capsys.readouterr().out.splitlines()[2:] if line.strip()]
    assert len(lines) == 3 and "label" not in "".join(lines)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "label", "-k", "2", "--method", "agop"], "not found"),
    ],
)
def test_missing_file(tmp_path, capsys, argv, message):
    code = main(["select", str(tmp_path / "nope.csv"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err


def test_unknown_target(planted_csv, capsys):
    path, _ = planted_csv
    assert main(["select", str(path), "--target", "y", "-k", "2", "--method", "agop"]) == 2
    err = capsys.readouterr().err
    assert "--target 'y' is not a column" in err and "signal_a" in err


def test_non_numeric_feature_column(planted_csv, tmp_path, capsys):
    _, frame = planted_csv
    frame = frame.assign(city=["paris"] * len(frame))
    path = tmp_path / "text.csv"
    frame.to_csv(path, index=False)
    assert main(["select", str(path), "--target", "label", "-k", "2", "--method", "agop"]) == 2
    assert "non-numeric feature columns: city" in capsys.readouterr().err


def test_missing_values(planted_csv, tmp_path, capsys):
    _, frame = planted_csv
    frame.loc[4, "noise_2"] = np.nan
    path = tmp_path / "nan.csv"
    frame.to_csv(path, index=False)
    assert main(["select", str(path), "--target", "label", "-k", "2", "--method", "agop"]) == 2
    assert "missing values in feature columns: noise_2" in capsys.readouterr().err


def test_k_too_large_and_bad_k_and_method(planted_csv, capsys):
    path, _ = planted_csv
    assert main(["select", str(path), "--target", "label", "-k", "9", "--method", "agop"]) == 2
    assert "-k 9 is larger than the number of feature columns (8)" in capsys.readouterr().err
    assert main(["select", str(path), "--target", "label", "-k", "0", "--method", "agop"]) == 2
    assert "expected a positive integer" in capsys.readouterr().err
    assert main(["select", str(path), "--target", "label", "-k", "2", "--method", "lasso"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["select", str(path), "--target", "label", "--method", "sand"]) == 2
    assert "--method sand needs -k" in capsys.readouterr().err
