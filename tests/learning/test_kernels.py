"""Tests for featurelens.learning.NeuralFeatureKernel: the kernel matrices against their formulas,
a GP with the linear kind equals ridge / kernel ridge on the explicit features (analytic), the RBF
kind's gradient against finite differences, scikit-learn's hyperparameter and clone handling, a
planted task where the true feature map beats an RBF GP, and the errors."""

import math

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score

from featurelens.learning import NeuralFeatureKernel


class Fourier(torch.nn.Module):
    """phi(x) = [sin(f <a_j, x>), cos(f <a_j, x>)]_j: a fixed (float64) feature map."""

    def __init__(self, A, freq=2.0):
        super().__init__()
        self.A = torch.nn.Parameter(torch.as_tensor(A, dtype=torch.float64), requires_grad=False)
        self.freq = freq

    def forward(self, x):
        z = self.freq * x @ self.A.T
        return torch.cat([torch.sin(z), torch.cos(z)], dim=1)


def _fourier_np(X, A, freq=2.0):
    z = freq * X @ A.T
    return np.concatenate([np.sin(z), np.cos(z)], axis=1)


def _data(n=60, d=5, p=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((p, d)) / math.sqrt(d)
    return rng.standard_normal((n, d)), A


def test_kernel_matrices_equal_their_formulas():
    X, A = _data()
    Y = X[:7] + 0.3
    F, G = _fourier_np(X, A), _fourier_np(Y, A)
    k = NeuralFeatureKernel(Fourier(A))
    np.testing.assert_allclose(k(X), F @ F.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k(X, Y), F @ G.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k.diag(X), np.diag(F @ F.T), rtol=1e-12)
    Fn, Gn = F / np.linalg.norm(F, axis=1, keepdims=True), G / np.linalg.norm(G, axis=1, keepdims=True)
    cos = NeuralFeatureKernel(Fourier(A), normalize=True)
    np.testing.assert_allclose(cos(X, Y), Fn @ Gn.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cos.diag(X), 1.0, rtol=1e-12)
    rbf = NeuralFeatureKernel(Fourier(A), kind="rbf", length_scale=0.7)
    D = ((F[:, None, :] - G[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(rbf(X, Y), np.exp(-D / (2 * 0.49)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.diag(rbf(X)), 1.0)
    np.testing.assert_allclose(rbf.diag(X), 1.0)
    assert not k.is_stationary() and not rbf.is_stationary()
    # a plain numpy callable gives the same kernel; batch_size does not change it
    np.testing.assert_allclose(NeuralFeatureKernel(lambda Z: _fourier_np(Z, A), batch_size=7)(X, Y), F @ G.T,
                               rtol=1e-12, atol=1e-12)


def test_gp_with_the_linear_kind_equals_ridge_on_the_explicit_features():
    X, A = _data(n=80)
    rng = np.random.default_rng(1)
    F = _fourier_np(X, A)
    y = F @ rng.standard_normal(F.shape[1]) + 0.1 * rng.standard_normal(80)
    Xt = rng.standard_normal((25, X.shape[1]))
    Ft = _fourier_np(Xt, A)
    noise = 0.05
    gp = GaussianProcessRegressor(NeuralFeatureKernel(Fourier(A)), alpha=noise, optimizer=None).fit(X, y)
    mean, std = gp.predict(Xt, return_std=True)
    # kernel ridge with the explicit feature Gram
    kr = KernelRidge(alpha=noise, kernel="precomputed").fit(F @ F.T, y)
    np.testing.assert_allclose(mean, kr.predict(Ft @ F.T), rtol=1e-8, atol=1e-9)
    # primal ridge: w = (F^T F + noise I)^-1 F^T y
    w = np.linalg.solve(F.T @ F + noise * np.eye(F.shape[1]), F.T @ y)
    np.testing.assert_allclose(mean, Ft @ w, rtol=1e-8, atol=1e-9)
    # the posterior variance of Bayesian linear regression: noise * phi*^T (F^T F + noise I)^-1 phi*
    var = noise * np.einsum("ij,ij->i", Ft @ np.linalg.inv(F.T @ F + noise * np.eye(F.shape[1])), Ft)
    np.testing.assert_allclose(std**2, var, rtol=1e-6, atol=1e-10)


def test_rbf_gradient_hyperparameters_and_clone():
    X, A = _data(n=15)
    k = NeuralFeatureKernel(Fourier(A), kind="rbf", length_scale=0.8, length_scale_bounds=(1e-2, 1e2))
    K, dK = k(X, eval_gradient=True)
    assert dK.shape == (15, 15, 1)
    np.testing.assert_allclose(k.theta, [math.log(0.8)])
    eps = 1e-6
    num = (k.clone_with_theta(k.theta + eps)(X) - k.clone_with_theta(k.theta - eps)(X)) / (2 * eps)
    np.testing.assert_allclose(dK[:, :, 0], num, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(k.bounds, np.log([[1e-2, 1e2]]))
    # the linear kind and fixed bounds have no hyperparameter
    lin = NeuralFeatureKernel(Fourier(A))
    assert lin.theta.shape == (0,) and lin(X, eval_gradient=True)[1].shape == (15, 15, 0)
    fixed = NeuralFeatureKernel(Fourier(A), kind="rbf", length_scale_bounds="fixed")
    assert fixed.theta.shape == (0,) and fixed(X, eval_gradient=True)[1].shape == (15, 15, 0)
    # clone, get_params, set_params
    c = clone(k)
    assert c is not k and c.get_params()["length_scale"] == 0.8 and c.feature_map is not k.feature_map
    np.testing.assert_allclose(c(X), K, rtol=1e-12)
    c.set_params(length_scale=2.0)
    assert k.length_scale == 0.8 and c.length_scale == 2.0
    assert set(k.get_params()) == {"feature_map", "kind", "normalize", "length_scale", "length_scale_bounds",
                                   "batch_size"}
    # composes with the library's kernels; the GP tunes the length scale and amplitude
    gp = GaussianProcessRegressor(ConstantKernel() * k + WhiteKernel(1e-2), random_state=0)
    gp.fit(X, np.sin(X[:, 0]))
    assert gp.kernel_.k1.k2.length_scale != 0.8 and len(gp.kernel_.theta) == 3


def test_module_is_called_in_eval_mode_without_grad_and_restored():
    seen = {}

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 4)

        def forward(self, x):
            seen["training"], seen["grad"], seen["dtype"] = self.training, torch.is_grad_enabled(), x.dtype
            return self.lin(x)

    net = Probe().train()
    K = NeuralFeatureKernel(net)(np.ones((4, 3)))
    assert K.dtype == np.float64 and seen == {"training": False, "grad": False, "dtype": torch.float32}
    assert net.training


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # the RBF GP drives its noise to the bound
def test_true_feature_map_beats_an_rbf_gp_on_a_planted_task():
    rng = np.random.default_rng(0)
    d, p, n = 8, 4, 200
    A = rng.standard_normal((p, d)) / math.sqrt(d) * 2.0
    c = rng.standard_normal(2 * p)
    X, Xt = rng.standard_normal((n, d)), rng.standard_normal((500, d))
    y = _fourier_np(X, A) @ c + 0.1 * rng.standard_normal(n)
    yt = _fourier_np(Xt, A) @ c
    true = GaussianProcessRegressor(ConstantKernel() * NeuralFeatureKernel(Fourier(A)) + WhiteKernel(0.1),
                                    random_state=0).fit(X, y)
    rbf = GaussianProcessRegressor(ConstantKernel() * RBF(np.ones(d)) + WhiteKernel(0.1), random_state=0).fit(X, y)
    r2_true, r2_rbf = r2_score(yt, true.predict(Xt)), r2_score(yt, rbf.predict(Xt))
    assert r2_true > 0.98
    # the marginal likelihood finds the planted noise variance 0.1^2 with the true features
    assert 0.005 < true.kernel_.k2.noise_level < 0.02
    assert r2_true > r2_rbf + 0.2, (r2_true, r2_rbf)


@pytest.mark.parametrize("kwargs, call, exc, match", [
    (dict(feature_map=3), "call", TypeError, "feature_map must be a torch.nn.Module or a callable"),
    (dict(kind="poly"), "call", ValueError, "kind must be one of"),
    (dict(normalize=1), "call", TypeError, "normalize must be True or False"),
    (dict(batch_size=0), "call", ValueError, "batch_size"),
    (dict(kind="rbf", length_scale=-1.0), "call", ValueError, "length_scale must be"),
    (dict(feature_map=lambda Z: Z[:2]), "call", ValueError, "feature_map must map"),
    (dict(feature_map=lambda Z: Z * np.nan), "call", ValueError, "non-finite"),
    (dict(), "grad_y", ValueError, "Gradient can only be evaluated when Y is None"),
    (dict(), "1d", ValueError, "X must be a 2-D array"),
])
def test_bad_arguments_are_refused(kwargs, call, exc, match):
    params = dict(feature_map=lambda Z: Z)
    params.update(kwargs)
    k = NeuralFeatureKernel(**params)
    X = np.ones((4, 3))
    with pytest.raises(exc, match=match):
        if call == "grad_y":
            k(X, X, eval_gradient=True)
        elif call == "1d":
            k(np.ones(3))
        else:
            k(X)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_trained_networks_feature_map_beats_an_rbf_gp_on_a_single_index_task():
    # y = sin(2 <w, x>) in 20 dimensions from 300 rows: an RBF GP cannot find the one direction, a
    # network's hidden layer (trained on the same 300 rows, then frozen) can (R2 0.77 against 0.12).
    from featurelens._training import limited_threads
    from featurelens.datasets import single_index

    data = single_index(n_samples=1300, d=20, link=lambda z: np.sin(2 * z), noise=0.05, seed=0)
    X, y, Xt, yt = data.X[:300], data.y[:300], data.X[300:], data.y_clean[300:]
    torch.manual_seed(0)
    phi = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.Tanh())
    head = torch.nn.Linear(32, 1)
    opt = torch.optim.Adam([*phi.parameters(), *head.parameters()], lr=1e-2, weight_decay=1e-4)
    xb, yb = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    with limited_threads(1):
        for _ in range(300):
            opt.zero_grad()
            loss = ((head(phi(xb)).squeeze(1) - yb) ** 2).mean()
            loss.backward()
            opt.step()
    neural = GaussianProcessRegressor(ConstantKernel() * NeuralFeatureKernel(phi) + WhiteKernel(0.01),
                                      random_state=0).fit(X, y)
    rbf = GaussianProcessRegressor(ConstantKernel() * RBF(1.0) + WhiteKernel(0.01), random_state=0).fit(X, y)
    r2_neural, r2_rbf = r2_score(yt, neural.predict(Xt)), r2_score(yt, rbf.predict(Xt))
    assert r2_neural > 0.6 and r2_neural > r2_rbf + 0.4, (r2_neural, r2_rbf)
