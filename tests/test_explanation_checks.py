"""Explanation building and ``to_frame`` fail safe (issue 33, item 3).

Before: ``Explanation(values (4, 6), feature_names=[3 names])`` was accepted (then ``e[:, 5]`` an
IndexError, ``to_frame()`` a pandas shape error); ``e[:, "f1"].to_frame()`` and
``e[0, "f0"].to_frame()`` said "one input has shape () ... pass flatten=True"; ``e[[]].to_frame()``
gave numpy's reshape error; ``to_frame(target=True)`` silently took output 1; a layer's
attributions on a DataFrame carried the input's column names (4 names for 8 layer units) and saved
a file that did not load; in ``values.csv`` the headers ``=a`` and ``'=a`` both became ``'=a``.
"""

from __future__ import annotations

import numpy as np
import pytest

import featurelens as fl
from featurelens import Explanation

pd = pytest.importorskip("pandas")


def _e(n=4, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return Explanation(values=rng.normal(size=(n, d)), method="m", data=rng.normal(size=(n, d)),
                       base_values=rng.normal(size=n), feature_names=[f"f{i}" for i in range(d)],
                       target=np.ones(n, dtype=int))


def _several(n=4, k=2, d=3, seed=1):
    rng = np.random.default_rng(seed)
    return Explanation(values=rng.normal(size=(n, k, d)), method="m", base_values=rng.normal(size=(n, k)),
                       target=np.tile(np.arange(k), (n, 1)), feature_names=["a", "b", "c"],
                       data=rng.normal(size=(n, d)))


# -- construction -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fields, match", [
    (dict(feature_names=["a", "b", "c"]),
     r"feature_names must name each of the 6 elements of one input: values of shape \(4, 6\) hold inputs of "
     r"shape \(6,\); got 3 names"),
    (dict(feature_names=[f"f{i}" for i in range(7)]), r"each of the 6 elements .*got 7 names"),
    (dict(data=np.zeros((3, 6))), r"data must hold the 4 explained rows .*got shape \(3, 6\)"),
    (dict(data=np.zeros((4, 5)), feature_names=list("abcdef")),
     r"data must hold the inputs that feature_names name, shape \(4, 6\) for values of shape \(4, 6\); got shape "
     r"\(4, 5\)"),
    (dict(base_values=np.zeros(3)), r"base_values must hold one value per sample, shape \(4,\).*got shape \(3,\)"),
    (dict(base_values=np.zeros((4, 6)), target=np.zeros(4, int)),
     r"base_values must hold one value per sample, shape \(4,\) like target, for values of shape \(4, 6\); got "
     r"shape \(4, 6\)"),
    (dict(base_values=np.zeros((4, 2, 1))), r"base_values must hold one value per sample.*got shape \(4, 2, 1\)"),
    (dict(target=np.zeros(3, int)), r"target must hold one output index per sample, shape \(4,\).*got shape \(3,\)"),
    (dict(group_values=np.zeros((4, 2)), groups=["x", "y", "z"]),
     r"group_values must hold one value per group and sample, shape \(4, 3\) for values of shape \(4, 6\) and 3 "
     r"groups; got shape \(4, 2\)"),
])
def test_fields_that_do_not_fit_the_values_are_refused_naming_them(fields, match):
    with pytest.raises(ValueError, match=match):
        Explanation(values=np.zeros((4, 6)), method="m", **fields)


def test_zero_d_values_and_fields_that_fit_several_targets():
    with pytest.raises(ValueError, match=r"values must have a samples axis, shape \(n, \.\.\.\); got a 0-d array"):
        Explanation(values=np.float64(1.0), method="m")
    e = _several()
    assert e.values.shape == (4, 2, 3) and e.feature_names == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"base_values must hold one value per \(sample, target\), shape \(4, 2\) "
                                         r"like target"):
        Explanation(values=e.values, method="m", target=e.target, base_values=np.zeros(4))
    with pytest.raises(ValueError, match=r"feature_names must name each of the 3 elements"):
        Explanation(values=e.values, method="m", target=e.target, feature_names=["a", "b"])


def test_every_indexing_result_is_still_a_valid_explanation():
    e = _e()
    for key in (0, -1, slice(1, 3), [0, 2], [], np.array([True, False, True, False]), (slice(None), "f1"),
                (0, "f0"), (slice(None), ["f1", "f3"]), (slice(None), slice(2, 5)), ([], "f2")):
        out = e[key]
        assert isinstance(out, Explanation)
    assert e[:, "f1"].feature_names == ["f1"] and e[:, "f1"].values.shape == (4,)


def test_a_layer_attribution_carries_no_input_names_and_round_trips(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32), columns=list("abcd"))
    e = fl.explainer("layer_integrated_gradients", net, layer=net[0]).explain(X, target=0)
    assert e.values.shape == (5, 8) and e.data.shape == (5, 4)
    assert e.feature_names is None  # before: ['a', 'b', 'c', 'd'] for 8 layer units
    back = fl.load_explanation(e.save(tmp_path / "layer"))  # before: SavedFileError on load
    np.testing.assert_array_equal(back.values, e.values)
    g = fl.explainer("integrated_gradients", net).explain(X, target=0)  # input attributions keep them
    assert g.feature_names == list("abcd")


