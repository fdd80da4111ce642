"""Compiled TreeSHAP kernels (numba): the same per-path games as the numpy engine, one row at a time.

The numpy engine (:mod:`featurelens.explainers.tree.engine`) evaluates every (row, path, element,
quadrature node) at once in large temporary arrays; these kernels walk the same arrays with a few
small buffers, in parallel over rows (``numba.prange``; ``numba.set_num_threads`` bounds the
threads). The path-dependent values walk each path with a block of 64 rows at once, in branch-free
inner loops over the rows that compile to SIMD instructions (the per-path parallelism of
GPUTreeShap, Mitchell et al. 2022, turned to rows); the others go row by row. Trees with
numerical splits only are also read into paths by a compiled walk (:func:`walk_numeric_tree`).

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
whole ensemble.
"""

from __future__ import annotations

import math
import threading

import numpy as np

try:  # numba is optional: without it the numpy engine runs (same values, slower)
    import numba
    from numba import prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None
    HAVE_NUMBA = False

#: numba's workqueue threading layer (its fallback where neither OpenMP nor TBB is present) aborts
#: the process when two Python threads launch parallel kernels at once; calls are serialised
#: (each call already uses every core).
_KERNEL_LOCK = threading.Lock()


def njit(*args, **kwargs):
    """``numba.njit`` with the on-disk cache where one is writable (numba refuses ``cache=True``
    when it finds no writable cache folder, e.g. a read-only install without a home folder)."""

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

#: Longest path (distinct features) the kernels take; longer ensembles use the numpy engine.
MAX_PATH_FEATURES = 63


class Packed:
    """All paths of an ensemble in flat arrays (see :func:`pack`)."""

    __slots__ = ("feature", "lower", "upper", "nan_ok", "zero", "length", "value", "cat_row",
                 "cat_table", "cat_count", "gl_nodes", "gl_weights", "max_length")


