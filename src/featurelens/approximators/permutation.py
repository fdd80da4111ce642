"""Permutation sampling: antithetic permutation SHAP (Mitchell, Cooper, Frank & Holmes 2022,
arXiv 2104.12199) and MinShap (Zheng & Raskutti 2026, arXiv 2604.15107), and their sampler."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .._random import numpy_rng
from .._validation import check_int, check_option
from .. import _coalitions
from .._coalitions import check_game
from ._common import ApproximationResult, approximator, ends, game_rows, model_calls, result, sampling_budget

__all__ = ["STATISTICS", "antithetic_permutations", "contribution_chunks", "iter_antithetic_permutations", "minshap",
           "permutation_shap"]


def iter_antithetic_permutations(n_permutations: int, n: int, rng: np.random.Generator,
                                 chunk: int | None = None) -> Iterator[np.ndarray]:
    """Yield ``n_permutations`` orderings of ``n`` players in chunks of at most ``chunk`` rows (an
    even number; default: :data:`CHUNK_ELEMENTS` ``// n^2``), in antithetic pairs: a uniform
    permutation (argsort of uniforms), then its reverse (Mitchell, Cooper, Frank & Holmes 2022,
    arXiv 2104.12199). An odd count drops the last reverse. The chunks consume ``rng`` exactly as
    one draw of all the uniforms would, so the orderings do not depend on ``chunk``. A chunk is
    never below 2 rows (one antithetic pair), however many players there are."""
    n_permutations = check_int(n_permutations, "n_permutations", low=0)
    n = check_int(n, "n", low=1)
    if chunk is None:
        chunk = max(2, _coalitions.CHUNK_ELEMENTS // (n * n))
    chunk = max(2, check_int(chunk, "chunk", low=1) // 2 * 2)
    n_half = (n_permutations + 1) // 2
    produced = 0
    for start in range(0, n_half, chunk // 2):
        k = min(chunk // 2, n_half - start)
        half = np.argsort(rng.random((k, n)), axis=1)
        perms = np.empty((2 * k, n), dtype=np.int64)
        perms[0::2] = half
        perms[1::2] = half[:, ::-1]
        perms = perms[: n_permutations - produced]
        produced += perms.shape[0]
        yield perms


def antithetic_permutations(n_permutations: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """All of :func:`iter_antithetic_permutations` at once, shape ``(n_permutations, n)``."""
    parts = list(iter_antithetic_permutations(n_permutations, n, rng, chunk=max(2, n_permutations + 1)))
    return np.concatenate(parts) if parts else np.zeros((0, n), dtype=np.int64)


def contribution_chunks(game, budget, seed, method):
    """``(n, budget, v0, vn, n_perm, chunks)``: ``chunks`` yields the marginal contributions
    ``deltas[p, i] = v(Pre_p(i) + i) - v(Pre_p(i))`` of a chunk of antithetic permutations, shape
    ``(P_chunk, n)``, evaluating each chunk's chains as it goes."""
    n = check_game(game)
    budget = sampling_budget(
        budget, n, method, 2 if n == 1 else 2 * n,
        "empty and full coalitions plus the n - 1 interior coalitions of each of 2 antithetic permutations",
    )
    rng = numpy_rng(seed)
    v0, vn = ends(game, n)
    if n == 1:
        return n, budget, v0, vn, 1, iter([np.array([[vn - v0]])])
    n_perm = max(2, ((budget - 2) // (n - 1)) // 2 * 2)
    rows = game_rows(game, n)

    def chunks():
        for perms in iter_antithetic_permutations(n_perm, n, rng):
            p = perms.shape[0]
            position = np.argsort(perms, axis=1)  # position[p, i]: where player i stands
            # Chain coalition k (k = 1..n-1) of permutation p holds the players at positions < k;
            # the p (n - 1) chain rows are built and evaluated in blocks of about CHUNK_ELEMENTS
            # mask elements (a pair of chains over 3,072 players is 19 M elements).
            inner = np.empty(p * (n - 1))
            for start in range(0, p * (n - 1), rows):
                r = np.arange(start, min(start + rows, p * (n - 1)))
                masks = position[r // (n - 1)] < (r % (n - 1) + 1)[:, None]
                inner[start : start + r.size] = game(masks)
            inner = inner.reshape(p, n - 1)
            chain = np.concatenate([np.full((p, 1), v0), inner, np.full((p, 1), vn)], axis=1)
            gains = np.diff(chain, axis=1)  # gains[p, j]: contribution of the player at position j
            yield np.take_along_axis(gains, position, axis=1)

    return n, budget, v0, vn, n_perm, chunks()


@approximator("permutation_shap")
def permutation_shap(game, budget: int | None = None, seed=0) -> ApproximationResult:
    """Permutation sampling with antithetic pairs: ``phi_i`` is the mean over permutations ``pi``
    of ``v(Pre_pi(i) + i) - v(Pre_pi(i))``; every permutation is followed by its reverse (Mitchell,
    Cooper, Frank & Holmes 2022, arXiv 2104.12199). Along each permutation the contributions
    telescope to ``v(N) - v(empty)``, so efficiency holds exactly.

    ``v(empty)`` and ``v(N)`` are evaluated once and shared by all chains; each permutation costs
    its ``n - 1`` interior coalitions; ``(budget - 2) // (n - 1)`` permutations rounded down to an
    even number (at least 2). Permutations are streamed in chunks and only the running sum is kept.
    ``budget``: default ``2 n + 2048``, at least ``2 n`` and at most
    ``featurelens._budgets.MAX_EVALUATIONS`` = 10^8 (both checked before any evaluation).
    Each pair of chains is evaluated in blocks of about :data:`CHUNK_ELEMENTS` mask elements, so
    thousands of players (a 3x32x32 image) run in bounded memory. ``seed``: None, an int or a Generator.
    Returns an :class:`ApproximationResult` with ``info["n_permutations"]``.
    """
    before = model_calls(game)
    n, budget, v0, vn, n_perm, chunks = contribution_chunks(game, budget, seed, "permutation_shap")
    total = np.zeros(n)
    for deltas in chunks:
        total += deltas.sum(axis=0)
    used = 2 + (n_perm * (n - 1) if n > 1 else 0)
    return result(game, total / n_perm, v0, vn, used, before, budget, n_permutations=n_perm, antithetic=True)


STATISTICS = ("min", "min_abs")


@approximator("minshap")
def minshap(game, budget: int | None = None, seed=0, statistic: str = "min") -> ApproximationResult:
    """MinShap: the minimum, instead of the mean, of each player's marginal contributions over
    the permutations of :func:`permutation_shap` (same budget and seed give the same orderings;
    Zheng & Raskutti 2026, "MinShap: A Modified Shapley Value Approach for Feature Selection",
    arXiv 2604.15107)::

        minshap_i = min_pi [ v(Pre_pi(i) + i) - v(Pre_pi(i)) ]

    ``statistic="min_abs"`` takes the minimum of ``|contribution|``. Running minima, maxima and
    sums are kept per chunk of permutations. Returns an :class:`ApproximationResult` with ``info["mean"]``
    (the Shapley estimate of the same permutations) and ``info["max"]`` (largest contribution).

    The minimum over orderings is the paper's score as its abstract states it; the sampled
    antithetic orderings and ``"min_abs"`` are this library's choices (no code or full text was
    available; see :class:`featurelens.selection.MinShapSelector` for the reconstructed test).
    """
    statistic = check_option(statistic, "statistic", STATISTICS)
    before = model_calls(game)
    n, budget, v0, vn, n_perm, chunks = contribution_chunks(game, budget, seed, "minshap")
    low = np.full(n, np.inf)
    high = np.full(n, -np.inf)
    total = np.zeros(n)
    for deltas in chunks:
        low = np.minimum(low, (deltas if statistic == "min" else np.abs(deltas)).min(axis=0))
        high = np.maximum(high, deltas.max(axis=0))
        total += deltas.sum(axis=0)
    used = 2 + (n_perm * (n - 1) if n > 1 else 0)
    return result(game, low, v0, vn, used, before, budget, n_permutations=n_perm, antithetic=True,
                  statistic=statistic, mean=total / n_perm, max=high)
