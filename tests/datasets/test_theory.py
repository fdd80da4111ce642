"""Tests for featurelens.datasets.theory: the planted structure of each generator (recovered by an
independent estimator: least squares, PCA against the BBP limits, FastICA, the Bayes classifier),
the exact constructions (cosines, flipped share), the lazy/rich output scale, and the errors."""

import math

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.datasets import (
    ContinualTasks,
    ICAMixture,
    IndexModel,
    LabelNoise,
    OutputScaled,
    SpikedCovariance,
    continual_tasks,
    ica_mixture,
    label_noise,
    multi_index,
    single_index,
    spiked_covariance,
)


def _cos(a, b):
    return abs(float(a @ b)) / (np.linalg.norm(a) * np.linalg.norm(b))


# --------------------------------------------------------------------------------------------------
# single- and multi-index


def test_single_index_linear_direction_recovered_by_least_squares():
    m = single_index(n_samples=2000, d=20, link="linear", noise=0.1, seed=0)
    assert isinstance(m, IndexModel) and m.X.shape == (2000, 20) and m.directions.shape == (1, 20)
    assert np.linalg.norm(m.direction) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(m.latent[:, 0], m.X @ m.direction, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(m.y_clean, m.latent[:, 0])
    w_hat = np.linalg.lstsq(m.X, m.y, rcond=None)[0]
    assert _cos(w_hat, m.direction) > 0.999
    # the noise is what was asked: the residual of the true model has std 0.1
    assert np.std(m.y - m.y_clean) == pytest.approx(0.1, rel=0.1)
    assert m.information_exponent == 1


def test_single_index_links_and_the_second_moment_of_an_even_link():
    z = single_index(n_samples=50, d=5, link="linear", seed=3).latent[:, 0]
    for link, ref, exponent in [("relu", np.maximum(z, 0), 1), ("tanh", np.tanh(z), 1), ("sign", np.sign(z), 1),
                                ("hermite2", z**2 - 1, 2), ("hermite3", z**3 - 3 * z, 3)]:
        m = single_index(n_samples=50, d=5, link=link, seed=3)
        np.testing.assert_allclose(m.y, ref, rtol=0, atol=1e-12)  # same seed: same X and w whatever the link
        assert m.information_exponent == exponent
    # relu: E[x g(<w,x>)] = E[g'(z)] w (Stein), so least squares still points along w
    m = single_index(n_samples=4000, d=20, link="relu", seed=1)
    assert _cos(np.linalg.lstsq(m.X, m.y, rcond=None)[0], m.direction) > 0.97
    # hermite2: the first moment vanishes but E[y x x^T] = 2 w w^T
    m = single_index(n_samples=4000, d=20, link="hermite2", seed=1)
    assert _cos(np.linalg.lstsq(m.X, m.y, rcond=None)[0], m.direction) < 0.5
    M = (m.X * m.y[:, None]).T @ m.X / len(m.y)
    vals, vecs = np.linalg.eigh(M)
    assert _cos(vecs[:, -1], m.direction) > 0.97 and vals[-1] == pytest.approx(2.0, rel=0.15)
    # a callable link receives <w, x>
    m = single_index(n_samples=30, d=4, link=lambda t: 2 * t + 1, seed=3)
    np.testing.assert_allclose(m.y, 2 * m.latent[:, 0] + 1, rtol=0, atol=1e-12)
    assert m.information_exponent is None


def test_multi_index_directions_links_and_planted_subspace():
    m = multi_index(n_samples=30, d=8, n_directions=3, link="staircase", seed=2)
    np.testing.assert_allclose(m.directions @ m.directions.T, np.eye(3), atol=1e-12)
    z = m.X @ m.directions.T
    np.testing.assert_allclose(m.latent, z, atol=1e-12)
    z1, z2, z3 = z.T
    np.testing.assert_allclose(m.y, z1 + z1 * z2 + z1 * z2 * z3, atol=1e-12)
    for link, ref in [("product", z1 * z2 * z3), ("norm", z1**2 + z2**2 + z3**2 - 3),
                      ("committee", (np.maximum(z1, 0) + np.maximum(z2, 0) + np.maximum(z3, 0)) / math.sqrt(3))]:
        np.testing.assert_allclose(multi_index(n_samples=30, d=8, n_directions=3, link=link, seed=2).y, ref,
                                   atol=1e-12)
    with pytest.raises(AttributeError, match="directions"):
        m.direction
    # "norm": E[y x x^T] = 2 W W^T, its top-3 eigenspace is the planted span (principal angles ~ 0)
    m = multi_index(n_samples=6000, d=15, n_directions=3, link="norm", seed=0)
    M = (m.X * m.y[:, None]).T @ m.X / len(m.y)
    top = np.linalg.eigh(M)[1][:, -3:]
    cosines = np.linalg.svd(top.T @ m.directions.T, compute_uv=False)
    assert cosines.min() > 0.95
    # the target does not change when x moves orthogonally to the span
    P = np.eye(15) - m.directions.T @ m.directions
    shifted = m.X + np.random.default_rng(0).standard_normal(m.X.shape) @ P
    np.testing.assert_allclose(fl.datasets.theory.MULTI_INDEX_LINKS["norm"](shifted @ m.directions.T), m.y_clean,
                               atol=1e-9)


def test_index_models_seeded():
    a = multi_index(n_samples=20, d=6, n_directions=2, seed=5)
    np.testing.assert_array_equal(a.X, multi_index(n_samples=20, d=6, n_directions=2, seed=5).X)
    assert not np.array_equal(a.directions, multi_index(n_samples=20, d=6, n_directions=2, seed=6).directions)
    g = np.random.default_rng(9)
    b, c = single_index(20, 6, seed=g), single_index(20, 6, seed=g)  # a Generator's stream advances
    assert not np.array_equal(b.X, c.X)


# --------------------------------------------------------------------------------------------------
# label noise


@pytest.mark.parametrize("flip", [0.0, 0.1, 0.25, 0.5])
def test_label_noise_flipped_share_and_rows(flip):
    data = label_noise(n_samples=1001, d=30, flip=flip, seed=1)
    assert isinstance(data, LabelNoise)
    assert data.flipped.sum() == round(flip * 1001)
    np.testing.assert_array_equal(data.y[data.flipped], -data.y_clean[data.flipped])
    np.testing.assert_array_equal(data.y[~data.flipped], data.y_clean[~data.flipped])
    assert set(np.unique(data.y_clean)) <= {-1, 1}
    np.testing.assert_allclose(data.X, data.y_clean[:, None] * data.signal + data.noise, atol=1e-12)
    assert np.linalg.norm(data.signal) == pytest.approx(2.0)


def test_label_noise_bayes_classifier_accuracy_is_phi_of_the_snr():
    n, snr = 20000, 1.0
    data = label_noise(n_samples=n, d=40, signal_norm=snr * 1.5, noise_std=1.5, flip=0.2, seed=4)
    pred = np.sign(data.X @ data.signal)
    phi = 0.5 * math.erfc(-snr / math.sqrt(2))  # Phi(||mu|| / sigma) = Phi(1) = 0.8413
    assert data.bayes_accuracy == pytest.approx(phi, abs=1e-12)
    se = math.sqrt(phi * (1 - phi) / n)
    assert abs((pred == data.y_clean).mean() - phi) < 4 * se
    # against the observed labels: (1 - p) Phi + p (1 - Phi), p = 0.2 exactly
    expected = 0.8 * phi + 0.2 * (1 - phi)
    assert abs((pred == data.y).mean() - expected) < 4 * se
    # the noise has the asked std
    assert data.noise.std() == pytest.approx(1.5, rel=0.01)


def test_label_noise_orthogonal_noise_and_patches():
    data = label_noise(n_samples=300, d=20, signal_norm=0.5, noise_std=3.0, orthogonal=True, seed=2)
    np.testing.assert_allclose(data.noise @ data.signal, 0.0, atol=1e-9)
    np.testing.assert_array_equal(np.sign(data.X @ data.signal), data.y_clean)  # the signal decides alone
    p = label_noise(n_samples=300, d=20, layout="patches", seed=2)
    assert p.X.shape == (300, 2, 20)
    np.testing.assert_allclose(p.X[:, 0], p.y_clean[:, None] * p.signal, atol=0)
    np.testing.assert_allclose(p.X[:, 1], p.noise, atol=0)


# --------------------------------------------------------------------------------------------------
# spiked covariance and ICA


def _top_pca(X, k=1):
    vals, vecs = np.linalg.eigh(X.T @ X / X.shape[0])
    return vals[::-1][:k], vecs[:, ::-1][:, :k]


def test_spiked_pca_recovers_the_spike_above_the_bbp_threshold_and_not_below():
    n, d = 1200, 300  # gamma = 0.25, threshold sqrt(gamma) = 0.5
    above = spiked_covariance(n_samples=n, d=d, strengths=3.0, seed=0)
    assert isinstance(above, SpikedCovariance) and above.bbp_threshold == pytest.approx(0.5)
    val, vec = _top_pca(above.X)
    overlap2 = float(vec[:, 0] @ above.spikes[0]) ** 2
    gamma = d / n
    limit = (1 - gamma / 9) / (1 + gamma / 3)  # Paul (2007), = 0.8974
    assert above.overlap_limit[0] == pytest.approx(limit)
    assert overlap2 == pytest.approx(limit, abs=0.05)  # finite-n fluctuations are O(n^-1/2)
    assert val[0] == pytest.approx((1 + 3) * (1 + gamma / 3), rel=0.06)
    below = spiked_covariance(n_samples=n, d=d, strengths=0.25, seed=0)
    val, vec = _top_pca(below.X)
    assert below.overlap_limit[0] == 0.0
    assert float(vec[:, 0] @ below.spikes[0]) ** 2 < 0.1
    assert val[0] == pytest.approx((1 + math.sqrt(gamma)) ** 2, rel=0.05)  # at the bulk edge


def test_spiked_covariance_structure_two_spikes_and_rademacher():
    s = spiked_covariance(n_samples=40000, d=10, strengths=[4.0, 1.0], latent="rademacher", seed=1)
    np.testing.assert_allclose(s.spikes @ s.spikes.T, np.eye(2), atol=1e-12)
    np.testing.assert_array_equal(np.abs(s.latent), 1.0)
    C = s.covariance
    np.testing.assert_allclose(C @ s.spikes[0], 5.0 * s.spikes[0], atol=1e-12)
    np.testing.assert_allclose(C @ s.spikes[1], 2.0 * s.spikes[1], atol=1e-12)
    np.testing.assert_allclose(s.X.T @ s.X / len(s.X), C, atol=0.06)  # n >> d: the sample covariance converges


def _amari(W, A):
    """Amari et al. (1996)'s distance of P = W A from a scaled permutation (0 when recovered)."""
    P = np.abs(W @ A)
    k = P.shape[0]
    rows = (P / P.max(axis=1, keepdims=True)).sum(axis=1) - 1
    cols = (P / P.max(axis=0, keepdims=True)).sum(axis=0) - 1
    return float((rows.sum() + cols.sum()) / (2 * k * (k - 1)))


def test_ica_mixture_exact_sources_and_fastica_recovers_the_mixing():
    data = ica_mixture(n_samples=20000, n_sources=3, d=5, sources=["laplace", "uniform", "rademacher"], seed=0)
    assert isinstance(data, ICAMixture) and data.X.shape == (20000, 5) and data.mixing.shape == (5, 3)
    np.testing.assert_allclose(data.X, data.sources @ data.mixing.T, atol=1e-12)
    np.testing.assert_allclose(data.sources, data.X @ data.unmixing.T, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(data.mixing, axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(data.sources.std(axis=0), 1.0, atol=0.03)
    s = (data.sources - data.sources.mean(0)) / data.sources.std(0)
    np.testing.assert_allclose((s**4).mean(0) - 3, [3.0, -1.2, -2.0], atol=0.5)
    np.testing.assert_allclose(data.kurtosis, [3.0, -1.2, -2.0])
    FastICA = pytest.importorskip("sklearn.decomposition").FastICA
    ica = FastICA(n_components=3, whiten="unit-variance", random_state=0, max_iter=1000).fit(data.X)
    assert _amari(ica.components_, data.mixing) < 0.05
    # a random matrix is far from a scaled permutation
    assert _amari(np.random.default_rng(0).standard_normal((3, 5)), data.mixing) > 0.2


def test_ica_noise_and_square_default():
    data = ica_mixture(n_samples=500, n_sources=2, noise=0.1, seed=3)
    assert data.mixing.shape == (2, 2) and data.distributions == ("laplace", "laplace")
    assert np.std(data.X - data.sources @ data.mixing.T) == pytest.approx(0.1, rel=0.1)


# --------------------------------------------------------------------------------------------------
# continual tasks


def test_continual_tasks_similarity_is_exactly_what_was_asked():
    sims = [0.9, 0.3, -0.5]
    c = continual_tasks(n_tasks=4, n_samples=50, d=30, similarity=sims, n_hidden=3, seed=0)
    assert isinstance(c, ContinualTasks) and c.X.shape == (4, 50, 30) and c.teachers.shape == (4, 3, 30)
    for t, s in enumerate([1.0] + sims):
        np.testing.assert_allclose(c.teachers[t] @ c.teachers[t].T, np.eye(3), atol=1e-12)  # unit, orthogonal rows
        # matched units at cosine s, unmatched units orthogonal
        np.testing.assert_allclose(c.teachers[t] @ c.teachers[0].T, s * np.eye(3), atol=1e-12)
    full = np.array([1.0] + sims)
    Q = np.outer(full, full)
    np.fill_diagonal(Q, 1.0)
    np.testing.assert_allclose(c.overlaps(), Q, atol=1e-12)
    np.testing.assert_array_equal(c.similarity, full)
    for t in range(4):
        X, y = c.tasks[t]
        np.testing.assert_allclose(y, (X @ c.teachers[t].T).sum(1) / math.sqrt(3), atol=1e-12)


def test_continual_tasks_teacher_cosine_recovered_from_data():
    c = continual_tasks(n_tasks=3, n_samples=3000, d=20, similarity=0.6, noise=0.2, seed=1)
    w = [np.linalg.lstsq(X, y, rcond=None)[0] for X, y in c.tasks]
    for t in (1, 2):
        cos = float(w[t] @ w[0]) / (np.linalg.norm(w[t]) * np.linalg.norm(w[0]))
        assert cos == pytest.approx(0.6, abs=0.02)
    cos12 = float(w[1] @ w[2]) / (np.linalg.norm(w[1]) * np.linalg.norm(w[2]))
    assert cos12 == pytest.approx(0.36, abs=0.02)
    relu = continual_tasks(n_tasks=2, n_samples=10, d=4, link="relu", seed=0)
    np.testing.assert_allclose(relu.y[1], np.maximum(relu.X[1] @ relu.teachers[1, 0], 0), atol=1e-12)


# --------------------------------------------------------------------------------------------------
# lazy / rich


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)).double()


def test_output_scaled_is_zero_at_init_and_its_gradient_is_alpha_times():
    x = torch.randn(7, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    base = _net()
    model = OutputScaled(_net(), alpha=50.0)
    assert torch.equal(model(x), torch.zeros(7, 2, dtype=torch.float64))
    assert all(not p.requires_grad for p in model.init.parameters())
    assert "net.0" in dict(model.named_modules())
    model(x).sum().backward()
    base(x).sum().backward()
    for p, q in zip(model.net.parameters(), base.parameters()):
        torch.testing.assert_close(p.grad, 50.0 * q.grad, rtol=1e-12, atol=0)
    assert all(p.grad is None for p in model.init.parameters())
    assert model.loss_scale == pytest.approx(1 / 2500)


def test_output_scaled_one_step_moves_the_function_alike_and_the_weights_one_over_alpha():
    x = torch.randn(16, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    target = torch.randn(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    lr, moves, outs = 1e-3, {}, {}
    for alpha in (1.0, 100.0):
        model = OutputScaled(_net(), alpha=alpha)
        w0 = torch.cat([p.detach().clone().ravel() for p in model.net.parameters()])
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        loss = model.scale_loss(torch.nn.functional.mse_loss(model(x), target))
        loss.backward()
        opt.step()
        moves[alpha] = float(torch.linalg.norm(torch.cat([p.detach().ravel() for p in model.net.parameters()]) - w0))
        outs[alpha] = model(x).detach()
    # at init f_alpha = 0 for every alpha, so the first gradient is exactly 1/alpha times alpha = 1's
    assert moves[1.0] / moves[100.0] == pytest.approx(100.0, rel=1e-9)
    # the function moves by the same first-order amount (they differ at second order in lr)
    torch.testing.assert_close(outs[100.0], outs[1.0], rtol=1e-2, atol=1e-6)
    assert float(outs[1.0].abs().max()) > 0


# --------------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("call, exc, match", [
    (lambda: single_index(link="cubic"), ValueError, "link must be one of"),
    (lambda: single_index(link=3), TypeError, "link must be one of"),
    (lambda: single_index(link=lambda z: z[:3]), ValueError, "link must map"),
    (lambda: single_index(n_samples=0), ValueError, "n_samples"),
    (lambda: single_index(d=2.5), TypeError, "d must be"),
    (lambda: single_index(noise=-1), ValueError, "noise"),
    (lambda: multi_index(d=3, n_directions=4), ValueError, "n_directions=4 is larger than d=3"),
    (lambda: label_noise(flip=0.6), ValueError, "flip must be"),
    (lambda: label_noise(noise_std=0), ValueError, "noise_std"),
    (lambda: label_noise(layout="grid"), ValueError, "layout must be one of"),
    (lambda: label_noise(orthogonal=1), TypeError, "orthogonal must be True or False"),
    (lambda: spiked_covariance(strengths=[1.0, -2.0]), ValueError, "each of strengths"),
    (lambda: spiked_covariance(d=2, strengths=[1, 2, 3]), ValueError, "at most d spikes"),
    (lambda: spiked_covariance(latent="laplace"), ValueError, "latent must be one of"),
    (lambda: ica_mixture(n_sources=3, d=2), ValueError, "d=2 is smaller than n_sources=3"),
    (lambda: ica_mixture(n_sources=2, sources=["laplace"]), ValueError, "one per source"),
    (lambda: ica_mixture(sources="cauchy"), ValueError, "sources must be one of"),
    (lambda: continual_tasks(n_tasks=3, d=5, n_hidden=2), ValueError, "d >= n_hidden \\* n_tasks = 6"),
    (lambda: continual_tasks(n_tasks=3, similarity=[0.5]), ValueError, "expected one per later task"),
    (lambda: continual_tasks(similarity=1.5), ValueError, "similarity must be"),
    (lambda: OutputScaled(torch.nn.Linear(2, 2), alpha=0), ValueError, "alpha must be"),
    (lambda: OutputScaled(lambda x: x), TypeError, "net must be a torch.nn.Module"),
])
def test_bad_arguments_are_refused_by_name(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
