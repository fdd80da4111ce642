"""RandomFeatureRidge and RFRBoost: parity with scikit-learn's Ridge / LogisticRegression, the
ensemble average, the closed-form block step against a direct solve, monotone training loss,
scikit-learn's estimator checks and clear errors."""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.learning._rf_solvers import cross_entropy, line_search, sandwiched_ridge
from featurelens.learning.random_features import RandomFeatureRidge, RFRBoostClassifier, RFRBoostRegressor


def regression_data(n=60, d=4, seed=0, outputs=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    if outputs:
        y = np.stack([y, X[:, 3] ** 2 - X[:, 0]], axis=1)[:, :outputs]
    return X, y


# ------------------------------------------------------------------ RandomFeatureRidge


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid", "cos"])
@pytest.mark.parametrize("n_features", [20, 90])  # primal (p <= n) and dual (p > n) solves
def test_rfr_equals_sklearn_ridge_on_its_features(activation, n_features):
    X, y = regression_data()
    m = RandomFeatureRidge(n_features=n_features, alpha=0.3, activation=activation, seed=3).fit(X, y)
    F = m.transform(X)
    assert F.shape == (60, n_features)
    ref = Ridge(alpha=0.3).fit(F, y)
    Xt, _ = regression_data(n=15, seed=1)
    np.testing.assert_allclose(m.predict(Xt), ref.predict(m.transform(Xt)), atol=1e-8, rtol=0)
    np.testing.assert_allclose(m.coef_[0, :, 0], ref.coef_, atol=1e-8, rtol=0)


def test_rfr_features_follow_the_documented_draw():
    X, y = regression_data()
    m = RandomFeatureRidge(n_features=7, activation="tanh", weight_scale=2.0, seed=5).fit(X, y)
    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 7)) * (2.0 / math.sqrt(4))
    c = rng.standard_normal(7)
    np.testing.assert_allclose(m.transform(X), np.tanh(X @ A + c) / math.sqrt(7), atol=1e-14)
    # cos: random Fourier features, sqrt(2) cos(XA + c) with c ~ U[0, 2 pi)
    m = RandomFeatureRidge(n_features=7, activation="cos", seed=5).fit(X, y)
    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 7)) / 2.0
    c = rng.uniform(0.0, 2 * math.pi, size=7)
    np.testing.assert_allclose(m.transform(X), math.sqrt(2.0) * np.cos(X @ A + c) / math.sqrt(7), atol=1e-14)


def test_rfr_ensemble_is_the_mean_of_single_models_with_consecutive_seeds():
    X, y = regression_data(outputs=2)
    K = 3
    ens = RandomFeatureRidge(n_features=12, alpha=0.1, ensemble=K, seed=10).fit(X, y)
    singles = [RandomFeatureRidge(n_features=12, alpha=0.1, seed=10 + k).fit(X, y) for k in range(K)]
    mean = sum(s.predict(X) for s in singles) / K
    np.testing.assert_allclose(ens.predict(X), mean, atol=1e-12)
    assert ens.predict(X).shape == (60, 2)
    np.testing.assert_allclose(ens.transform(X), np.concatenate([s.transform(X) for s in singles], axis=1))


def test_rfr_generator_seed_is_reproducible_and_alpha_zero_interpolates():
    X, y = regression_data(n=30)
    a = RandomFeatureRidge(n_features=50, seed=np.random.default_rng(1)).fit(X, y).predict(X)
    b = RandomFeatureRidge(n_features=50, seed=np.random.default_rng(1)).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)
    # more features than rows, no penalty: minimum-norm least squares interpolates the data
    m = RandomFeatureRidge(n_features=80, alpha=0.0).fit(X, y)
    np.testing.assert_allclose(m.predict(X), y, atol=1e-7)


# ------------------------------------------------------------------ RFRBoost: the block step


