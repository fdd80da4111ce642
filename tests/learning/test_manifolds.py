"""Manifold geometry, capacity, target linearity and the virtual covariance against planted truth,
closed forms (Cover, Gardner, the Feature Learning Equation) and brute force."""

import itertools

import numpy as np
import pytest
import torch

from featurelens.learning.manifolds import (
    _ball_alpha0,
    _separable,
    cover_fraction,
    manifold_capacity,
    manifold_geometry,
    monitor_metrics,
    target_linearity,
    virtual_covariance,
)


def _planted_clouds(rng, C=4, D=5, p=30, m=3000, sigma=0.5, a=3.0):
    """Isotropic Gaussian clouds of variance sigma^2 in random D-dim subspaces around centres
    +-a e1, +-a e2 (mean zero, so the global mean is ~0 and |cos| is 1 for 2 of the 6 pairs)."""
    e = np.eye(p)
    centres = a * np.stack([e[0], -e[0], e[1], -e[1]])[:C]
    H, y = [], []
    for c in range(C):
        B = np.linalg.qr(rng.standard_normal((p, D)))[0]
        H.append(centres[c] + sigma * rng.standard_normal((m, D)) @ B.T)
        y.append(np.full(m, c))
    return np.vstack(H), np.concatenate(y)


# ---------------------------------------------------------------------------------------------
# geometry


def test_planted_isotropic_clouds_recover_radius_and_dimension():
    rng = np.random.default_rng(0)
    sigma, D, a, m = 0.5, 5, 3.0, 3000
    H, y = _planted_clouds(rng, D=D, m=m, sigma=sigma, a=a)
    g = manifold_geometry(H, y)
    assert g.n_classes == 4 and g.counts.tolist() == [m] * 4
    np.testing.assert_allclose(g.rms_radius, sigma * np.sqrt(D), rtol=0.03)
    np.testing.assert_allclose(g.radius, sigma * np.sqrt(D) / a, rtol=0.03)
    np.testing.assert_allclose(g.center_norm, a, rtol=0.01)
    # Sample participation ratio ~ D / (1 + D/m) for isotropic Gaussians (Marchenko-Pastur).
    np.testing.assert_allclose(g.dimension, D, rtol=0.02)
    assert g.center_correlation == pytest.approx(1 / 3, abs=0.01)
    s = g.summary()
    assert s["dimension"] == pytest.approx(g.dimension.mean()) and s[
        "radius"
    ] == pytest.approx(g.radius.mean())
    # torch input gives the same numbers
    gt = manifold_geometry(torch.from_numpy(H).float(), torch.from_numpy(y))
    np.testing.assert_allclose(gt.dimension, g.dimension, rtol=1e-4)


def test_geometry_matches_brute_force_eigenvalues():
    rng = np.random.default_rng(1)
    H = rng.standard_normal((60, 7)) * np.array([3.0, 1, 1, 0.5, 0.2, 2, 1])
    y = rng.integers(0, 3, 60)
    g = manifold_geometry(H, y)
    Hc = H - H.mean(0)
    centres = np.stack([Hc[y == c].mean(0) for c in range(3)])
    for c in range(3):
        lam = np.linalg.eigvalsh(np.cov(Hc[y == c].T, bias=True))
        assert g.dimension[c] == pytest.approx(
            lam.sum() ** 2 / (lam**2).sum(), rel=1e-10
        )
        assert g.rms_radius[c] == pytest.approx(np.sqrt(lam.sum()), rel=1e-10)
        assert g.radius[c] == pytest.approx(
            np.sqrt(lam.sum()) / np.linalg.norm(centres[c]), rel=1e-10
        )
    cos = [
        abs(centres[i] @ centres[j])
        / np.linalg.norm(centres[i])
        / np.linalg.norm(centres[j])
        for i, j in itertools.combinations(range(3), 2)
    ]
    assert g.center_correlation == pytest.approx(np.mean(cos), rel=1e-10)


