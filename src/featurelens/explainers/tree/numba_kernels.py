"""Compiled TreeSHAP kernels (numba): the same per-path games as the numpy engine, with small buffers.

The numpy engine (:mod:`featurelens.explainers.tree.engine`) evaluates every (row, path, element,
quadrature node) at once in large temporary arrays; these kernels walk the same arrays with a few
small buffers. The path-dependent values walk each path with a block of up to 64 rows at once, in
branch-free inner loops over the block's rows that compile to SIMD instructions (the per-path
parallelism of GPUTreeShap, Mitchell et al. 2022, turned to rows); the others go row by row. Trees
with numerical splits only are read into paths by a compiled walk as well
(:mod:`.numba_walk`).

Each kernel has a serial and a parallel form around one compiled body (a block or a row): small
calls run serially, since starting the threads of a parallel loop costs more than a few rows of
work (milliseconds on a busy machine), and calls with at least :data:`PARALLEL_MIN_WORK` units of
work run in parallel over rows (``numba.prange``; ``numba.set_num_threads`` bounds the threads).

Compiled once per machine: every kernel is cached on disk (``cache=True``, in ``__pycache__``
next to this file, or numba's user-wide cache folder, or ``NUMBA_CACHE_DIR``), so a later process
loads the machine code instead of compiling it. Where no cache folder is writable (a read-only
install without a writable home folder) numba refuses ``cache=True``; :func:`njit` then compiles
without the cache, once per process.

Per path of length L (distinct features on the path), with o_j = 1[x satisfies element j] and
q_j the "feature absent" factor:

* **path-dependent** (q_j = product of cover ratios): the Shapley value of element i is
  ``(o_i - q_i) * int_0^1 prod_{j != i} (q_j + t (o_j - q_j)) dt``, evaluated exactly with
  ceil(L / 2) Gauss-Legendre nodes; the leave-one-out product is the full product divided by
  factor i (a factor is 0 only when o_i = q_i = 0, and then element i contributes nothing);
* **interventional** (q_j = 1[background row b satisfies element j]): with o, q in {0, 1}, the
  path is dead when some element has o_j = q_j = 0; otherwise, with a = #{o = 1, q = 0} and
  b = #{o = 0, q = 1}, the integral is the Beta function, so element i contributes
  ``+v (a-1)! b! / (a+b)!`` when it is in the first group and ``-v a! (b-1)! / (a+b)!`` in the
  second (Lundberg et al. 2020, the interventional algorithm; Janzing et al. 2020). Elements are
  bit masks of at most 63 per path;
* interaction indices (Grabisch and Roubens 1999) of elements i != j: ``(o_i - q_i)(o_j - q_j)
  int_0^1 prod_{k != i, j} (...) dt`` in both games.

Paths of every tree are packed into one set of arrays (:func:`pack`), so one kernel call covers the
whole ensemble. The interventional kernels are in :mod:`.numba_interventional`.
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np

try:  # without numba the numpy engine runs (same values, slower)
    import numba
    from numba import prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None
    prange = range
    HAVE_NUMBA = False

__all__ = ["HAVE_NUMBA", "MAX_PATH_FEATURES", "PARALLEL_MIN_WORK", "WALK_ROWS", "Packed", "pack", "pack_arrays",
           "usable", "njit", "path_dependent_values", "path_dependent_pairs"]

#: numba's workqueue threading layer (its fallback where neither OpenMP nor TBB is present) aborts
#: the process when two Python threads launch parallel kernels at once; parallel calls are
#: serialised (each already uses every core). Serial kernels need no lock.
_KERNEL_LOCK = threading.Lock()


def njit(*args, **kwargs):
    """``numba.njit`` with the on-disk cache where one is writable.

    numba refuses ``cache=True`` with a RuntimeError ("no locator available") when it finds no
    writable cache folder (a read-only install without a writable home folder and without
    ``NUMBA_CACHE_DIR``); the function is then compiled without the cache, once per process.

    Parameters
    ----------
    *args, **kwargs
        Passed to ``numba.njit`` (``cache=True`` dropped where no cache folder is writable).

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(fn):
        try:
            return numba.njit(*args, **kwargs)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            kwargs.pop("cache", None)
            return numba.njit(*args, **kwargs)(fn)

    return decorate


