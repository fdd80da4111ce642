"""Tests for featurelens.interactions.bch (shortened binary BCH codes for SPEX delays).

Reference values: Lin & Costello, *Error Control Coding* (2nd ed.), Example 6.1 / Table 6.x
(BCH(15,7) and BCH(15,5) with primitive polynomial x^4 + x + 1); SPEX parameter table of the
reference sheet sec. 1.2 (computed from sparse-transform's BCH parameter search).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from featurelens.interactions.bch import PRIMITIVE_POLYNOMIALS, BCHCode, GF2m, delay_matrix


# ---------------------------------------------------------------------------------------------
# independent references written for the tests
def clmul_mod(a: int, b: int, poly: int, m: int) -> int:
    """Carry-less multiply of a and b modulo the degree-m polynomial ``poly`` (bitwise)."""
    out = 0
    while b:
        if b & 1:
            out ^= a
        b >>= 1
        a <<= 1
        if a >> m:
            a ^= poly
    return out


def gf2_polymod(a, b):
    """Remainder of a(x) / b(x) over GF(2); arrays lowest degree first."""
    a = [int(x) for x in a]
    b = [int(x) for x in b]
    while b and b[-1] == 0:
        b.pop()
    db = len(b) - 1
    for i in range(len(a) - 1, db - 1, -1):
        if a[i]:
            for j in range(db + 1):
                a[i - db + j] ^= b[j]
    return a[:db]


def all_messages(n):
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.uint8)


def error_patterns(length, w):
    pats = []
    for pos in itertools.combinations(range(length), w):
        e = np.zeros(length, dtype=np.uint8)
        e[list(pos)] = 1
        pats.append(e)
    return np.array(pats)


# ---------------------------------------------------------------------------------------------
# GF(2^m)
@pytest.mark.parametrize("m", range(2, 13))
def test_alpha_has_full_order(m):
    poly = PRIMITIVE_POLYNOMIALS[m]
    # multiplicative order of alpha = x, computed bitwise, independently of GF2m
    a, order = 2, 1
    while a != 1:
        a = clmul_mod(a, 2, poly, m)
        order += 1
    assert order == 2**m - 1
    f = GF2m(m)
    assert sorted(f.exp[: f.order].tolist()) == list(range(1, 2**m))


def test_all_table_entries_build():
    for m in range(2, 17):
        f = GF2m(m)
        assert f.order == 2**m - 1
    with pytest.raises(ValueError):
        GF2m(17)
    with pytest.raises(ValueError):
        GF2m(1)


@pytest.mark.parametrize("m", [2, 3, 4, 5, 8, 11, 16])
def test_field_arithmetic(m):
    f = GF2m(m)
    rng = np.random.default_rng(m)
    a, b, c = rng.integers(0, 2**m, size=(3, 300))
    ab = f.multiply(a, b)
    ref = np.array([clmul_mod(int(x), int(y), f.poly, m) for x, y in zip(a, b)])
    np.testing.assert_array_equal(ab, ref)
    np.testing.assert_array_equal(f.multiply(ab, c), f.multiply(a, f.multiply(b, c)))
    np.testing.assert_array_equal(f.multiply(a, b ^ c), f.multiply(a, b) ^ f.multiply(a, c))
    np.testing.assert_array_equal(f.multiply(a, b), f.multiply(b, a))
    nz = a[a != 0]
    np.testing.assert_array_equal(f.multiply(nz, f.inverse(nz)), np.ones_like(nz))
    # power by repeated multiplication
    for k in (0, 1, 2, 5, 2**m - 1, 2**m + 3):
        acc = np.ones_like(a)
        for _ in range(k % (2**m - 1) if k >= 2**m - 1 else k):
            acc = f.multiply(acc, a)
        if k >= 2**m - 1:  # x^(N) = 1 for x != 0 (Fermat); 0^k = 0 for k > 0
            acc = np.where(a == 0, 0, acc)
        np.testing.assert_array_equal(f.power(a, k), acc)
    np.testing.assert_array_equal(f.multiply(f.power(nz, -1), nz), np.ones_like(nz))
    with pytest.raises(ZeroDivisionError):
        f.inverse(np.array([0, 1]))


def test_minimal_polynomials_gf16():
    f = GF2m(4)
    # Lin & Costello Table 2.9 (GF(16) from x^4 + x + 1)
    assert f.minimal_polynomial(1).tolist() == [1, 1, 0, 0, 1]  # 1 + x + x^4
    assert f.minimal_polynomial(3).tolist() == [1, 1, 1, 1, 1]  # 1 + x + x^2 + x^3 + x^4
    assert f.minimal_polynomial(5).tolist() == [1, 1, 1]  # 1 + x + x^2
    assert f.minimal_polynomial(7).tolist() == [1, 0, 0, 1, 1]  # 1 + x^3 + x^4
    assert f.cyclotomic_coset(3) == [3, 6, 9, 12]


# ---------------------------------------------------------------------------------------------
# code construction
def test_textbook_bch_15_7_and_15_5():
    c = BCHCode(7, 2)
    assert (c.m, c.N, c.k_code, c.n_parity, c.length) == (4, 15, 7, 8, 15)
    # g(x) = 1 + x^4 + x^6 + x^7 + x^8
    assert c.generator_poly.tolist() == [1, 0, 0, 0, 1, 0, 1, 1, 1]
    c5 = BCHCode(5, 3)
    assert (c5.m, c5.k_code, c5.n_parity) == (4, 5, 10)
    # g(x) = 1 + x + x^2 + x^4 + x^5 + x^8 + x^10
    assert c5.generator_poly.tolist() == [1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1]


@pytest.mark.parametrize(
    "n,t,nc,kc",
    [
        (16, 5, 63, 36),
        (64, 5, 127, 92),
        (128, 5, 255, 215),
        (1000, 5, 2047, 1992),
        (1000, 3, 2047, 2014),
        (1000, 2, 1023, 1003),
        (20, 2, 31, 21),
    ],
)
def test_parameters_match_spex_table(n, t, nc, kc):
    c = BCHCode(n, t)
    assert (c.N, c.k_code, c.n_parity) == (nc, kc, nc - kc)
    assert delay_matrix(n, t).shape == (nc - kc + 1, n)


@pytest.mark.parametrize("n,t", [(7, 2), (5, 3), (20, 2), (30, 4), (100, 3)])
def test_generator_divides_x_N_minus_1(n, t):
    c = BCHCode(n, t)
    xN1 = [1] + [0] * (c.N - 1) + [1]
    assert not any(gf2_polymod(xN1, c.generator_poly))


@pytest.mark.parametrize("n,t", [(7, 2), (9, 2), (10, 3), (11, 1)])
def test_minimum_distance_brute_force(n, t):
    c = BCHCode(n, t)
    cw = c.encode(all_messages(n))
    weights = cw[1:].sum(axis=1)
    assert weights.min() >= 2 * t + 1


def test_matrices_and_encoding():
    rng = np.random.default_rng(1)
    for n, t in [(7, 2), (13, 3), (100, 3)]:
        c = BCHCode(n, t)
        G, H = c.generator_matrix(), c.parity_check_matrix()
        assert G.shape == (n, c.length) and H.shape == (c.n_parity, c.length)
        assert not ((G.astype(int) @ H.T.astype(int)) % 2).any()
        msgs = rng.integers(0, 2, size=(40, n))
        cw = c.encode(msgs)
        np.testing.assert_array_equal(cw[:, :n], msgs)  # systematic [message, parity]
        assert not ((H.astype(int) @ cw.T.astype(int)) % 2).any()
        # each codeword, as a polynomial via c.exponents, is a multiple of g(x)
        for word in cw[:5]:
            poly = np.zeros(c.N, dtype=int)
            poly[c.exponents] = word
            assert not any(gf2_polymod(poly, c.generator_poly))
        assert not c.syndromes(cw).any()
        D = c.delay_matrix()
        assert not D[0].any()
        np.testing.assert_array_equal((msgs @ D.T.astype(int)) % 2, np.concatenate(
            [np.zeros((40, 1), dtype=np.uint8), cw[:, n:]], axis=1))
    assert c.encode(msgs[0]).shape == (c.length,)


def test_errors():
    for n, t in [(0, 1), (5, 0), (-1, 2), (5, -1)]:
        with pytest.raises(ValueError):
            BCHCode(n, t)
    with pytest.raises(ValueError, match="cannot build"):
        BCHCode(70000, 1)  # needs m = 17
    c = BCHCode(7, 2)
    with pytest.raises(ValueError):
        c.encode(np.zeros((2, 6)))
    with pytest.raises(ValueError):
        c.encode(np.full((2, 7), 2))
    with pytest.raises(ValueError):
        c.decode_hard(np.zeros((2, 14)))
    with pytest.raises(ValueError):
        c.decode_soft(np.zeros((2, 14)))


# ---------------------------------------------------------------------------------------------
# hard decoding
@pytest.mark.parametrize("n,t", [(7, 2), (8, 3), (20, 2)])
def test_hard_decoding_corrects_all_patterns_up_to_t(n, t):
    c = BCHCode(n, t)
    rng = np.random.default_rng(n + t)
    for w in range(0, t + 1):
        E = error_patterns(c.length, w)
        msgs = rng.integers(0, 2, size=(len(E), n)).astype(np.uint8)
        dec, ok = c.decode_hard(c.encode(msgs) ^ E)
        assert ok.all(), (w, np.flatnonzero(~ok)[:5])
        np.testing.assert_array_equal(dec, msgs)


@pytest.mark.parametrize("n,t", [(7, 2), (20, 2), (8, 3)])
def test_hard_decoding_beyond_t(n, t):
    c = BCHCode(n, t)
    rng = np.random.default_rng(7)
    E = error_patterns(c.length, t + 1)
    msgs = rng.integers(0, 2, size=(len(E), n)).astype(np.uint8)
    cw = c.encode(msgs)
    dec, ok = c.decode_hard(cw ^ E)
    wrong = (dec != msgs).any(axis=1)
    # t+1 errors are never "corrected" to the sent word (distance >= 2t+1) ...
    assert not (ok & ~wrong).any()
    # ... most such patterns are detected (measured: 60% for t=2, 95% for t=3) ...
    assert (~ok).mean() > 0.5
    # ... and whenever ok is claimed, the output is a codeword within distance t of the input
    recoded = c.encode(dec[ok])
    assert ((recoded ^ (cw ^ E)[ok]).sum(axis=1) <= t).all()
    # failures return the received message bits unchanged
    np.testing.assert_array_equal(dec[~ok], (cw ^ E)[~ok, :n])


@pytest.mark.parametrize("n,t", [(20, 2), (12, 3), (100, 3)])
def test_chien_search_restricted_to_shortened_positions(n, t):
    """A word at distance 1 from a mother-code codeword whose only extra one lies in the
    shortened-away part has its error located outside the valid positions: must fail."""
    c = BCHCode(n, t)
    p = c.n_parity
    x = [0] * (p + n) + [1]  # x^(p+n): first message coefficient removed by shortening
    rem = gf2_polymod(x, c.generator_poly)
    received = np.concatenate([np.zeros(n, dtype=np.uint8), np.array(rem, dtype=np.uint8)])
    assert received.sum() >= 2 * t  # far from every shortened codeword
    dec, ok = c.decode_hard(received)
    assert not ok


def test_hard_decoding_random_big_code():
    c = BCHCode(100, 3)
    rng = np.random.default_rng(3)
    q = 400
    msgs = rng.integers(0, 2, size=(q, 100)).astype(np.uint8)
    cw = c.encode(msgs)
    E = np.zeros_like(cw)
    w = rng.integers(0, 4, size=q)
    for i in range(q):
        E[i, rng.choice(c.length, w[i], replace=False)] = 1
    dec, ok = c.decode_hard(cw ^ E)
    assert ok.all()
    np.testing.assert_array_equal(dec, msgs)
    one, ok1 = c.decode_hard(cw[0] ^ E[0])
    assert ok1 and one.shape == (100,)


def test_decode_delays_recovers_low_degree_k():
    """SPEX singleton: delayed signs give the parity bits of k; |k| + errors <= t is recovered."""
    n, t = 50, 4
    c = BCHCode(n, t)
    D = c.delay_matrix()
    rng = np.random.default_rng(5)
    q = 300
    K = np.zeros((q, n), dtype=np.uint8)
    n_err = np.zeros(q, dtype=int)
    Y = np.zeros((q, c.n_parity), dtype=np.uint8)
    for i in range(q):
        deg = rng.integers(0, t + 1)
        K[i, rng.choice(n, deg, replace=False)] = 1
        n_err[i] = rng.integers(0, t - deg + 1)
        bits = (D.astype(int) @ K[i]) % 2
        assert bits[0] == 0
        y = bits[1:].astype(np.uint8)
        y[rng.choice(c.n_parity, n_err[i], replace=False)] ^= 1
        Y[i] = y
    k_hat, ok = c.decode_delays(Y)
    assert ok.all()
    np.testing.assert_array_equal(k_hat, K)
    # soft version with sign-only reliabilities agrees
    k_soft, ok_soft = c.decode_delays_soft(1.0 - 2.0 * Y)
    assert ok_soft.all()
    np.testing.assert_array_equal(k_soft, K)


# ---------------------------------------------------------------------------------------------
# soft decoding
def test_chase_at_least_as_good_as_hard():
    c = BCHCode(20, 2)
    rng = np.random.default_rng(11)
    q = 500
    msgs = rng.integers(0, 2, size=(q, c.n)).astype(np.uint8)
    cw = c.encode(msgs)
    rel = (1.0 - 2.0 * cw) + rng.normal(scale=0.55, size=cw.shape)
    hard = (rel < 0).astype(np.uint8)
    dh, okh = c.decode_hard(hard)
    ds, oks = c.decode_soft(rel)
    hard_right = okh & (dh == msgs).all(axis=1)
    soft_right = oks & (ds == msgs).all(axis=1)
    assert soft_right.sum() >= hard_right.sum()
    assert soft_right.sum() > hard_right.sum()  # at this SNR Chase strictly helps
    # the first Chase test pattern is the hard decision, so when hard decoding gives the
    # right word within distance t soft decoding fails only for a better-metric candidate
    assert (soft_right | ~hard_right).mean() > 0.97


def test_chase_corrects_t_plus_one_weak_errors():
    c = BCHCode(20, 2)
    t = c.t
    rng = np.random.default_rng(2)
    q = 200
    msgs = rng.integers(0, 2, size=(q, c.n)).astype(np.uint8)
    cw = c.encode(msgs)
    rel = (1.0 - 2.0 * cw) * rng.uniform(0.8, 1.2, size=cw.shape)
    for i in range(q):
        pos = rng.choice(c.length, t + 1, replace=False)
        rel[i, pos] = -np.sign(rel[i, pos]) * rng.uniform(0.01, 0.1, size=t + 1)
    hard = (rel < 0).astype(np.uint8)
    assert ((hard ^ cw).sum(axis=1) == t + 1).all()
    dh, okh = c.decode_hard(hard)
    assert not (okh & (dh == msgs).all(axis=1)).any()
    ds, oks = c.decode_soft(rel)
    assert oks.all()
    np.testing.assert_array_equal(ds, msgs)
    # n_flip=0 is plain hard decoding
    d0, ok0 = c.decode_soft(rel, n_flip=0)
    np.testing.assert_array_equal(ok0, okh)
    np.testing.assert_array_equal(d0[ok0], dh[okh])


def test_soft_n100_t3_round_trip():
    c = BCHCode(100, 3)
    assert (c.m, c.n_parity, c.length) == (7, 21, 121)
    rng = np.random.default_rng(4)
    msgs = rng.integers(0, 2, size=(100, 100)).astype(np.uint8)
    cw = c.encode(msgs)
    rel = (1.0 - 2.0 * cw) * 2.0 + rng.normal(scale=0.6, size=cw.shape)
    ds, oks = c.decode_soft(rel)
    assert (oks & (ds == msgs).all(axis=1)).mean() > 0.95
    one, ok1 = c.decode_soft(1.0 - 2.0 * cw[0])
    assert ok1 and (one == msgs[0]).all()
    with pytest.raises(ValueError):
        c.decode_soft(rel, n_flip=-1)
    # deeper Chase search (2t, as in spectralexplain) is at least as good here
    d2, ok2 = c.decode_soft(rel, n_flip=2 * c.t)
    assert (ok2 & (d2 == msgs).all(axis=1)).sum() >= (oks & (ds == msgs).all(axis=1)).sum()


def test_block_processing_matches_unblocked():
    c = BCHCode(30, 3)
    rng = np.random.default_rng(8)
    msgs = rng.integers(0, 2, size=(57, 30)).astype(np.uint8)
    cw = c.encode(msgs)
    rel = (1.0 - 2.0 * cw) + rng.normal(scale=0.7, size=cw.shape)
    hard = (rel < 0).astype(np.uint8)
    ref_h, ref_s = c.decode_hard(hard), c.decode_soft(rel)
    c._BLOCK_ELEMENTS = 1  # one row per block
    for got, ref in ((c.decode_hard(hard), ref_h), (c.decode_soft(rel), ref_s)):
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
    empty = c.decode_soft(np.zeros((0, c.length)))
    assert empty[0].shape == (0, 30) and empty[1].shape == (0,)


def test_decode_delays_soft_beats_hard_on_noisy_ratios():
    n, t = 40, 3
    c = BCHCode(n, t)
    D = c.delay_matrix().astype(int)
    rng = np.random.default_rng(9)
    q = 300
    K = np.zeros((q, n), dtype=np.uint8)
    for i in range(q):
        K[i, rng.choice(n, rng.integers(0, 3), replace=False)] = 1
    signs = 1.0 - 2.0 * ((K.astype(int) @ D[1:].T) % 2)
    rho = signs + rng.normal(scale=0.6, size=signs.shape)
    kh, okh = c.decode_delays((rho < 0).astype(np.uint8))
    ks, oks = c.decode_delays_soft(rho)
    hard_right = (okh & (kh == K).all(axis=1)).sum()
    soft_right = (oks & (ks == K).all(axis=1)).sum()
    assert soft_right >= hard_right
    # a low-degree prior on the message bits helps further on this data (measured 279 -> 288)
    kp, okp = c.decode_delays_soft(rho, message_prior=0.5)
    assert (okp & (kp == K).all(axis=1)).sum() >= soft_right
    with pytest.raises(ValueError):
        c.decode_delays_soft(rho, message_prior=-1.0)
    with pytest.raises(ValueError):
        c.decode_delays_soft(rho[:, :-1])
    with pytest.raises(ValueError):
        c.decode_delays(np.zeros((2, c.n_parity + 1)))
