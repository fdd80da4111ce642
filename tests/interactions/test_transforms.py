"""featurelens.interactions.transforms: every transform and index against a brute-force evaluation
of its definition over all coalitions of small random games."""

import math
from itertools import combinations

import numpy as np
import pytest

from featurelens.games import Game, all_masks
from featurelens.interactions import transforms as T


# ------------------------------------------------------------------------------------------
# Brute-force helpers (definitions, written independently of the module)
# ------------------------------------------------------------------------------------------
def idx(S):
    return sum(1 << i for i in S)


def random_table(n, seed):
    return np.random.default_rng(seed).normal(size=2**n)


def subsets(S):
    S = tuple(S)
    for k in range(len(S) + 1):
        yield from combinations(S, k)


def coalitions(players, max_size=None):
    players = tuple(players)
    top = len(players) if max_size is None else max_size
    for k in range(top + 1):
        yield from combinations(players, k)


def delta(v, Tset, S):
    """Discrete derivative Delta_T v(S) = sum_{L subset T} (-1)^{|T|-|L|} v(S cup L)."""
    return sum((-1) ** (len(Tset) - len(L)) * v[idx(S) | idx(L)] for L in subsets(Tset))


def brute_mobius(v, n):
    return {S: sum((-1) ** (len(S) - len(R)) * v[idx(R)] for R in subsets(S)) for S in coalitions(range(n))}


def brute_fourier(v, n):
    return {
        K: sum((-1) ** len(set(K) & set(S)) * v[idx(S)] for S in coalitions(range(n))) / 2**n
        for K in coalitions(range(n))
    }


def brute_shapley(v, n):
    out = {}
    for i in range(n):
        rest = [j for j in range(n) if j != i]
        out[(i,)] = sum(
            math.factorial(len(S)) * math.factorial(n - len(S) - 1) / math.factorial(n) * (v[idx(S) | 1 << i] - v[idx(S)])
            for S in coalitions(rest)
        )
    return out


def brute_banzhaf(v, n):
    return {
        (i,): sum(v[idx(S) | 1 << i] - v[idx(S)] for S in coalitions([j for j in range(n) if j != i])) / 2 ** (n - 1)
        for i in range(n)
    }


def brute_sii(v, n, max_order):
    out = {}
    for Tset in coalitions(range(n), max_order):
        if not Tset:
            continue
        t = len(Tset)
        rest = [j for j in range(n) if j not in Tset]
        out[Tset] = sum(
            math.factorial(n - len(S) - t) * math.factorial(len(S)) / math.factorial(n - t + 1) * delta(v, Tset, S)
            for S in coalitions(rest)
        )
    return out


def brute_bii(v, n, max_order):
    out = {}
    for Tset in coalitions(range(n), max_order):
        if not Tset:
            continue
        rest = [j for j in range(n) if j not in Tset]
        out[Tset] = sum(delta(v, Tset, S) for S in coalitions(rest)) / 2 ** (n - len(Tset))
    return out


def brute_stii(v, n, order):
    out = {}
    for Tset in coalitions(range(n), order):
        if len(Tset) < order:
            out[Tset] = delta(v, Tset, ())
        else:
            rest = [j for j in range(n) if j not in Tset]
            out[Tset] = order / n * sum(delta(v, Tset, S) / math.comb(n - 1, len(S)) for S in coalitions(rest))
    return out


def brute_ksii(v, n, k):
    """k-SII by the recursive Bernoulli aggregation of the (brute-force) SII."""
    bern = [1.0, -1 / 2, 1 / 6, 0.0, -1 / 30, 0.0, 1 / 42, 0.0, -1 / 30]
    sii = brute_sii(v, n, k)
    out = {(): v[0]}
    for S in coalitions(range(n), k):
        if not S:
            continue
        rest = [j for j in range(n) if j not in S]
        out[S] = sum(
            bern[len(R)] * sii[tuple(sorted(S + R))] for R in coalitions(rest, k - len(S))
        )
    return out