def test_geometry_closed_form_two_axis_class_and_single_points():
    a, b = 2.0, 1.0
    cls0 = np.array([[a, 0], [-a, 0], [0, b], [0, -b]]) + np.array([5.0, 0])
    cls1 = np.array([[-5.0, 0]])  # a single point: radius 0, dimension 0
    H = np.vstack(
        [cls0, cls1, cls1 * 0 + [-5.0, 0], cls1 * 0 + [-5.0, 0], cls1 * 0 + [-5.0, 0]]
    )
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    g = manifold_geometry(H, y)
    assert g.dimension[0] == pytest.approx((a**2 + b**2) ** 2 / (a**4 + b**4))
    assert g.rms_radius[0] == pytest.approx(np.sqrt((a**2 + b**2) / 2))
    assert g.radius[0] == pytest.approx(np.sqrt((a**2 + b**2) / 2) / 5.0)
    assert g.rms_radius[1] == 0 and g.dimension[1] == 0 and g.radius[1] == 0
    assert g.center_correlation == pytest.approx(1.0)  # two opposite centres


# ---------------------------------------------------------------------------------------------
# capacity


def test_cover_fraction_closed_form_and_brute_force_lp():
    assert cover_fraction(5, 5) == 1.0 and cover_fraction(3, 10) == 1.0
    assert cover_fraction(80, 40) == pytest.approx(0.5)
    assert cover_fraction(4, 2) == pytest.approx(2 * (1 + 3) / 16)
    # every dichotomy of P = 6 points in general position in R^3, checked by the LP
    X = np.random.default_rng(2).standard_normal((6, 3))
    count = sum(
        _separable(X, np.array(s, float)) for s in itertools.product([-1, 1], repeat=6)
    )
    assert count == round(cover_fraction(6, 3) * 64)


def test_points_in_general_position_capacity_near_two():
    # P = 80 Gaussian points projected to N = 40: Cover's share is exactly 1/2 at P/N = 2.
    H = np.random.default_rng(3).standard_normal((80, 100))
    res = manifold_capacity(
        H, np.arange(80), n_dichotomies=40, n_projections=40, seed=0
    )
    assert (
        res.n_manifolds == 80
        and res.dims.tolist() == [40]
        and res.load.tolist() == [2.0]
    )
    assert abs(res.separable_fraction[0] - 0.5) < 3.5 * np.sqrt(0.25 / 40)
    assert np.isnan(res.critical_load)  # one load cannot bracket the crossing
    assert res.mean_field_capacity == 2.0 and res.mean_field_method == "cover"


def test_critical_load_of_points_from_a_projection_grid():
    H = np.random.default_rng(10).standard_normal((24, 40))
    res = manifold_capacity(
        H, np.arange(24), n_dichotomies=30, n_projections=[16, 8, 12], seed=0
    )
    assert res.dims.tolist() == [8, 12, 16]
    np.testing.assert_allclose(res.load, [3.0, 2.0, 1.5])
    sd = np.sqrt(0.25 / 30)
    for N, f in zip(res.dims, res.separable_fraction):
        assert abs(f - cover_fraction(24, int(N))) < 3.5 * sd
    assert res.critical_load == pytest.approx(2.0, abs=0.3)
    assert res.critical_dim == pytest.approx(24 / res.critical_load)
    again = manifold_capacity(
        H, np.arange(24), n_dichotomies=30, n_projections=[8, 12, 16], seed=0
    )
    np.testing.assert_array_equal(again.separable_fraction, res.separable_fraction)


def test_capacity_without_projection_and_manifold_mean_field():
    rng = np.random.default_rng(4)
    centres = 3.0 * rng.standard_normal(
        (4, 12)
    )  # in general position (no XOR configuration)
    y = np.repeat(np.arange(4), 20)
    H = centres[y] + 0.05 * rng.standard_normal((80, 12))
    res = manifold_capacity(H, y, n_dichotomies=10, seed=1)
    assert res.dims.tolist() == [12] and np.isnan(res.critical_load)
    # P = 4 tiny manifolds in 12 dims: all but the two constant dichotomies (impossible after
    # centring, without a bias) are separable.
    assert 0.5 <= res.separable_fraction[0] <= 1.0
    assert res.mean_field_method == "chung2018_scaling"
    g = manifold_geometry(H, y)
    alpha = (1 + g.radius**2) * _ball_alpha0(g.radius * np.sqrt(g.dimension))
    assert res.mean_field_capacity == pytest.approx(1 / np.mean(1 / alpha))
    assert 1.7 < res.mean_field_capacity <= 2.0  # R ~ 0.02: nearly points
    assert manifold_geometry(H, y).mean_radius < 0.05
    with_bias = manifold_capacity(H, y, n_dichotomies=10, seed=1, bias=True)
    assert with_bias.separable_fraction[0] == 1.0 and with_bias.bias