#: Rows the path-dependent kernel walks through each path together (its SIMD width, in effect;
#: 32 to 128 measured alike, 16 several times slower).
_ROW_BLOCK = 64

#: Below this many rows the path-dependent values come row by row: in closed form where every path
#: has at most 3 features (:func:`_pd_short`), else, for a forest of numerical splits, from one
#: walk of each tree per row (:func:`.numba_walk.walk_values`), which shares the work of the nodes
#: above many leaves; from it on, the row blocks of :func:`_pd_block` are faster.
WALK_ROWS = 3

#: Longest path (distinct features) the kernels take; longer ensembles use the numpy engine.
MAX_PATH_FEATURES = 63

#: Rows times path elements (times background rows, for the interventional kernels) from which a
#: call runs in parallel over rows; below it the serial form runs (thread start-up dominates).
PARALLEL_MIN_WORK = 4_000_000


class Packed:
    """All paths of an ensemble in flat arrays (see :func:`pack`)."""

    __slots__ = ("feature", "lower", "upper", "nan_ok", "zero", "length", "value", "cat_row",
                 "cat_table", "cat_count", "gl_nodes", "gl_weights", "max_length", "elements",
                 "root_value", "beta", "full", "nodes")


def pack(ens) -> Packed:
    """Concatenate the ensemble's paths, padded to the longest, with quadrature tables per length.

    ``cat_row[p, j]`` is -1 for numerical elements, else the row of ``cat_table`` (categories
    0..C-1, then the "other value" slot at column ``cat_count[row]``) that holds element j's
    categories. Also kept, so that no call recomputes them: ``root_value`` (K,), the trees'
    cover-weighted mean output (the path-dependent base value without the ensemble's offset),
    ``elements`` (the number of path elements, the unit of :data:`PARALLEL_MIN_WORK`), the Beta
    table of the interventional kernels and each path's full bit mask.

    Parameters
    ----------
    ens : Ensemble
        The ensemble (:class:`~featurelens.explainers.tree.paths.Ensemble`).

    Returns
    -------
    Packed
        The arrays the kernels read.
    """
    paths = ens.paths
    D = max(p.feature.shape[1] for p in paths)
    P = sum(p.feature.shape[0] for p in paths)
    K = ens.n_out
    out = Packed()
    out.nodes = None
    out.feature = np.zeros((P, D), dtype=np.int64)
    out.lower = np.full((P, D), -np.inf)
    out.upper = np.full((P, D), np.inf)
    out.nan_ok = np.ones((P, D), dtype=np.bool_)
    out.zero = np.ones((P, D))
    out.length = np.zeros(P, dtype=np.int64)
    out.value = np.zeros((P, K))
    out.cat_row = np.full((P, D), -1, dtype=np.int64)
    tables, counts = [], []
    start = 0
    for p in paths:
        n, d = p.feature.shape
        sl = slice(start, start + n)
        out.feature[sl, :d] = p.feature
        out.lower[sl, :d] = p.lower
        out.upper[sl, :d] = p.upper
        out.nan_ok[sl, :d] = p.nan_ok
        out.zero[sl, :d] = p.zero
        out.length[sl] = p.valid.sum(axis=1)
        out.value[sl] = p.value
        if p.has_categories:
            rows, cols = np.nonzero(p.is_cat)
            first = sum(t.shape[0] for t in tables)
            tables.append(p.cats[rows, cols])
            counts.append(np.full(rows.size, p.cats.shape[-1] - 1, dtype=np.int64))
            out.cat_row[start + rows, cols] = first + np.arange(rows.size)
        start += n
    if tables:
        width = max(t.shape[1] for t in tables)
        out.cat_table = np.zeros((sum(t.shape[0] for t in tables), width), dtype=np.bool_)
        r = 0
        for t, c in zip(tables, counts):
            out.cat_table[r : r + t.shape[0], : t.shape[1] - 1] = t[:, :-1]
            out.cat_table[r : r + t.shape[0], c[0]] = t[:, -1]  # the "other" slot at column C
            r += t.shape[0]
        out.cat_count = np.concatenate(counts)
    else:
        out.cat_table = np.zeros((1, 1), dtype=np.bool_)
        out.cat_count = np.zeros(1, dtype=np.int64)
    return _finish(out, D)


