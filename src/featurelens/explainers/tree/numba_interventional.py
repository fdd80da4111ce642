"""Compiled interventional TreeSHAP kernels (numba), on the packed paths of :mod:`.numba_kernels`.

Each row of x and each background row b is turned into bit masks, one per path (bit j set where the
row satisfies element j; :func:`satisfied_masks`). For one (x, b) pair and one path, with o and q
the two masks: the path is dead when some element is in neither (the leaf is unreachable for every
coalition); otherwise, with a = #{in x only} and b' = #{in b only}, the single-reference Shapley
value of an element in x only is ``+v (a-1)! b'! / (a+b')!`` and of one in b only ``-v a! (b'-1)! /
(a+b')!`` (the integral of the per-path product game, a Beta function; Lundberg et al. 2020, the
interventional algorithm; Janzing et al. 2020), and the interaction index of two such elements
``sign_i sign_j v a''! b''! / (a''+b''+1)!`` with a'', b'' the other elements of each group
(Grabisch and Roubens 1999). The values are the mean over the background rows.

As the path-dependent kernels, each has a serial and a parallel form around one compiled row body,
chosen by the amount of work (:data:`.numba_kernels.PARALLEL_MIN_WORK`), and is cached on disk.
"""

from __future__ import annotations

import math

import numpy as np

from .numba_kernels import HAVE_NUMBA, Packed, _run, njit

if HAVE_NUMBA:
    from numba import prange

__all__ = ["satisfied_masks", "interventional_values", "interventional_pairs"]

