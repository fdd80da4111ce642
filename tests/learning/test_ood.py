"""Mahalanobis(++) OOD scores against a direct computation (explicit inverse, per-class loop),
scikit-learn's EmpiricalCovariance, and a planted shifted distribution."""

import numpy as np
import pytest
import torch

from featurelens.learning import MahalanobisOOD
from featurelens.metrics import auroc


def _data(rng, n_per=60, C=3, d=8):
    y = np.repeat(np.arange(C), n_per)
    means = 4.0 * rng.normal(size=(C, d))
    A = rng.normal(size=(d, d)) / np.sqrt(d)
    H = means[y] + rng.normal(size=(len(y), d)) @ A.T + 0.1 * rng.normal(size=(len(y), d))
    return H, y


def _direct(H_train, y, H, normalize, ridge):
    """The textbook detector: explicit covariance, np.linalg.inv, a loop over classes."""
    if normalize:
        H_train = H_train / np.linalg.norm(H_train, axis=1, keepdims=True)
        H = H / np.linalg.norm(H, axis=1, keepdims=True)
    classes = np.unique(y)
    mus = [H_train[y == c].mean(0) for c in classes]
    d = H_train.shape[1]
    cov = np.zeros((d, d))
    for h, c in zip(H_train, y):
        cov += np.outer(h - mus[c], h - mus[c])
    cov /= len(H_train)
    cov += ridge * np.trace(cov) / d * np.eye(d)
    P = np.linalg.inv(cov)
    dist = np.stack([[(h - m) @ P @ (h - m) for m in mus] for h in H])
    return -dist.min(1)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("ridge", [0.0, 1e-3])
def test_scores_match_direct_computation(normalize, ridge):
    rng = np.random.default_rng(0)
    H, y = _data(rng)
    test = rng.normal(size=(25, H.shape[1])) * 3
    ood = MahalanobisOOD(normalize=normalize, ridge=ridge, batch_size=7).fit(H, y)
    np.testing.assert_allclose(ood.score(test), _direct(H, y, test, normalize, ridge), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ood.score(H), _direct(H, y, H, normalize, ridge), rtol=1e-9, atol=1e-10)
    assert ood.distances(test).shape == (25, 3)


def test_covariance_matches_sklearn():
    from sklearn.covariance import EmpiricalCovariance

    rng = np.random.default_rng(1)
    H, y = _data(rng)
    ood = MahalanobisOOD(normalize=True, ridge=0.0).fit(torch.from_numpy(H).float(), y)
    F = H.astype(np.float32).astype(np.float64)
    F = F / np.linalg.norm(F, axis=1, keepdims=True)
    resid = F - np.stack([F[y == c].mean(0) for c in range(3)])[y]
    ref = EmpiricalCovariance(assume_centered=True).fit(resid)
    np.testing.assert_allclose(ood.covariance_, ref.covariance_, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ood.precision_, ref.precision_, rtol=1e-7)


def test_relative_ridge_is_scale_free():
    rng = np.random.default_rng(2)
    H, y = _data(rng)
    test = rng.normal(size=(10, H.shape[1]))
    a = MahalanobisOOD(normalize=False, ridge=0.1).fit(H, y).score(test)
    b = MahalanobisOOD(normalize=False, ridge=0.1).fit(1e4 * H, y).score(1e4 * test)
    np.testing.assert_allclose(a, b, rtol=1e-9)


def test_separates_a_shifted_distribution():
    rng = np.random.default_rng(3)
    d = 16
    H, y = _data(rng, n_per=100, d=d)
    fresh = np.random.default_rng(30)
    # in-distribution test rows: new noise around the same class means
    means = np.stack([H[y == c].mean(0) for c in range(3)])
    resid = H - means[y]
    test_in = means[y] + resid[fresh.permutation(len(y))]
    shift = np.zeros(d)
    shift[:4] = 3.0
    test_out = test_in + shift + 0.5 * fresh.normal(size=test_in.shape)
    for normalize in (True, False):
        ood = MahalanobisOOD(normalize=normalize).fit(H, y)
        assert auroc(ood.score(test_in), ood.score(test_out)) > 0.95
    # control: a second in-distribution sample (other residuals) is not separated
    control = means[y] + resid[fresh.permutation(len(y))]
    assert 0.4 < auroc(ood.score(test_in), ood.score(control)) < 0.6