def faithful_least_squares(v, n, order, shapley_kernel):
    """Coefficients beta_T (|T| <= order) minimising sum_S mu(S) (v(S) - sum_{T subset S} beta_T)^2;
    Shapley kernel mu with v(empty), v(N) as equality constraints (KKT system) or uniform mu."""
    cols = list(coalitions(range(n), order))
    rows = list(coalitions(range(n)))
    X = np.array([[1.0 if set(c) <= set(r) else 0.0 for c in cols] for r in rows])
    y = np.array([v[idx(r)] for r in rows])
    if not shapley_kernel:
        beta = np.linalg.lstsq(X, y, rcond=None)[0]
        return dict(zip(cols, beta))
    inner = [k for k, r in enumerate(rows) if 0 < len(r) < n]
    ends = [k for k, r in enumerate(rows) if len(r) in (0, n)]
    w = np.array([(n - 1) / (math.comb(n, len(rows[k])) * len(rows[k]) * (n - len(rows[k]))) for k in inner])
    Xi, yi = X[inner], y[inner]
    A = Xi.T @ (w[:, None] * Xi)
    C = X[ends]
    m = len(cols)
    kkt = np.zeros((m + len(ends), m + len(ends)))
    kkt[:m, :m] = A
    kkt[:m, m:] = C.T
    kkt[m:, :m] = C
    rhs = np.concatenate([Xi.T @ (w * yi), y[ends]])
    beta = np.linalg.solve(kkt, rhs)[:m]
    return dict(zip(cols, beta))


def assert_terms_close(got, want, atol=1e-9):
    keys = set(got) | set(want)
    for k in keys:
        assert got.get(k, 0.0) == pytest.approx(want.get(k, 0.0), abs=atol), k


def mobius_terms(v):
    return T.table_to_terms(T.mobius_transform(v))


# ------------------------------------------------------------------------------------------
# Tables and dense transforms
# ------------------------------------------------------------------------------------------
def test_all_masks_bitmask_order():
    m = all_masks(3)
    assert m.shape == (8, 3) and m.dtype == bool
    assert m[0].tolist() == [False, False, False]
    assert m[1].tolist() == [True, False, False]
    assert m[6].tolist() == [False, True, True]
    assert all_masks(0).shape == (1, 0)


def test_game_table_evaluates_every_coalition_and_refuses_large_games():
    w = np.array([1.0, 2.0, 4.0, 8.0])
    game = Game.from_function(lambda m: m.astype(float) @ w + 0.5 * (m[:, 0] & m[:, 3]), 4)
    table = T.game_table(game)
    assert table.shape == (16,) and table.dtype == np.float64
    for r in range(16):
        S = [i for i in range(4) if r >> i & 1]
        assert table[r] == sum(w[i] for i in S) + (0.5 if 0 in S and 3 in S else 0.0)
    assert game.calls == 16
    with pytest.raises(ValueError, match="SPEX"):
        T.game_table(game, max_players=3)
    assert game.calls == 16  # refused before evaluating


@pytest.mark.parametrize("n", [0, 1, 3, 6])
def test_dense_round_trips(n):
    v = random_table(n, n)
    np.testing.assert_allclose(T.inverse_mobius_transform(T.mobius_transform(v)), v, atol=1e-12)
    np.testing.assert_allclose(T.mobius_transform(T.inverse_mobius_transform(v)), v, atol=1e-12)
    np.testing.assert_allclose(T.inverse_fourier_transform(T.fourier_transform(v)), v, atol=1e-12)
    np.testing.assert_allclose(T.fourier_transform(T.inverse_fourier_transform(v)), v, atol=1e-12)


def test_transforms_do_not_modify_input_and_accept_batches():
    v = random_table(4, 1)
    before = v.copy()
    T.mobius_transform(v)
    T.fourier_transform(v)
    np.testing.assert_array_equal(v, before)
    batch = np.stack([v, 2 * v, -v])
    np.testing.assert_allclose(T.mobius_transform(batch)[1], 2 * T.mobius_transform(v))
    np.testing.assert_allclose(T.fourier_transform(batch)[2], -T.fourier_transform(v))