def test_gardner_alpha0_closed_form():
    from scipy.integrate import quad
    from scipy.stats import norm

    assert _ball_alpha0(np.array(0.0)) == pytest.approx(2.0)
    for k in (0.3, 1.0, 2.5):
        inv = quad(lambda t, k=k: norm.pdf(t) * (t + k) ** 2, -k, np.inf)[0]
        assert _ball_alpha0(np.array(k)) == pytest.approx(1 / inv, rel=1e-7)
    # large R sqrt(D): alpha_M = (1 + R^2) alpha_0(R sqrt D) -> (1 + R^-2) / D
    R, D = 3.0, 400.0
    assert (1 + R**2) * _ball_alpha0(np.array(R * np.sqrt(D))) == pytest.approx(
        (1 + R**-2) / D, rel=1e-3
    )


# ---------------------------------------------------------------------------------------------
# target linearity and the virtual covariance


def test_target_linearity_exact_linear_map_and_noise():
    rng = np.random.default_rng(5)
    H = rng.standard_normal((500, 6))
    Y = H @ rng.standard_normal((6, 3)) + 4.0  # exact linear (affine) map
    assert target_linearity(H, Y) == pytest.approx(1.0, abs=1e-10)
    assert target_linearity(torch.from_numpy(H), torch.from_numpy(Y)) == pytest.approx(
        1.0, abs=1e-10
    )
    assert target_linearity(H, Y[:, 0]) == pytest.approx(
        1.0, abs=1e-10
    )  # a float vector: one column
    noise = rng.standard_normal((500, 3))
    tl = target_linearity(H, noise)
    assert 0 <= tl < 0.04  # ~ rank / n = 6 / 500
    # one-hot of labels that H encodes exactly (H = onehot M): linearity 1
    labels = rng.integers(0, 4, 500)
    Hl = np.eye(4)[labels] @ rng.standard_normal((4, 6))
    assert target_linearity(Hl, labels) == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("shape", [(40, 5), (8, 20)])
@pytest.mark.parametrize("ridge", [0.0, 2.0])
def test_target_linearity_matches_brute_force_least_squares(shape, ridge):
    rng = np.random.default_rng(6)
    H = rng.standard_normal(shape)
    Y = rng.standard_normal((shape[0], 2))
    Hc, Yc = H - H.mean(0), Y - Y.mean(0)
    if ridge:
        B = np.linalg.solve(Hc.T @ Hc + ridge * np.eye(shape[1]), Hc.T @ Yc)
    else:
        B = np.linalg.lstsq(Hc, Yc, rcond=None)[0]
    expected = 1 - np.sum((Yc - Hc @ B) ** 2) / np.sum(Yc**2)
    assert target_linearity(H, Y, ridge=ridge) == pytest.approx(expected, abs=1e-9)


def test_virtual_covariance_feature_learning_equation():
    # Linear layer z = W h, loss L = 0.5 ||H W^T - T||^2; one step W' = W - lr G^T H.
    rng = np.random.default_rng(7)
    H, W, T = (
        rng.standard_normal((30, 4)),
        rng.standard_normal((3, 4)),
        rng.standard_normal((30, 3)),
    )
    G = H @ W.T - T  # dL/dz
    lr = 1e-3
    W2 = W - lr * G.T @ H
    dgram = W2.T @ W2 - W.T @ W
    vc = virtual_covariance(H, G @ W, lr)  # dL/dh_i = W^T g_i
    # exact: the two differ only in their lr^2 terms
    np.testing.assert_allclose(
        dgram - vc, lr**2 * (H.T @ G @ G.T @ H - W.T @ G.T @ G @ W), atol=1e-12
    )
    assert np.linalg.norm(dgram - vc) < 1e-2 * np.linalg.norm(vc)
    np.testing.assert_allclose(vc, vc.T)


