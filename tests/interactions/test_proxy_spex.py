"""Tests for featurelens.interactions.proxy_spex (ProxySPEX, Butler et al., NeurIPS 2025).

The Fourier extraction is checked against the trees' own predictions (brute-force evaluation of
``sum_K F(K) (-1)^{|K & m|}`` on random masks); recovery on a planted Fourier-sparse game.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.tree import DecisionTreeRegressor

from featurelens.datasets.games import sparse_game
from featurelens.games import FunctionGame
from featurelens.interactions import Interactions, proxy_spex
from featurelens.interactions.proxy_spex import minimum_budget, proxy_fourier, tree_fourier


def evaluate(F: dict, masks: np.ndarray) -> np.ndarray:
    """sum_K F(K) (-1)^{|K & m|} with int bitmask keys, one term at a time."""
    out = np.zeros(masks.shape[0])
    for k, v in F.items():
        players = [i for i in range(masks.shape[1]) if (k >> i) & 1]
        out += v * (-1.0) ** masks[:, players].sum(axis=1)
    return out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = (rng.random((600, 12)) < 0.5).astype(float)
    y = X[:, 0] * X[:, 1] - 2 * X[:, 2] + np.sin(3 * X[:, 3] + X[:, 4] * X[:, 5]) + 0.1 * rng.normal(size=600)
    test = (rng.random((400, 12)) < 0.5).astype(float)
    return X, y, test


def test_tree_extraction_exact(data):
    X, y, test = data
    tree = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    F = tree_fourier(tree)
    assert all(bin(k).count("1") <= 6 for k in F)
    np.testing.assert_allclose(evaluate(F, test), tree.predict(test), atol=1e-10)
    np.testing.assert_allclose(evaluate(F, X), tree.predict(X), atol=1e-10)


def test_ensemble_extraction_exact(data):
    X, y, test = data
    gbr = GradientBoostingRegressor(n_estimators=40, max_depth=3, learning_rate=0.2, random_state=0).fit(X, y)
    F = proxy_fourier(gbr, X.shape[1])
    np.testing.assert_allclose(evaluate(F, test), gbr.predict(test), atol=1e-10)


@pytest.mark.slow
def test_recovers_planted_fourier_game():
    # n = 50, 10 Fourier terms of degree <= 3, noiseless. Measured with the defaults (300 trees of
    # depth 5) at budget 3000: held-out r2 = 1.0000 on game seeds 0-4 (100 trees: 0.86-1.0).
    g = sparse_game(n=50, n_terms=10, max_degree=3, basis="fourier", seed=2)
    inter = proxy_spex(g, budget=3000, max_order=3, seed=0)
    assert isinstance(inter, Interactions) and inter.index == "fourier"
    assert inter.queries == 3000 and g.calls == 3000
    assert inter.r2(g, seed=123) >= 0.95
    assert inter.params["n_terms"] <= 3000 // 10 + 1
    assert all(len(k) <= 3 for k in inter.terms)
    # The planted terms are found with their coefficients.
    for k, v in g.terms.items():
        if k:
            assert inter[k] == pytest.approx(v, abs=1e-6)


def test_seed_reproducible_and_n_terms():
    g = sparse_game(n=20, n_terms=5, max_degree=2, basis="mobius", seed=2)
    a = proxy_spex(g, budget=800, max_order=2, seed=7, n_estimators=30)
    b = proxy_spex(g, budget=800, max_order=2, seed=7, n_estimators=30)
    assert a.terms == b.terms
    c = proxy_spex(g, budget=800, max_order=2, seed=8, n_estimators=30)
    assert c.terms != a.terms
    small = proxy_spex(g, budget=800, max_order=2, n_terms=3, seed=7, n_estimators=30)
    assert len(small) == 4  # three terms plus the constant
    assert small.params["n_terms"] == 4


def test_max_order_truncates():
    game = FunctionGame(lambda m: m[:, 0] * m[:, 1] * m[:, 2] + m[:, 3].astype(float), 8)
    inter = proxy_spex(game, budget=500, max_order=1, seed=0, n_estimators=30, max_depth=3)
    assert inter.params["gbt"]["max_depth"] == 3
    assert all(len(k) <= 1 for k in inter.terms)
    assert inter.max_order == 1


def test_errors():
    g = sparse_game(n=20, n_terms=3, max_degree=2, seed=0)
    assert minimum_budget(20) == 210
    with pytest.raises(ValueError, match="at least 210"):
        proxy_spex(g, budget=209)
    with pytest.raises(ValueError, match="max_order"):
        proxy_spex(g, budget=500, max_order=0)
    with pytest.raises(ValueError, match="n_terms"):
        proxy_spex(g, budget=500, n_terms=0)
    with pytest.raises(ValueError, match="squared_error"):
        proxy_spex(g, budget=500, loss="absolute_error")
    with pytest.raises(TypeError, match="Game"):
        proxy_spex(lambda m: m.sum(1), budget=500)
