"""``featurelens explain`` on the user's own files: header cells that a spreadsheet would run as
formulas are escaped in values.csv, Ctrl-C prints one line and keeps the earlier report, and a
text cell in a numeric CSV column is named (column, row, value) at load."""

import numpy as np
import pytest

from featurelens.cli import main

pd = pytest.importorskip("pandas")
sio = pytest.importorskip("skops.io")


@pytest.fixture
def linear(tmp_path):
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    names = ["=HYPERLINK(\"http://x\")", "+cmd", "plain"]
    model = LinearRegression().fit(X, X @ np.array([1.0, -2.0, 0.5]))
    pd.DataFrame(X, columns=names).to_csv(tmp_path / "d.csv", index=False)
    sio.dump(model, tmp_path / "lin.skops")
    return tmp_path, names, model, X


def _args(folder, out):
    return ["explain", "--model", str(folder / "lin.skops"), "--data", str(folder / "d.csv"), "--method",
            "exact_shapley", "--background", "4", "--rows", "3", "--out", str(out)]


def test_values_csv_header_is_escaped_like_select(linear, capsys):
    from featurelens.cli.select import csv_text_cell

    folder, names, model, X = linear
    assert main(_args(folder, folder / "rep")) == 0, capsys.readouterr().err
    header = (folder / "rep" / "values.csv").read_text(encoding="utf-8").splitlines()[0]
    cells = pd.read_csv(folder / "rep" / "values.csv").columns.tolist()
    assert cells[:3] == [csv_text_cell(n) for n in names] == ["'" + names[0], "'+cmd", "plain"]
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
    assert header.startswith("\"'=HYPERLINK")
    # the values themselves are unchanged: a linear model's exact Shapley values w_i (x_i - mean_i)
    table = pd.read_csv(folder / "rep" / "values.csv")
    total = table["base_value"].to_numpy() + table[cells[:3]].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, model.predict(X[:3]), rtol=0, atol=1e-9)


def test_ctrl_c_prints_one_line_exits_130_and_keeps_the_old_report(linear, capsys, monkeypatch):
    folder, _, _, _ = linear
    out = folder / "rep"
    assert main(_args(folder, out)) == 0, capsys.readouterr().err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    import featurelens.plots as plots

    def interrupted(*args, **kwargs):  # Ctrl-C while the figures are drawn
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "beeswarm", interrupted)
    rc = main(_args(folder, out) + ["--rows", "2"])
    captured = capsys.readouterr()
    assert rc == 130
    assert captured.err.strip() == "featurelens explain: interrupted"
    assert "Traceback" not in captured.err + captured.out
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_text_cell_in_a_numeric_column_is_named_at_load(linear, capsys):
    folder, names, _, X = linear
    table = pd.DataFrame(X, columns=names)
    table["plain"] = table["plain"].astype(object)
    table.loc[7, "plain"] = "1.2.3"
    table.to_csv(folder / "bad.csv", index=False)
    args = _args(folder, folder / "rep")
    args[4] = str(folder / "bad.csv")
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 1
    assert "column 'plain'" in err and "row 7 (line 9 of the file)" in err and "'1.2.3'" in err
    assert not (folder / "rep").exists()
    # a column of text (a real categorical column) is not mistaken for it
    from featurelens._loading import load_data

    table = pd.DataFrame({"colour": ["red", "blue", "1"] * 4, "x": np.arange(12.0)})
    table.to_csv(folder / "cat.csv", index=False)
    frame, _, _ = load_data(folder / "cat.csv", keep_text=True)
    assert list(frame["colour"]) == list(table["colour"])