def test_monitor_metrics_keys_and_values():
    rng = np.random.default_rng(8)
    H, y = _planted_clouds(rng, m=100)
    out = monitor_metrics(H, y)
    assert set(out) == {
        "manifold_radius",
        "manifold_dimension",
        "manifold_center_correlation",
        "target_linearity",
    }
    g = manifold_geometry(H, y)
    assert out["manifold_radius"] == pytest.approx(g.mean_radius)
    assert out["manifold_dimension"] == pytest.approx(g.mean_dimension)
    assert out["manifold_center_correlation"] == pytest.approx(g.center_correlation)
    assert out["target_linearity"] == pytest.approx(target_linearity(H, y))
    assert all(isinstance(v, float) for v in out.values())


# ---------------------------------------------------------------------------------------------
# errors


def test_errors():
    rng = np.random.default_rng(9)
    H, y = rng.standard_normal((20, 4)), np.repeat([0, 1], 10)
    bad = H.copy()
    bad[0, 0] = np.nan
    for fn in (manifold_geometry, manifold_capacity, monitor_metrics, target_linearity):
        with pytest.raises(ValueError, match="H must be a feature matrix"):
            fn(H[:, 0], y)
        with pytest.raises(ValueError, match="NaN"):
            fn(bad, y)
        with pytest.raises(ValueError, match="one"):
            fn(H, y[:-1])
    for fn in (manifold_geometry, manifold_capacity, monitor_metrics):
        with pytest.raises(ValueError, match="at least 2 classes"):
            fn(H, np.zeros(20, int))
    with pytest.raises(ValueError, match="constant"):
        target_linearity(H, np.zeros(20, int))
    with pytest.raises(TypeError, match="floating"):
        manifold_geometry(H.astype(int), y)
    with pytest.raises(ValueError, match="n_dichotomies"):
        manifold_capacity(H, y, n_dichotomies=0)
    with pytest.raises(TypeError, match="n_dichotomies"):
        manifold_capacity(H, y, n_dichotomies=2.5)
    with pytest.raises(ValueError, match="n_projections"):
        manifold_capacity(H, y, n_projections=5)  # > p = 4
    with pytest.raises(ValueError, match="n_projections"):
        manifold_capacity(H, y, n_projections=[0, 2])
    with pytest.raises(ValueError, match="n_projections is empty"):
        manifold_capacity(H, y, n_projections=[])
    with pytest.raises(TypeError, match="bias"):
        manifold_capacity(H, y, bias=1)
    with pytest.raises(TypeError, match="seed"):
        manifold_capacity(H, y, seed="a")
    with pytest.raises(ValueError, match="ridge"):
        target_linearity(H, y, ridge=-1.0)
    with pytest.raises(ValueError, match="Y"):
        target_linearity(H, np.zeros((19, 2)))
    with pytest.raises(ValueError, match="Y must be"):
        target_linearity(H, np.zeros((20, 2, 2)))
    with pytest.raises(ValueError, match="Y contains NaN"):
        target_linearity(H, np.full((20, 2), np.nan))
    with pytest.raises(ValueError, match="grad_H must have the shape"):
        virtual_covariance(H, H[:, :3], 0.1)
    with pytest.raises(ValueError, match="lr"):
        virtual_covariance(H, H, 0.0)
    with pytest.raises(ValueError, match="P"):
        cover_fraction(0, 3)


def test_separability_retries_other_solvers_on_numerical_trouble(monkeypatch):
    import scipy.optimize

    from featurelens.learning import manifolds

    real = scipy.optimize.linprog
    used = []

    def flaky(*args, method="highs", **kwargs):
        used.append(method)
        if method == "highs":  # the default solver gives up, as HiGHS does on borderline LPs
            return type("R", (), {"status": 4, "message": "numerical difficulties"})()
        return real(*args, method=method, **kwargs)

    monkeypatch.setattr(scipy.optimize, "linprog", flaky)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert manifolds._separable(X, np.array([1.0, 1.0, 1.0])) is True
    assert manifolds._separable(X, np.array([1.0, 1.0, -1.0])) is False  # x3 = x1 + x2
    assert used[:2] == ["highs", "highs-ipm"]

    def broken(*args, method="highs", **kwargs):
        return type("R", (), {"status": 4, "message": "numerical difficulties"})()

    monkeypatch.setattr(scipy.optimize, "linprog", broken)
    with pytest.raises(RuntimeError, match="any HiGHS solver"):
        manifolds._separable(X, np.array([1.0, 1.0, -1.0]))
