"""Occlusion: the mean output drop of the windows covering each element."""

import numpy as np
import pytest
import torch

import featurelens as fl


def test_linear_model_single_elements_give_w_times_x_minus_baseline():
    rng = np.random.default_rng(0)
    w = rng.normal(size=7)
    x = rng.normal(size=(4, 7))
    f = lambda X: X @ w  # noqa: E731
    e = fl.explainer("occlusion", f, baseline=0.5).explain(x)
    np.testing.assert_allclose(e.values, w * (x - 0.5), rtol=1e-5, atol=1e-6)
    assert e.model_calls == 4 * 7 + 4  # every occluded copy plus the unoccluded outputs


def test_window_means_by_brute_force_on_a_nonlinear_model(small_cnn):
    x = np.random.default_rng(1).normal(size=(2, 1, 8, 8)).astype(np.float32)
    e = fl.explainer("occlusion", small_cnn, window=(1, 3, 3), strides=(1, 2, 2)).explain(x, target=1)
    f = lambda z: small_cnn(torch.as_tensor(z)).detach().numpy()[:, 1]  # noqa: E731
    total = np.zeros_like(x)
    count = np.zeros(x.shape[1:])
    for top in [0, 2, 4, 6]:       # ceil((8 - 3) / 2) + 1 = 4 positions; the last one is cut at 8
        for left in [0, 2, 4, 6]:
            occluded = x.copy()
            occluded[:, :, top:top + 3, left:left + 3] = 0.0
            drop = f(x) - f(occluded)
            total[:, :, top:top + 3, left:left + 3] += drop[:, None, None, None]
            count[:, top:top + 3, left:left + 3] += 1
    np.testing.assert_allclose(e.values, total / count, rtol=1e-4, atol=1e-5)
    assert e.params["n_windows"] == 16


def test_groups_occlude_each_group_once():
    f = lambda X: X[:, 0] * X[:, 1] + 3 * X[:, 2]  # noqa: E731
    x = np.array([[2.0, 5.0, 1.0, 7.0]])
    e = fl.explainer("occlusion", f, groups=np.array([0, 0, 1, 2])).explain(x)
    np.testing.assert_allclose(e.values, [[10.0, 10.0, 3.0, 0.0]])


def test_matches_captum_occlusion(small_cnn):
    captum = pytest.importorskip("captum.attr")
    x = np.random.default_rng(2).normal(size=(3, 1, 8, 8)).astype(np.float32)
    ours = fl.explainer("occlusion", small_cnn, window=(1, 3, 3), strides=(1, 2, 2), baseline=0.25).explain(
        x, target=0
    )
    ref = captum.Occlusion(small_cnn).attribute(
        torch.as_tensor(x), sliding_window_shapes=(1, 3, 3), strides=(1, 2, 2), baselines=0.25, target=0
    )
    np.testing.assert_allclose(ours.values, ref.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_bad_arguments_are_named():
    f = lambda X: X.sum(axis=1)  # noqa: E731
    x = np.ones((1, 6))
    with pytest.raises(ValueError, match="window .* is larger than the input"):
        fl.explainer("occlusion", f, window=7).explain(x)
    with pytest.raises(ValueError, match="strides .* would skip elements"):
        fl.explainer("occlusion", f, window=2, strides=3).explain(x)
    with pytest.raises(ValueError, match="window must be 1 positive ints"):
        fl.explainer("occlusion", f, window=(1, 2)).explain(x)
    with pytest.raises(ValueError, match="either window/strides .* or groups"):
        fl.explainer("occlusion", f, window=2, groups=np.zeros(6, int))
    with pytest.raises(ValueError, match="groups must be shaped like one input"):
        fl.explainer("occlusion", f, groups=np.zeros(5, int)).explain(x)
    with pytest.raises(ValueError, match="NaN"):
        fl.explainer("occlusion", f).explain(np.array([[np.nan] * 6]))


def test_groups_with_labels_not_0_to_g_minus_1_count_the_groups_occluded():
    # Labels 0, 5, 9 are three groups: three occluded copies per sample, and params say 3, not 10.
    f = lambda X: X @ np.arange(1.0, 7.0)  # noqa: E731
    x = np.ones((2, 6))
    e = fl.explainer("occlusion", f, groups=np.array([0, 0, 5, 5, 9, 9])).explain(x)
    assert e.params["groups"] == 3
    assert e.params["n_windows"] == 3
    np.testing.assert_allclose(e.values, [[3.0, 3.0, 7.0, 7.0, 11.0, 11.0]] * 2)


def test_float32_model_drops_are_accumulated_in_float64():
    # Many overlapping windows: each element's value is the mean of 9 drops; float64 accumulation
    # keeps the float32 result within rounding of the float64 reference.
    rng = np.random.default_rng(3)
    w = rng.normal(size=(1, 12, 12))
    x = rng.normal(size=(2, 1, 12, 12))
    f64 = lambda X: (np.asarray(X, dtype=np.float64) * w).reshape(len(X), -1).sum(1)  # noqa: E731
    ref = fl.explainer("occlusion", f64, window=(1, 3, 3), strides=1).explain(x).values
    got = fl.explainer("occlusion", f64, window=(1, 3, 3), strides=1).explain(x.astype(np.float32)).values
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