if HAVE_NUMBA:

    @njit(cache=True)
    def _masks(X, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count):
        """(n, P) uint64: bit j set where row satisfies element j of path p."""
        n = X.shape[0]
        P = feature.shape[0]
        out = np.zeros((n, P), dtype=np.uint64)
        for r in range(n):
            for p in range(P):
                m = np.uint64(0)
                for j in range(length[p]):
                    v = X[r, feature[p, j]]
                    if v != v:
                        ok = nan_ok[p, j]
                    else:
                        row = cat_row[p, j]
                        if row >= 0:
                            n_cat = cat_count[row]
                            code = n_cat
                            if v >= 0.0 and v < n_cat and v == math.floor(v):
                                code = int(v)
                            ok = cat_table[row, code]
                        else:
                            ok = lower[p, j] < v and v <= upper[p, j]
                    if ok:
                        m |= np.uint64(1) << np.uint64(j)
                out[r, p] = m
        return out

    @njit(cache=True, inline="always")
    def _popcount(m):
        c = 0
        while m:
            m &= m - np.uint64(1)
            c += 1
        return c

    @njit(cache=True)
    def _iv_row(x_masks, bg_masks, r, feature, length, full, value, beta, scale, out):
        """Single-reference Shapley values of row ``r`` summed over ``bg_masks``, times ``scale``."""
        P = x_masks.shape[1]
        R = bg_masks.shape[0]
        K = value.shape[1]
        for p in range(P):
            xm = x_masks[r, p]
            for b in range(R):
                bm = bg_masks[b, p]
                if (xm | bm) != full[p]:  # an element neither satisfies: the leaf is unreachable
                    continue
                only_x = xm & ~bm
                only_b = bm & ~xm
                na = _popcount(only_x)
                nb = _popcount(only_b)
                c_x = beta[na - 1, nb] * scale if na > 0 else 0.0
                c_b = beta[na, nb - 1] * scale if nb > 0 else 0.0
                for j in range(length[p]):
                    bit = np.uint64(1) << np.uint64(j)
                    if only_x & bit:
                        c = c_x
                    elif only_b & bit:
                        c = -c_b
                    else:
                        continue
                    f = feature[p, j]
                    for k in range(K):
                        out[r, f, k] += c * value[p, k]

    @njit(cache=True)
    def _iv_serial(x_masks, bg_masks, feature, length, full, value, beta, scale, out):
        for r in range(x_masks.shape[0]):
            _iv_row(x_masks, bg_masks, r, feature, length, full, value, beta, scale, out)

    @njit(cache=True, parallel=True)
    def _iv_parallel(x_masks, bg_masks, feature, length, full, value, beta, scale, out):
        for r in prange(x_masks.shape[0]):
            _iv_row(x_masks, bg_masks, r, feature, length, full, value, beta, scale, out)

    @njit(cache=True)
    def _ip_row(x_masks, bg_masks, r, feature, length, full, value, beta, scale, out, sign, pos):
        """Single-reference interaction indices of row ``r`` (both orders) summed over
        ``bg_masks``, times ``scale``, with the row buffers ``sign`` and ``pos`` (D,)."""
        P = x_masks.shape[1]
        R = bg_masks.shape[0]
        K = value.shape[1]
        for p in range(P):
            L = length[p]
            xm = x_masks[r, p]
            for b in range(R):
                bm = bg_masks[b, p]
                if (xm | bm) != full[p]:
                    continue
                only_x = xm & ~bm
                only_b = bm & ~xm
                na = _popcount(only_x)
                nb = _popcount(only_b)
                if na + nb < 2:
                    continue
                cnt = 0
                for j in range(L):
                    bit = np.uint64(1) << np.uint64(j)
                    if only_x & bit:
                        pos[cnt] = j
                        sign[cnt] = 1.0
                        cnt += 1
                    elif only_b & bit:
                        pos[cnt] = j
                        sign[cnt] = -1.0
                        cnt += 1
                for u in range(cnt):
                    for w in range(u + 1, cnt):
                        # the other elements: a' of x's group, b' of b's group
                        ra = na - (1 if sign[u] > 0 else 0) - (1 if sign[w] > 0 else 0)
                        rb = nb - (1 if sign[u] < 0 else 0) - (1 if sign[w] < 0 else 0)
                        c = sign[u] * sign[w] * beta[ra, rb] * scale
                        fa = feature[p, pos[u]]
                        fb = feature[p, pos[w]]
                        for k in range(K):
                            v = c * value[p, k]
                            out[r, fa, fb, k] += v
                            out[r, fb, fa, k] += v

    @njit(cache=True)
    def _ip_serial(x_masks, bg_masks, feature, length, full, value, beta, scale, out):
        D = feature.shape[1]
        sign = np.empty(D)
        pos = np.empty(D, dtype=np.int64)
        for r in range(x_masks.shape[0]):
            _ip_row(x_masks, bg_masks, r, feature, length, full, value, beta, scale, out, sign, pos)

    @njit(cache=True, parallel=True)
    def _ip_parallel(x_masks, bg_masks, feature, length, full, value, beta, scale, out):
        D = feature.shape[1]
        for r in prange(x_masks.shape[0]):
            sign = np.empty(D)
            pos = np.empty(D, dtype=np.int64)
            _ip_row(x_masks, bg_masks, r, feature, length, full, value, beta, scale, out, sign, pos)


def satisfied_masks(packed: Packed, x: np.ndarray) -> np.ndarray:
    """(n, P) uint64 bit masks of the elements each row of ``x`` (n, d) satisfies."""
    return _masks(np.ascontiguousarray(x), packed.feature, packed.lower, packed.upper, packed.nan_ok,
                  packed.length, packed.cat_row, packed.cat_table, packed.cat_count)


def interventional_values(packed: Packed, x_masks: np.ndarray, bg_masks: np.ndarray, scale: float,
                          out: np.ndarray) -> None:
    """Add ``scale`` times the single-reference TreeSHAP values of the rows of ``x_masks`` summed
    over the background rows of ``bg_masks`` (masks from :func:`satisfied_masks`) into ``out``
    (n, d, K)."""
    _run(_iv_serial, _iv_parallel, x_masks.size * bg_masks.shape[0], x_masks, bg_masks, packed.feature,
         packed.length, packed.full, packed.value, packed.beta, float(scale), out)


def interventional_pairs(packed: Packed, x_masks: np.ndarray, bg_masks: np.ndarray, scale: float,
                         out: np.ndarray) -> None:
    """The same for the interaction indices (both orders) into ``out`` (n, d, d, K)."""
    _run(_ip_serial, _ip_parallel, x_masks.size * bg_masks.shape[0] * max(1, packed.max_length),
         x_masks, bg_masks, packed.feature, packed.length, packed.full, packed.value, packed.beta,
         float(scale), out)
