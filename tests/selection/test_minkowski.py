import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection import MinkowskiWeightedSelector
from featurelens.selection.minkowski import _weights_from_dispersion, minkowski_center

FAST = dict(p_grid=(1.5, 2.0, 2.5), n_init=2)


def planted(seed=0, n=240):
    """4 blob features (3 clusters) followed by 4 uniform noise features on the same range."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-6, 6, size=(3, 4))
    X, _ = make_blobs(n_samples=n, centers=centers, cluster_std=1.0, random_state=seed)
    noise = rng.uniform(X.min(), X.max(), size=(n, 4))
    return np.hstack([X, noise])


def test_minkowski_center_p2_mean_p1_median():
    X = np.random.default_rng(0).exponential(size=(51, 4))
    np.testing.assert_allclose(minkowski_center(X, 2.0), X.mean(axis=0))
    np.testing.assert_allclose(minkowski_center(X, 1.0), np.median(X, axis=0))
    # The bisection branch agrees with the mean too (p = 2 + tiny epsilon).
    np.testing.assert_allclose(minkowski_center(X, 2.0 + 1e-9), X.mean(axis=0), atol=1e-6)


@pytest.mark.parametrize("p", [1.3, 1.7, 3.0, 4.5])
def test_minkowski_center_is_the_grid_minimiser(p):
    x = np.random.default_rng(1).gamma(2.0, size=37)
    grid = np.linspace(x.min(), x.max(), 100001)
    step = grid[1] - grid[0]
    brute = grid[np.argmin((np.abs(x[None, :] - grid[:, None]) ** p).sum(axis=1))]
    assert minkowski_center(x, p)[0] == pytest.approx(brute, abs=2 * step)


def test_weights_formula():
    D = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 0.5]])
    for p in (1.2, 2.0, 3.0):
        direct = 1.0 / ((D[:, :, None] / D[:, None, :]) ** (1.0 / (p - 1.0))).sum(axis=2)
        np.testing.assert_allclose(_weights_from_dispersion(D, p), direct, rtol=1e-12)
    # p = 2: w proportional to 1 / D.
    np.testing.assert_allclose(_weights_from_dispersion(D, 2.0)[0], [4 / 7, 2 / 7, 1 / 7])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_blob_features_outrank_noise(seed):
    X = planted(seed)
    s = MinkowskiWeightedSelector(k=4, n_clusters=3, seed=0, **FAST).fit(X)
    np.testing.assert_array_equal(np.flatnonzero(s.support_), [0, 1, 2, 3])
    assert s.scores_[:4].min() > s.scores_[4:].max()
    assert s.weights_.shape == (3, 3, 8)
    np.testing.assert_allclose(s.weights_.sum(axis=2), 1.0)  # every cluster's weights on the simplex
    # scores = median of the collected cluster weights
    np.testing.assert_allclose(s.scores_, np.median(s.weights_.reshape(-1, 8), axis=0))


def test_exact_center_mode_and_default_grid_agree_on_planted_data():
    X = planted(0, n=150)
    s = MinkowskiWeightedSelector(k=4, n_clusters=3, p_grid=(1.3, 2.7), n_init=2, center="exact").fit(X)
    np.testing.assert_array_equal(np.flatnonzero(s.support_), [0, 1, 2, 3])
    s2 = MinkowskiWeightedSelector(k=4, n_clusters=3, seed=0).fit(X)
    np.testing.assert_array_equal(np.flatnonzero(s2.support_), [0, 1, 2, 3])
    # k=None keeps the features above the uniform weight 1/8: the blob features.
    s3 = MinkowskiWeightedSelector(n_clusters=3, seed=0, **FAST).fit(X)
    np.testing.assert_array_equal(np.flatnonzero(s3.get_support()), [0, 1, 2, 3])


def test_deterministic_and_ignores_y():
    X = planted(3, n=120)
    a = MinkowskiWeightedSelector(k=2, seed=5, **FAST).fit(X)
    b = MinkowskiWeightedSelector(k=2, seed=5, **FAST).fit(X, np.arange(120))
    np.testing.assert_array_equal(a.scores_, b.scores_)


def test_constant_feature_dataframe_and_errors():
    X = planted(0, n=120)
    X[:, 5] = 2.0
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)])
    s = MinkowskiWeightedSelector(k=3, n_clusters=3, **FAST).fit(df)
    assert s.scores_[5] == 0.0 and s.ranking_[5] == 8 and np.isfinite(s.scores_).all()
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(np.asarray(df.columns)[s.get_support()])
    with pytest.raises(ValueError, match="k=9 is larger than the number of features"):
        MinkowskiWeightedSelector(k=9, **FAST).fit(X)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MinkowskiWeightedSelector(k=2, **FAST).fit(Xn)
    with pytest.raises(ValueError, match="p_grid must be a non-empty sequence of finite numbers > 1"):
        MinkowskiWeightedSelector(p_grid=(1.0, 2.0)).fit(X)
    with pytest.raises(ValueError, match="n_clusters must be an int >= 1 or None; got 0"):
        MinkowskiWeightedSelector(n_clusters=0).fit(X)
    with pytest.raises(ValueError, match="center must be one of 'approx', 'exact'"):
        MinkowskiWeightedSelector(center="mean").fit(X)
    with pytest.raises(ValueError, match="p must be a finite number >= 1"):
        minkowski_center(X, 0.5)


@parametrize_with_checks([MinkowskiWeightedSelector(p_grid=(1.5, 2.0), n_init=2)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
