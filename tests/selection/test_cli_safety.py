"""``featurelens select`` on degenerate data and with hostile column names."""

import csv

import numpy as np
import pytest

from featurelens.cli import main
from featurelens.cli.select import csv_text_cell

pd = pytest.importorskip("pandas")


def test_one_row_csv_exits_non_zero_with_a_clear_message(tmp_path, capsys):
    path = tmp_path / "one_row.csv"
    pd.DataFrame({"a": [1.0], "b": [2.0], "y": [1]}).to_csv(path, index=False)
    for method in ("nbse", "minkowski", "siofs"):
        code = main(["select", str(path), "--target", "y", "-k", "1", "--method", method])
        err = capsys.readouterr().err
        assert code == 2
        assert "1 data row(s)" in err and "at least 2 rows" in err


def test_constant_columns_warn_on_stderr(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "constant.csv"
    pd.DataFrame({"a": np.ones(30), "b": np.full(30, 2.0), "y": rng.integers(0, 2, 30)}).to_csv(path, index=False)
    code = main(["select", str(path), "--target", "y", "-k", "1", "--method", "nbse"])
    assert code == 0
    assert "warning: NBSE: every column of X is constant" in capsys.readouterr().err


FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"click\")", "+1+2", "-2+3", "@SUM(A1)", "\tx", "-x"]  # a CR in a header breaks pandas reading


def test_formula_column_names_are_written_as_text(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 120
    y = rng.integers(0, 2, n)
    # Every column carries the label (plus noise), so every one is selected with -k 6.
    frame = pd.DataFrame({name: y + 0.3 * rng.standard_normal(n) for name in FORMULAS})
    frame["y"] = y
    path = tmp_path / "hostile.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "sel.csv"
    code = main(["select", str(path), "--target", "y", "-k", "6", "--method", "siofs", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["column"] for r in rows) == sorted("'" + name for name in FORMULAS)
    for r in rows:
        assert r["column"][0] not in "=+-@\t\r"
        float(r["score"])  # numbers stay numbers (a negative score is not escaped)


@pytest.mark.parametrize(
    "text, expected",
    [("=1+1", "'=1+1"), ("+A1", "'+A1"), ("-A1", "'-A1"), ("@A1", "'@A1"), ("\tA", "'\tA"), ("\rA", "'\rA"),
     ("signal", "signal"), ("a=b", "a=b"), ("", "")],
)
def test_csv_text_cell(text, expected):
    assert csv_text_cell(text) == expected