def test_sandwiched_closed_form_equals_direct_kronecker_lstsq():
    rng = np.random.default_rng(0)
    N, p, D, k, lam = 25, 6, 4, 3, 0.05
    F = rng.normal(size=(N, p))
    W = rng.normal(size=(D, k))
    R = rng.normal(size=(N, k))
    delta = sandwiched_ridge(F, W, R, lam)
    # vec(F D W) = (W^T kron F) vec(D) (column-major vec); the penalty as sqrt(N lam) I rows
    design = np.vstack([np.kron(W.T, F), math.sqrt(N * lam) * np.eye(p * D)])
    target = np.concatenate([R.ravel(order="F"), np.zeros(p * D)])
    direct = np.linalg.lstsq(design, target, rcond=None)[0].reshape((p, D), order="F")
    np.testing.assert_allclose(delta, direct, atol=1e-10)


def test_regressor_block_is_the_greedy_optimum_of_its_layer():
    X, y = regression_data()
    m = RFRBoostRegressor(n_layers=1, n_features=10, l2_step=1e-3, seed=0).fit(X, y)
    # replay layer 1 by hand: its block minimises the penalised loss at the base's top weights
    base = RFRBoostRegressor(n_layers=0).fit(X, y)
    layer = m.layers_[0]
    Xs = (X - m.x_mean_) / m.x_std_
    F = m._layer_features(layer, X, Xs)
    R = y[:, None] - X @ base.coef_ - base.intercept_
    np.testing.assert_allclose(layer["delta"], sandwiched_ridge(F, base.coef_, R, 1e-3), atol=1e-10)

    def penalised(D):
        E = F @ D @ base.coef_ - R
        return (E * E).sum() / 60 + 1e-3 * (D * D).sum()

    best = penalised(layer["delta"])
    rng = np.random.default_rng(1)
    for _ in range(5):
        assert penalised(layer["delta"] + 1e-3 * rng.normal(size=layer["delta"].shape)) > best


def test_line_search_finds_the_minimum_of_the_convex_profile():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(40, 3))
    V = rng.normal(size=(40, 3))
    Y = np.eye(3)[rng.integers(0, 3, 40)]
    grid = np.linspace(0, 5, 5001)
    vals = [cross_entropy(S + a * V, Y) for a in grid]
    a = line_search(S, V, Y)
    if grid[int(np.argmin(vals))] == 0.0:
        assert a == 0.0
    else:
        assert abs(a - grid[int(np.argmin(vals))]) < 2e-3
        assert cross_entropy(S + a * V, Y) <= min(vals) + 1e-12
    # an ascent direction gives no step
    g = (np.exp(S) / np.exp(S).sum(1, keepdims=True)) - Y
    assert line_search(S, g, Y) == 0.0


