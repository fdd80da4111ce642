"""Explanation.to_frame() (a pandas table of the values, base values and data) and Explanation.plot()
on a DataFrame's explanation (its bars labelled by the columns)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import Explanation

pd = pytest.importorskip("pandas")


def _tabular(n=4, d=3, seed=0, names=("age", "bmi", "bp")):
    rng = np.random.default_rng(seed)
    return Explanation(values=rng.normal(size=(n, d)), method="m", data=rng.normal(size=(n, d)),
                       base_values=rng.normal(size=n), feature_names=list(names), target=np.zeros(n, int))


def test_values_round_trip_with_names_base_values_and_the_sample_index():
    e = _tabular()
    df = e.to_frame()
    assert list(df.columns) == ["age", "bmi", "bp", "base_value"]
    assert df.index.name == "sample" and list(df.index) == [0, 1, 2, 3]
    np.testing.assert_array_equal(df[["age", "bmi", "bp"]].to_numpy(), e.values)
    np.testing.assert_array_equal(df["base_value"].to_numpy(), e.base_values)
    np.testing.assert_array_equal(df.loc[2, ["age", "bmi", "bp"]].to_numpy(float), e.values[2])


def test_data_true_puts_values_and_inputs_under_a_kind_level():
    e = _tabular()
    df = e.to_frame(data=True)
    assert df.columns.names == ["kind", "feature"]
    np.testing.assert_array_equal(df["value"].to_numpy(), e.values)
    np.testing.assert_array_equal(df["data"].to_numpy(), e.data)
    assert list(df["value"].columns) == list(df["data"].columns) == ["age", "bmi", "bp"]
    base = df["base_value"]
    assert isinstance(base, pd.Series)
    np.testing.assert_array_equal(base.to_numpy(), e.base_values)
    # a feature named like the base value column does not collide here, and is refused in the flat frame
    clash = _tabular(names=("age", "base_value", "bp"))
    np.testing.assert_array_equal(clash.to_frame(data=True)[("value", "base_value")].to_numpy(), clash.values[:, 1])
    with pytest.raises(ValueError, match="base_value.*data=True"):
        clash.to_frame()


def test_without_names_base_values_or_data():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(3, 5))
    df = Explanation(values=v, method="m").to_frame()
    assert list(df.columns) == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(df.to_numpy(), v)
    with pytest.raises(ValueError, match="data=None"):
        Explanation(values=v, method="m").to_frame(data=True)
    with pytest.raises(TypeError, match="data must be True or False; got 1"):
        Explanation(values=v, method="m").to_frame(data=1)


def test_a_single_row_is_a_table_of_one_row():
    e = _tabular()
    df = e[2].to_frame()
    assert list(df.index) == [0] and df.shape == (1, 4)
    np.testing.assert_array_equal(df[["age", "bmi", "bp"]].to_numpy()[0], e.values[2])
    assert df["base_value"].iloc[0] == e.base_values[2]


def test_images_need_flatten_and_then_get_one_column_per_element():
    rng = np.random.default_rng(2)
    v = rng.normal(size=(2, 3, 4, 5))
    e = Explanation(values=v, method="m", data=rng.normal(size=v.shape), base_values=np.array([0.5, -1.0]))
    with pytest.raises(ValueError, match=r"shape \(3, 4, 5\).*flatten=True"):
        e.to_frame()
    df = e.to_frame(flatten=True)
    assert df.shape == (2, 61) and list(df.columns[:3]) == [0, 1, 2]
    # column j is element j of np.ravel: (c, h, w) = (1, 2, 3) is 1*20 + 2*5 + 3 = 33
    np.testing.assert_array_equal(df[33].to_numpy(), v[:, 1, 2, 3])
    np.testing.assert_array_equal(e.to_frame(data=True, flatten=True)["data"].to_numpy(), e.data.reshape(2, -1))


def test_several_outputs_need_target_which_picks_that_output():
    rng = np.random.default_rng(3)
    n, k, d = 4, 2, 3
    v, b = rng.normal(size=(n, k, d)), rng.normal(size=(n, k))
    t = np.tile([0, 2], (n, 1))
    t[1] = [2, 0]  # the outputs need not be in the same order on every row
    e = Explanation(values=v, method="m", base_values=b, target=t, feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"2 outputs per sample.*outputs \[0, 2\].*target="):
        e.to_frame()
    df = e.to_frame(target=2)
    expected = np.stack([v[i, list(t[i]).index(2)] for i in range(n)])
    np.testing.assert_array_equal(df[["a", "b", "c"]].to_numpy(), expected)
    np.testing.assert_array_equal(df["base_value"].to_numpy(), [b[i, list(t[i]).index(2)] for i in range(n)])
    with pytest.raises(ValueError, match=r"target=1 is not among the outputs explained for sample\(s\) \[0, 1, 2, 3\]"):
        e.to_frame(target=1)
    with pytest.raises(ValueError, match="one output per sample"):
        _tabular().to_frame(target=3)


def test_groups_give_one_column_per_group():
    rng = np.random.default_rng(4)
    gv = rng.normal(size=(3, 2))
    e = Explanation(values=np.repeat(gv, [2, 1], axis=1), method="m", group_values=gv, groups=["left", "right"],
                    data=rng.normal(size=(3, 3)))
    df = e.to_frame()
    assert list(df.columns) == ["left", "right"]
    np.testing.assert_array_equal(df.to_numpy(), gv)
    with pytest.raises(ValueError, match="groups.*no data per group"):
        e.to_frame(data=True)


def test_layer_values_do_not_share_columns_with_the_inputs():
    rng = np.random.default_rng(5)
    e = Explanation(values=rng.normal(size=(2, 4)), method="layer", data=rng.normal(size=(2, 3)))
    with pytest.raises(ValueError, match="4 elements per sample and the data 3"):
        e.to_frame(data=True)


def test_pandas_missing_is_a_clear_import_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(ImportError, match=r"to_frame\(\) needs the optional package 'pandas'.*pip install pandas"):
        _tabular().to_frame()


@pytest.fixture(scope="module")
def breast_cancer_explanation():
    """A linear torch model on the breast-cancer DataFrame (bundled with scikit-learn), explained by
    input x gradient: the values of a linear model are w_j x_j, so each column is checkable."""
    datasets = pytest.importorskip("sklearn.datasets")
    frame = datasets.load_breast_cancer(as_frame=True).data.astype("float32")
    torch.manual_seed(0)
    net = torch.nn.Linear(frame.shape[1], 2)
    rows = frame.iloc[:5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = fl.explainer("input_x_gradient", net).explain(rows, target=1)
    return e, rows, net


def test_a_dataframe_explanation_becomes_a_frame_with_its_columns(breast_cancer_explanation):
    e, rows, net = breast_cancer_explanation
    df = e.to_frame(data=True)
    assert list(df["value"].columns) == list(rows.columns)
    w = net.weight.detach().numpy()[1]
    np.testing.assert_allclose(df["value"].to_numpy(), rows.to_numpy() * w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(df["data"].to_numpy(), rows.to_numpy())
    np.testing.assert_allclose(df.loc[3, ("value", "mean radius")], rows["mean radius"].iloc[3] * w[0], rtol=1e-5)


def test_plot_labels_the_bars_with_the_dataframe_columns(breast_cancer_explanation):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e, rows, _ = breast_cancer_explanation
    fig = e.plot(index=2)
    try:
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_xticklabels()] == list(rows.columns)
        heights = [p.get_height() for p in ax.patches]
        np.testing.assert_allclose(heights, e.values[2], rtol=1e-6)
    finally:
        plt.close(fig)
