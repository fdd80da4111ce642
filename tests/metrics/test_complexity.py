"""Sparseness (Gini) and complexity (entropy) against analytic values and brute-force formulas."""

import numpy as np
import pytest

import featurelens as fl

M = fl.metrics


def test_analytic_extremes():
    d = 50
    uniform = np.ones((1, d))
    onehot = np.zeros((1, d))
    onehot[0, 7] = -3.0
    np.testing.assert_allclose(M.sparseness(uniform), 0.0, atol=1e-12)
    # Gini of one non-zero element among d: (d - 1) / d, up to the 1e-7 offset.
    np.testing.assert_allclose(M.sparseness(onehot), (d - 1) / d, atol=1e-5)
    np.testing.assert_allclose(M.sparseness(onehot, eps=0.0), (d - 1) / d, atol=1e-15)
    np.testing.assert_allclose(M.complexity(uniform), np.log(d), atol=1e-9)
    np.testing.assert_allclose(M.complexity(onehot), 0.0, atol=1e-9)


def test_against_mean_absolute_difference_and_entropy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3, 4, 4))
    e = fl.Explanation(values=a, method="x")
    g = M.sparseness(e, eps=0.0)
    c = M.complexity(e)
    for i in range(5):
        v = np.abs(a[i]).ravel()
        # Gini = sum_ij |v_i - v_j| / (2 d sum v): a formula with no sorting.
        gini = np.abs(v[:, None] - v[None, :]).sum() / (2 * v.size * v.sum())
        p = v / v.sum()
        np.testing.assert_allclose(g[i], gini, rtol=1e-12)
        np.testing.assert_allclose(c[i], -(p * np.log(p)).sum(), rtol=1e-9)
    # Scale invariance per sample (normalise=True divides by the sample's max).
    np.testing.assert_allclose(M.sparseness(a * np.arange(1, 6)[:, None, None, None]), M.sparseness(a), rtol=1e-12)


def test_zero_map_and_errors():
    assert np.isnan(M.complexity(np.zeros((1, 4))))[0]
    np.testing.assert_allclose(M.sparseness(np.zeros((1, 4))), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="a contains NaN"):
        M.sparseness(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="a must be a batch with the samples first"):
        M.complexity(np.ones(4))
    with pytest.raises(TypeError, match="a must hold real numbers"):
        M.complexity(np.array([["a", "b"]]))