def test_classifier_block_is_the_ridge_direction_scaled_by_the_line_search():
    X, y = regression_data()
    labels = np.digitize(y, [-0.5, 0.5])
    m = RFRBoostClassifier(n_layers=1, n_features=10, l2_reg=1e-2, l2_step=1e-3, seed=2).fit(X, labels)
    base = RFRBoostClassifier(n_layers=0, l2_reg=1e-2).fit(X, labels)
    W, b = base.coef_, base.intercept_
    Y = np.eye(3)[labels]
    S = X @ W + b
    P = np.exp(S - S.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    G = (Y - P) @ W.T
    G *= math.sqrt(60) / np.linalg.norm(G)
    layer = m.layers_[0]
    F = m._layer_features(layer, X, (X - m.x_mean_) / m.x_std_)
    # the ridge fit of the gradient, as a direct least-squares solve of the augmented system
    design = np.vstack([F, math.sqrt(60 * 1e-3) * np.eye(F.shape[1])])
    A = np.linalg.lstsq(design, np.vstack([G, np.zeros((F.shape[1], G.shape[1]))]), rcond=None)[0]
    ratio = layer["delta"] / A
    assert np.ptp(ratio) < 1e-5 * abs(ratio.mean()) and ratio.mean() > 0
    # the scale minimises the loss along the ray
    grid = ratio.mean() * np.linspace(0.5, 1.5, 201)
    losses = [cross_entropy(S + a * (F @ A) @ W, Y) for a in grid]
    assert abs(grid[int(np.argmin(losses))] - ratio.mean()) <= (grid[1] - grid[0])
    # the ridge direction solves max <G, F A> s.t. (1/N)||F A||^2 + l2_step ||A||^2 <= 1
    def budget(B):
        return (np.linalg.norm(F @ B) ** 2 / 60 + 1e-3 * np.linalg.norm(B) ** 2) ** 0.5

    best = np.sum(G * (F @ A)) / budget(A)
    rng = np.random.default_rng(0)
    for _ in range(20):
        B = A + 0.3 * rng.normal(size=A.shape) * np.abs(A).mean()
        assert np.sum(G * (F @ B)) / budget(B) <= best + 1e-12


# ------------------------------------------------------------------ RFRBoost: base and history


@pytest.mark.parametrize("outputs", [None, 2])
def test_regressor_zero_layers_is_ridge(outputs):
    X, y = regression_data(outputs=outputs)
    m = RFRBoostRegressor(n_layers=0, l2_reg=0.01).fit(X, y)
    ref = Ridge(alpha=60 * 0.01).fit(X, y)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), atol=1e-10)
    assert m.history_.shape == (1,)


def test_regressor_zero_layers_with_upscale_is_ridge_on_the_random_layer():
    X, y = regression_data()
    m = RFRBoostRegressor(n_layers=0, hidden_dim=16, l2_reg=0.01, seed=4).fit(X, y)
    Phi = m.representation(X)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((4, 16)) / 2.0
    c = rng.standard_normal(16)
    np.testing.assert_allclose(Phi, np.tanh((X - X.mean(0)) / X.std(0) @ A + c), atol=1e-12)
    np.testing.assert_allclose(m.predict(X), Ridge(alpha=0.6).fit(Phi, y).predict(Phi), atol=1e-10)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_zero_layers_is_logistic_regression(n_classes):
    X, y = regression_data()
    labels = np.digitize(y, [0.0]) if n_classes == 2 else np.digitize(y, [-0.5, 0.5])
    m = RFRBoostClassifier(n_layers=0, l2_reg=0.01).fit(X, labels)
    ref = LogisticRegression(C=1.0 / (2 * 60 * 0.01), tol=1e-12, max_iter=10000).fit(X, labels)
    np.testing.assert_allclose(m.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(m.coef_.T, ref.coef_, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"boost_lr": 0.5, "activation": "relu"},
        {"hidden_dim": 8, "features_from": "representation"},
        {"features_from": "input", "activation": "cos"},
    ],
)
def test_regressor_history_decreases(kwargs):
    X, y = regression_data(outputs=2)
    m = RFRBoostRegressor(n_layers=4, n_features=16, **kwargs).fit(X, y)
    h = m.history_
    assert h.shape == (5,)
    assert np.all(np.diff(h) < 0), h
    # history_ is the objective of the refitted top on the final representation
    Phi = m.representation(X)
    R = y - Phi @ m.coef_ - m.intercept_
    assert math.isclose(h[-1], (R * R).sum() / 60 + 1e-4 * (m.coef_**2).sum(), rel_tol=1e-10)
    np.testing.assert_allclose(m.predict(X), Phi @ m.coef_ + m.intercept_, atol=1e-12)


@pytest.mark.parametrize("n_classes, kwargs", [(2, {}), (3, {"boost_lr": 0.5}), (3, {"hidden_dim": 6})])
def test_classifier_history_decreases(n_classes, kwargs):
    X, y = regression_data()
    labels = np.digitize(y, [0.0]) if n_classes == 2 else np.digitize(y, [-0.5, 0.5])
    m = RFRBoostClassifier(n_layers=3, n_features=16, l2_reg=1e-3, **kwargs).fit(X, labels)
    h = m.history_
    assert np.all(np.diff(h) < 0), h
    P = m.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    assert math.isclose(h[-1], -np.mean(np.log(P[np.arange(60), labels])) + 1e-3 * (m.coef_**2).sum(), rel_tol=1e-8)
    assert (m.predict(X) == m.classes_[P.argmax(1)]).all()


