"""KernelSHAP: the Shapley kernel's weighted least squares (Lundberg & Lee 2017, arXiv 1705.07874)
with paired sampling (Covert & Lee 2021, arXiv 2012.01536), and its coalition sampler."""

from __future__ import annotations

import math
from itertools import combinations, islice
from typing import Iterator

import numpy as np

from .._linalg import lstsq, normal_equations
from .._random import numpy_rng
from .._budgets import check_memory
from .._coalitions import check_game, chunk_rows, mask_rows
from ._common import ApproximationResult, approximator, ends, game_rows, model_calls, regroup, result, sampling_budget

__all__ = ["CoalitionPlan", "kernel_bytes", "kernel_coalitions", "kernel_shap"]


def kernel_bytes(n: int) -> int:
    """Bytes of KernelSHAP's fit for ``n`` players: the float64 ``(n-1) x (n-1)`` normal equations
    and the solver's copy of them (:func:`kernel_shap`)."""
    return 16 * max(int(n) - 1, 0) ** 2


class CoalitionPlan:
    """The coalitions ``0 < |S| < n`` of a KernelSHAP budget and their Shapley-kernel weights,
    generated chunk by chunk by ``chunks`` (see :func:`kernel_coalitions`)."""

    def __init__(self, n: int, full: bool, sizes: list, sampled: np.ndarray | None, share: np.ndarray | None):
        self.n = n
        self.full = full  # every coalition, 1 .. 2^n - 2
        self.sizes = sizes  # enumerated sizes, in order
        self.sampled = sampled  # (pairs, ceil(n / 8)) uint8 packed representatives
        self.share = share  # (pairs,) weight of S and of N - S

    @property
    def n_rows(self) -> int:
        if self.full:
            return 2**self.n - 2
        rows = sum(math.comb(self.n, s) for s in self.sizes)
        return rows + (0 if self.sampled is None else 2 * self.sampled.shape[0])

    def chunks(self, rows: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(masks (m, n) bool, weights (m,))`` with ``m <= rows``; the weights of one size
        sum to ``1 / (s (n - s))`` (the kernel mass of the size)."""
        n = self.n
        rows = chunk_rows(n) if rows is None else rows
        if self.full:
            sizes = np.array([math.comb(n, k) for k in range(n + 1)], dtype=np.float64)
            for start in range(1, 2**n - 1, rows):
                m = mask_rows(start, min(start + rows, 2**n - 1), n)
                s = m.sum(1)
                yield m, 1.0 / (s * (n - s) * sizes[s])
            return
        for s in self.sizes:
            weight = 1.0 / (s * (n - s)) / math.comb(n, s)
            it = combinations(range(n), s)
            while True:
                combos = np.array(list(islice(it, rows)), dtype=np.int64).reshape(-1, s)
                if combos.shape[0] == 0:
                    break
                m = np.zeros((combos.shape[0], n), dtype=bool)
                np.put_along_axis(m, combos, True, axis=1)
                yield m, np.full(m.shape[0], weight)
        if self.sampled is not None:
            half = max(1, rows // 2)
            for start in range(0, self.sampled.shape[0], half):
                packed = self.sampled[start : start + half]
                m = np.unpackbits(packed, axis=1, count=n).astype(bool)
                w = self.share[start : start + half]
                yield np.concatenate([m, ~m]), np.concatenate([w, w])


def kernel_coalitions(n: int, budget: int, rng: np.random.Generator) -> CoalitionPlan:
    """The coalition sampler of KernelSHAP: which coalitions ``0 < |S| < n`` a budget buys, and
    their Shapley-kernel weights ``k(S) = (n-1) / (C(n,|S|) |S| (n-|S|))`` (up to the constant).

    ``budget`` counts ``empty`` and ``N`` too. For sizes ``(1, n-1), (2, n-2), ...``, a pair of sizes
    is enumerated completely, with its exact weights, when its count fits in the remaining budget and
    is no more than the draws sampling would give it (remaining budget times its share of the
    remaining kernel mass); the rest is drawn in pairs ``S`` and ``N - S`` (Covert & Lee 2021,
    arXiv 2012.01536), the size with probability proportional to ``1 / (s (n - s))`` and the subset
    uniformly; each draw carries an equal share of the remaining mass, and repeated draws are
    merged (evaluated once, weights added). Drawing stops when the distinct pairs fill the budget
    (or all pairs are found, or after ``64 x`` the pairs the budget holds). ``budget >= 2^n``
    enumerates everything.

    Memory: the distinct sampled pairs are kept packed (``ceil(n/8)`` bytes each, checked by
    :func:`check_memory` first); uniforms are drawn in chunks of :data:`CHUNK_ELEMENTS`, which
    consumes the generator exactly as one large draw would.
    """
    if budget >= 2**n:
        return CoalitionPlan(n, True, [], None, None)
    mass = {s: 1.0 / (s * (n - s)) for s in range(1, n)}
    remaining = budget - 2
    enumerated = []
    incomplete = list(range(1, n))
    for p in range(1, n // 2 + 1):
        sizes = [p] if p == n - p else [p, n - p]
        count = sum(math.comb(n, s) for s in sizes)
        share = sum(mass[s] for s in sizes) / sum(mass[s] for s in incomplete)
        if count > remaining or count > remaining * share:
            break
        for s in sizes:
            enumerated.append(s)
            incomplete.remove(s)
        remaining -= count
    n_pairs = remaining // 2
    if not incomplete or n_pairs <= 0:
        return CoalitionPlan(n, False, enumerated, None, None)
    nbytes = (n + 7) // 8
    # Draws, their unique copy and np.unique's sort work: about 4 copies of the packed draws.
    check_memory(
        4.0 * n_pairs * nbytes,
        f"kernel_shap with budget = {budget} and n_players = {n}",
        "lower the budget, group players (groups=), or use permutation_shap, whose memory does not grow "
        "with the budget.",
    )
    sizes = np.array(incomplete)
    prob = np.array([mass[s] for s in incomplete])
    total = prob.sum()
    available = sum(math.comb(n, s) for s in incomplete) // 2
    target = min(n_pairs, available)
    key = np.dtype((np.void, nbytes))
    draws = np.zeros(0, dtype=key)
    batch = n_pairs
    rows = chunk_rows(n)
    while True:
        size = rng.choice(sizes, size=batch, p=prob / total)
        packed = []
        for start in range(0, batch, rows):
            k = min(rows, batch - start)
            ranks = np.argsort(np.argsort(rng.random((k, n)), axis=1), axis=1)
            first = ranks < size[start : start + k, None]
            # One representative per pair (the one without player 0), to count distinct pairs.
            rep = np.where(first[:, :1], ~first, first)
            packed.append(np.ascontiguousarray(np.packbits(rep, axis=1)).view(key)[:, 0])
        draws = np.concatenate([draws] + packed)
        uniq, first_seen = np.unique(draws, return_index=True)
        if uniq.shape[0] >= target or draws.shape[0] >= 64 * n_pairs:
            break
        # Overshooting is harmless: the draws are cut at the target-th distinct pair below.
        batch = max(2 * (target - uniq.shape[0]), 64)
    if uniq.shape[0] >= target:
        draws = draws[: np.sort(first_seen)[target - 1] + 1]
    uniq, counts = np.unique(draws, return_counts=True)
    n_draws = draws.shape[0]
    del draws
    sampled = uniq.view(np.uint8).reshape(uniq.shape[0], nbytes)
    share = counts * (total / (2 * n_draws))
    return CoalitionPlan(n, False, enumerated, sampled, share)


@approximator("kernel_shap")
def kernel_shap(game, budget: int | None = None, seed=0) -> ApproximationResult:
    """KernelSHAP: Shapley values as the efficiency-constrained weighted least-squares fit

        min_phi sum_S k(S) (v(S) - v(empty) - sum_{i in S} phi_i)^2   s.t.  sum_i phi_i = v(N) - v(empty)

    with the Shapley kernel ``k(S) = (n-1) / (C(n,|S|) |S| (n-|S|))`` over ``0 < |S| < n``
    (Lundberg & Lee 2017, arXiv 1705.07874); with all coalitions the solution is exactly the
    Shapley value. The constraint eliminates the last player's value; the fit is solved from its
    normal equations ``A^T W A phi = A^T W y`` (``(n-1) x (n-1)``, float64), accumulated chunk by
    chunk, so the ``(budget, n)`` design is never held. Coalitions: :func:`kernel_coalitions`.

    ``budget``: game evaluations, ``empty`` and ``N`` included (default ``2 n + 2048``, at least
    ``min(n + 2, 2^n)``, at most ``featurelens._budgets.MAX_EVALUATIONS`` = 10^8, both
    checked before any evaluation); one fewer is used when the budget left for sampling is odd. ``seed``:
    None, an int or a numpy Generator (used as it is, so successive calls continue its stream).
    Returns an :class:`ApproximationResult` (``base_value`` ``v(empty)``, ``full_value`` ``v(N)``).
    """
    n = check_game(game)
    budget = sampling_budget(
        budget, n, "kernel_shap", min(n + 2, 2**n),
        "empty and full coalitions plus n others, for the n - 1 free values of the constrained fit",
    )
    check_memory(kernel_bytes(n), f"kernel_shap with n_players = {n} (its (n-1) x (n-1) normal equations)",
                 "group players (groups=) into fewer players")
    rng = numpy_rng(seed)
    before = model_calls(game)
    plan = kernel_coalitions(n, budget, rng)
    if n == 1:
        v0, vn = ends(game, n)
        return result(game, np.array([vn - v0]), v0, vn, 2, before, budget)
    ata = np.zeros((n - 1, n - 1))
    aty = np.zeros(n - 1)
    used = 2
    v0 = vn = None
    end_masks = np.stack([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)])
    rows = game_rows(game, n)
    for masks, w in regroup(plan.chunks(), rows, first_rows=rows - 2):
        if v0 is None:
            # v(empty) and v(N) ride along with the first block: one game call fewer per game.
            values = game(np.concatenate([end_masks, masks]))
            v0, vn, values = float(values[0]), float(values[1]), values[2:]
        else:
            values = game(masks)
        delta = vn - v0
        used += masks.shape[0]
        z = masks.astype(np.float64)
        a = z[:, :-1] - z[:, -1:]
        y = values - v0 - z[:, -1] * delta
        block_ata, block_aty = normal_equations(a, y, w)
        ata += block_ata
        aty += block_aty
    if v0 is None:  # no coalition besides empty and N
        v0, vn = ends(game, n)
    delta = vn - v0
    # Minimum-norm solve (gelsd) of the small symmetric system: a budget below n - 1 free
    # directions leaves it singular.
    if not (np.isfinite(ata).all() and np.isfinite(aty).all()):
        # Finite game values whose weighted sums overflow float64 (|v| near 1e308): the boundary
        # (approximator) reruns on the rescaled game.
        raise FloatingPointError("kernel_shap's normal equations overflowed float64")
    head = lstsq(ata, aty)
    phi = np.append(head, delta - head.sum())
    return result(game, phi, v0, vn, used, before, budget)