def pack_arrays(feature, lower, upper, nan_ok, zero, length, value, nodes=None) -> Packed:
    """:func:`pack` from a forest's paths already in flat arrays (numerical splits only; see
    :func:`featurelens.explainers.tree.paths.forest_paths`).

    Parameters
    ----------
    feature, lower, upper, nan_ok, zero : ndarray, (P, D)
        The path elements, as :class:`~featurelens.explainers.tree.paths.Paths` holds them.
    length : ndarray of int, (P,)
        The number of elements of each path.
    value : ndarray of float64, (P, K)
        Leaf values (scaled).
    nodes : tuple, optional
        The forest's node arrays for :func:`.numba_walk.walk_values` (see
        :func:`~featurelens.explainers.tree.paths.forest_paths`).

    Returns
    -------
    Packed
    """
    out = Packed()
    out.nodes = nodes
    out.feature = np.ascontiguousarray(feature, dtype=np.int64)
    out.lower = np.ascontiguousarray(lower, dtype=np.float64)
    out.upper = np.ascontiguousarray(upper, dtype=np.float64)
    out.nan_ok = np.ascontiguousarray(nan_ok, dtype=np.bool_)
    out.zero = np.ascontiguousarray(zero, dtype=np.float64)
    out.length = np.ascontiguousarray(length, dtype=np.int64)
    out.value = np.ascontiguousarray(value, dtype=np.float64)
    out.cat_row = np.full(out.feature.shape, -1, dtype=np.int64)
    out.cat_table = np.zeros((1, 1), dtype=np.bool_)
    out.cat_count = np.zeros(1, dtype=np.int64)
    return _finish(out, out.feature.shape[1])