def test_boosting_fits_better_than_its_base_and_is_deterministic():
    X, y = regression_data(n=80)
    Xt, yt = regression_data(n=80, seed=7)
    base = RFRBoostRegressor(n_layers=0).fit(X, y).score(Xt, yt)
    boosted = RFRBoostRegressor(n_layers=3, n_features=32, boost_lr=0.5, l2_step=1e-2).fit(X, y)
    assert boosted.score(Xt, yt) > base + 0.2
    again = RFRBoostRegressor(n_layers=3, n_features=32, boost_lr=0.5, l2_step=1e-2).fit(X, y)
    np.testing.assert_array_equal(boosted.predict(Xt), again.predict(Xt))


# ------------------------------------------------------------------ scikit-learn checks and errors


@parametrize_with_checks(
    [
        RandomFeatureRidge(n_features=32),
        RandomFeatureRidge(n_features=24, alpha=0.01, ensemble=2, activation="relu"),
        RFRBoostRegressor(n_layers=2, n_features=8),
        RFRBoostClassifier(n_layers=2, n_features=8, l2_reg=1e-3),
    ]
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "cls, kwargs, exc, match",
    [
        (RandomFeatureRidge, {"n_features": 0}, ValueError, "n_features must be an int >= 1; got 0"),
        (RandomFeatureRidge, {"alpha": -1.0}, ValueError, "alpha must be a finite number >= 0"),
        (RandomFeatureRidge, {"activation": "tanhh"}, ValueError, "activation must be one of .*Did you mean 'tanh'"),
        (RandomFeatureRidge, {"ensemble": 1.5}, TypeError, "ensemble must be an int"),
        (RandomFeatureRidge, {"seed": -1}, ValueError, "seed must be None, a non-negative int"),
        (RFRBoostRegressor, {"n_layers": -1}, ValueError, "n_layers must be an int >= 0; got -1"),
        (RFRBoostRegressor, {"boost_lr": 1.5}, ValueError, r"boost_lr must be a finite number > 0.0 and <= 1.0; got 1.5"),
        (RFRBoostRegressor, {"l2_step": 0.0}, ValueError, "l2_step must be a finite number > 0"),
        (RFRBoostRegressor, {"hidden_dim": 0}, ValueError, "hidden_dim must be an int >= 1 or None"),
        (RFRBoostRegressor, {"features_from": "x"}, ValueError, "features_from must be one of 'both'"),
        (RFRBoostRegressor, {"weight_scale": float("nan")}, ValueError, "weight_scale must be a finite number"),
        (RFRBoostClassifier, {"l2_reg": 0.0}, ValueError, "l2_reg must be a finite number > 0"),
        (RFRBoostClassifier, {"activation": None}, ValueError, "activation must be one of"),
    ],
)
def test_bad_parameters(cls, kwargs, exc, match):
    X, y = regression_data(n=20)
    if cls is RFRBoostClassifier:
        y = (y > 0).astype(int)
    with pytest.raises(exc, match=match):
        cls(**kwargs).fit(X, y)


def test_bad_data():
    X, y = regression_data(n=20)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        RFRBoostRegressor().fit(Xn, y)
    with pytest.raises(ValueError, match="X has 3 features, but RandomFeatureRidge is expecting 4"):
        RandomFeatureRidge(n_features=4).fit(X, y).predict(X[:, :3])
    with pytest.raises(ValueError, match="y must hold at least 2 classes; got 1 class"):
        RFRBoostClassifier().fit(X, np.zeros(20, dtype=int))
    with pytest.raises(ValueError, match="Unknown label type"):
        RFRBoostClassifier().fit(X, y)
