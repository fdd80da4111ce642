"""Reading a tree's node arrays into merged root-to-leaf paths with a compiled walk (numba): the
fast route of :func:`featurelens.explainers.tree.paths.extract_paths` for trees with numerical
splits only (the Python walk there handles categorical splits, and every tree when numba is
missing). Compiled once per machine: the functions are cached on disk where a cache folder is
writable (:func:`.numba_kernels.njit`)."""

from __future__ import annotations

import numpy as np

from .numba_kernels import HAVE_NUMBA, njit

__all__ = ["walk_numeric_tree", "walk_forest", "walk_values"]

if HAVE_NUMBA:

    @njit(cache=True)
    def _walk_into(left, right, feature, threshold, nan_left, cover, depth, leaf0, f_out, lo_out, hi_out,
                   nan_out, z_out, len_out, leaf_node):
        """Merged root-to-leaf paths of one tree with numerical splits only (see
        :func:`featurelens.explainers.tree.paths.extract_paths`, whose Python walk this mirrors),
        written into rows ``leaf0, leaf0 + 1, ...`` of the output arrays (one row per leaf, in
        depth-first order, left subtree first): one element per distinct feature on the path,
        sorted by feature, in the first columns; the leaf's node (numbered within the tree).

        Depth-first with an explicit stack; the path state of the node at depth d is row d of
        the ``cur_*`` arrays, computed when the node is popped from its parent's row d - 1 (which
        stays valid until the parent's whole subtree is done).
        """
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
                    f_out[leaf0 + leaf, j] = cur_f[d, j]
                    lo_out[leaf0 + leaf, j] = cur_lo[d, j]
                    hi_out[leaf0 + leaf, j] = cur_hi[d, j]
                    nan_out[leaf0 + leaf, j] = cur_nan[d, j]
                    z_out[leaf0 + leaf, j] = cur_z[d, j]
                len_out[leaf0 + leaf] = m
                leaf_node[leaf0 + leaf] = node
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

    @njit(cache=True)
    def _walk_forest(left, right, feature, threshold, nan_left, cover, node_start):
        """:func:`_walk_into` for every tree of a forest (tree t: nodes ``node_start[t] ..
        node_start[t + 1]`` of the concatenated arrays), into one set of arrays."""
        T = node_start.shape[0] - 1
        depths = np.ones(T, dtype=np.int64)
        leaf_start = np.zeros(T + 1, dtype=np.int64)
        for t in range(T):
            s, e = node_start[t], node_start[t + 1]
            depths[t] = max(1, _tree_depth(left[s:e], right[s:e]))
            leaves = 0
            for i in range(s, e):
                if left[i] < 0:
                    leaves += 1
            leaf_start[t + 1] = leaf_start[t] + leaves
        n = leaf_start[T]
        width = depths.max() if T > 0 else 1
        f_out = np.zeros((n, width), dtype=np.int64)
        lo_out = np.full((n, width), -np.inf)
        hi_out = np.full((n, width), np.inf)
        nan_out = np.ones((n, width), dtype=np.bool_)
        z_out = np.ones((n, width))
        len_out = np.zeros(n, dtype=np.int64)
        leaf_node = np.zeros(n, dtype=np.int64)
        for t in range(T):
            s, e = node_start[t], node_start[t + 1]
            _walk_into(left[s:e], right[s:e], feature[s:e], threshold[s:e], nan_left[s:e], cover[s:e],
                       depths[t], leaf_start[t], f_out, lo_out, hi_out, nan_out, z_out, len_out, leaf_node)
        return f_out, lo_out, hi_out, nan_out, z_out, len_out, leaf_node, leaf_start

    @njit(cache=True)
    def _values_by_walk(XT, left, right, feature, threshold, nan_left, cover, node_value, node_start, max_depth,
                        gl_t, gl_w, outT):
        """Path-dependent values of the rows (columns of ``XT``) into ``outT`` (K, d, n) by one
        depth-first walk of each tree per row (see :func:`walk_values`)."""
        T = node_start.shape[0] - 1
        K = node_value.shape[1]
        Q = gl_t.shape[0]
        d_feat = XT.shape[0]
        H = max_depth + 2
        P = np.ones((H, Q))
        A = np.zeros((H, K, Q))
        EX = np.zeros((H, K, Q))
        node_at = np.zeros(H, dtype=np.int64)
        stage = np.zeros(H, dtype=np.int64)
        e_feat = np.zeros(H, dtype=np.int64)
        e_z = np.zeros(H)
        e_o = np.zeros(H)
        e_zp = np.zeros(H)
        e_op = np.zeros(H)
        e_present = np.zeros(H, dtype=np.bool_)
        e_top = np.zeros(H, dtype=np.int64)
        present = np.zeros(d_feat, dtype=np.bool_)
        fz = np.ones(d_feat)
        fo = np.ones(d_feat)
        top = np.zeros(d_feat, dtype=np.int64)
        for r in range(XT.shape[1]):
            for t in range(T):
                s0 = node_start[t]
                depth = 0
                node_at[0] = 0
                stage[0] = 0
                for q in range(Q):
                    P[0, q] = 1.0
                while True:
                    g = s0 + node_at[depth]
                    is_leaf = left[g] < 0
                    if is_leaf or stage[depth] == 2:
                        if is_leaf:
                            for k in range(K):
                                v = node_value[g, k]
                                for q in range(Q):
                                    A[depth, k, q] = v * P[depth, q]
                        else:
                            te = top[feature[g]]
                            if te > 0:
                                for k in range(K):
                                    for q in range(Q):
                                        EX[te, k, q] += A[depth, k, q]
                        if depth == 0:
                            break
                        i = e_feat[depth]
                        z = e_z[depth]
                        o = e_o[depth]
                        if o != z:
                            for k in range(K):
                                s = 0.0
                                for q in range(Q):
                                    s += gl_w[q] * (A[depth, k, q] - EX[depth, k, q]) / (z + gl_t[q] * (o - z))
                                outT[k, i, r] += (o - z) * s
                        present[i] = e_present[depth]
                        fz[i] = e_zp[depth]
                        fo[i] = e_op[depth]
                        top[i] = e_top[depth]
                        up = depth - 1
                        if stage[up] == 0:  # the left child: the parent's sum starts here
                            for k in range(K):
                                for q in range(Q):
                                    A[up, k, q] = A[depth, k, q]
                        else:
                            for k in range(K):
                                for q in range(Q):
                                    A[up, k, q] += A[depth, k, q]
                        depth = up
                        stage[depth] += 1
                        continue
                    # an internal node: go down to the child of this stage
                    st = stage[depth]
                    child = left[g] if st == 0 else right[g]
                    f = feature[g]
                    xv = XT[f, r]
                    go_left = nan_left[g] != 0 if xv != xv else xv <= threshold[g]
                    ok = go_left if st == 0 else not go_left
                    pc = cover[g]
                    ratio = cover[s0 + child] / pc if pc > 0.0 else 0.0
                    had = present[f]
                    zp = fz[f] if had else 1.0
                    op = fo[f] if had else 1.0
                    zn = zp * ratio
                    on = op if ok else 0.0
                    if zn == 0.0 and on == 0.0:  # this subtree's leaves all carry a factor 0
                        if st == 0:
                            for k in range(K):
                                for q in range(Q):
                                    A[depth, k, q] = 0.0
                        stage[depth] += 1
                        continue
                    d1 = depth + 1
                    for q in range(Q):
                        tq = gl_t[q]
                        fnew = zn + tq * (on - zn)
                        if had:
                            P[d1, q] = P[depth, q] * fnew / (zp + tq * (op - zp))
                        else:
                            P[d1, q] = P[depth, q] * fnew
                        for k in range(K):
                            EX[d1, k, q] = 0.0
                    e_feat[d1] = f
                    e_z[d1] = zn
                    e_o[d1] = on
                    e_zp[d1] = fz[f]
                    e_op[d1] = fo[f]
                    e_present[d1] = had
                    e_top[d1] = top[f]
                    present[f] = True
                    fz[f] = zn
                    fo[f] = on
                    top[f] = d1
                    node_at[d1] = child
                    stage[d1] = 0
                    depth = d1


