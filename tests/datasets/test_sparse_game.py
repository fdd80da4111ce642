"""Tests for featurelens.datasets.sparse_game: planted support, exact values, transforms, noise."""

import itertools

import numpy as np
import pytest

import featurelens as fl
from featurelens.datasets import SparseGame, sparse_game


def _brute(terms, masks, basis):
    """The definition with Python sets, one mask at a time."""
    out = []
    for m in masks:
        s = set(np.flatnonzero(m).tolist())
        if basis == "mobius":
            out.append(sum(c for t, c in terms.items() if set(t) <= s))
        else:
            out.append(sum(c * (-1) ** len(set(t) & s) for t, c in terms.items()))
    return np.array(out)


def test_support_shape_and_coefficients():
    g = sparse_game(n=30, n_terms=25, max_degree=4, seed=3)
    terms = g.terms
    assert isinstance(g, SparseGame) and isinstance(g, fl.games.Game)
    assert len(terms) == 26 and terms[()] == 0.0  # n_terms planted + the constant
    planted = [t for t in terms if t]
    assert len(set(planted)) == 25
    assert all(1 <= len(t) <= 4 and list(t) == sorted(set(t)) and 0 <= t[0] and t[-1] < 30 for t in planted)
    assert {len(t) for t in planted} == {1, 2, 3, 4}
    mags = np.abs([terms[t] for t in planted])
    assert mags.min() >= 0.5 and mags.max() <= 1.5
    signs = np.sign([terms[t] for t in planted])
    assert (signs > 0).any() and (signs < 0).any()
    assert g.basis == "mobius" and g.noise == 0.0 and g.n_players == 30


def test_seed_reproducible():
    assert sparse_game(n=50, n_terms=10, seed=7).terms == sparse_game(n=50, n_terms=10, seed=7).terms
    assert sparse_game(n=50, n_terms=10, seed=7).terms != sparse_game(n=50, n_terms=10, seed=8).terms


@pytest.mark.parametrize("basis", ["mobius", "fourier"])
def test_values_match_definition(basis):
    g = sparse_game(n=10, n_terms=12, max_degree=3, basis=basis, seed=1)
    masks = np.random.default_rng(0).integers(0, 2, size=(64, 10)).astype(bool)
    np.testing.assert_allclose(g(masks), _brute(g.terms, masks, basis), rtol=0, atol=1e-12)
    assert g.calls == 64
    if basis == "mobius":
        assert g.grand() == pytest.approx(sum(g.terms.values()), abs=1e-12)
        assert g.empty() == 0.0
    else:
        # The empty mask has every character +1; the full mask gives (-1)^|T|.
        assert g.empty() == pytest.approx(sum(g.terms.values()), abs=1e-12)
        assert g.grand() == pytest.approx(sum(c * (-1) ** len(t) for t, c in g.terms.items()), abs=1e-12)


def _all_masks(n):
    return np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)


def test_mobius_transform_recovers_planted_terms():
    n = 6
    g = sparse_game(n=n, n_terms=8, max_degree=3, basis="mobius", seed=4)
    masks = _all_masks(n)
    v = dict(zip(map(lambda m: frozenset(np.flatnonzero(m).tolist()), masks), g(masks)))
    recovered = {}
    for m in masks:
        t = np.flatnonzero(m).tolist()
        dividend = sum(
            (-1) ** (len(t) - k) * v[frozenset(s)] for k in range(len(t) + 1) for s in itertools.combinations(t, k)
        )
        if abs(dividend) > 1e-9:
            recovered[tuple(t)] = dividend
    planted = {t: c for t, c in g.terms.items() if c != 0.0}
    assert recovered.keys() == planted.keys()
    for t in planted:
        assert recovered[t] == pytest.approx(planted[t], abs=1e-10)


