"""Degenerate data (one row, one class, constant columns, more clusters than rows) and seeds (None,
an int or a numpy Generator) behave the same way in every selector."""

import warnings

import numpy as np
import pytest
import torch

from featurelens.selection import (
    NBSE,
    SAND,
    SIOFS,
    AGOPSelector,
    DegenerateDataWarning,
    MinkowskiWeightedSelector,
    MinShapSelector,
    stability,
)


def _make(name, k=1, **kw):
    cheap = {
        "SAND": lambda: SAND(k=k, epochs=2, hidden=(4,), **kw),
        "MinShapSelector": lambda: MinShapSelector(k=k, n_permutations=2, **kw),
        "AGOPSelector": lambda: AGOPSelector(k=k, iters=1, **kw),
        "SIOFS": lambda: SIOFS(k=k, **kw),
        "NBSE": lambda: NBSE(k=k, **kw),
        "MinkowskiWeightedSelector": lambda: MinkowskiWeightedSelector(k=k, p_grid=(2.0,), n_init=1, **kw),
    }
    return cheap[name]()


ALL = ["SAND", "MinShapSelector", "AGOPSelector", "SIOFS", "NBSE", "MinkowskiWeightedSelector"]
SUPERVISED = ["SAND", "MinShapSelector", "AGOPSelector", "SIOFS"]
SEEDED = ["SAND", "MinShapSelector", "AGOPSelector", "MinkowskiWeightedSelector"]


def _data(n=40, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 1] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("name", ALL)
def test_one_row_is_refused(name):
    X, y = _data()
    with pytest.raises(ValueError, match=r"1 sample\(s\).*minimum of 2"):
        _make(name).fit(X[:1], y[:1])


@pytest.mark.parametrize("name", SUPERVISED)
def test_one_class_is_refused(name):
    X, _ = _data()
    with pytest.raises(ValueError, match=r"y holds a single value \(1\) in all 40 rows"):
        _make(name).fit(X, np.ones(40, dtype=int))


def test_a_trained_network_needs_no_varying_y():
    # AGOP of a given network ignores y, so a constant y is no reason to refuse.
    X, _ = _data()
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2).double()
    s = AGOPSelector(k=1, estimator=net).fit(X, np.zeros(40, dtype=int))
    w = net.weight.detach().numpy()
    expected = (w**2).sum(axis=0) * X.var(axis=0)  # AGOP diagonal of a linear map, standardised units
    np.testing.assert_allclose(s.scores_, expected, rtol=1e-10)


@pytest.mark.parametrize("name", ALL)
def test_all_constant_columns_warn(name):
    _, y = _data()
    X = np.tile([1.0, 2.0, 3.0], (40, 1))
    with pytest.warns(DegenerateDataWarning, match="every column of X is constant"):
        s = _make(name).fit(X, y)
    assert s.get_support().sum() == 1


@pytest.mark.parametrize("name", ["NBSE", "SIOFS", "MinkowskiWeightedSelector"])
def test_k_above_the_varying_columns_warns(name):
    X, y = _data()
    X[:, 0] = 5.0
    X[:, 2] = -1.0
    with pytest.warns(DegenerateDataWarning, match="3 features selected but only 2 of the 4 columns of X vary"):
        s = _make(name, k=3).fit(X, y)
    # the two varying columns are selected; one constant fills the last place
    assert s.get_support()[[1, 3]].all()


@pytest.mark.parametrize("name", ALL)
def test_informative_data_does_not_warn(name):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateDataWarning)
        _make(name).fit(X, y)


def test_minkowski_more_clusters_than_rows():
    X, _ = _data(n=5)
    with pytest.raises(ValueError, match=r"n_clusters=6 is larger than the number of rows of X \(5\)"):
        MinkowskiWeightedSelector(n_clusters=6).fit(X)
    dup = np.repeat(X[:2], 3, axis=0)  # 6 rows, 2 distinct
    with pytest.warns(DegenerateDataWarning, match="n_clusters=4 but X has only 2 distinct rows"):
        s = MinkowskiWeightedSelector(n_clusters=4, k=2).fit(dup)
    assert s.cluster_sizes_[:, 2:].sum() == 0  # the two missing clusters stay empty


@pytest.mark.parametrize("name", SEEDED)
def test_seed_accepts_a_generator_and_is_reproducible(name):
    X, y = _data()
    a = _make(name, seed=np.random.default_rng(7)).fit(X, y).scores_
    b = _make(name, seed=np.random.default_rng(7)).fit(X, y).scores_
    np.testing.assert_array_equal(a, b)
    _make(name, seed=None).fit(X, y)  # fresh entropy is accepted too
    with pytest.raises(TypeError, match="seed must be None, a non-negative int or a numpy.random.Generator"):
        _make(name, seed=1.5).fit(X, y)


def test_stability_accepts_a_generator():
    X, y = _data()
    a = stability(NBSE(k=2), X, n_bootstrap=3, seed=np.random.default_rng(3))
    b = stability(NBSE(k=2), X, n_bootstrap=3, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a["supports"], b["supports"])
    c = stability(NBSE(k=2), X, n_bootstrap=3, seed=3)  # an int seed draws the same resamples
    np.testing.assert_array_equal(a["supports"], c["supports"])