# -- to_frame ---------------------------------------------------------------------------------------


def test_to_frame_of_one_feature_is_one_column():
    e = _e()
    df = e[:, "f1"].to_frame()
    assert list(df.columns) == ["f1", "base_value"]
    np.testing.assert_array_equal(df["f1"].to_numpy(), e.values[:, 1])
    np.testing.assert_array_equal(df["base_value"].to_numpy(), e.base_values)
    one = e[2, "f0"].to_frame()
    assert list(one.columns) == ["f0", "base_value"] and one.shape == (1, 2)
    assert one["f0"].iloc[0] == e.values[2, 0]
    both = e[:, "f4"].to_frame(data=True)
    np.testing.assert_array_equal(both[("value", "f4")].to_numpy(), e.values[:, 4])
    np.testing.assert_array_equal(both[("data", "f4")].to_numpy(), e.data[:, 4])
    unnamed = Explanation(values=e.values, method="m")[:, 3].to_frame()
    assert list(unnamed.columns) == [0] and np.array_equal(unnamed[0].to_numpy(), e.values[:, 3])


def test_to_frame_of_no_rows_is_an_empty_table_with_the_columns():
    e = _e()
    df = e[[]].to_frame()
    assert df.shape == (0, 7) and list(df.columns) == [f"f{i}" for i in range(6)] + ["base_value"]
    assert df.shape == e[2:2].to_frame().shape
    assert e[[]].to_frame(data=True).shape == (0, 13)
    assert e[[], "f2"].to_frame().shape == (0, 2)
    s = _several()
    assert s[[]].to_frame(target=1).shape == (0, 4)


def test_to_frame_of_rows_slices_and_feature_lists():
    e = _e()
    assert e[0].to_frame().shape == (1, 7)
    np.testing.assert_array_equal(e[1:3].to_frame()[["f0", "f5"]].to_numpy(), e.values[1:3][:, [0, 5]])
    df = e[:, ["f3", "f1"]].to_frame()
    assert list(df.columns) == ["f3", "f1", "base_value"]
    np.testing.assert_array_equal(df[["f3", "f1"]].to_numpy(), e.values[:, [3, 1]])
    s = _several()
    np.testing.assert_array_equal(s[:, "b"].to_frame(target=1)["b"].to_numpy(), s.values[:, 1, 1])
    np.testing.assert_array_equal(s[0].to_frame(target=0)[["a", "b", "c"]].to_numpy()[0], s.values[0, 0])


@pytest.mark.parametrize("target", [True, False, np.True_, 1.0, "1"])
def test_to_frame_target_is_an_int_not_a_bool(target):
    for e in (_e(), _several()):
        with pytest.raises(TypeError, match=rf"to_frame: target must be an int .* or None; got {target!r}"):
            e.to_frame(target=target)
    s = _several()
    np.testing.assert_array_equal(s.to_frame(target=np.int64(1))[["a", "b", "c"]].to_numpy(), s.values[:, 1])
    np.testing.assert_array_equal(s.to_frame(target=0)[["a", "b", "c"]].to_numpy(), s.values[:, 0])
    assert np.array_equal(_e().to_frame(target=1).to_numpy(), _e().to_frame().to_numpy())


def test_bool_target_message_says_true_is_not_output_one():
    with pytest.raises(TypeError, match="True is not read as output 1"):
        _several().to_frame(target=True)


# -- values.csv headers -----------------------------------------------------------------------------


def test_csv_cells_are_reversible_and_distinct():
    from featurelens.cli.select import csv_text_cell, csv_text_value

    texts = ["=a", "'=a", "''=a", "'", "''", "a", "", "'a", "+1", "'+1", "@x", "-", "a'"]
    cells = [csv_text_cell(t) for t in texts]
    assert len(set(cells)) == len(texts)
    assert [csv_text_value(c) for c in cells] == texts
    assert csv_text_cell("=a") == "'=a" and csv_text_cell("'=a") == "''=a" and csv_text_cell("a'") == "a'"
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)


def test_values_csv_keeps_eq_a_and_quote_eq_a_apart(tmp_path, capsys):
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LinearRegression

    from featurelens.cli import main
    from featurelens.cli.select import csv_text_value

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    names = ["=a", "'=a", "b"]
    pd.DataFrame(X, columns=names).to_csv(tmp_path / "d.csv", index=False)
    sio.dump(LinearRegression().fit(X, X @ np.array([1.0, -2.0, 0.5])), tmp_path / "lin.skops")
    rc = main(["explain", "--model", str(tmp_path / "lin.skops"), "--data", str(tmp_path / "d.csv"), "--method",
               "exact_shapley", "--background", "4", "--rows", "3", "--out", str(tmp_path / "rep")])
    assert rc == 0, capsys.readouterr().err
    header = pd.read_csv(tmp_path / "rep" / "values.csv").columns.tolist()
    assert header[:3] == ["'=a", "''=a", "b"]  # before: ["'=a", "'=a", "b"]
    assert [csv_text_value(c) for c in header[:3]] == names
