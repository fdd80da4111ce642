"""MinShap: the minimum of the marginal contributions over sampled permutations."""

from itertools import permutations

import numpy as np
import pytest

import featurelens as fl


def _table_model(table: np.ndarray):
    """A model whose output on a 0/1 row is ``table[bitmask of the row]`` (a random set function
    when explained at x = ones with baseline 0)."""
    n = int(np.log2(len(table)))
    powers = 2 ** np.arange(n)

    def f(X):
        X = np.asarray(X)
        return table[(X != 0).astype(int) @ powers]

    return f


def _brute_force_min_contributions(table: np.ndarray, n: int) -> np.ndarray:
    best = np.full(n, np.inf)
    for perm in permutations(range(n)):
        mask = 0
        for i in perm:
            best[i] = min(best[i], table[mask | (1 << i)] - table[mask])
            mask |= 1 << i
    return best


def test_minshap_equals_the_minimum_over_all_permutations_when_every_one_is_sampled():
    rng = np.random.default_rng(3)
    n = 4
    table = rng.normal(size=2**n)
    # 2000 permutations of 4 players: every one of the 24 orders is drawn (miss probability ~ 1e-35).
    e = fl.explainer("minshap", _table_model(table), baseline=0.0, budget=2 + 2000 * (n - 1), seed=0).explain(
        np.ones((1, n))
    )
    np.testing.assert_allclose(e.values[0], _brute_force_min_contributions(table, n), atol=1e-12)


def test_direct_and_interaction_effects_are_told_apart():
    # f = 2 x0 + x1 x2: x0 contributes 2 in every context, x1 and x2 contribute 0 or 1, x3 nothing.
    f = lambda X: 2 * X[:, 0] + X[:, 1] * X[:, 2]  # noqa: E731
    e = fl.explainer("minshap", f, baseline=0.0, budget=200, seed=0).explain(np.ones((1, 4)))
    np.testing.assert_allclose(e.values[0], [2, 0, 0, 0])
    np.testing.assert_allclose(e.extra["max"][0], [2, 1, 1, 0])
    # Antithetic pairs: in exactly one permutation of each pair x2 precedes x1, so the mean is 1/2.
    np.testing.assert_allclose(e.extra["shapley"][0], [2, 0.5, 0.5, 0])


def test_additive_model_minshap_equals_shapley_equals_w_times_x():
    rng = np.random.default_rng(0)
    w = rng.normal(size=6)
    x = rng.normal(size=(3, 6))
    f = lambda X: X @ w  # noqa: E731
    e = fl.explainer("minshap", f, baseline=0.0, budget=64, seed=1).explain(x)
    np.testing.assert_allclose(e.values, w * x, rtol=1e-5, atol=1e-6)  # float32 model rows
    np.testing.assert_allclose(e.extra["shapley"], w * x, rtol=1e-5, atol=1e-6)


def test_mean_is_permutation_shap_with_the_same_seed_and_bounds_hold():
    rng = np.random.default_rng(1)
    table = rng.normal(size=2**5)
    f = _table_model(table)
    x = np.ones((1, 5))
    e = fl.explainer("minshap", f, baseline=0.0, budget=90, seed=7).explain(x)
    p = fl.explainer("permutation_shap", f, baseline=0.0, budget=90, seed=7).explain(x)
    np.testing.assert_allclose(e.extra["shapley"], p.values, atol=1e-12)
    assert np.all(e.values <= e.extra["shapley"] + 1e-12)
    assert np.all(e.extra["shapley"] <= e.extra["max"] + 1e-12)
    assert e.model_calls == p.model_calls


def test_min_abs_statistic():
    f = lambda X: X[:, 0] - 3 * X[:, 1] + X[:, 0] * X[:, 2]  # noqa: E731
    e = fl.explainer("minshap", f, baseline=0.0, budget=100, seed=0, statistic="min_abs").explain(np.ones((1, 3)))
    # |contributions|: x0 in {1, 2}, x1 always 3, x2 in {0, 1}.
    np.testing.assert_allclose(e.values[0], [1, 3, 0])


def test_groups_spread_player_values_and_extra_over_the_image(small_cnn):
    x = np.random.default_rng(0).normal(size=(2, 1, 8, 8)).astype(np.float32)
    groups = (np.arange(64).reshape(8, 8) // 16).reshape(1, 8, 8)  # 4 horizontal bands
    e = fl.explainer("minshap", small_cnn, baseline=0.0, groups=groups, budget=40, seed=0).explain(x, target=0)
    for name, arr in [("values", e.values), ("shapley", e.extra["shapley"])]:
        assert arr.shape == x.shape, name
        for g in range(4):
            band = arr[:, 0][:, groups[0] == g]
            np.testing.assert_allclose(band, band[:, :1].repeat(band.shape[1], axis=1), err_msg=name)


def test_bad_arguments_are_named():
    f = lambda X: X.sum(axis=1)  # noqa: E731
    with pytest.raises(ValueError, match="statistic must be one of"):
        fl.explainer("minshap", f, statistic="median")
    with pytest.raises(ValueError, match="at least 10"):
        fl.explainer("minshap", f, baseline=0.0, budget=5).explain(np.ones((1, 5)))
