"""SPEX: sparse Fourier interactions of a game from structured queries (Kang et al., ICML 2025).

Written from the paper (Kang, Butler, Agarwal, Erginbas, Pedarsani, Yu, Ramchandran, "SPEX: Scaling
Feature Interaction Explanations for LLMs", ICML 2025, arXiv:2502.13870) and the reference sheet
``shapley-and-spex.md`` sec. 1.1-1.3.

Model: ``f(m) = sum_K F(K) (-1)^{<m, K>}`` with ``m`` the 0/1 mask of a coalition, ``F`` sparse and of
low degree.

Query design. ``C = 3`` groups; group ``c`` has a uniformly random ``M_c`` in ``F2^{b x n}``; one delay
matrix ``D`` (``(p+1, n)``, row 0 zero, row ``r`` the ``r``-th BCH parity bit of each unit message, see
:mod:`featurelens.interactions.bch`) is shared by all groups. The queries are the masks
``m = (M_c^T l + d_r) mod 2`` for every ``c``, ``r = 0..p`` and ``l in F2^b``: ``N = C (p+1) 2^b``.

Aliasing identity. Since ``<M_c^T l + d_r, K> = <l, M_c K> + <d_r, K>``, the normalised
Walsh-Hadamard transform over ``l`` of the outputs of one ``(c, r)`` is

    U_{c,r}(j) = 2^{-b} sum_l f(M_c^T l + d_r) (-1)^{<l, j>} = sum_{K : M_c K = j} F(K) (-1)^{<d_r, K>},

with ``l`` and ``j`` the integers whose bit ``i`` is coordinate ``i``.

Decoding. A bin ``(c, j)`` that holds one ``K`` (a singleton) reads ``U_{c,r}(j) = F(K) (-1)^{<d_r,K>}``: its
``p`` delay signs are the parity bits of the BCH codeword of message ``K``, so ``K`` is decoded from
them (hard decisions, or Chase soft decoding from the reliabilities ``U_r U_0``) whenever
``|K| + #wrong signs <= t``. A decoded ``K`` is accepted when it hashes to the bin (``M_c K = j``) and
the signature ``sigma = (-1)^{D K}`` explains the bin (residual energy test). Accepted terms are peeled
from every bin they fall in (all groups), which turns multitons into new singletons; this repeats
until nothing changes. Finally the recovered support (plus the constant) is refitted by least
squares on all the queries already made.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse

from .._linalg import lstsq, normal_equations
from .._random import numpy_rng, seed_record
from .._validation import check_int, check_option
from .. import _coalitions
from .._budgets import check_budget, check_memory

from ._interactions import Interactions, evaluated_on
from .bch import BCHCode

__all__ = ["spex", "DEFAULT_BUDGET", "spex_plan", "spex_masks", "query_blocks", "bin_transform"]

#: Budget used when ``budget=None`` (game evaluations); ``b`` is also capped at :data:`MAX_DEFAULT_B`.
DEFAULT_BUDGET = 15_000
MAX_DEFAULT_B = 8
#: Number of subsampling groups (reference sheet sec. 1.2: 3 in every SPEX configuration).
N_GROUPS = 3
#: Smallest b (bins per group 2^b) accepted (spectralexplain requires b >= 3).
MIN_B = 3
_DECODERS = ("soft", "hard")
#: Loose residual-energy cutoff of the singleton test (reference sheet sec. 1.3, ``res_energy_cutoff``).
_LOOSE_CUTOFF = 0.9
#: Strict residual-energy cutoff, tried first (clean singletons), before the loose one.
_STRICT_CUTOFF = 1e-6
_MAX_ITER = 100


def spex_plan(n: int, budget=None, max_order: int = 5, n_groups: int = N_GROUPS):
    """``(code, b, n_queries)`` for ``n`` players: the BCH code of ``t = max_order`` and the largest
    ``b`` (capped at ``n``) with ``n_groups (p+1) 2^b <= budget``.

    ``budget=None`` uses ``DEFAULT_BUDGET`` and caps ``b`` at :data:`MAX_DEFAULT_B`. A budget
    below ``n_groups (p+1) 2^min(3, n)`` raises a ValueError naming that minimum.
    """
    n = check_int(n, "n", low=1)
    t = check_int(max_order, "max_order", low=1)
    code = BCHCode(n, t)
    per_bin = n_groups * (code.n_parity + 1)
    b_min = min(MIN_B, n)
    minimum = per_bin * 2**b_min
    if budget is None:
        b = int(math.floor(math.log2(DEFAULT_BUDGET / per_bin))) if DEFAULT_BUDGET >= per_bin else 0
        b = max(b_min, min(b, MAX_DEFAULT_B, n))
    else:
        budget = check_budget(budget, "budget", unit="game evaluations", what=f"for spex with n = {n} players",
                              hint="lower the budget (SPEX needs about 2^b >= (number of terms) / 2.4 bins per group), "
                                   "or group players")
        if budget < minimum:
            raise ValueError(
                f"budget {budget} is too small for SPEX with n={n}, max_order={t}: it needs at least "
                f"{minimum} game evaluations ({n_groups} groups x {code.n_parity + 1} delays x 2^{b_min} bins)"
            )
        b = min(int(math.floor(math.log2(budget / per_bin))), n)
    return code, b, per_bin * 2**b


def spex_masks(M: np.ndarray, D: np.ndarray) -> np.ndarray:
    """All query masks, shape ``(C, p+1, 2^b, n)`` bool: ``masks[c, r, l] = (M_c^T l + d_r) mod 2``.

    ``M`` is ``(C, b, n)`` and ``D`` ``(p+1, n)`` (0/1); bit ``i`` of the integer ``l`` is ``l_i``.
    """
    C, b, n = M.shape
    ell = ((np.arange(2**b)[:, None] >> np.arange(b)[None, :]) & 1).astype(np.float64)  # (2^b, b)
    base = (np.einsum("lb,cbn->cln", ell, M.astype(np.float64)).astype(np.int64) & 1).astype(bool)
    return base[:, None, :, :] ^ D.astype(bool)[None, :, None, :]


def query_blocks(M: np.ndarray, D: np.ndarray, rows: int):
    """The query masks of :func:`spex_masks`, generated block by block in its row order (groups,
    then delays, then bins): yields ``(c, r, l, masks)`` with ``masks`` of shape
    ``(len(r) * len(l), n)`` bool holding ``spex_masks(M, D)[c, r, l]`` (``r`` and ``l`` slices)
    and at most ``max(rows, 1)`` rows, so the ``(C, p+1, 2^b, n)`` array is never held."""
    C, b, n = M.shape
    nb = 2**b
    n_delays = D.shape[0]
    delays = D.astype(bool)
    width = min(nb, max(1, rows))
    per = max(1, rows // width)

    def base_rows(c, l0, l1):
        # Small exact integers (<= b) in float32: the product is exact, the parity its low bit.
        ell = ((np.arange(l0, l1)[:, None] >> np.arange(b)[None, :]) & 1).astype(np.float32)
        return (np.rint(ell @ M[c].astype(np.float32)).astype(np.int64) & 1).astype(bool)  # M_c^T l mod 2

    for c in range(C):
        # The (2^b, n) bases of one group are kept when small (16 MiB), else rebuilt per block.
        whole = base_rows(c, 0, nb) if nb * n <= 2**24 else None
        for r0 in range(0, n_delays, per):
            r1 = min(r0 + per, n_delays)
            for l0 in range(0, nb, width):
                l1 = min(l0 + width, nb)
                base = whole[l0:l1] if whole is not None else base_rows(c, l0, l1)
                masks = base[None, :, :] ^ delays[r0:r1, None, :]
                yield c, slice(r0, r1), slice(l0, l1), masks.reshape(-1, n)


def bin_transform(values: np.ndarray) -> np.ndarray:
    """Normalised WHT over the last axis (length ``2^b``): ``U(j) = 2^-b sum_l v(l) (-1)^{popcount(l & j)}``."""
    x = np.array(values, dtype=np.float64, copy=True)
    size = x.shape[-1]
    lead = x.shape[:-1]
    h = 1
    while h < size:
        y = x.reshape(lead + (size // (2 * h), 2, h))
        a = y[..., 0, :].copy()
        y[..., 0, :] += y[..., 1, :]
        y[..., 1, :] = a - y[..., 1, :]
        h *= 2
    return x / size


def _bin_index(M: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Bins ``M_c K`` as integers, shape ``(C, q)``, for ``K`` ``(q, n)`` 0/1."""
    b = M.shape[1]
    bits = np.einsum("cbn,qn->cqb", M.astype(np.float64), K.astype(np.float64)).astype(np.int64) & 1
    return bits @ (1 << np.arange(b))


