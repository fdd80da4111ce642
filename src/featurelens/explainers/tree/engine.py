"""The TreeSHAP engine: exact Shapley and interaction values of the per-path product games.

Input: an :class:`~featurelens.explainers.tree.paths.Ensemble` and rows prepared by
:func:`~featurelens.explainers.tree.paths.prepare_rows`; :func:`shap_values` and
:func:`interaction_values` compute the values of both games of
:func:`featurelens.explainers.tree.tree_shap_values` (path-dependent without a background,
interventional with one), with the compiled kernels of :mod:`.numba_kernels` where numba is
installed (:data:`ENGINE`) and numpy otherwise; both give the same numbers.

Algorithm (the per-path view of GPUTreeShap, Mitchell, Frank and Holmes 2022): a tree's output is
a sum over its leaves of ``value_leaf * prod_{f on the path} g_f``, where the splits on the same
feature are merged into one interval and, for a coalition S, ``g_f = o_f = 1[x satisfies every
split on f]`` if f is in S and ``g_f = q_f`` otherwise; ``q_f`` is the product of the cover ratios
(child / parent) of the splits on f (path-dependent) or ``1[b satisfies every split on f]`` for one
background row b (interventional). Each leaf term is a product game whose exact Shapley value is
``phi_i = (o_i - q_i) * sum_k w_k e_k``, with ``w_k = k!(d-k-1)!/d!`` and ``e_k`` the elementary
symmetric polynomials of the other features' (o_j, q_j) pairs. Because ``w_k = int_0^1 t^k
(1-t)^(d-1-k) dt`` this sum equals ``int_0^1 prod_{j != i} (q_j + t (o_j - q_j)) dt``, the integral
of a polynomial of degree <= depth - 1, evaluated exactly with ceil(depth / 2) Gauss-Legendre nodes
(the same "polynomial at nodes" evaluation Linear TreeShap uses for stability; all factors lie in
[0, 1]). Leave-one-out products come from prefix and suffix products (never a division), so the
work is O(rows x leaves x depth x depth/2), vectorised over rows and leaves.

References
----------
- S. M. Lundberg, G. Erion, H. Chen, A. DeGrave, J. M. Prutkin, B. Nair, R. Katz, J. Himmelfarb,
  N. Bansal, S.-I. Lee, "From local explanations to global understanding with explainable AI for
  trees", Nature Machine Intelligence 2:56-67, 2020 (arXiv 1905.04610).
- R. Mitchell, E. Frank, G. Holmes, "GPUTreeShap: massively parallel exact calculation of SHAP
  scores for tree ensembles", PeerJ Computer Science 8:e880, 2022 (arXiv 2010.13972).
- D. Janzing, L. Minorics, P. Bloebaum, "Feature relevance quantification in explainable AI: a
  causal problem", AISTATS 2020.
- P. Yu, C. Xu, A. Bifet, J. Read, "Linear TreeShap", NeurIPS 2022 (arXiv 2209.08192).
"""

from __future__ import annotations

import numpy as np

from . import numba_interventional, numba_kernels
from .paths import Ensemble, Paths

#: Which engine computes the values: "auto" (the compiled kernels of :mod:`.numba_kernels` when
#: numba is installed, else numpy), "numba" or "numpy". Both give the same numbers; tests set it.
ENGINE = "auto"

#: Bytes of bit masks (rows x paths x 8, and the background's distinct masks) held at a time by
#: the interventional kernels.
MASK_BYTES = 64 * 2**20


def _packed(ens: Ensemble):
    """The compiled engine's arrays for ``ens`` (built once per ensemble), or None for numpy."""
    if ENGINE == "numpy" or (ENGINE == "auto" and not numba_kernels.HAVE_NUMBA):
        return None
    packed = ens.packed
    if packed is None:
        packed = numba_kernels.pack(ens)
        ens.packed = packed
    if not numba_kernels.usable(packed):
        if ENGINE == "numba":
            raise RuntimeError("the numba tree engine is unavailable (numba not installed, or a path "
                               f"with more than {numba_kernels.MAX_PATH_FEATURES} features)")
        return None
    return packed