def _arrays(left, right, feature, threshold, nan_left, cover):
    return (np.ascontiguousarray(left, dtype=np.int64), np.ascontiguousarray(right, dtype=np.int64),
            np.ascontiguousarray(feature, dtype=np.int64), np.ascontiguousarray(threshold, dtype=np.float64),
            np.ascontiguousarray(nan_left, dtype=np.int64), np.ascontiguousarray(cover, dtype=np.float64))


def walk_numeric_tree(left, right, feature, threshold, nan_left, cover):
    """Merged root-to-leaf paths of a tree with numerical splits only (numba only).

    Parameters
    ----------
    left, right : array-like of int, (n_nodes,)
        Children of each node; ``left[n] < 0`` at leaves.
    feature, threshold, nan_left, cover : array-like, (n_nodes,)
        The split feature and threshold (left iff ``x <= threshold``), whether NaN goes left, and
        the training cover of each node.

    Returns
    -------
    tuple
        ``(feature, lower, upper, nan_ok, zero, length, leaf_node)``: per leaf (rows), its path's
        elements padded to the tree's depth (columns, sorted by feature; see
        :class:`~featurelens.explainers.tree.paths.Paths`), the number of elements and the leaf's node.
    """
    return walk_forest([(left, right, feature, threshold, nan_left, cover)])[:7]


