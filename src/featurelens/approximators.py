"""Shapley-value approximators: functions of a :class:`featurelens.games.Game`.

Each approximator maps a game ``v`` over ``n`` players to ``(values, info)``: ``values`` is a
float64 array ``(n,)`` estimating the Shapley values (Shapley 1953)::

    phi_i = sum_{S subset N minus {i}} |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S)),

and ``info`` a dict of diagnostics: ``n_players``, ``budget`` (the evaluations allowed),
``game_evaluations`` (the evaluations spent, ``v(empty)`` and ``v(N)`` included), ``base_value``
``v(empty)``, ``full_value`` ``v(N)``, and ``model_calls`` (model rows) when the game is a
:class:`~featurelens.games.MaskedModel`.

* :func:`exact_shapley`: all ``2^n`` coalitions (refuses ``n > max_players`` at once, with the
  memory it would need).
* :func:`kernel_shap`: KernelSHAP (Lundberg & Lee 2017, arXiv 1705.07874) with paired sampling
  (Covert & Lee 2021, arXiv 2012.01536).
* :func:`permutation_shap`: antithetic permutation sampling (Mitchell, Cooper, Frank & Holmes 2022,
  arXiv 2104.12199).
* :func:`minshap`: the minimum of the marginal contributions over the same permutations (Zheng &
  Raskutti 2026, arXiv 2604.15107).

Samplers. One coalition sampler (:func:`kernel_coalitions`, Shapley-kernel sizes, paired) and one
permutation sampler (:func:`iter_antithetic_permutations`) serve every estimator here,
``featurelens.selection.MinShapSelector`` and the explainers of
:mod:`featurelens.explainers.shapley`.

Budgets. Every ``budget`` is an int of game evaluations, refused before any evaluation when it is
below the method's minimum for ``n`` players (the message states the minimum) or above
:data:`featurelens._validation.MAX_EVALUATIONS` (10^8 evaluations per call; the environment variable
``FEATURELENS_MAX_EVALUATIONS`` raises it), by :func:`featurelens._validation.check_budget`.

Memory. Coalitions are generated and evaluated chunk by chunk (at most
:data:`CHUNK_ELEMENTS` mask elements per chunk), so the peak memory is bounded by the chunk, not by
the budget: KernelSHAP keeps only its normal equations (``(n-1) x (n-1)``, float64), the
permutation estimators only running sums (and minima/maxima). What must grow with the budget (the
distinct sampled pairs of KernelSHAP, packed at ``n/8`` bytes each; the table of an exact method) is
estimated first by :func:`check_memory`, which refuses, naming the estimate and the way out, before
anything is allocated.
"""

from __future__ import annotations

import math
import os
from itertools import combinations, islice
from typing import Iterator

import numpy as np

from ._linalg import lstsq, normal_equations
from ._random import numpy_rng
from ._validation import (
    available_memory,  # noqa: F401  (re-exported: the memory estimates live in _validation)
    check_budget,
    check_int,
    check_memory,
    check_option,
    format_bytes,
    format_count,
    max_evaluations,
)
from .games import all_masks

__all__ = [
    "exact_shapley",
    "kernel_shap",
    "permutation_shap",
    "minshap",
    "shapley_from_table",
    "coalition_table",
    "kernel_coalitions",
    "antithetic_permutations",
    "iter_antithetic_permutations",
    "default_budget",
    "check_memory",
    "format_bytes",
    "all_masks",
]

#: Mask elements (rows x players) generated and evaluated per chunk (1 MiB of bool masks; the
#: float64 work arrays built from one chunk stay around 8-24 MiB).
CHUNK_ELEMENTS = 2**20
#: Largest n whose 2^n coalitions :func:`exact_shapley` evaluates by default (about a million).
MAX_EXACT_PLAYERS = 20


# --------------------------------------------------------------------------------------------------
# memory estimates: the one place where exact methods and budgets are sized before allocating