def test_mobius_matches_inclusion_exclusion():
    n = 6
    v = random_table(n, 2)
    want = brute_mobius(v, n)
    got = T.mobius_transform(v)
    for S, a in want.items():
        assert got[idx(S)] == pytest.approx(a, abs=1e-10)


def test_fourier_matches_definition_and_sign_convention():
    n = 5
    v = random_table(n, 3)
    F = T.fourier_transform(v)
    for K, f in brute_fourier(v, n).items():
        assert F[idx(K)] == pytest.approx(f, abs=1e-12)
    # f(S) = sum_K F(K) (-1)^{|K cap S|}
    for S in coalitions(range(n)):
        assert v[idx(S)] == pytest.approx(sum(F[idx(K)] * (-1) ** len(set(K) & set(S)) for K in coalitions(range(n))))


def test_table_length_must_be_power_of_two():
    for fn in (T.mobius_transform, T.inverse_mobius_transform, T.fourier_transform, T.inverse_fourier_transform):
        with pytest.raises(ValueError, match="power of two"):
            fn(np.zeros(6))
    with pytest.raises(ValueError, match="power of two"):
        T.table_to_terms(np.zeros(3))


def test_table_terms_round_trip():
    n = 4
    v = random_table(n, 4)
    v[idx((1, 2))] = 0.0
    terms = T.table_to_terms(v)
    assert (1, 2) not in terms and len(terms) == 15
    assert terms[()] == v[0] and terms[(0, 3)] == v[idx((0, 3))]
    assert all(list(k) == sorted(k) and all(type(i) is int for i in k) for k in terms)
    np.testing.assert_array_equal(T.terms_to_table(terms, n), v)
    small = T.table_to_terms(np.array([0.0, 1e-12, 2.0, -3.0]), tol=1e-9)
    assert small == {(1,): 2.0, (0, 1): -3.0}
    # unsorted keys are normalised; indices out of range are refused
    assert T.terms_to_table({(1, 0): 1.0}, 2)[3] == 1.0
    with pytest.raises(ValueError):
        T.terms_to_table({(0, 2): 1.0}, 2)
    with pytest.raises(ValueError):
        T.terms_to_table({(0, 0): 1.0}, 2)


# ------------------------------------------------------------------------------------------
# Sparse Fourier <-> Möbius
# ------------------------------------------------------------------------------------------
def test_sparse_fourier_mobius_match_dense_transforms():
    n = 6
    v = random_table(n, 5)
    fourier = T.table_to_terms(T.fourier_transform(v))
    mobius = T.table_to_terms(T.mobius_transform(v))
    np.testing.assert_allclose(T.terms_to_table(T.fourier_to_mobius(fourier), n), T.mobius_transform(v), atol=1e-10)
    np.testing.assert_allclose(T.terms_to_table(T.mobius_to_fourier(mobius), n), T.fourier_transform(v), atol=1e-12)


def test_sparse_fourier_mobius_on_sparse_terms():
    n = 8
    fourier = {(): 0.3, (2,): -1.0, (1, 5): 0.7, (0, 3, 4, 7): 0.25}
    v = T.inverse_fourier_transform(T.terms_to_table(fourier, n))
    mobius = T.fourier_to_mobius(fourier)
    np.testing.assert_allclose(T.terms_to_table(mobius, n), T.mobius_transform(v), atol=1e-12)
    supports = [(0, 3, 4, 7), (1, 5), (2,)]
    assert all(any(set(S) <= set(K) for K in supports) for S in mobius if S)
    back = T.mobius_to_fourier(mobius)
    assert_terms_close(back, fourier, atol=1e-12)
    assert set(back) == set(fourier)  # exact zeros dropped


def test_sparse_expansion_limit():
    big = {tuple(range(20)): 1.0}
    with pytest.raises(ValueError, match="max_expansion_order"):
        T.fourier_to_mobius(big)
    with pytest.raises(ValueError, match="max_expansion_order"):
        T.mobius_to_fourier(big, max_expansion_order=10)