def _finish(out: Packed, D: int) -> Packed:
    """The tables every packing shares: lengths, the root value, quadrature, Beta table, masks."""
    P = out.feature.shape[0]
    out.max_length = int(out.length.max()) if P else 0
    out.elements = int(out.length.sum())
    out.root_value = np.prod(out.zero, axis=1) @ out.value
    Q = max(1, (D + 1) // 2)
    out.gl_nodes = np.zeros((D + 1, Q))
    out.gl_weights = np.zeros((D + 1, Q))
    for length in range(1, D + 1):
        t, w = _gauss_legendre(length)
        out.gl_nodes[length, : t.size] = t
        out.gl_weights[length, : t.size] = w
    out.beta = _beta_table(out.max_length + 1)
    out.full = (np.uint64(1) << np.minimum(out.length, 63).astype(np.uint64)) - np.uint64(1)
    return out


def usable(packed: Packed) -> bool:
    """Whether the compiled kernels can run this ensemble (numba installed, paths of at most
    :data:`MAX_PATH_FEATURES` features)."""
    return HAVE_NUMBA and packed.max_length <= MAX_PATH_FEATURES


def _parallel(work: int) -> bool:
    """Whether a call with ``work`` units runs in parallel (see :data:`PARALLEL_MIN_WORK`)."""
    return work >= PARALLEL_MIN_WORK and numba.get_num_threads() > 1


@functools.lru_cache(maxsize=None)
def _gauss_legendre(length: int) -> tuple:
    """The ceil(length / 2) Gauss-Legendre nodes and weights on [0, 1] (exact for polynomials of
    degree < length + 1)."""
    t, w = np.polynomial.legendre.leggauss((length + 1) // 2)
    return (t + 1.0) / 2.0, w / 2.0


@functools.lru_cache(maxsize=None)
def _beta_table(n: int) -> np.ndarray:
    """``B[a, b] = a! b! / (a + b + 1)!`` for a, b < n: the integral of t^a (1-t)^b over [0, 1]."""
    table = np.zeros((n, n))
    for a in range(n):
        for b in range(n - a):
            table[a, b] = math.exp(math.lgamma(a + 1) + math.lgamma(b + 1) - math.lgamma(a + b + 2))
    return table


if HAVE_NUMBA:

    @njit(cache=True)
    def _pd_block(XT, r0, m, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                  cat_count, gl_nodes, gl_weights, outT, o, pre, fac, acc, run):
        """Path-dependent values of rows ``r0 .. r0 + m`` (columns of ``XT``, (d, n)) into ``outT``
        (K, d, n), with the block buffers ``o``, ``pre``, ``fac``, ``acc`` (D, B) and ``run`` (B,),
        B >= m.

        Per path and quadrature node t, the factor of element j is ``c + o_j (a - c)`` with
        ``a = z + t (1 - z)`` and ``c = z (1 - t)``; the product of the others is the prefix
        product before j times the suffix product after it (two passes, no division, exact where
        a factor is 0). The inner loops run over the block's rows with no branches, so they
        compile to SIMD instructions.
        """
        P = feature.shape[0]
        K = value.shape[1]
        for p in range(P):
            L = length[p]
            Q = (L + 1) // 2
            for j in range(L):
                f = feature[p, j]
                row = cat_row[p, j]
                if row >= 0:  # categorical element: look each value's category up
                    c_n = cat_count[row]
                    for r in range(m):
                        v = XT[f, r0 + r]
                        if v != v:
                            o[j, r] = 1.0 if nan_ok[p, j] else 0.0
                        else:
                            code = c_n
                            if v >= 0.0 and v < c_n and v == math.floor(v):
                                code = int(v)
                            o[j, r] = 1.0 if cat_table[row, code] else 0.0
                else:
                    lo = lower[p, j]
                    hi = upper[p, j]
                    na = 1.0 if nan_ok[p, j] else 0.0
                    for r in range(m):
                        v = XT[f, r0 + r]
                        ok = 1.0 if (lo < v and v <= hi) else 0.0
                        o[j, r] = na if v != v else ok
                for r in range(m):
                    acc[j, r] = 0.0
            for qi in range(Q):
                t = gl_nodes[L, qi]
                w = gl_weights[L, qi]
                for r in range(m):
                    run[r] = w
                for j in range(L):
                    z = zero[p, j]
                    a = z + t * (1.0 - z)
                    c = z * (1.0 - t)
                    for r in range(m):
                        fv = c + o[j, r] * (a - c)
                        pre[j, r] = run[r]
                        fac[j, r] = fv
                        run[r] *= fv
                for r in range(m):
                    run[r] = 1.0
                for j in range(L - 1, -1, -1):
                    for r in range(m):
                        acc[j, r] += pre[j, r] * run[r]
                        run[r] *= fac[j, r]
            for j in range(L):
                z = zero[p, j]
                f = feature[p, j]
                for k in range(K):
                    vk = value[p, k]
                    for r in range(m):
                        outT[k, f, r0 + r] += (o[j, r] - z) * acc[j, r] * vk

    @njit(cache=True)
    def _pd_short(XT, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table, cat_count,
                  outT):
        """Path-dependent values of paths of at most 3 features (trees of depth <= 3), row by row
        in closed form: with d_j = o_j - z_j, ``int_0^1 prod_{j != i} (z_j + t d_j) dt`` is 1,
        ``z_j + d_j / 2`` or ``z_j z_k + (z_j d_k + z_k d_j) / 2 + d_j d_k / 3``."""
        P = feature.shape[0]
        K = value.shape[1]
        d = np.zeros(3)
        c = np.zeros(3)
        for r in range(XT.shape[1]):
            for p in range(P):
                L = length[p]
                for j in range(L):
                    v = XT[feature[p, j], r]
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
                    d[j] = (1.0 if ok else 0.0) - zero[p, j]
                if L == 1:
                    c[0] = d[0]
                elif L == 2:
                    c[0] = d[0] * (zero[p, 1] + 0.5 * d[1])
                    c[1] = d[1] * (zero[p, 0] + 0.5 * d[0])
                elif L == 3:
                    z0 = zero[p, 0]
                    z1 = zero[p, 1]
                    z2 = zero[p, 2]
                    c[0] = d[0] * (z1 * z2 + 0.5 * (z1 * d[2] + z2 * d[1]) + d[1] * d[2] / 3.0)
                    c[1] = d[1] * (z0 * z2 + 0.5 * (z0 * d[2] + z2 * d[0]) + d[0] * d[2] / 3.0)
                    c[2] = d[2] * (z0 * z1 + 0.5 * (z0 * d[1] + z1 * d[0]) + d[0] * d[1] / 3.0)
                for j in range(L):
                    f = feature[p, j]
                    for k in range(K):
                        outT[k, f, r] += c[j] * value[p, k]

    @njit(cache=True)
    def _pd_serial(XT, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                   cat_count, gl_nodes, gl_weights, outT):
        """:func:`_pd_block` over every block of rows, one after the other."""
        n = XT.shape[1]
        D = feature.shape[1]
        B = max(1, min(n, _ROW_BLOCK))
        o = np.zeros((D, B))
        pre = np.zeros((D, B))
        fac = np.zeros((D, B))
        acc = np.zeros((D, B))
        run = np.zeros(B)
        for r0 in range(0, n, B):
            m = min(B, n - r0)
            _pd_block(XT, r0, m, feature, lower, upper, nan_ok, zero, length, value, cat_row,
                      cat_table, cat_count, gl_nodes, gl_weights, outT, o, pre, fac, acc, run)

    @njit(cache=True, parallel=True)
    def _pd_parallel(XT, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                     cat_count, gl_nodes, gl_weights, outT):
        """:func:`_pd_block` over the blocks of rows in parallel (each block its own buffers and
        its own columns of ``outT``)."""
        n = XT.shape[1]
        D = feature.shape[1]
        B = _ROW_BLOCK
        n_blocks = (n + B - 1) // B
        for blk in prange(n_blocks):
            r0 = blk * B
            m = min(B, n - r0)
            o = np.zeros((D, B))
            pre = np.zeros((D, B))
            fac = np.zeros((D, B))
            acc = np.zeros((D, B))
            run = np.zeros(B)
            _pd_block(XT, r0, m, feature, lower, upper, nan_ok, zero, length, value, cat_row,
                      cat_table, cat_count, gl_nodes, gl_weights, outT, o, pre, fac, acc, run)

    @njit(cache=True)
    def _pairs_row(X, r, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                   cat_count, gl_nodes, gl_weights, out, o, fac, l2o):
        """Path-dependent interaction indices of row ``r`` summed into ``out`` (n, d, d, K), both
        (i, j) and (j, i), with the row buffers ``o``, ``fac`` (D,) and ``l2o`` (D, D)."""
        P = feature.shape[0]
        K = value.shape[1]
        for p in range(P):
            L = length[p]
            if L < 2:
                continue
            for j in range(L):
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
                o[j] = 1.0 if ok else 0.0
                for i in range(L):
                    l2o[j, i] = 0.0
            for qi in range((L + 1) // 2):
                t = gl_nodes[L, qi]
                w = gl_weights[L, qi]
                for j in range(L):
                    z = zero[p, j]
                    fac[j] = z + t * (o[j] - z)
                prod = 1.0
                for j in range(L):
                    prod *= fac[j]
                for a in range(L):
                    if fac[a] == 0.0:  # then o_a = q_a = 0: element a pairs with nothing
                        continue
                    for b in range(a + 1, L):
                        if fac[b] != 0.0:
                            l2o[a, b] += w * prod / (fac[a] * fac[b])
            for a in range(L):
                da = o[a] - zero[p, a]
                if da == 0.0:
                    continue
                fa = feature[p, a]
                for b in range(a + 1, L):
                    db = o[b] - zero[p, b]
                    if db == 0.0:
                        continue
                    c = da * db * l2o[a, b]
                    fb = feature[p, b]
                    for k in range(K):
                        v = c * value[p, k]
                        out[r, fa, fb, k] += v
                        out[r, fb, fa, k] += v

    @njit(cache=True)
    def _pairs_serial(X, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                      cat_count, gl_nodes, gl_weights, out):
        D = feature.shape[1]
        o = np.empty(D)
        fac = np.empty(D)
        l2o = np.empty((D, D))
        for r in range(X.shape[0]):
            _pairs_row(X, r, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                       cat_count, gl_nodes, gl_weights, out, o, fac, l2o)

    @njit(cache=True, parallel=True)
    def _pairs_parallel(X, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                        cat_count, gl_nodes, gl_weights, out):
        D = feature.shape[1]
        for r in prange(X.shape[0]):
            o = np.empty(D)
            fac = np.empty(D)
            l2o = np.empty((D, D))
            _pairs_row(X, r, feature, lower, upper, nan_ok, zero, length, value, cat_row, cat_table,
                       cat_count, gl_nodes, gl_weights, out, o, fac, l2o)



def _run(serial, parallel, work, *args):
    """One kernel call: the serial form below :data:`PARALLEL_MIN_WORK` units of ``work``, else
    the parallel form (under the lock, see ``_KERNEL_LOCK``)."""
    if not _parallel(work):
        serial(*args)
        return
    with _KERNEL_LOCK:
        parallel(*args)


def path_dependent_values(packed: Packed, x: np.ndarray) -> np.ndarray:
    """The path-dependent TreeSHAP values of rows ``x`` (n, d), without the base value.

    Parameters
    ----------
    packed : Packed
        The ensemble's arrays (:func:`pack`).
    x : ndarray of float64, (n, d)
        Rows prepared by :func:`~featurelens.explainers.tree.paths.prepare_rows`.

    Returns
    -------
    ndarray of float64, (n, d, K)
        A view of a (K, d, n) array (the kernel's layout).
    """
    n, d = x.shape
    out_t = np.zeros((packed.value.shape[1], d, n))
    if n < WALK_ROWS and packed.max_length <= 3:
        _pd_short(np.ascontiguousarray(x.T), packed.feature, packed.lower, packed.upper, packed.nan_ok,
                  packed.zero, packed.length, packed.value, packed.cat_row, packed.cat_table, packed.cat_count,
                  out_t)
        return out_t.transpose(2, 1, 0)
    if n < WALK_ROWS and packed.nodes is not None:
        from .numba_walk import walk_values

        walk_values(packed, np.ascontiguousarray(x.T), out_t)
        return out_t.transpose(2, 1, 0)
    _run(_pd_serial, _pd_parallel, n * packed.elements if n > _ROW_BLOCK else 0,
         np.ascontiguousarray(x.T), packed.feature, packed.lower, packed.upper, packed.nan_ok,
         packed.zero, packed.length, packed.value, packed.cat_row, packed.cat_table, packed.cat_count,
         packed.gl_nodes, packed.gl_weights, out_t)
    return out_t.transpose(2, 1, 0)


def path_dependent_pairs(packed: Packed, x: np.ndarray, out: np.ndarray) -> None:
    """Add the path-dependent interaction indices (both orders) of rows ``x`` (n, d) into ``out``
    (n, d, d, K)."""
    _run(_pairs_serial, _pairs_parallel, x.shape[0] * packed.elements * max(1, packed.max_length),
         np.ascontiguousarray(x), packed.feature, packed.lower, packed.upper, packed.nan_ok, packed.zero,
         packed.length, packed.value, packed.cat_row, packed.cat_table, packed.cat_count,
         packed.gl_nodes, packed.gl_weights, out)
