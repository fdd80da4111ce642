"""Effective complexity (Nguyen & Martinez 2020): planted counts, options, errors, Quantus parity."""

import importlib
import warnings

import numpy as np
import pytest

C = importlib.import_module("featurelens.metrics.complexity")  # the package exports a function of that name


def test_planted_counts():
    a = np.zeros((3, 2, 5))
    a[0, 0, :4] = [1.0, -2.0, 3e-6, 0.5]  # |a| / max: 0.5, 1, 1.5e-6, 0.25 -> 3 above 1e-5
    a[1, 1, 2] = -7.0  # one element
    np.testing.assert_array_equal(C.effective_complexity(a), [3, 1, 0])
    np.testing.assert_array_equal(C.effective_complexity(a, eps=0.0), [4, 1, 0])
    np.testing.assert_array_equal(C.effective_complexity(a, eps=0.3), [2, 1, 0])
    # Signed: negative attributions do not exceed eps; unnormalised: eps in attribution units.
    np.testing.assert_array_equal(C.effective_complexity(a, abs=False), [2, 0, 0])
    np.testing.assert_array_equal(C.effective_complexity(a, normalise=False, eps=0.6), [2, 1, 0])
    # Scale invariance per sample with normalise=True.
    b = a * np.array([1e-3, 1e4, 1.0])[:, None, None]
    np.testing.assert_array_equal(C.effective_complexity(b), C.effective_complexity(a))
    assert C.effective_complexity(a).dtype == np.float64


def test_errors():
    with pytest.raises(ValueError, match="NaN"):
        C.effective_complexity(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="samples first"):
        C.effective_complexity(np.ones(4))
    with pytest.raises(ValueError, match="eps"):
        C.effective_complexity(np.ones((2, 2)), eps=-1.0)
    with pytest.raises(TypeError, match="abs"):
        C.effective_complexity(np.ones((2, 2)), abs=1)


def test_quantus_parity():
    quantus = pytest.importorskip("quantus")
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 1, 8, 8)) * rng.random((6, 1, 8, 8)) ** 6  # many small values
    a /= np.abs(a).reshape(6, -1).max(1)[:, None, None, None]  # Quantus normalises by the batch max
    x = np.zeros(a.shape, np.float32)
    for eps in (1e-5, 1e-2, 0.2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = quantus.EffectiveComplexity(eps=eps, disable_warnings=True)(
                model=None, x_batch=x, y_batch=np.zeros(6, int), a_batch=a.copy(), device="cpu")
        np.testing.assert_array_equal(C.effective_complexity(a, eps=eps), np.asarray(q, np.float64))