# ------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [3, 6])
def test_shapley_and_banzhaf_match_definitions(n):
    v = random_table(n, 10 + n)
    a = mobius_terms(v)
    sv = T.mobius_to_shapley(a)
    assert_terms_close(sv, brute_shapley(v, n))
    assert sum(sv.values()) == pytest.approx(v[-1] - v[0])  # efficiency
    assert_terms_close(T.mobius_to_banzhaf(a), brute_banzhaf(v, n))
    assert all(len(k) == 1 for k in sv)


def test_shapley_symmetry_and_dummy():
    n = 6
    rng = np.random.default_rng(7)
    # players 0 and 1 are interchangeable; player 5 is a dummy
    h = rng.normal(size=(3, 2**3))
    v = np.zeros(2**n)
    for r in range(2**n):
        v[r] = h[(r & 1) + (r >> 1 & 1), (r >> 2) & 7]
    a = mobius_terms(v)
    for values in (T.mobius_to_shapley(a, n_players=n), T.mobius_to_banzhaf(a, n_players=n)):
        assert set(values) == {(i,) for i in range(n)}
        assert values[(0,)] == pytest.approx(values[(1,)], abs=1e-12)
        assert values[(5,)] == pytest.approx(0.0, abs=1e-12)
    assert sum(T.mobius_to_shapley(a, n_players=n).values()) == pytest.approx(v[-1] - v[0])


# ------------------------------------------------------------------------------------------
# Interaction indices
# ------------------------------------------------------------------------------------------
def test_sii_and_bii_match_definitions():
    n = 6
    v = random_table(n, 20)
    a = mobius_terms(v)
    assert_terms_close(T.mobius_to_sii(a, 3), brute_sii(v, n, 3))
    assert_terms_close(T.mobius_to_bii(a, 3), brute_bii(v, n, 3))
    full = T.mobius_to_sii(a)
    assert max(len(k) for k in full) == n and () not in full
    assert_terms_close(full, brute_sii(v, n, n))
    # order 1 is the Shapley / Banzhaf value; order n is the Möbius coefficient
    assert_terms_close(T.mobius_to_sii(a, 1), T.mobius_to_shapley(a))
    assert_terms_close(T.mobius_to_bii(a, 1), T.mobius_to_banzhaf(a))
    assert full[tuple(range(n))] == pytest.approx(a[tuple(range(n))])


@pytest.mark.parametrize("order", [1, 2, 3])
def test_stii_matches_definition(order):
    n = 6
    v = random_table(n, 30 + order)
    stii = T.mobius_to_stii(mobius_terms(v), order)
    assert_terms_close(stii, brute_stii(v, n, order))
    assert max(len(k) for k in stii) == order and () in stii
    assert sum(stii.values()) == pytest.approx(v[-1])  # efficiency, constant included


@pytest.mark.parametrize("order", [1, 2, 3])
def test_fsii_matches_weighted_least_squares(order):
    n = 6
    v = random_table(n, 40 + order)
    fsii = T.mobius_to_fsii(mobius_terms(v), order)
    assert_terms_close(fsii, faithful_least_squares(v, n, order, shapley_kernel=True), atol=1e-8)
    assert sum(fsii.values()) == pytest.approx(v[-1])  # efficiency
    assert fsii[()] == pytest.approx(v[0])
    if order == 1:
        assert_terms_close({k: x for k, x in fsii.items() if k}, T.mobius_to_shapley(mobius_terms(v)))


@pytest.mark.parametrize("order", [1, 2, 3])
def test_fbii_matches_least_squares(order):
    n = 6
    v = random_table(n, 50 + order)
    fbii = T.mobius_to_fbii(mobius_terms(v), order)
    assert_terms_close(fbii, faithful_least_squares(v, n, order, shapley_kernel=False), atol=1e-8)
    if order == 1:
        assert_terms_close({k: x for k, x in fbii.items() if k}, T.mobius_to_banzhaf(mobius_terms(v)))