def refuse_exact(method: str, n: int, max_players: int, bytes_per_coalition: float, way_out: str) -> None:
    """The refusal of an exact method over all ``2^n`` coalitions when ``n > max_players``: the
    message names the evaluations, the memory estimate and the way out. Computed with ints (and
    powers of ten), so it never overflows, whatever ``n`` (a 3x32x32 image has 3,072 players)."""
    if n > max_players:
        nbytes = math.ceil(bytes_per_coalition) * 2**n
        raise ValueError(
            f"{method} evaluates all 2^n coalitions; this game has n_players = {n} > max_players = "
            f"{max_players} (2^{n} = {format_count(2**n)} evaluations, about {format_bytes(nbytes)} "
            f"of memory). {way_out}"
        )


# --------------------------------------------------------------------------------------------------
# shared helpers


def _check_game(game):
    n = getattr(game, "n_players", None)
    if not callable(game) or n is None:
        raise TypeError(f"game must be a featurelens Game (callable, with n_players); got {type(game).__name__}")
    return check_int(n, "game.n_players", low=1)


def _chunk_rows(n: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(1, n))


def _game_rows(game, n: int) -> int:
    """Mask rows per block sent to ``game``: about :data:`CHUNK_ELEMENTS` mask elements, rounded to
    a multiple of the game's own chunk size so that no block leaves a small partial chunk (each
    chunk is one model call)."""
    per_call = max(1, int(getattr(game, "chunk_size", 1) or 1))
    return max(per_call, _chunk_rows(n) // per_call * per_call)


def _regroup(pieces, rows: int, first_rows: int | None = None):
    """Concatenate consecutive ``(masks, weights)`` pieces into blocks of exactly ``rows`` rows
    (``first_rows`` for the first block, which leaves room for rows added to it; the last block may
    be shorter), so that many small pieces (the enumerated sizes of a KernelSHAP plan) cost few
    game calls; memory stays bounded by ``rows``."""
    buffer_m, buffer_w, held = [], [], 0
    target = rows if first_rows is None else max(1, first_rows)
    for masks, weights in pieces:
        start = 0
        while start < masks.shape[0]:
            take = min(target - held, masks.shape[0] - start)
            buffer_m.append(masks[start : start + take])
            buffer_w.append(weights[start : start + take])
            held += take
            start += take
            if held == target:
                yield np.concatenate(buffer_m), np.concatenate(buffer_w)
                buffer_m, buffer_w, held, target = [], [], 0, rows
    if held:
        yield np.concatenate(buffer_m), np.concatenate(buffer_w)


def _ends(game, n: int) -> tuple[float, float]:
    ends = game(np.stack([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)]))
    return float(ends[0]), float(ends[1])


def _model_calls(game):
    return getattr(game, "model_calls", None)


def _info(game, n, budget, used, v0, vn, calls_before, **more) -> dict:
    info = {"n_players": n, "budget": budget, "game_evaluations": int(used), "base_value": v0, "full_value": vn}
    calls = _model_calls(game)
    if calls is not None and calls_before is not None:
        info["model_calls"] = int(calls - calls_before)
    info.update(more)
    return info


def default_budget(n: int) -> int:
    """The default budget of the sampling estimators: ``2 n + 2048`` game evaluations."""
    return 2 * n + 2048


def _sampling_budget(budget, n: int, method: str, minimum: int, reason: str) -> int:
    """The checked budget: the default for None; refused below ``minimum`` (stated, with the
    reason) or above :func:`featurelens._validation.max_evaluations`, before any evaluation."""
    hint = (f"lower the budget (at least {minimum} for {method} with n_players = {n}), or group players "
            "(groups=)")
    if minimum > max_evaluations():
        raise ValueError(
            f"{method} with n_players = {n} needs at least {format_count(minimum)} game evaluations ({reason}), "
            f"more than the limit of {format_count(max_evaluations())} per call "
            "(featurelens._validation.MAX_EVALUATIONS); group players (groups=) into fewer players"
        )
    budget = check_budget(budget, "budget", allow_none=True, unit="game evaluations",
                          what=f"for {method} with n_players = {n}", hint=hint)
    budget = default_budget(n) if budget is None else budget
    if budget < minimum:
        raise ValueError(
            f"budget = {budget} game evaluations is too small for {method} with n_players = {n}; "
            f"it needs at least {minimum} ({reason})"
        )
    return budget