def _signatures(D: np.ndarray, K: np.ndarray) -> np.ndarray:
    """``(-1)^{D k}`` for each row ``k`` of ``K``: shape ``(q, p+1)``."""
    par = (K.astype(np.float64) @ D.T.astype(np.float64)).astype(np.int64) & 1
    return 1.0 - 2.0 * par


def fourier_design(masks: np.ndarray, keys: list) -> np.ndarray:
    """Dense design ``X[q, k] = (-1)^{|K_k & S_q|}`` for ``masks`` ``(q, n)`` bool and tuples ``keys``."""
    q, n = masks.shape
    sizes = [len(k) for k in keys]
    rows = np.repeat(np.arange(len(keys)), sizes)
    cols = np.array([p for k in keys for p in k], dtype=np.int64)
    inc = scipy.sparse.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(keys), n))
    counts = np.asarray(inc @ masks.T.astype(np.float64)).T  # (q, terms), small exact integers
    return 1.0 - 2.0 * (np.rint(counts).astype(np.int64) & 1)


def spex(game, budget=None, max_order: int = 5, decoder: str = "soft", seed=0, executor=None) -> Interactions:
    """Sparse Fourier interactions of ``game`` by SPEX (Kang et al., ICML 2025, arXiv:2502.13870).

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    budget
        The most game evaluations to spend; ``b`` (``2^b`` bins per group) is the largest with
        ``3 (p+1) 2^b <= budget``, where ``p`` is the number of parity bits of the BCH code of
        ``t = max_order`` for ``n`` messages (``p`` about ``max_order * log2(n)``). None: a budget of
        ``DEFAULT_BUDGET`` = 15,000 with ``b <= 8``. Too small a budget raises a ValueError that
        gives the minimum (``b = 3``). SPEX recovers the spectrum once ``2^b`` is comfortably above
        the number of Fourier terms divided by about 2.4 (the peeling threshold of 3 groups).
    max_order
        The degree bound ``t`` of the terms (and the correction capability of the delay code):
        a term ``K`` is decoded from a bin when ``|K| + #wrong delay signs <= max_order``.
    decoder
        ``"soft"`` (hard decision first, then Chase-II soft decoding of the bins that failed) or
        ``"hard"``.
    seed
        Seed (or numpy Generator) of the random subsampling matrices.
    executor
        Evaluate the queries on an executor's workers (:mod:`featurelens.parallel`, or any
        callable of the game hook) instead of the game's own; each block of queries is cut into
        the game's chunks as on the serial path, so the result is the same.

    Returns
    -------
    Interactions
        Fourier terms (``index="fourier"``), ``queries`` = game evaluations used, ``params`` with
        ``b``, ``C``, ``t``, ``n_parity``, ``decoder``, ``n_terms`` (recovered support, constant
        included), ``iterations``, ``decode_seconds`` (everything except game evaluation) and
        ``eval_seconds``.
    """
    if not callable(game) or getattr(game, "n_players", None) is None:
        raise TypeError(f"game must be a featurelens Game with n_players; got {type(game).__name__}")
    decoder = check_option(decoder, "decoder", _DECODERS)
    max_order = check_int(max_order, "max_order", low=1)
    n = int(game.n_players)
    t_start = time.perf_counter()
    code, b, n_queries = spex_plan(n, budget, max_order)
    C = N_GROUPS
    p = code.n_parity
    # The values, their bin transform and its working copy are held whole (float64 each); the
    # masks are generated and evaluated in blocks of CHUNK_ELEMENTS.
    check_memory(
        3.0 * 8 * n_queries + 8.0 * _coalitions.CHUNK_ELEMENTS * 4,
        f"spex with budget = {budget} ({n_queries} queries of n = {n} players)",
        "lower the budget (SPEX needs about 2^b >= (number of terms) / 2.4 bins per group), or group players.",
    )
    D = code.delay_matrix().astype(np.uint8)  # (p+1, n)
    rng = numpy_rng(seed)
    M = rng.integers(0, 2, size=(C, b, n), dtype=np.uint8)
    nb = 2**b
    rows = _coalitions.chunk_rows(n)
    values = np.empty((C, p + 1, nb), dtype=np.float64)
    prep = time.perf_counter() - t_start

    eval_seconds = 0.0
    with evaluated_on(game, executor):
        for c, r, l, masks in query_blocks(M, D, rows):
            t_eval = time.perf_counter()
            out = np.asarray(game(masks), dtype=np.float64)
            eval_seconds += time.perf_counter() - t_eval
            values[c, r, l] = out.reshape(r.stop - r.start, l.stop - l.start)
    values = values.reshape(-1)

    t_dec = time.perf_counter()
    nb = 2**b
    U = bin_transform(values.reshape(C, p + 1, nb))  # (C, p+1, 2^b)
    scale = max(float(np.std(values)), float(np.max(np.abs(values))) * 1e-3, 1e-300)
    zero_tol = (1e-9 * scale) ** 2 * (p + 1)  # energy of an empty bin (noiseless)

    found: dict[tuple, float] = {}
    dirty = np.ones((C, nb), dtype=bool)
    iterations = 0
    loose_rounds = 0
    while iterations < _MAX_ITER:
        iterations += 1
        energy = np.sum(U**2, axis=1)  # (C, 2^b)
        cand = dirty & (energy > zero_tol)
        dirty[:] = False
        cc, jj = np.nonzero(cand)
        if cc.size == 0:
            break
        u = U[cc, :, jj]  # (q, p+1)
        K, res_ratio, coef = _detect(code, M, D, u, cc, jj, decoder)
        accept = _choose(K, res_ratio, _STRICT_CUTOFF)
        if accept.any():
            # Clean singletons first; the other bins are checked again next round (after this
            # round's peeling), so that they still get the loose test if nothing clean is left.
            dirty[cc[~accept], jj[~accept]] = True
        else:
            accept = _choose(K, res_ratio, _LOOSE_CUTOFF)
            if accept.any():
                loose_rounds += 1
        if not accept.any():
            break
        # Unique terms found this round; average over the groups that saw the same term.
        Ka = K[accept]
        uniq, inv = np.unique(Ka, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        est = np.bincount(inv, weights=coef[accept], minlength=len(uniq)) / np.bincount(inv, minlength=len(uniq))
        sig = _signatures(D, uniq)  # (s, p+1)
        bins = _bin_index(M, uniq)  # (C, s)
        for c in range(C):
            # U[c, :, bins[c, i]] -= est[i] * sig[i]
            np.subtract.at(U[c].T, bins[c], est[:, None] * sig)
            dirty[c, bins[c]] = True
        for row, val in zip(uniq, est):
            key = tuple(int(i) for i in np.flatnonzero(row))
            found[key] = found.get(key, 0.0) + float(val)
    peel_seconds = time.perf_counter() - t_dec

    # Least-squares refit of the recovered support (plus the constant) on all the queries made.
    keys = sorted(set(found) | {()}, key=lambda k: (len(k), k))
    coef = _refit(M, D, rows, keys, values.reshape(C, p + 1, nb))
    terms = {k: float(v) for k, v in zip(keys, coef)}
    decode_seconds = prep + time.perf_counter() - t_dec
    params = {
        "method": "spex",
        "b": int(b),
        "C": C,
        "t": int(max_order),
        "n_parity": int(p),
        "decoder": decoder,
        "budget": None if budget is None else int(budget),
        **seed_record(seed),
        "n_terms": len(terms),
        "iterations": iterations,
        "loose_rounds": loose_rounds,
        "peel_seconds": peel_seconds,
        "decode_seconds": decode_seconds,
        "eval_seconds": eval_seconds,
    }
    return Interactions(terms, "fourier", n, max_order, n_queries, params)


def _refit(M, D, rows, keys, values):
    """Least squares of ``values`` on the Fourier characters of ``keys`` over all the queries, from
    the normal equations ``X^T X c = X^T y`` accumulated block by block (``X`` is never held; its
    columns are near-orthogonal +-1 characters, so the squared condition number stays small)."""
    k = len(keys)
    xtx = np.zeros((k, k))
    xty = np.zeros(k)
    for c, r, l, masks in query_blocks(M, D, max(1, rows)):
        block_xtx, block_xty = normal_equations(fourier_design(masks, keys), values[c, r, l].reshape(-1))
        xtx += block_xtx
        xty += block_xty
    return lstsq(xtx, xty)


def _detect(code, M, D, u, cc, jj, decoder):
    """Singleton test of bins with observations ``u`` (q, p+1) in groups ``cc`` and bins ``jj``.

    Returns the decoded ``K`` (q, n) uint8, the residual energy ratio (q,) (``inf`` when decoding
    failed or ``M_c K != j``) and the coefficient estimates ``<sigma, u> / (p+1)``.
    """
    rel = u[:, 1:] * np.sign(u[:, :1] + (u[:, :1] == 0))  # > 0: parity bit 0
    K, ok = code.decode_delays((rel < 0).astype(np.uint8))
    res, coef = _verify(M, D, u, cc, jj, K, ok)
    if decoder == "soft":
        bad = ~np.isfinite(res)
        if bad.any():
            K2, ok2 = code.decode_delays_soft(rel[bad])
            res2, coef2 = _verify(M, D, u[bad], cc[bad], jj[bad], K2, ok2)
            better = res2 < res[bad]
            idx = np.flatnonzero(bad)[better]
            K[idx] = K2[better]
            res[idx] = res2[better]
            coef[idx] = coef2[better]
    return K, res, coef


def _verify(M, D, u, cc, jj, K, ok):
    sig = _signatures(D, K)
    coef = np.sum(sig * u, axis=1) / u.shape[1]
    resid = np.sum((u - coef[:, None] * sig) ** 2, axis=1)
    total = np.sum(u**2, axis=1)
    ratio = resid / np.maximum(total, 1e-300)
    bins = _bin_index(M, K)  # (C, q)
    match = bins[cc, np.arange(len(cc))] == jj
    good = ok & match
    return np.where(good, ratio, np.inf), coef


def _choose(K, res_ratio, cutoff):
    """Rows accepted as singletons: residual ratio below ``cutoff``."""
    return res_ratio < cutoff
