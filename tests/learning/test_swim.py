"""SWIM random features (Bolager et al., NeurIPS 2023) in RandomFeatureRidge and RFRBoost: the
construction holds exactly for every sampled pair, the target-weighted sampling picks the pairs
with the steepest target, SWIM beats Gaussian features on a planted low-dimensional target at the
same width, scikit-learn's estimator checks, clear errors, and the default stays Gaussian."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.learning._rf_solvers import activate, swim_layer
from featurelens.learning.random_features import RandomFeatureRidge, RFRBoostClassifier, RFRBoostRegressor


def planted(n, seed, d=20):
    """A target that varies along two of d directions."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + np.sin(X[:, 1]) + 0.05 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("sampling", ["target", "uniform"])
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_swim_layer_satisfies_the_construction_for_every_pair(sampling, scale):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(30, 4)) * [1.0, 3.0, 0.1, 1.0]
    T = rng.normal(size=(30, 2))
    A, c, pairs = swim_layer(np.random.default_rng(1), Z, T, 50, scale, sampling)
    assert A.shape == (4, 50) and c.shape == (50,) and pairs.shape == (50, 2)
    i, j = pairs[:, 0], pairs[:, 1]
    assert np.all(i != j) and np.all((0 <= pairs) & (pairs < 30))
    U = Z @ A + c  # U[r, k]: pre-activation of unit k at row r
    k = np.arange(50)
    np.testing.assert_allclose(U[i, k], -scale, rtol=0, atol=1e-12)
    np.testing.assert_allclose(U[j, k], scale, rtol=0, atol=1e-12)
    # w is parallel to z_j - z_i: the unit is constant across that direction's orthogonal complement
    dx = Z[j] - Z[i]
    np.testing.assert_allclose(A.T, 2 * scale * dx / (dx * dx).sum(1, keepdims=True), rtol=1e-13)


def test_target_sampling_picks_only_pairs_across_a_planted_jump():
    """Target 0 except on 5 of 40 rows: every pair with a nonzero ratio |dy|/|dx| straddles the jump."""
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(40, 3))
    T = np.zeros(40)
    T[:5] = 10.0
    _, _, pairs = swim_layer(np.random.default_rng(3), Z, T, 200, 0.5, "target")
    straddles = (pairs[:, 0] < 5) != (pairs[:, 1] < 5)
    assert straddles.all()
    _, _, uniform = swim_layer(np.random.default_rng(3), Z, T, 200, 0.5, "uniform")
    # uniform pairs straddle with probability 2 * 5 * 35 / (40 * 39) = 0.224
    frac = np.mean((uniform[:, 0] < 5) != (uniform[:, 1] < 5))
    assert 0.1 < frac < 0.4


def test_target_sampling_prefers_the_direction_the_target_varies_along():
    """T = 10 z_0 in 10 dimensions: |dy|/|dx| = 10 |cos(dx, e_0)|, so weighted pairs align with e_0."""
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(300, 10))
    T = 10.0 * Z[:, 0]

    def alignment(sampling):
        A, _, _ = swim_layer(np.random.default_rng(5), Z, T, 400, 0.5, sampling)
        return np.mean(np.abs(A[0]) / np.linalg.norm(A, axis=0))

    # uniform pairs: E|cos| of a random direction in 10-d is about 0.25
    assert alignment("uniform") < 0.35
    assert alignment("target") > alignment("uniform") + 0.1


def test_swim_degenerate_rows_and_constant_target():
    Z = np.ones((6, 3))
    A, c, pairs = swim_layer(np.random.default_rng(0), Z, np.arange(6.0), 4, 0.5, "target")
    assert not A.any() and not c.any() and (pairs == -1).all()
    A, c, pairs = swim_layer(np.random.default_rng(0), Z[:1], None, 4, 0.5, "uniform")
    assert not A.any() and (pairs == -1).all()
    # constant target: falls back to uniform, still exact
    Z = np.random.default_rng(1).normal(size=(10, 2))
    A, c, pairs = swim_layer(np.random.default_rng(0), Z, np.zeros(10), 8, 0.5, "target")
    U = Z @ A + c
    np.testing.assert_allclose(U[pairs[:, 0], np.arange(8)], -0.5, atol=1e-12)
    np.testing.assert_allclose(U[pairs[:, 1], np.arange(8)], 0.5, atol=1e-12)