def _row_blocks(n_rows: int, n_paths: int):
    """Row ranges whose bit masks (rows x paths x 8 bytes) stay within ``MASK_BYTES``."""
    step = max(1, MASK_BYTES // (8 * max(1, n_paths)))
    return [(s, min(n_rows, s + step)) for s in range(0, n_rows, step)]


def _interventional_blocks(n: int, R: int, P: int):
    """``(path blocks, row blocks, background blocks)`` of the interventional kernels: the masks of
    one block of paths (the rows' n x 8 bytes per path, the background's 4 x R x 8: its masks,
    their transpose, distinct values and counts) stay within ``MASK_BYTES``; rows and background
    are split too only where even 16 paths at once would not fit."""
    per_path = 8 * (n + 4 * R)
    pb = min(max(1, P), max(16, MASK_BYTES // per_path))
    paths = [slice(s, min(P, s + pb)) for s in range(0, P, pb)]
    if pb * per_path <= MASK_BYTES:
        return paths, [(0, n)], [(0, R)]
    return paths, _row_blocks(n, 2 * pb), _row_blocks(R, 8 * pb)


def _compiled(ens: Ensemble, packed, x, bg, pairs: bool):
    """Values (n, d, K) or pair sums (n, d, d, K, both orders) and the base value (K,)."""
    n, d, K = x.shape[0], ens.n_features, ens.n_out
    if bg is None:
        base = ens.offset + packed.root_value
        if not pairs:
            return numba_kernels.path_dependent_values(packed, x), base
        out = np.zeros((n, d, d, K))
        numba_kernels.path_dependent_pairs(packed, x, out)
        return out, base
    out = np.zeros((n, d, d, K) if pairs else (n, d, K))
    base = ens.offset.copy()
    P = packed.feature.shape[0]
    scale = 1.0 / bg.shape[0]
    if not pairs:  # one path at a time: no masks of all paths held (numba_interventional)
        reach = numba_interventional.interventional_values_fused(packed, x, bg, scale, out)
        base += (reach * scale) @ packed.value
        return out, base
    reach = np.zeros(P)
    kernel = numba_interventional.interventional_pairs
    # paths in blocks, each block's masks computed once (rows and background split only when huge)
    path_blocks, x_blocks, bg_blocks = _interventional_blocks(n, bg.shape[0], P)
    x = np.ascontiguousarray(x)
    for paths in path_blocks:
        for b0, b1 in bg_blocks:
            bg_masks, hits = numba_interventional.background_masks(packed, bg[b0:b1], paths)
            reach[paths] += hits
            for r0, r1 in x_blocks:
                x_masks = numba_interventional.satisfied_masks(packed, x[r0:r1], paths)
                kernel(packed, x_masks, bg_masks, scale, out[r0:r1], paths)
    base += (reach * scale) @ packed.value
    return out, base


def satisfies(paths: Paths, x: np.ndarray) -> np.ndarray:
    """(n, P, D) float: 1 where row x satisfies the path element (padding: 1)."""
    xv = x[:, paths.feature]  # (n, P, D)
    with np.errstate(invalid="ignore"):
        ok = (xv > paths.lower) & (xv <= paths.upper)
    if paths.has_categories:
        n_cat = paths.cats.shape[-1] - 1
        with np.errstate(invalid="ignore"):
            code = np.where((xv >= 0) & (xv < n_cat) & (xv == np.floor(xv)), xv, n_cat)
        code = np.nan_to_num(code, nan=n_cat).astype(np.int64)
        p_idx, d_idx = np.indices(paths.feature.shape)
        cat_ok = paths.cats[p_idx[None], d_idx[None], code]
        ok = np.where(paths.is_cat, cat_ok, ok)
    nan = np.isnan(xv)
    ok = np.where(nan, paths.nan_ok, ok) | ~paths.valid
    return ok.astype(np.float64)


def _gauss_legendre(depth: int):
    m = max(1, (depth + 1) // 2)
    t, w = np.polynomial.legendre.leggauss(m)
    return (t + 1.0) / 2.0, w / 2.0  # on [0, 1]


def _path_phi(o, q, paths: Paths, nodes, weights, n_features):
    """Shapley values of the leaf product games, summed: (n, d, K).

    ``o`` (n, P, D) and ``q`` (n or 1, P, D) are the "in coalition" and "out of coalition" factors.
    """
    n, P, D = o.shape
    diff = o - q  # (n, P, D)
    # factors at each quadrature node: (Q, n, P, D)
    fac = q[None] + nodes[:, None, None, None] * diff[None]
    prefix = np.ones_like(fac)
    suffix = np.ones_like(fac)
    if D > 1:
        prefix[..., 1:] = np.cumprod(fac[..., :-1], axis=-1)
        suffix[..., :-1] = np.cumprod(fac[..., :0:-1], axis=-1)[..., ::-1]
    loo = np.tensordot(weights, prefix * suffix, axes=(0, 0))  # (n, P, D)
    contrib = (diff * loo).reshape(n, P * D)  # padding elements have diff 0
    onehot = np.zeros((P * D, n_features))
    onehot[np.arange(P * D), paths.feature.ravel()] = 1.0
    # phi[n, f, k] = sum_e contrib[n, e] * value[e, k] * onehot[e, f]
    val = np.repeat(paths.value, D, axis=0)  # (P*D, K)
    return np.einsum("ne,ek,ef->nfk", contrib, val, onehot, optimize=True)


def _tree_output(factors, paths: Paths):
    """sum over leaves of value * prod of factors: (n, K)."""
    return np.prod(factors, axis=-1) @ paths.value


def _to_input_columns(ens: Ensemble, values: np.ndarray, axes=(1,)) -> np.ndarray:
    """Values over the columns the trees split on, put back in the input's column order."""
    if ens.tree_columns is None:
        return values
    out = np.empty_like(values)
    if axes == (1,):
        out[:, ens.tree_columns] = values
    else:  # (1, 2): interaction matrices
        idx = ens.tree_columns
        out[:, idx[:, None], idx[None, :]] = values
    return out


def shap_values(ens: Ensemble, x: np.ndarray, bg: np.ndarray | None, batch_size: int):
    """:func:`~featurelens.explainers.tree.tree_shap_values` (raw units) on a built ensemble and
    prepared rows: ``(values, base_value)``, values (n, d) and a float when ``ens.squeeze``, else
    (n, d, K) and (K,); ``bg`` None for the path-dependent game, else the background rows;
    ``batch_size`` bounds the rows (times background rows) of one numpy step."""
    values, base = _shap_tree_columns(ens, x, bg, batch_size)
    return _to_input_columns(ens, values), base


def _shap_tree_columns(ens: Ensemble, x: np.ndarray, bg: np.ndarray | None, batch_size: int):
    packed = _packed(ens)
    if packed is not None:
        values, base = _compiled(ens, packed, x, bg, pairs=False)
        if ens.squeeze:
            return values[:, :, 0], float(base[0])
        return values, base
    n, d, K = x.shape[0], ens.n_features, ens.n_out
    values = np.zeros((n, d, K))
    base = ens.offset.copy()
    for paths in ens.paths:
        nodes, weights = _gauss_legendre(paths.feature.shape[1])
        if bg is None:
            q = paths.zero[None]
            base += (np.prod(paths.zero, axis=1) @ paths.value)
            for start in range(0, n, batch_size):
                o = satisfies(paths, x[start : start + batch_size])
                values[start : start + batch_size] += _path_phi(o, q, paths, nodes, weights, d)
        else:
            qb = satisfies(paths, bg)  # (R, P, D)
            R = qb.shape[0]
            base += _tree_output(qb, paths).mean(axis=0)
            step = max(1, batch_size // R)
            for start in range(0, n, step):
                o = satisfies(paths, x[start : start + step])  # (m, P, D)
                m = o.shape[0]
                oo = np.repeat(o, R, axis=0)  # (m*R, P, D)
                qq = np.tile(qb, (m, 1, 1))
                phi = _path_phi(oo, qq, paths, nodes, weights, d).reshape(m, R, d, K)
                values[start : start + m] += phi.mean(axis=1)
    if ens.squeeze:
        return values[:, :, 0], float(base[0])
    return values, base


def _path_pair(o, q, paths: Paths, nodes, weights, n_features, out):
    """Shapley interaction indices of the leaf product games, summed into ``out`` (n, d*d, K).

    For a product game v(S) = prod_f g_f the Shapley interaction index (Grabisch and Roubens 1999)
    of the elements at path positions a != b is ``(o_a - q_a)(o_b - q_b) * int_0^1 prod_{k != a, b}
    (q_k + t (o_k - q_k)) dt`` (the weights |S|!(m-|S|-2)!/(m-1)! are Beta integrals of
    t^|S| (1-t)^(m-2-|S|)); the leave-two-out products come from prefix and suffix products of the
    factors with factor a set to 1 (no division).
    """
    n, P, D = o.shape
    K = paths.value.shape[1]
    diff = o - q
    fac = q[None] + nodes[:, None, None, None] * diff[None]  # (Q, n, P, D)
    pair = np.zeros((n, P, D, D))
    for a in range(D):
        fa = fac.copy()
        fa[..., a] = 1.0
        prefix = np.ones_like(fa)
        suffix = np.ones_like(fa)
        prefix[..., 1:] = np.cumprod(fa[..., :-1], axis=-1)
        suffix[..., :-1] = np.cumprod(fa[..., :0:-1], axis=-1)[..., ::-1]
        l2o = np.tensordot(weights, prefix * suffix, axes=(0, 0))  # (n, P, D): prod_{k != a, b}
        pair[:, :, a, :] = diff[..., a : a + 1] * diff * l2o
        pair[:, :, a, a] = 0.0
    # scatter (p, a, b) -> (feature[p, a], feature[p, b]); padding elements have diff 0
    idx = (paths.feature[:, :, None] * n_features + paths.feature[:, None, :]).ravel()  # (P*D*D,)
    order = np.argsort(idx, kind="stable")
    uniq, starts = np.unique(idx[order], return_index=True)
    flat = pair.reshape(n, P * D * D)[:, order]
    val = np.repeat(paths.value, D * D, axis=0)[order]  # (P*D*D, K)
    for k in range(K):
        out[:, uniq, k] += np.add.reduceat(flat * val[:, k], starts, axis=1)


def interaction_values(ens: Ensemble, x: np.ndarray, bg: np.ndarray | None, batch_size: int,
                       shap=None):
    """:func:`~featurelens.explainers.tree.tree_shap_interaction_values` on a built ensemble and
    prepared rows: ``(values, base_value)``, values (n, d, d) or (n, d, d, K) (see
    :func:`shap_values` for the arguments); ``shap``: the ``(values, base_value)`` of
    :func:`shap_values` on the same rows when the caller has them (the diagonal is filled from
    them instead of computing them again)."""
    n, d, K = x.shape[0], ens.n_features, ens.n_out
    packed = _packed(ens)
    if packed is not None:
        pairs = _compiled(ens, packed, x, bg, pairs=True)[0].reshape(n, d * d, K)
    else:
        pairs = np.zeros((n, d * d, K))
    for paths in ens.paths if packed is None else ():
        depth = paths.feature.shape[1]
        nodes, weights = _gauss_legendre(depth)
        rows = max(1, batch_size // depth)  # the pair array is depth times the Shapley one
        if bg is None:
            q = paths.zero[None]
            for start in range(0, n, rows):
                o = satisfies(paths, x[start : start + rows])
                _path_pair(o, q, paths, nodes, weights, d, pairs[start : start + rows])
        else:
            qb = satisfies(paths, bg)  # (R, P, D)
            R = qb.shape[0]
            step = max(1, rows // R)
            for start in range(0, n, step):
                o = satisfies(paths, x[start : start + step])
                m = o.shape[0]
                part = np.zeros((m * R, d * d, K))
                _path_pair(np.repeat(o, R, axis=0), np.tile(qb, (m, 1, 1)), paths, nodes, weights,
                           d, part)
                pairs[start : start + m] += part.reshape(m, R, d * d, K).mean(axis=1)
    values = pairs.reshape(n, d, d, K)
    values /= 2.0  # in place: the pair sums are this call's own array
    if shap is not None and ens.tree_columns is None:  # the tree columns are the input's
        phi, base = shap
    else:
        phi, base = _shap_tree_columns(ens, x, bg, batch_size)
    phi = phi.reshape(n, d, K)
    diag = np.arange(d)
    values[:, diag, diag, :] = 0.0  # (a feature never pairs with itself on a merged path)
    values[:, diag, diag, :] = phi - values.sum(axis=2)
    values = _to_input_columns(ens, values, axes=(1, 2))
    if ens.squeeze:
        return values[..., 0], base
    return values, base
