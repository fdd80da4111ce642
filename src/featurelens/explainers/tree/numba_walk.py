"""Reading a tree's node arrays into merged root-to-leaf paths with a compiled walk (numba): the
fast route of :func:`featurelens.explainers.tree.paths.extract_paths` for trees with numerical
splits only (the Python walk there handles categorical splits, and every tree when numba is
missing). Compiled once per machine: the functions are cached on disk where a cache folder is
writable (:func:`.numba_kernels.njit`)."""

from __future__ import annotations

import numpy as np

from .numba_kernels import HAVE_NUMBA, njit

__all__ = ["walk_numeric_tree", "walk_forest"]

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
        ``(feature, lower, upper, nan_ok, zero, length, leaf_node, leaf_start)``: the paths of
        every tree, one after the other (tree t's rows ``leaf_start[t] .. leaf_start[t + 1]``),
        padded to the deepest tree; ``leaf_node`` numbers nodes within each tree.
    """
    sizes = np.array([len(tree[0]) for tree in trees], dtype=np.int64)
    node_start = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum(sizes, out=node_start[1:])
    joined = _arrays(*(np.concatenate([tree[i] for tree in trees]) for i in range(6)))
    return _walk_forest(*joined, node_start)