def test_rfr_swim_units_are_built_from_their_recorded_training_pairs():
    X, y = planted(80, 0, d=5)
    m = RandomFeatureRidge(n_features=16, ensemble=2, features="swim", swim_scale=0.7, seed=3).fit(X, y)
    assert m.pairs_.shape == (2, 16, 2)
    k = np.arange(16)
    for e in range(2):
        U = X @ m.weights_[e] + m.biases_[e]
        i, j = m.pairs_[e, :, 0], m.pairs_[e, :, 1]
        np.testing.assert_allclose(U[i, k], -0.7, atol=1e-12)
        np.testing.assert_allclose(U[j, k], 0.7, atol=1e-12)
    # member e draws from default_rng(seed + e), as the Gaussian members do
    A, c, pairs = swim_layer(np.random.default_rng(4), X, y[:, None], 16, 0.7, "target")
    np.testing.assert_array_equal(m.pairs_[1], pairs)
    np.testing.assert_allclose(m.biases_[1], c)
    assert RandomFeatureRidge(n_features=4).fit(X, y).pairs_ is None


def test_rfrboost_swim_layers_hit_minus_c_and_plus_c_on_training_rows():
    X, y = planted(60, 1, d=4)
    m = RFRBoostRegressor(n_layers=2, n_features=12, hidden_dim=10, features="swim", seed=0).fit(X, y)
    Xs = (X - m.x_mean_) / m.x_std_

    def check(U):  # every unit takes exactly -c at one training row and +c at another
        assert np.min(np.abs(U + 0.5), axis=0).max() < 1e-12
        assert np.min(np.abs(U - 0.5), axis=0).max() < 1e-12

    A, c = m.upscale_
    check(Xs @ A + c)
    Phi = activate(Xs @ A + c, "tanh")
    for layer in m.layers_:
        check(Xs @ layer["A_x"] + layer["c_x"])
        check((Phi - layer["mu"]) / layer["sd"] @ layer["A_phi"] + layer["c_phi"])
        Phi = Phi + m._layer_features(layer, Phi, Xs) @ layer["delta"]
    np.testing.assert_allclose(m.representation(X), Phi, rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(m.history_) <= 1e-12 * m.history_[0])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_rfrboost_classifier_swim_history_decreases(n_classes):
    X, y = planted(90, 2, d=4)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    m = RFRBoostClassifier(n_layers=3, n_features=16, l2_reg=1e-3, features="swim", seed=1).fit(X, labels)
    assert np.all(np.diff(m.history_) <= 1e-10)
    assert m.history_[-1] < m.history_[0]


def test_swim_beats_gaussian_features_on_a_planted_low_dimensional_target():
    """y = sin(x_0) + sin(x_1) in 20 dimensions, 30 features: alpha picked on a validation set for
    each, test MSE averaged over 3 seeds (measured: SWIM ~0.16, Gaussian ~0.31, var(y) 0.88)."""
    X, y = planted(500, 0)
    Xv, yv = planted(500, 1)
    Xt, yt = planted(2000, 2)

    def test_mse(features, seed):
        fits = [RandomFeatureRidge(n_features=30, alpha=a, features=features, seed=seed).fit(X, y)
                for a in (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)]
        best = min(fits, key=lambda m: np.mean((m.predict(Xv) - yv) ** 2))
        return np.mean((best.predict(Xt) - yt) ** 2)

    swim = np.mean([test_mse("swim", s) for s in range(3)])
    gauss = np.mean([test_mse("gaussian", s) for s in range(3)])
    assert swim < 0.75 * gauss
    assert swim < 0.5 * np.var(yt)


def test_gaussian_is_the_default_and_explicit_gaussian_is_identical():
    X, y = planted(50, 3, d=4)
    for cls, kw in [(RandomFeatureRidge, {"n_features": 8}), (RFRBoostRegressor, {"n_layers": 2, "n_features": 8})]:
        assert cls().features == "gaussian"
        a = cls(**kw).fit(X, y).predict(X)
        b = cls(features="gaussian", swim_scale=3.0, swim_sampling="uniform", **kw).fit(X, y).predict(X)
        np.testing.assert_array_equal(a, b)


@parametrize_with_checks(
    [
        RandomFeatureRidge(n_features=16, features="swim"),
        RandomFeatureRidge(n_features=12, ensemble=2, features="swim", swim_sampling="uniform", activation="relu"),
        RFRBoostRegressor(n_layers=2, n_features=8, hidden_dim=6, features="swim"),
        RFRBoostClassifier(n_layers=2, n_features=8, l2_reg=1e-3, features="swim"),
    ]
)
def test_sklearn_estimator_checks_swim(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", [RandomFeatureRidge, RFRBoostRegressor])
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"features": "swimm"}, ValueError, "features must be one of .*Did you mean 'swim'"),
        ({"features": "iid"}, ValueError, "features must be one of 'gaussian', 'swim'"),
        ({"swim_scale": 0.0}, ValueError, "swim_scale must be a finite number > 0"),
        ({"swim_scale": "big"}, TypeError, "swim_scale must be"),
        ({"swim_sampling": "gradient"}, ValueError, "swim_sampling must be one of 'target', 'uniform'"),
    ],
)
def test_bad_swim_parameters(cls, kwargs, exc, match):
    X, y = planted(20, 0, d=3)
    with pytest.raises(exc, match=match):
        cls(**kwargs).fit(X, y)
