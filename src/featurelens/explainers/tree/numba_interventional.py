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

A path's contribution depends on the background row only through its mask, so the background is
read once per path as its distinct masks and how many rows have each (:func:`background_masks`;
at most 2^L of them for a path of L elements, often far fewer than the background rows), path-major
so that the kernels read them contiguously; the kernels add one term per distinct mask, weighted
by its count. For a row's mask xm only the masks that hold every element the row fails (``need =
full & ~xm``) keep the path alive; the background-only elements are then exactly ``need``, so the
negative terms of a path are one sum, scattered once per path and row.

Values (:func:`interventional_values_fused`) go one path at a time: the background's masks of
the path are made, sorted into their distinct values and used by every row before the next path,
so the memory is one path's background masks per thread whatever the ensemble's size (a 500-tree
booster of depth 8 has 127,500 paths: holding the masks of all of them for 1,000 background rows
would take 2 GB). The parallel form splits the paths between the threads, each adding into its own
output. Interaction indices (:func:`interventional_pairs`) take the masks of a block of paths
(:func:`satisfied_masks`, :func:`background_masks`), split by rows, since a per-thread copy of
their (n, d, d) output would cost more than the masks.

Each has a serial and a parallel form, chosen by the amount of work
(:data:`.numba_kernels.PARALLEL_MIN_WORK`), and is cached on disk.
"""

from __future__ import annotations

import math

import numpy as np

from .numba_kernels import _KERNEL_LOCK, HAVE_NUMBA, Packed, _parallel, _run, njit

if HAVE_NUMBA:
    from numba import prange

__all__ = ["satisfied_masks", "background_masks", "interventional_values_fused", "interventional_pairs"]

if HAVE_NUMBA:

    @njit(cache=True, inline="always")
    def _mask_of(X, r, p, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count):
        """The bit mask of row ``r`` of ``X`` on path ``p``: bit j set where it satisfies element j."""
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
        return m

    @njit(cache=True)
    def _masks(X, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count):
        """(n, P) uint64: bit j set where row satisfies element j of path p."""
        n = X.shape[0]
        P = feature.shape[0]
        out = np.zeros((n, P), dtype=np.uint64)
        for r in range(n):
            for p in range(P):
                out[r, p] = _mask_of(X, r, p, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count)
        return out

    @njit(cache=True)
    def _distinct(masks_t):
        """The distinct masks of each path (row of ``masks_t``, (P, R) uint64) and how many background
        rows have each: ``(values (P, R), counts (P, R) float64, number (P,))``, the first
        ``number[p]`` entries of row p used."""
        P, R = masks_t.shape
        vals = np.zeros((P, R), dtype=np.uint64)
        cnt = np.zeros((P, R))
        num = np.zeros(P, dtype=np.int64)
        for p in range(P):
            s = np.sort(masks_t[p])
            u = 0
            for i in range(R):
                if u > 0 and s[i] == vals[p, u - 1]:
                    cnt[p, u - 1] += 1.0
                else:
                    vals[p, u] = s[i]
                    cnt[p, u] = 1.0
                    u += 1
            num[p] = u
        return vals, cnt, num

    @njit(cache=True, inline="always")
    def _popcount(m):
        c = 0
        while m:
            m &= m - np.uint64(1)
            c += 1
        return c

    @njit(cache=True, inline="always")
    def _iv_path(xm, p, r, vals, cnt, num, feature, length, full, value, beta, scale, out, acc):
        """Add row ``r``'s single-reference Shapley values on path ``p`` (its mask ``xm``), summed
        over the background's distinct masks of that path (the first ``num`` of ``vals``/``cnt``),
        times ``scale``, into ``out``; ``acc`` a buffer of the path's length.

        A background mask ``u`` keeps the path alive for the row's mask ``xm`` when it holds every
        element the row fails (``need``); then the background-only elements are exactly ``need``
        (nb of them) and the row-only ones ``xm & ~u`` (na): each of the former gets
        ``-v B(na, nb - 1)``, each of the latter ``+v B(na - 1, nb)`` (B the Beta table).
        """
        K = value.shape[1]
        L = length[p]
        need = full[p] & ~xm
        nb = _popcount(need)
        for j in range(L):
            acc[j] = 0.0
        neg = 0.0
        alive = False
        for i in range(num):
            u = vals[i]
            if (u & need) != need:  # an element neither satisfies: the leaf is unreachable
                continue
            alive = True
            only_x = xm & ~u
            na = _popcount(only_x)
            c = cnt[i]
            if nb > 0:
                neg += c * beta[na, nb - 1]
            if na > 0:
                cx = c * beta[na - 1, nb]
                for j in range(L):
                    if (only_x >> np.uint64(j)) & np.uint64(1):
                        acc[j] += cx
        if not alive:
            return
        for j in range(L):
            bit = np.uint64(1) << np.uint64(j)
            if need & bit:
                c = -neg * scale
            elif xm & bit:
                c = acc[j] * scale
                if c == 0.0:
                    continue
            else:
                continue
            f = feature[p, j]
            for k in range(K):
                out[r, f, k] += c * value[p, k]

    @njit(cache=True)
    def _ivf_paths(p0, p1, X, B, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count, full, value,
                   beta, scale, out, reach, bm, cnt, acc):
        """The paths ``p0 .. p1 - 1`` one at a time: the background rows' masks of the path
        (``bm``, sorted in place into its distinct masks and their counts ``cnt``, and the number
        of rows reaching its leaf into ``reach``), then every row's :func:`_iv_path`. Memory: the
        buffers only (the background's R masks), whatever the number of paths."""
        n = X.shape[0]
        R = B.shape[0]
        for p in range(p0, p1):
            for b in range(R):
                bm[b] = _mask_of(B, b, p, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count)
            bm.sort()
            num = 0
            hits = 0
            fp = full[p]
            for b in range(R):
                m = bm[b]
                if m == fp:
                    hits += 1
                if num > 0 and m == bm[num - 1]:
                    cnt[num - 1] += 1.0
                else:
                    bm[num] = m  # num <= b: the distinct masks overwrite the sorted ones behind
                    cnt[num] = 1.0
                    num += 1
            reach[p] = hits
            for r in range(n):
                xm = _mask_of(X, r, p, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count)
                _iv_path(xm, p, r, bm, cnt, num, feature, length, full, value, beta, scale, out, acc)

    @njit(cache=True)
    def _ivf_serial(X, B, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count, full, value, beta,
                    scale, out, reach):
        R = B.shape[0]
        _ivf_paths(0, feature.shape[0], X, B, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count,
                   full, value, beta, scale, out, reach, np.empty(R, dtype=np.uint64), np.empty(R),
                   np.empty(max(1, feature.shape[1])))

    @njit(cache=True, parallel=True)
    def _ivf_parallel(X, B, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count, full, value, beta,
                      scale, outs, reach):
        """The paths split into ``outs.shape[0]`` contiguous parts, each adding into its own
        output (no two threads write one element; the caller sums them)."""
        T = outs.shape[0]
        P = feature.shape[0]
        R = B.shape[0]
        for t in prange(T):
            _ivf_paths(t * P // T, (t + 1) * P // T, X, B, feature, lower, upper, nan_ok, length, cat_row, cat_table,
                       cat_count, full, value, beta, scale, outs[t], reach, np.empty(R, dtype=np.uint64),
                       np.empty(R), np.empty(max(1, feature.shape[1])))

    @njit(cache=True)
    def _ip_row(x_masks, r, vals, cnt, num, feature, length, full, value, beta, scale, out, sign, pos, acc2):
        """Single-reference interaction indices of row ``r`` (both orders) summed over the
        background (distinct masks per path, as :func:`_iv_path`), times ``scale``, with the buffers
        ``sign``, ``pos`` (D,) and ``acc2`` (D, D)."""
        P = x_masks.shape[1]
        K = value.shape[1]
        for p in range(P):
            L = length[p]
            xm = x_masks[r, p]
            need = full[p] & ~xm
            nb = _popcount(need)
            for a in range(L):
                for b in range(L):
                    acc2[a, b] = 0.0
            used = False
            for i in range(num[p]):
                u = vals[p, i]
                if (u & need) != need:
                    continue
                only_x = xm & ~u
                na = _popcount(only_x)
                if na + nb < 2:
                    continue
                used = True
                c = cnt[p, i]
                n_el = 0
                for j in range(L):
                    bit = np.uint64(1) << np.uint64(j)
                    if only_x & bit:
                        pos[n_el] = j
                        sign[n_el] = 1.0
                        n_el += 1
                    elif need & bit:
                        pos[n_el] = j
                        sign[n_el] = -1.0
                        n_el += 1
                for s in range(n_el):
                    for w in range(s + 1, n_el):
                        # the other elements: ra of the row's group, rb of the background's
                        ra = na - (1 if sign[s] > 0 else 0) - (1 if sign[w] > 0 else 0)
                        rb = nb - (1 if sign[s] < 0 else 0) - (1 if sign[w] < 0 else 0)
                        acc2[pos[s], pos[w]] += c * sign[s] * sign[w] * beta[ra, rb]
            if not used:
                continue
            for a in range(L):
                for b in range(a + 1, L):
                    c = acc2[a, b] * scale
                    if c == 0.0:
                        continue
                    fa = feature[p, a]
                    fb = feature[p, b]
                    for k in range(K):
                        v = c * value[p, k]
                        out[r, fa, fb, k] += v
                        out[r, fb, fa, k] += v

    @njit(cache=True)
    def _ip_serial(x_masks, vals, cnt, num, feature, length, full, value, beta, scale, out):
        D = max(1, feature.shape[1])
        sign = np.empty(D)
        pos = np.empty(D, dtype=np.int64)
        acc2 = np.empty((D, D))
        for r in range(x_masks.shape[0]):
            _ip_row(x_masks, r, vals, cnt, num, feature, length, full, value, beta, scale, out, sign, pos, acc2)

    @njit(cache=True, parallel=True)
    def _ip_parallel(x_masks, vals, cnt, num, feature, length, full, value, beta, scale, out):
        D = max(1, feature.shape[1])
        for r in prange(x_masks.shape[0]):
            sign = np.empty(D)
            pos = np.empty(D, dtype=np.int64)
            acc2 = np.empty((D, D))
            _ip_row(x_masks, r, vals, cnt, num, feature, length, full, value, beta, scale, out, sign, pos, acc2)


def satisfied_masks(packed: Packed, x: np.ndarray, paths: slice = slice(None)) -> np.ndarray:
    """(n, P) uint64 bit masks of the elements each row of ``x`` (n, d) satisfies, for the paths
    ``paths`` (a slice of the packed paths; default all)."""
    return _masks(np.ascontiguousarray(x), packed.feature[paths], packed.lower[paths], packed.upper[paths],
                  packed.nan_ok[paths], packed.length[paths], packed.cat_row[paths], packed.cat_table,
                  packed.cat_count)


def background_masks(packed: Packed, bg: np.ndarray, paths: slice = slice(None)):
    """The background rows ``bg`` (R, d) as the interventional kernels take them: per path of
    ``paths``, the distinct bit masks of the background rows and how many rows have each
    (``(values (P, R) uint64, counts (P, R) float64, number (P,) int64)``), and the number of
    background rows that reach each path's leaf (P,)."""
    masks_t = np.ascontiguousarray(satisfied_masks(packed, bg, paths).T)
    reach = (masks_t == packed.full[paths][:, None]).sum(axis=1)
    vals, cnt, num = _distinct(masks_t)
    return (vals, cnt, num), reach


def _path_args(packed: Packed, paths: slice):
    return packed.feature[paths], packed.length[paths], packed.full[paths], packed.value[paths]


def interventional_values_fused(packed: Packed, x: np.ndarray, bg: np.ndarray, scale: float,
                                out: np.ndarray) -> np.ndarray:
    """Add ``scale`` times the single-reference TreeSHAP values of the rows ``x`` (n, d) summed
    over the background rows ``bg`` (R, d) into ``out`` (n, d, K), one path at a time: neither
    the rows' nor the background's masks of all paths are ever held (memory: the background's
    masks of one path per thread, and one more output per thread when parallel). Returns the
    number of background rows reaching each path's leaf (P,)."""
    x = np.ascontiguousarray(x)
    bg = np.ascontiguousarray(bg)
    P = packed.feature.shape[0]
    reach = np.zeros(P, dtype=np.int64)
    args = (x, bg, packed.feature, packed.lower, packed.upper, packed.nan_ok, packed.length, packed.cat_row,
            packed.cat_table, packed.cat_count, packed.full, packed.value, packed.beta, float(scale))
    work = (x.shape[0] + bg.shape[0]) * packed.elements
    if not _parallel(work) or P < 2:
        _ivf_serial(*args, out, reach)
        return reach
    import numba

    outs = np.zeros((min(numba.get_num_threads(), P), *out.shape))
    with _KERNEL_LOCK:
        _ivf_parallel(*args, outs, reach)
    out += outs.sum(axis=0)
    return reach


def interventional_pairs(packed: Packed, x_masks: np.ndarray, bg, scale: float, out: np.ndarray,
                         paths: slice = slice(None)) -> None:
    """The same for the interaction indices (both orders) into ``out`` (n, d, d, K)."""
    vals, cnt, num = bg
    _run(_ip_serial, _ip_parallel, x_masks.shape[0] * int(num.sum()) * 2 * max(1, packed.max_length),
         x_masks, vals, cnt, num, *_path_args(packed, paths), packed.beta, float(scale), out)
