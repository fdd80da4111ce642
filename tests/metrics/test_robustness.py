"""Robustness metrics against a naive loop that explains each noisy copy on its own."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.metrics import _perturb

M = fl.metrics


@pytest.fixture
def setup(small_cnn):
    x = np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype(np.float32)
    return fl.explainer("saliency", small_cnn), x


def test_noise_lies_in_the_relative_ball():
    x = np.random.default_rng(0).normal(size=(4, 5))
    span = x.max(1) - x.min(1)
    noise = np.stack(list(_perturb.uniform_draws(1, 50, x.shape, 0.1 * span)))
    assert np.all(np.abs(noise) <= 0.1 * span[None, :, None])
    # and fills it: the largest draw comes close to the radius
    assert np.all(np.abs(noise).max(axis=(0, 2)) > 0.09 * span)


@pytest.mark.parametrize("relative", [True, False])
def test_sensitivities_equal_naive_loop(setup, relative):
    ex, x = setup
    n_s, radius = 5, 0.2
    t = ex.model.resolve_target(None, ex.model.to_tensor(x)).numpy()
    smax = M.max_sensitivity(ex, x, radius=radius, n_samples=n_s, seed=7, relative=relative)
    savg = M.avg_sensitivity(ex, x, radius=radius, n_samples=n_s, seed=7, relative=relative)
    lip = M.local_lipschitz(ex, x, radius=radius, n_samples=n_s, seed=7, relative=relative)
    span = x.reshape(3, -1).max(1) - x.reshape(3, -1).min(1) if relative else np.ones(3)
    noise = np.stack(list(_perturb.uniform_draws(7, n_s, x.shape, radius * span)))
    ref_max, ref_avg, ref_lip = np.zeros(3), np.zeros(3), np.zeros(3)
    for i in range(3):
        a = ex.explain(x[i : i + 1], target=int(t[i])).values.reshape(-1).astype(np.float64)
        sens, lips = [], []
        for j in range(n_s):
            xn = (x[i] + noise[j, i]).astype(np.float32)[None]
            an = ex.explain(xn, target=int(t[i])).values.reshape(-1).astype(np.float64)
            sens.append(np.linalg.norm(an - a) / np.linalg.norm(a))
            lips.append(np.linalg.norm(an - a) / np.linalg.norm(noise[j, i]))
        ref_max[i], ref_avg[i], ref_lip[i] = max(sens), np.mean(sens), max(lips)
    np.testing.assert_allclose(smax, ref_max, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(savg, ref_avg, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(lip, ref_lip, rtol=1e-5, atol=1e-7)
    assert np.all(smax >= savg)


def test_gradient_of_a_linear_model_is_perfectly_robust():
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 3).double()
    ex = fl.explainer("saliency", lin)
    x = np.random.default_rng(1).normal(size=(4, 6))
    np.testing.assert_allclose(M.max_sensitivity(ex, x, target=2), 0.0, atol=1e-15)
    np.testing.assert_allclose(M.local_lipschitz(ex, x, target=2), 0.0, atol=1e-15)
    # input x gradient of a linear model: a(x) = w * x, so ||a(x+u) - a(x)|| = ||w * u||.
    ex2 = fl.explainer("input_x_gradient", lin)
    span = x.max(1) - x.min(1)
    noise = np.stack(list(_perturb.uniform_draws(0, 10, x.shape, 0.1 * span)))
    w = lin.weight.detach().numpy()[2]
    ref = np.max(np.linalg.norm(w * noise, axis=2) / np.linalg.norm(w * x, axis=1), axis=0)
    np.testing.assert_allclose(M.max_sensitivity(ex2, x, target=2), ref, rtol=1e-10)


def test_errors(setup, small_cnn):
    ex, x = setup
    with pytest.raises(TypeError, match="explainer must be a featurelens Explainer"):
        M.max_sensitivity(small_cnn, x)
    with pytest.raises(ValueError, match="radius must be a finite number > 0"):
        M.avg_sensitivity(ex, x, radius=-0.1)
    with pytest.raises(ValueError, match="n_samples must be an int >= 1; got 0"):
        M.local_lipschitz(ex, x, n_samples=0)
    with pytest.raises(ValueError, match="x contains NaN"):
        M.max_sensitivity(ex, np.full_like(x, np.nan))
    with pytest.raises(ValueError, match="attributions must hold one map per sample"):
        M.max_sensitivity(ex, x, attributions=np.ones((2, 64)))