def walk_forest(trees):
    """:func:`walk_numeric_tree` for many trees in one compiled call.

    Parameters
    ----------
    trees : list of tuple
        Per tree ``(left, right, feature, threshold, nan_left, cover)`` as for
        :func:`walk_numeric_tree`.

    Returns
    -------
    tuple
        ``(feature, lower, upper, nan_ok, zero, length, leaf_node, leaf_start, nodes,
        node_start)``: the paths of every tree, one after the other (tree t's rows
        ``leaf_start[t] .. leaf_start[t + 1]``), padded to the deepest tree (the width is the
        deepest tree's depth); ``leaf_node`` numbers nodes within each tree; ``nodes`` the six
        node arrays of all trees concatenated (tree t's nodes ``node_start[t] .. node_start[t +
        1]``, children numbered within the tree).
    """
    sizes = np.array([len(tree[0]) for tree in trees], dtype=np.int64)
    node_start = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum(sizes, out=node_start[1:])
    joined = _arrays(*(np.concatenate([tree[i] for tree in trees]) for i in range(6)))
    return _walk_forest(*joined, node_start) + (joined, node_start)


def walk_values(packed, XT: np.ndarray, out_t: np.ndarray) -> None:
    """Path-dependent TreeSHAP values of a few rows by one walk of each tree per row, added into
    ``out_t`` (K, d, n); ``XT`` (d, n) the rows' columns, ``packed.nodes`` the forest's node arrays.

    The per-path kernels evaluate every root-to-leaf path on its own, so the splits above many
    leaves are read once per leaf. Here each tree is walked depth first once per row, carrying the
    product over the path's distinct features of their factors ``f_j(t) = z_j + t (o_j - z_j)``
    (z_j the product of the cover ratios of the splits on j, o_j whether x satisfies all of them)
    at the Gauss-Legendre nodes t_q; a second split on a feature replaces that feature's factor.
    Coming back up, each node holds ``A(t_q)``, the sum over its leaves of the leaf value times the
    product. Each leaf's term for feature j, ``v (o_j - z_j) int prod_{i != j} f_i``, is taken at
    the deepest split on j above the leaf, where ``f_j`` is that of every leaf below that split
    except those under a deeper split on j: ``(o_j - z_j) sum_q w_q (A(t_q) - A_deeper(t_q)) /
    f_j(t_q)``, with ``A_deeper`` the sum over the first deeper splits on j (the interpolation of
    Linear TreeShap, Yu et al. 2022, in the evaluation form). A subtree whose factor is 0 for every
    t (z_j = o_j = 0) adds nothing and is skipped. Work per row: O(nodes x Q) per tree, against
    O(leaves x depth x Q) for the per-path kernels. Numba only.

    Parameters
    ----------
    packed : Packed
        The ensemble's arrays with ``nodes`` (:func:`~featurelens.explainers.tree.paths.forest_paths`).
    XT : ndarray of float64, (d, n)
        The rows, one column each.
    out_t : ndarray of float64, (K, d, n)
        Where the values are added.
    """
    left, right, feature, threshold, nan_left, cover, node_value, node_start, max_depth = packed.nodes
    length = max(1, packed.max_length)
    q = (length + 1) // 2
    _values_by_walk(XT, left, right, feature, threshold, nan_left, cover, node_value, node_start, max_depth,
                    np.ascontiguousarray(packed.gl_nodes[length, :q]), np.ascontiguousarray(packed.gl_weights[length, :q]),
                    out_t)