def test_rank_deficient_covariance_uses_pseudo_inverse():
    rng = np.random.default_rng(4)
    H = np.zeros((30, 5))
    H[:, :2] = rng.normal(size=(30, 2))
    y = np.repeat([0, 1], 15)
    s = MahalanobisOOD(normalize=False, ridge=0.0).fit(H, y).score(H)
    assert np.isfinite(s).all()
    # only the 2 informative directions count: same scores as on the 2-d features
    s2 = MahalanobisOOD(normalize=False, ridge=0.0).fit(H[:, :2], y).score(H[:, :2])
    np.testing.assert_allclose(s, s2, rtol=1e-8)


def test_errors_and_params():
    rng = np.random.default_rng(5)
    H, y = _data(rng)
    with pytest.raises(RuntimeError, match="not fitted"):
        MahalanobisOOD().score(H)
    with pytest.raises(ValueError, match="one label per row"):
        MahalanobisOOD().fit(H, y[:-1])
    bad = H.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="H contains NaN or inf"):
        MahalanobisOOD().fit(bad, y)
    ood = MahalanobisOOD().fit(H, y)
    with pytest.raises(ValueError, match="H contains NaN"):
        ood.score(np.full((2, 8), np.nan))
    with pytest.raises(ValueError, match="must have 8 features"):
        ood.score(H[:, :5])
    with pytest.raises(ValueError, match="ridge must be"):
        MahalanobisOOD(ridge=-1.0).fit(H, y)
    assert MahalanobisOOD(normalize=False, ridge=0.5).get_params() == {"normalize": False, "ridge": 0.5, "batch_size": None}


def test_normalisation_catches_low_norm_ood():
    """Mueller & Hein's failure case, planted: in-distribution norms vary widely (log-normal), OOD
    rows are small vectors in random directions. Plain Mahalanobis ranks them as in-distribution;
    Mahalanobis++ (l2-normalised) does not."""
    rng = np.random.default_rng(0)
    C, d = 4, 16
    mu = rng.normal(size=(C, d))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)

    def in_dist(m):
        y = rng.integers(0, C, m)
        r = np.exp(0.8 * rng.normal(size=(m, 1)))
        return r * (mu[y] + rng.normal(size=(m, d)) / d**0.5), y

    H, y = in_dist(800)
    test_in, _ = in_dist(500)
    u = rng.normal(size=(500, d))
    test_out = 0.3 * u / np.linalg.norm(u, axis=1, keepdims=True)
    plus = MahalanobisOOD(normalize=True).fit(H, y)
    plain = MahalanobisOOD(normalize=False).fit(H, y)
    assert auroc(plus.score(test_in), plus.score(test_out)) > 0.95
    assert auroc(plain.score(test_in), plain.score(test_out)) < 0.6


def test_mahalanobis_parameters_numpy_scalars_and_bad_batch_size():
    from featurelens.learning import MahalanobisOOD

    rng = np.random.default_rng(0)
    H, y = rng.normal(size=(50, 4)), rng.integers(0, 3, 50)
    # a numpy float ridge is a number like any other (it was refused)
    a = MahalanobisOOD(ridge=np.float32(1e-3)).fit(H, y).score(H)
    b = MahalanobisOOD(ridge=float(np.float32(1e-3))).fit(H, y).score(H)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    # batch_size=0 and ridge=True were silently replaced by the defaults
    with pytest.raises(ValueError, match="batch_size"):
        MahalanobisOOD(batch_size=0).fit(H, y)
    with pytest.raises(TypeError, match="ridge must be a finite number >= 0.0; got True"):
        MahalanobisOOD(ridge=True).fit(H, y)
