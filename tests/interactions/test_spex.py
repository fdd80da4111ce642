"""Tests for featurelens.interactions.spex (SPEX, Kang et al., ICML 2025, arXiv:2502.13870).

Reference values are computed independently here: brute-force aliasing sums over all 2^n
frequencies, the planted terms of ``sparse_game`` (converted to the Fourier basis with
``mobius_to_fourier`` where needed), and the query count ``3 (p+1) 2^b``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from featurelens.datasets.games import sparse_game
from featurelens.games import FunctionGame
from featurelens.interactions.bch import BCHCode, delay_matrix
from featurelens.interactions.spex import bin_transform, spex, spex_masks, spex_plan
from featurelens.interactions.transforms import mobius_to_fourier


def fourier_value(F: dict, mask: np.ndarray) -> float:
    """f(m) = sum_K F(K) (-1)^{|K & m|}, by brute force."""
    return sum(v * (-1) ** int(sum(mask[i] for i in K)) for K, v in F.items())


# ---------------------------------------------------------------------------------------------
# query design and aliasing identity
def test_bin_transform_is_normalised_hadamard():
    rng = np.random.default_rng(3)
    b = 3
    x = rng.normal(size=(2, 2**b))
    H = np.array([[(-1) ** bin(l & j).count("1") for l in range(2**b)] for j in range(2**b)], dtype=float)
    np.testing.assert_allclose(bin_transform(x), x @ H.T / 2**b, atol=1e-12)


def test_aliasing_identity_brute_force():
    n, b, t = 6, 2, 2
    rng = np.random.default_rng(0)
    F = {K: float(rng.normal()) for d in range(n + 1) for K in itertools.combinations(range(n), d)}
    M = rng.integers(0, 2, size=(3, b, n), dtype=np.uint8)
    D = delay_matrix(n, t)
    masks = spex_masks(M, D)  # (C, p+1, 2^b, n)
    assert masks.shape == (3, D.shape[0], 2**b, n)
    # mask (c, r, l) is M_c^T l + d_r, with bit i of the integer l the coordinate l_i
    for c, r, l in [(0, 0, 3), (2, 1, 2), (1, D.shape[0] - 1, 1)]:
        ell = np.array([(l >> i) & 1 for i in range(b)])
        np.testing.assert_array_equal(masks[c, r, l], (ell @ M[c] + D[r]) % 2 == 1)
    values = np.array([[[fourier_value(F, m) for m in masks[c, r]] for r in range(D.shape[0])] for c in range(3)])
    U = bin_transform(values)
    expected = np.zeros_like(U)
    for K, v in F.items():
        k = np.zeros(n, dtype=int)
        k[list(K)] = 1
        for c in range(3):
            j = int(sum(int(bit) << i for i, bit in enumerate(M[c] @ k % 2)))
            expected[c, :, j] += v * (-1.0) ** (D @ k % 2)
    np.testing.assert_allclose(U, expected, atol=1e-10)


def test_plan_query_counts():
    # N = 3 (p+1) 2^b; p from the BCH code of t = max_order (reference sheet sec. 1.2 table).
    code, b, N = spex_plan(1000, 15_000, max_order=3)
    assert (code.n_parity + 1, b, N) == (34, 7, 13_056)
    for order in (3, 4, 5):
        _, b, N = spex_plan(1000, None, max_order=order)
        assert N <= 15_000 and b >= 6
    code, b, N = spex_plan(1000, 43_008, max_order=5)
    assert (code.n_parity + 1, b, N) == (56, 8, 43_008)


# ---------------------------------------------------------------------------------------------
# recovery
def test_fourier_sparse_noiseless_exact():
    game = sparse_game(64, 10, 3, basis="fourier", seed=5)
    before = game.calls
    I = spex(game, max_order=3, seed=0)
    assert I.index == "fourier" and I.n_players == 64 and I.max_order == 3
    assert I.queries == game.calls - before == 3 * (BCHCode(64, 3).n_parity + 1) * 2 ** I.params["b"]
    for K, v in game.terms.items():
        assert I[K] == pytest.approx(v, abs=1e-8)
    assert all(abs(v) < 1e-8 for K, v in I.terms.items() if K not in game.terms)
    assert I.r2(game, n_masks=500, seed=1) == pytest.approx(1.0, abs=1e-9)
    p = I.params
    assert (p["C"], p["t"], p["decoder"], p["n_terms"]) == (3, 3, "soft", len(I))
    assert p["decode_seconds"] >= 0


@pytest.fixture(scope="module")
def mobius_1000():
    game = sparse_game(1000, 40, 3, basis="mobius", seed=0)
    return game, spex(game, budget=15_000, max_order=3, seed=0)


def test_mobius_sparse_n1000_acceptance(mobius_1000):
    game, I = mobius_1000
    assert I.queries <= 15_000
    assert I.params["decode_seconds"] <= 10.0
    assert I.r2(game, n_masks=1000, seed=1) >= 0.999
    mob = I.to("mobius")
    for T, v in game.terms.items():
        if T:
            assert mob[T] == pytest.approx(v, abs=1e-6)
    # the whole Fourier support of the planted terms, and nothing else of any size
    fourier = {K: v for K, v in mobius_to_fourier(game.terms).items() if K}
    assert set(K for K in I.terms if K) == set(fourier)


def test_mobius_sparse_n1000_noisy():
    game = sparse_game(1000, 40, 3, basis="mobius", noise=0.01, seed=0)
    I = spex(game, budget=15_000, max_order=3, seed=0)
    assert I.r2(game, n_masks=1000, seed=1) >= 0.95


@pytest.mark.parametrize("decoder", ["hard", "soft"])
def test_hard_and_soft_noiseless(decoder):
    game = sparse_game(300, 20, 3, basis="mobius", seed=2)
    I = spex(game, budget=10_000, max_order=3, decoder=decoder, seed=1)
    assert I.params["decoder"] == decoder
    mob = I.to("mobius")
    for T, v in game.terms.items():
        if T:
            assert mob[T] == pytest.approx(v, abs=1e-8)


def test_soft_decoder_handles_noise():
    game = sparse_game(300, 20, 3, basis="mobius", noise=0.02, seed=4)
    I = spex(game, budget=10_000, max_order=3, decoder="soft", seed=0)
    assert I.r2(game, n_masks=500, seed=1) >= 0.99


def test_deterministic_by_seed():
    game = sparse_game(100, 10, 2, basis="fourier", seed=1)
    a = spex(game, max_order=2, seed=7)
    b = spex(game, max_order=2, seed=7)
    assert a.terms == b.terms and a.queries == b.queries
    g = np.random.default_rng(7)
    c = spex(game, max_order=2, seed=g)
    assert c.terms == a.terms


def test_function_game_sign_convention():
    # f(S) = 2 [0 in S] - 1 = -(-1)^{|{0} & S|}: Fourier term F({0}) = -1 and nothing else.
    game = FunctionGame(lambda m: 2.0 * m[:, 0] - 1.0, 8)
    I = spex(game, max_order=2, seed=0)
    assert I[(0,)] == pytest.approx(-1.0, abs=1e-10)
    assert I[()] == pytest.approx(0.0, abs=1e-10)


# ---------------------------------------------------------------------------------------------
# errors
def test_budget_too_small_gives_minimum():
    game = sparse_game(1000, 5, 2, seed=0)
    minimum = 3 * (BCHCode(1000, 3).n_parity + 1) * 8
    with pytest.raises(ValueError, match=str(minimum)):
        spex(game, budget=minimum - 1, max_order=3)
    assert game.calls == 0


def test_bad_arguments():
    game = sparse_game(20, 3, 2, seed=0)
    with pytest.raises(ValueError, match="decoder"):
        spex(game, decoder="viterbi")
    with pytest.raises(ValueError, match="max_order"):
        spex(game, max_order=0)
    with pytest.raises(TypeError, match="game"):
        spex(lambda m: m.sum(1))