def test_faithful_indices_are_exact_for_low_order_games():
    n = 7
    rng = np.random.default_rng(60)
    a = {S: float(rng.normal()) for S in coalitions(range(n), 2)}
    for fn in (T.mobius_to_fsii, T.mobius_to_fbii, T.mobius_to_ksii):
        assert_terms_close(fn(a, 2), a)
        assert_terms_close(fn(a, 3), a)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_ksii_matches_bernoulli_aggregation_of_sii(k):
    n = 6
    v = random_table(n, 70 + k)
    a = mobius_terms(v)
    ksii = T.mobius_to_ksii(a, k)
    assert_terms_close(ksii, brute_ksii(v, n, k))
    assert sum(ksii.values()) == pytest.approx(v[-1])  # efficiency, constant v(empty) included
    if k == 1:
        assert_terms_close({S: x for S, x in ksii.items() if S}, T.mobius_to_shapley(a))
    # the top order equals the SII
    sii = T.mobius_to_sii(a, k)
    for S in coalitions(range(n), k):
        if len(S) == k:
            assert ksii.get(S, 0.0) == pytest.approx(sii[S])


def test_ksii_of_order_n_is_the_mobius_transform():
    n = 5
    v = random_table(n, 80)
    a = mobius_terms(v)
    assert_terms_close(T.mobius_to_ksii(a, n), a, atol=1e-10)


# ------------------------------------------------------------------------------------------
# convert
# ------------------------------------------------------------------------------------------
def test_convert_from_fourier_and_mobius_agree():
    n = 5
    v = random_table(n, 90)
    fourier = T.table_to_terms(T.fourier_transform(v))
    mobius = mobius_terms(v)
    for target in T.INDICES:
        order = 2 if target in ("k-sii", "stii", "fsii", "fbii") else None
        got_f = T.convert(fourier, "fourier", target, n, max_order=order)
        got_m = T.convert(mobius, "mobius", target, n, max_order=order)
        assert_terms_close(got_f, got_m, atol=1e-10)
    assert_terms_close(T.convert(fourier, "fourier", "sii", n), brute_sii(v, n, n))
    assert_terms_close(T.convert(mobius, "mobius", "fourier", n), fourier, atol=1e-12)
    assert_terms_close(T.convert(fourier, "fourier", "shapley", n), brute_shapley(v, n))
    assert_terms_close(T.convert(fourier, "fourier", "fsii", n, max_order=3), faithful_least_squares(v, n, 3, True), 1e-8)
    assert_terms_close(T.convert(mobius, "mobius", "bii", n, max_order=2), brute_bii(v, n, 2))
    trunc = T.convert(mobius, "mobius", "mobius", n, max_order=2)
    assert max(len(k) for k in trunc) == 2


def test_convert_shapley_lists_every_player():
    sv = T.convert({(0, 1): 2.0}, "mobius", "shapley", 4)
    assert sv == {(0,): 1.0, (1,): 1.0, (2,): 0.0, (3,): 0.0}


def test_convert_errors():
    terms = {(0,): 1.0}
    with pytest.raises(ValueError, match="valid targets: fourier, mobius, shapley"):
        T.convert(terms, "mobius", "nope", 2)
    with pytest.raises(ValueError, match="valid sources"):
        T.convert(terms, "shapley", "sii", 2)
    for target in ("k-sii", "stii", "fsii", "fbii"):
        with pytest.raises(ValueError, match="max_order"):
            T.convert(terms, "mobius", target, 2)
    with pytest.raises(ValueError, match="max_order"):
        T.convert(terms, "mobius", "sii", 2, max_order=0)
    with pytest.raises(ValueError, match="n_players"):
        T.convert({(0, 3): 1.0}, "mobius", "sii", 2)
    assert set(T.INDICES) == {"fourier", "mobius", "shapley", "banzhaf", "sii", "bii", "k-sii", "stii", "fsii", "fbii"}