# --------------------------------------------------------------------------------------------------
# exact


def _mask_rows(start: int, stop: int, n: int) -> np.ndarray:
    """Rows ``start..stop-1`` of :func:`all_masks` ``(n)`` (bitmask order), without the others."""
    rows = np.arange(start, stop, dtype=np.int64)
    return ((rows[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


def coalition_table(game, max_players: int = MAX_EXACT_PLAYERS, method: str = "this exact method",
                    bytes_per_coalition: float = 8.0, way_out: str | None = None) -> np.ndarray:
    """``v(S)`` for all ``2^n`` coalitions, a float64 ``(2^n,)`` table in bitmask order (player
    ``i`` is bit ``i`` of the row index, as :func:`all_masks`).

    The masks are generated and evaluated chunk by chunk (never the whole ``(2^n, n)`` mask
    matrix). Games with ``n > max_players`` are refused at once, naming the evaluations and the
    memory (``bytes_per_coalition * 2^n``) the caller would need; the table itself is also checked
    against the available memory before it is allocated.
    """
    n = _check_game(game)
    max_players = check_int(max_players, "max_players", low=1)
    if way_out is None:
        way_out = ("Use a sampling method (kernel_shap, permutation_shap) or SPEX for games this large, "
                   "group players (groups=), or raise max_players.")
    refuse_exact(method, n, max_players, bytes_per_coalition, way_out)
    total = 2**n
    if total > max_evaluations():
        raise ValueError(
            f"{method} with n_players = {n} needs 2^{n} = {format_count(total)} game evaluations, more than the "
            f"limit of {format_count(max_evaluations())} per call (featurelens._validation.MAX_EVALUATIONS, "
            f"raised by the environment variable FEATURELENS_MAX_EVALUATIONS). {way_out}"
        )
    check_memory(math.ceil(bytes_per_coalition) * total, f"{method} with n_players = {n}", way_out)
    table = np.empty(total, dtype=np.float64)
    step = _chunk_rows(n)
    for start in range(0, total, step):
        stop = min(start + step, total)
        values = np.asarray(game(_mask_rows(start, stop, n)), dtype=np.float64)
        if values.shape != (stop - start,):
            raise ValueError(f"the game returned shape {values.shape}; expected ({stop - start},)")
        table[start:stop] = values
    return table


def shapley_from_table(table: np.ndarray, n: int) -> np.ndarray:
    """Exact Shapley values from a ``(2^n,)`` table in bitmask order (player ``i`` is bit ``i``):
    ``phi_i = sum_{S not ni i} |S|!(n-|S|-1)!/n! (v(S + i) - v(S))``, vectorised per player. The
    one exact-Shapley routine (``featurelens.interactions.exact(game, "shapley")`` uses it too)."""
    table = np.asarray(table, dtype=np.float64)
    if table.shape != (2**n,):
        raise ValueError(f"table must have shape (2^n,) = ({2**n},); got {table.shape}")
    idx = np.arange(2**n, dtype=np.int64)
    size = np.zeros(2**n, dtype=np.int64)
    for i in range(n):
        size += (idx >> i) & 1
    w = np.array([math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n) for k in range(n)])
    phi = np.empty(n)
    for i in range(n):
        without = idx[((idx >> i) & 1) == 0]
        phi[i] = np.dot(w[size[without]], table[without | (1 << i)] - table[without])
    return phi


def exact_shapley(game, max_players: int = MAX_EXACT_PLAYERS):
    """Exact Shapley values from all ``2^n`` coalition values (Shapley 1953).

    Refuses ``n > max_players`` (default 20, about a million evaluations) at once with the memory
    estimate and the way out (sampling, SPEX, groups). Returns ``(values (n,), info)``.
    """
    n = _check_game(game)
    before = _model_calls(game)
    # The table (8 bytes) plus the index and size work arrays of shapley_from_table (3 x 8 bytes).
    table = coalition_table(
        game, max_players, method="exact_shapley", bytes_per_coalition=32.0,
        way_out="Use 'kernel_shap' or 'permutation_shap' (sampling, with a budget), or 'spex' for many players; "
                "group features with groups=, or raise max_players.",
    )
    phi = shapley_from_table(table, n)
    return phi, _info(game, n, 2**n, 2**n, float(table[0]), float(table[-1]), before)


# --------------------------------------------------------------------------------------------------
# the coalition sampler (KernelSHAP)


class CoalitionPlan:
    """The coalitions ``0 < |S| < n`` of a KernelSHAP budget and their Shapley-kernel weights,
    generated chunk by chunk by :meth:`chunks` (see :func:`kernel_coalitions`)."""

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
        rows = _chunk_rows(n) if rows is None else rows
        if self.full:
            sizes = np.array([math.comb(n, k) for k in range(n + 1)], dtype=np.float64)
            for start in range(1, 2**n - 1, rows):
                m = _mask_rows(start, min(start + rows, 2**n - 1), n)
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
    rows = _chunk_rows(n)
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


def kernel_shap(game, budget: int | None = None, seed=0):
    """KernelSHAP: Shapley values as the efficiency-constrained weighted least-squares fit

        min_phi sum_S k(S) (v(S) - v(empty) - sum_{i in S} phi_i)^2   s.t.  sum_i phi_i = v(N) - v(empty)

    with the Shapley kernel ``k(S) = (n-1) / (C(n,|S|) |S| (n-|S|))`` over ``0 < |S| < n``
    (Lundberg & Lee 2017, arXiv 1705.07874); with all coalitions the solution is exactly the
    Shapley value. The constraint eliminates the last player's value; the fit is solved from its
    normal equations ``A^T W A phi = A^T W y`` (``(n-1) x (n-1)``, float64), accumulated chunk by
    chunk, so the ``(budget, n)`` design is never held. Coalitions: :func:`kernel_coalitions`.

    ``budget``: game evaluations, ``empty`` and ``N`` included (default ``2 n + 2048``, at least
    ``min(n + 2, 2^n)``, at most :data:`featurelens._validation.MAX_EVALUATIONS` = 10^8, both
    checked before any evaluation); one fewer is used when the budget left for sampling is odd. ``seed``:
    None, an int or a numpy Generator (used as it is, so successive calls continue its stream).
    Returns ``(values (n,), info)``.
    """
    n = _check_game(game)
    budget = _sampling_budget(
        budget, n, "kernel_shap", min(n + 2, 2**n),
        "empty and full coalitions plus n others, for the n - 1 free values of the constrained fit",
    )
    rng = numpy_rng(seed)
    before = _model_calls(game)
    plan = kernel_coalitions(n, budget, rng)
    if n == 1:
        v0, vn = _ends(game, n)
        return np.array([vn - v0]), _info(game, n, budget, 2, v0, vn, before)
    ata = np.zeros((n - 1, n - 1))
    aty = np.zeros(n - 1)
    used = 2
    v0 = vn = None
    ends = np.stack([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)])
    rows = _game_rows(game, n)
    for masks, w in _regroup(plan.chunks(), rows, first_rows=rows - 2):
        if v0 is None:
            # v(empty) and v(N) ride along with the first block: one game call fewer per game.
            values = game(np.concatenate([ends, masks]))
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
        v0, vn = _ends(game, n)
    delta = vn - v0
    # Minimum-norm solve (gelsd) of the small symmetric system: a budget below n - 1 free
    # directions leaves it singular.
    head = lstsq(ata, aty)
    phi = np.append(head, delta - head.sum())
    return phi, _info(game, n, budget, used, v0, vn, before)


# --------------------------------------------------------------------------------------------------
# the permutation sampler (permutation SHAP, MinShap)


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
        chunk = max(2, CHUNK_ELEMENTS // (n * n))
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


def _contribution_chunks(game, budget, seed, method):
    """``(n, budget, v0, vn, n_perm, chunks)``: ``chunks`` yields the marginal contributions
    ``deltas[p, i] = v(Pre_p(i) + i) - v(Pre_p(i))`` of a chunk of antithetic permutations, shape
    ``(P_chunk, n)``, evaluating each chunk's chains as it goes."""
    n = _check_game(game)
    budget = _sampling_budget(
        budget, n, method, 2 if n == 1 else 2 * n,
        "empty and full coalitions plus the n - 1 interior coalitions of each of 2 antithetic permutations",
    )
    rng = numpy_rng(seed)
    v0, vn = _ends(game, n)
    if n == 1:
        return n, budget, v0, vn, 1, iter([np.array([[vn - v0]])])
    n_perm = max(2, ((budget - 2) // (n - 1)) // 2 * 2)
    rows = _game_rows(game, n)

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


def permutation_shap(game, budget: int | None = None, seed=0):
    """Permutation sampling with antithetic pairs: ``phi_i`` is the mean over permutations ``pi``
    of ``v(Pre_pi(i) + i) - v(Pre_pi(i))``; every permutation is followed by its reverse (Mitchell,
    Cooper, Frank & Holmes 2022, arXiv 2104.12199). Along each permutation the contributions
    telescope to ``v(N) - v(empty)``, so efficiency holds exactly.

    ``v(empty)`` and ``v(N)`` are evaluated once and shared by all chains; each permutation costs
    its ``n - 1`` interior coalitions; ``(budget - 2) // (n - 1)`` permutations rounded down to an
    even number (at least 2). Permutations are streamed in chunks and only the running sum is kept.
    ``budget``: default ``2 n + 2048``, at least ``2 n`` and at most
    :data:`featurelens._validation.MAX_EVALUATIONS` = 10^8 (both checked before any evaluation).
    Each pair of chains is evaluated in blocks of about :data:`CHUNK_ELEMENTS` mask elements, so
    thousands of players (a 3x32x32 image) run in bounded memory. ``seed``: None, an int or a Generator.
    Returns ``(values (n,), info)`` with ``info["n_permutations"]``.
    """
    before = _model_calls(game)
    n, budget, v0, vn, n_perm, chunks = _contribution_chunks(game, budget, seed, "permutation_shap")
    total = np.zeros(n)
    for deltas in chunks:
        total += deltas.sum(axis=0)
    used = 2 + (n_perm * (n - 1) if n > 1 else 0)
    info = _info(game, n, budget, used, v0, vn, before, n_permutations=n_perm, antithetic=True)
    return total / n_perm, info


_STATISTICS = ("min", "min_abs")


def minshap(game, budget: int | None = None, seed=0, statistic: str = "min"):
    """MinShap: the minimum, instead of the mean, of each player's marginal contributions over
    the permutations of :func:`permutation_shap` (same budget and seed give the same orderings;
    Zheng & Raskutti 2026, "MinShap: A Modified Shapley Value Approach for Feature Selection",
    arXiv 2604.15107)::

        minshap_i = min_pi [ v(Pre_pi(i) + i) - v(Pre_pi(i)) ]

    ``statistic="min_abs"`` takes the minimum of ``|contribution|``. Running minima, maxima and
    sums are kept per chunk of permutations. Returns ``(values (n,), info)`` with ``info["mean"]``
    (the Shapley estimate of the same permutations) and ``info["max"]`` (largest contribution).
    """
    statistic = check_option(statistic, "statistic", _STATISTICS)
    before = _model_calls(game)
    n, budget, v0, vn, n_perm, chunks = _contribution_chunks(game, budget, seed, "minshap")
    low = np.full(n, np.inf)
    high = np.full(n, -np.inf)
    total = np.zeros(n)
    for deltas in chunks:
        low = np.minimum(low, (deltas if statistic == "min" else np.abs(deltas)).min(axis=0))
        high = np.maximum(high, deltas.max(axis=0))
        total += deltas.sum(axis=0)
    used = 2 + (n_perm * (n - 1) if n > 1 else 0)
    info = _info(game, n, budget, used, v0, vn, before, n_permutations=n_perm, antithetic=True,
                 statistic=statistic, mean=total / n_perm, max=high)
    return low, info