def pack(ens) -> Packed:
    """Concatenate the ensemble's paths, padded to the longest, with quadrature tables per length.

    ``cat_row[p, j]`` is -1 for numerical elements, else the row of ``cat_table`` (categories
    0..C-1, then the "other value" slot at column ``cat_count[row]``) that holds element j's
    categories.
    """
    paths = ens.paths
    D = max(p.feature.shape[1] for p in paths)
    P = sum(p.feature.shape[0] for p in paths)
    K = ens.n_out
    out = Packed()
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
    out.max_length = int(out.length.max()) if P else 0
    Q = max(1, (D + 1) // 2)
    out.gl_nodes = np.zeros((D + 1, Q))
    out.gl_weights = np.zeros((D + 1, Q))
    for length in range(1, D + 1):
        m = (length + 1) // 2
        t, w = np.polynomial.legendre.leggauss(m)
        out.gl_nodes[length, :m] = (t + 1.0) / 2.0
        out.gl_weights[length, :m] = w / 2.0
    return out


def usable(packed: Packed) -> bool:
    """Whether the compiled kernels can run this ensemble."""
    return HAVE_NUMBA and packed.max_length <= MAX_PATH_FEATURES


def _beta_table(n: int) -> np.ndarray:
    """``B[a, b] = a! b! / (a + b + 1)!`` for a, b < n: the integral of t^a (1-t)^b over [0, 1]."""
    table = np.zeros((n, n))
    for a in range(n):
        for b in range(n - a):
            table[a, b] = math.exp(math.lgamma(a + 1) + math.lgamma(b + 1) - math.lgamma(a + b + 2))
    return table


if HAVE_NUMBA:

    @njit(cache=True, inline="always")
    def _satisfied(v, p, j, lower, upper, nan_ok, cat_row, cat_table, cat_count):
        if v != v:  # NaN
            return nan_ok[p, j]
        row = cat_row[p, j]
        if row >= 0:
            c = cat_count[row]
            code = c
            if v >= 0.0 and v < c and v == math.floor(v):
                code = int(v)
            return cat_table[row, code]
        return lower[p, j] < v and v <= upper[p, j]

    @njit(cache=True, parallel=True)
    def _path_dependent_values(XT, feature, lower, upper, nan_ok, zero, length, value, cat_row,
                               cat_table, cat_count, gl_nodes, gl_weights, outT):
        """Path-dependent values of the rows (columns of ``XT``, (d, n)) into ``outT`` (K, d, n).

        A block of ``_ROW_BLOCK`` rows walks every path together: the inner loops run over the
        block's rows with no branches (the factor of element j at node t is ``c + o_j (a - c)``
        with ``a = z + t (1 - z)`` and ``c = z (1 - t)``), so they compile to SIMD instructions.
        A factor is 0 only when o_j = z_j = 0; the product is then 0 and element j contributes
        (o_j - z_j) * ... = 0, so the division uses 1 in its place.
        """
        d, n = XT.shape
        P, D = feature.shape
        K = value.shape[1]
        Qm = gl_nodes.shape[1]
        RB = _ROW_BLOCK
        n_blocks = (n + RB - 1) // RB
        for blk in prange(n_blocks):
            r0 = blk * RB
            m = min(RB, n - r0)
            o = np.zeros((D, RB))
            fac = np.ones((D, Qm, RB))
            prod = np.zeros((Qm, RB))
            acc = np.zeros(RB)
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
                for qi in range(Q):
                    t = gl_nodes[L, qi]
                    w = gl_weights[L, qi]
                    for r in range(RB):
                        prod[qi, r] = w
                    for j in range(L):
                        z = zero[p, j]
                        a = z + t * (1.0 - z)
                        c = z * (1.0 - t)
                        for r in range(RB):
                            fv = c + o[j, r] * (a - c)
                            fac[j, qi, r] = fv
                            prod[qi, r] *= fv
                for j in range(L):
                    z = zero[p, j]
                    f = feature[p, j]
                    for r in range(RB):
                        acc[r] = 0.0
                    for qi in range(Q):
                        for r in range(RB):
                            fv = fac[j, qi, r]
                            acc[r] += prod[qi, r] / (fv + (1.0 if fv == 0.0 else 0.0))
                    for k in range(K):
                        vk = value[p, k]
                        for r in range(m):
                            outT[k, f, r0 + r] += (o[j, r] - z) * acc[r] * vk

    @njit(cache=True, parallel=True)
    def _path_dependent_pairs(X, feature, lower, upper, nan_ok, zero, length, value, cat_row,
                              cat_table, cat_count, gl_nodes, gl_weights, out):
        """Interaction indices summed into ``out`` (n, d, d, K), both (i, j) and (j, i)."""
        n = X.shape[0]
        P, D = feature.shape
        K = value.shape[1]
        for r in prange(n):
            o = np.empty(D)
            fac = np.empty(D)
            l2o = np.empty((D, D))
            for p in range(P):
                L = length[p]
                if L < 2:
                    continue
                for j in range(L):
                    o[j] = 1.0 if _satisfied(X[r, feature[p, j]], p, j, lower, upper, nan_ok,
                                             cat_row, cat_table, cat_count) else 0.0
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
    def _masks(X, feature, lower, upper, nan_ok, length, cat_row, cat_table, cat_count):
        """(n, P) uint64: bit j set where row satisfies element j of path p."""
        n = X.shape[0]
        P = feature.shape[0]
        out = np.zeros((n, P), dtype=np.uint64)
        for r in range(n):
            for p in range(P):
                m = np.uint64(0)
                for j in range(length[p]):
                    if _satisfied(X[r, feature[p, j]], p, j, lower, upper, nan_ok, cat_row,
                                  cat_table, cat_count):
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

    @njit(cache=True, parallel=True)
    def _interventional_values(x_masks, bg_masks, feature, length, value, beta, scale, out):
        """Single-reference Shapley values summed over ``bg_masks``, times ``scale``, into ``out``."""
        n, P = x_masks.shape
        R = bg_masks.shape[0]
        K = value.shape[1]
        for r in prange(n):
            for p in range(P):
                full = (np.uint64(1) << np.uint64(length[p])) - np.uint64(1)
                xm = x_masks[r, p]
                for b in range(R):
                    bm = bg_masks[b, p]
                    if (xm | bm) != full:  # an element neither satisfies: the leaf is unreachable
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

    @njit(cache=True, parallel=True)
    def _interventional_pairs(x_masks, bg_masks, feature, length, value, beta, scale, out):
        """Single-reference interaction indices (both orders) summed over ``bg_masks``, times ``scale``."""
        n, P = x_masks.shape
        R = bg_masks.shape[0]
        K = value.shape[1]
        D = feature.shape[1]
        for r in prange(n):
            sign = np.empty(D)
            pos = np.empty(D, dtype=np.int64)
            for p in range(P):
                L = length[p]
                full = (np.uint64(1) << np.uint64(L)) - np.uint64(1)
                xm = x_masks[r, p]
                for b in range(R):
                    bm = bg_masks[b, p]
                    if (xm | bm) != full:
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


if HAVE_NUMBA:

    @njit(cache=True)
    def _walk_numeric_tree(left, right, feature, threshold, nan_left, cover, n_leaves, depth):
        """Merged root-to-leaf paths of a tree with numerical splits only (see
        :func:`featurelens.explainers.tree.paths.extract_paths`, whose Python walk this
        mirrors): per leaf, its node and one element per distinct feature (sorted by feature).

        Depth-first with an explicit stack; the path state of the node at depth d is row d of
        the ``cur_*`` arrays, computed when the node is popped from its parent's row d - 1 (which
        stays valid until the parent's whole subtree is done).
        """
        f_out = np.zeros((n_leaves, depth), dtype=np.int64)
        lo_out = np.full((n_leaves, depth), -np.inf)
        hi_out = np.full((n_leaves, depth), np.inf)
        nan_out = np.ones((n_leaves, depth), dtype=np.bool_)
        z_out = np.ones((n_leaves, depth))
        len_out = np.zeros(n_leaves, dtype=np.int64)
        leaf_node = np.zeros(n_leaves, dtype=np.int64)
        cur_f = np.zeros((depth + 1, depth), dtype=np.int64)
        cur_lo = np.zeros((depth + 1, depth))
        cur_hi = np.zeros((depth + 1, depth))
        cur_nan = np.zeros((depth + 1, depth), dtype=np.bool_)
        cur_z = np.zeros((depth + 1, depth))
        cur_len = np.zeros(depth + 1, dtype=np.int64)
        # stack entries: node, its depth, its parent, whether it is the parent's left child
        st_node = np.zeros(2 * depth + 2, dtype=np.int64)
        st_depth = np.zeros(2 * depth + 2, dtype=np.int64)
        st_parent = np.zeros(2 * depth + 2, dtype=np.int64)
        st_left = np.zeros(2 * depth + 2, dtype=np.bool_)
        top = 1
        st_node[0] = 0
        st_depth[0] = 0
        st_parent[0] = -1
        leaf = 0
        while top > 0:
            top -= 1
            node = st_node[top]
            d = st_depth[top]
            parent = st_parent[top]
            if parent < 0:
                cur_len[0] = 0
            else:
                # the parent's state with its split applied
                m = cur_len[d - 1]
                for j in range(m):
                    cur_f[d, j] = cur_f[d - 1, j]
                    cur_lo[d, j] = cur_lo[d - 1, j]
                    cur_hi[d, j] = cur_hi[d - 1, j]
                    cur_nan[d, j] = cur_nan[d - 1, j]
                    cur_z[d, j] = cur_z[d - 1, j]
                f = feature[parent]
                slot = m
                for j in range(m):
                    if cur_f[d, j] == f:
                        slot = j
                        break
                if slot == m:  # a new feature on this path, inserted in feature order
                    while slot > 0 and cur_f[d, slot - 1] > f:
                        cur_f[d, slot] = cur_f[d, slot - 1]
                        cur_lo[d, slot] = cur_lo[d, slot - 1]
                        cur_hi[d, slot] = cur_hi[d, slot - 1]
                        cur_nan[d, slot] = cur_nan[d, slot - 1]
                        cur_z[d, slot] = cur_z[d, slot - 1]
                        slot -= 1
                    cur_f[d, slot] = f
                    cur_lo[d, slot] = -np.inf
                    cur_hi[d, slot] = np.inf
                    cur_nan[d, slot] = True
                    cur_z[d, slot] = 1.0
                    m += 1
                cur_len[d] = m
                is_left = st_left[top]
                t = threshold[parent]
                if is_left:
                    if t < cur_hi[d, slot]:
                        cur_hi[d, slot] = t
                    cur_nan[d, slot] = cur_nan[d, slot] and nan_left[parent] != 0
                else:
                    if t > cur_lo[d, slot]:
                        cur_lo[d, slot] = t
                    cur_nan[d, slot] = cur_nan[d, slot] and nan_left[parent] == 0
                pc = cover[parent]
                cur_z[d, slot] *= cover[node] / pc if pc > 0 else 0.0
            if left[node] < 0:
                m = cur_len[d]
                for j in range(m):
                    f_out[leaf, j] = cur_f[d, j]
                    lo_out[leaf, j] = cur_lo[d, j]
                    hi_out[leaf, j] = cur_hi[d, j]
                    nan_out[leaf, j] = cur_nan[d, j]
                    z_out[leaf, j] = cur_z[d, j]
                len_out[leaf] = m
                leaf_node[leaf] = node
                leaf += 1
                continue
            # push right then left: the left subtree is walked first
            st_node[top] = right[node]
            st_depth[top] = d + 1
            st_parent[top] = node
            st_left[top] = False
            st_node[top + 1] = left[node]
            st_depth[top + 1] = d + 1
            st_parent[top + 1] = node
            st_left[top + 1] = True
            top += 2
        return f_out, lo_out, hi_out, nan_out, z_out, len_out, leaf_node

    @njit(cache=True)
    def _tree_depth(left, right):
        """Levels below the root of the deepest node."""
        level = np.zeros(left.shape[0], dtype=np.int64)
        stack = np.zeros(left.shape[0] + 1, dtype=np.int64)
        top = 1
        depth = 0
        while top > 0:
            top -= 1
            node = stack[top]
            if left[node] >= 0:
                for child in (left[node], right[node]):
                    level[child] = level[node] + 1
                    if level[child] > depth:
                        depth = level[child]
                    stack[top] = child
                    top += 1
        return depth


def walk_numeric_tree(left, right, feature, threshold, nan_left, cover):
    """:func:`_walk_numeric_tree` on a tree's node arrays (see there); numba only."""
    left = np.ascontiguousarray(left, dtype=np.int64)
    right = np.ascontiguousarray(right, dtype=np.int64)
    depth = int(_tree_depth(left, right))
    n_leaves = int((left < 0).sum())
    return _walk_numeric_tree(left, right, np.ascontiguousarray(feature, dtype=np.int64),
                              np.ascontiguousarray(threshold, dtype=np.float64),
                              np.ascontiguousarray(nan_left, dtype=np.int64),
                              np.ascontiguousarray(cover, dtype=np.float64), n_leaves, max(1, depth))


def path_dependent_values(packed: Packed, x: np.ndarray, out: np.ndarray) -> None:
    """Add the path-dependent TreeSHAP values of rows ``x`` (n, d) into ``out`` (n, d, K)."""
    n, d = x.shape
    out_t = np.zeros((packed.value.shape[1], d, n))
    with _KERNEL_LOCK:
        _path_dependent_values(np.ascontiguousarray(x.T), packed.feature, packed.lower, packed.upper,
                               packed.nan_ok, packed.zero, packed.length, packed.value,
                               packed.cat_row, packed.cat_table, packed.cat_count, packed.gl_nodes,
                               packed.gl_weights, out_t)
    out += out_t.transpose(2, 1, 0)


def path_dependent_pairs(packed: Packed, x: np.ndarray, out: np.ndarray) -> None:
    """Add the path-dependent interaction indices (both orders) into ``out`` (n, d, d, K)."""
    with _KERNEL_LOCK:
        _path_dependent_pairs(x, packed.feature, packed.lower, packed.upper, packed.nan_ok,
                              packed.zero, packed.length, packed.value, packed.cat_row,
                              packed.cat_table, packed.cat_count, packed.gl_nodes, packed.gl_weights,
                              out)


def satisfied_masks(packed: Packed, x: np.ndarray) -> np.ndarray:
    """(n, P) uint64 bit masks of the elements each row satisfies."""
    return _masks(x, packed.feature, packed.lower, packed.upper, packed.nan_ok, packed.length,
                  packed.cat_row, packed.cat_table, packed.cat_count)


def interventional_values(packed: Packed, x_masks: np.ndarray, bg_masks: np.ndarray, scale: float,
                          out: np.ndarray) -> None:
    """Add ``scale`` times the single-reference TreeSHAP values of the rows of ``x_masks`` summed
    over the background rows of ``bg_masks`` (masks from :func:`satisfied_masks`) into ``out``."""
    beta = _beta_table(packed.max_length + 1)
    with _KERNEL_LOCK:
        _interventional_values(x_masks, bg_masks, packed.feature, packed.length, packed.value, beta,
                               float(scale), out)


def interventional_pairs(packed: Packed, x_masks: np.ndarray, bg_masks: np.ndarray, scale: float,
                         out: np.ndarray) -> None:
    """The same for the interaction indices (both orders) into ``out`` (n, d, d, K)."""
    beta = _beta_table(packed.max_length + 1)
    with _KERNEL_LOCK:
        _interventional_pairs(x_masks, bg_masks, packed.feature, packed.length, packed.value, beta,
                              float(scale), out)