def test_fourier_transform_recovers_planted_terms():
    n = 6
    g = sparse_game(n=n, n_terms=8, max_degree=3, basis="fourier", seed=5)
    masks = _all_masks(n)
    v = g(masks)
    # c_T = 2^-n sum_m v(m) (-1)^<m, k_T>  (the SPEX sign convention)
    signs = (-1.0) ** (masks.astype(int) @ masks.astype(int).T)
    coef = signs @ v / 2**n
    recovered = {tuple(np.flatnonzero(k).tolist()): c for k, c in zip(masks, coef) if abs(c) > 1e-9}
    planted = {t: c for t, c in g.terms.items() if c != 0.0}
    assert recovered.keys() == planted.keys()
    for t in planted:
        assert recovered[t] == pytest.approx(planted[t], abs=1e-10)


@pytest.mark.parametrize("basis", ["mobius", "fourier"])
def test_noise_scale_and_reproducibility(basis):
    clean = sparse_game(n=40, n_terms=15, max_degree=3, basis=basis, seed=2)
    noisy = sparse_game(n=40, n_terms=15, max_degree=3, basis=basis, noise=0.01, seed=2)
    assert noisy.terms == clean.terms
    masks = np.random.default_rng(6).integers(0, 2, size=(5000, 40)).astype(bool)
    v = clean(masks)
    # The analytic signal std matches the empirical std over uniform random masks.
    assert np.std(v) == pytest.approx(clean.signal_std, rel=0.05)
    diff = noisy(masks) - v
    assert np.std(diff) == pytest.approx(0.01 * clean.signal_std, rel=0.2)
    assert noisy.noise_std == pytest.approx(0.01 * clean.signal_std)
    # A fresh game with the same seed replays the same noise sequence; later calls draw new noise.
    first = sparse_game(n=40, n_terms=15, max_degree=3, basis=basis, noise=0.01, seed=2)
    second = sparse_game(n=40, n_terms=15, max_degree=3, basis=basis, noise=0.01, seed=2)
    a = first(masks[:100])
    np.testing.assert_array_equal(a, second(masks[:100]))
    assert not np.array_equal(a, first(masks[:100]))
    assert not np.array_equal(a, v[:100])


def test_large_game_shapes_and_values():
    g = sparse_game(n=1000, n_terms=40, max_degree=3, seed=0, batch_size=512)
    masks = np.random.default_rng(9).random((2000, 1000)) < 0.9
    v = g(masks)
    assert v.shape == (2000,) and g.calls == 2000
    np.testing.assert_allclose(v[:5], _brute(g.terms, masks[:5], "mobius"), atol=1e-12)
    gf = sparse_game(n=1000, n_terms=40, max_degree=3, basis="fourier", seed=0)
    np.testing.assert_allclose(gf(masks[:5]), _brute(gf.terms, masks[:5], "fourier"), atol=1e-12)


def test_argument_errors():
    with pytest.raises(ValueError, match="n must be an int >= 1; got 0"):
        sparse_game(n=0)
    with pytest.raises(ValueError, match=r"max_degree must be an int >= 1 and <= 5; got 6"):
        sparse_game(n=5, n_terms=3, max_degree=6)
    with pytest.raises(ValueError, match=r"n_terms must be at most .* 15; got 16"):
        sparse_game(n=5, n_terms=16, max_degree=2)
    with pytest.raises(ValueError, match="basis must be one of"):
        sparse_game(n=5, n_terms=3, basis="walsh")
    with pytest.raises(ValueError, match="noise must be a finite number >= 0; got -0.1"):
        sparse_game(n=5, n_terms=3, noise=-0.1)
    with pytest.raises(TypeError, match="n_terms must be an int"):
        sparse_game(n=5, n_terms=2.5)
    with pytest.raises(ValueError, match="sorted tuples of distinct players"):
        SparseGame(3, {(2, 1): 1.0})


def test_full_support_small():
    # n_terms equal to all nonempty subsets up to max_degree: the rejection sampling terminates.
    g = sparse_game(n=4, n_terms=10, max_degree=2, seed=0)
    assert len([t for t in g.terms if t]) == 10
