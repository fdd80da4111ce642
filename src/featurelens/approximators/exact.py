"""Exact Shapley values from all ``2^n`` coalitions (Shapley 1953)."""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int
from .._budgets import check_memory, format_count, max_evaluations
from . import _common
from ._common import MAX_EXACT_PLAYERS, ApproximationResult, check_game, model_calls, refuse_exact, result

__all__ = ["coalition_table", "exact_shapley", "mask_rows", "shapley_from_table"]


def mask_rows(start: int, stop: int, n: int) -> np.ndarray:
    """Rows ``start..stop-1`` of :func:`featurelens.games.all_masks` ``(n)`` (bitmask order: player
    ``i`` is bit ``i`` of the row index), without the others."""
    rows = np.arange(start, stop, dtype=np.int64)
    return ((rows[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


def coalition_table(game, max_players: int = MAX_EXACT_PLAYERS, method: str = "this exact method",
                    bytes_per_coalition: float = 8.0, way_out: str | None = None) -> np.ndarray:
    """``v(S)`` for all ``2^n`` coalitions, a float64 ``(2^n,)`` table in bitmask order (player
    ``i`` is bit ``i`` of the row index, as :func:`featurelens.games.all_masks`).

    The masks are generated and evaluated chunk by chunk (never the whole ``(2^n, n)`` mask
    matrix). Games with ``n > max_players`` are refused at once, naming the evaluations and the
    memory (``bytes_per_coalition * 2^n``) the caller would need; the table itself is also checked
    against the available memory before it is allocated.
    """
    n = check_game(game)
    max_players = check_int(max_players, "max_players", low=1)
    if way_out is None:
        way_out = ("Use a sampling method (kernel_shap, permutation_shap) or SPEX for games this large, "
                   "group players (groups=), or raise max_players.")
    refuse_exact(method, n, max_players, bytes_per_coalition, way_out)
    total = 2**n
    if total > max_evaluations():
        raise ValueError(
            f"{method} with n_players = {n} needs 2^{n} = {format_count(total)} game evaluations, more than the "
            f"limit of {format_count(max_evaluations())} per call (featurelens._budgets.MAX_EVALUATIONS, "
            f"raised by the environment variable FEATURELENS_MAX_EVALUATIONS). {way_out}"
        )
    check_memory(math.ceil(bytes_per_coalition) * total, f"{method} with n_players = {n}", way_out)
    table = np.empty(total, dtype=np.float64)
    step = _common.chunk_rows(n)
    for start in range(0, total, step):
        stop = min(start + step, total)
        values = np.asarray(game(mask_rows(start, stop, n)), dtype=np.float64)
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


def exact_shapley(game, max_players: int = MAX_EXACT_PLAYERS) -> ApproximationResult:
    """Exact Shapley values from all ``2^n`` coalition values (Shapley 1953)::

        phi_i = sum_{S subset N minus {i}} |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S))

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    max_players
        The largest ``n`` evaluated (default 20, about a million evaluations); larger games are
        refused at once with the memory estimate and the way out (sampling, SPEX, groups).

    Returns
    -------
    ApproximationResult
        ``values`` the Shapley values, ``base_value`` ``v(empty)``, ``full_value`` ``v(N)``,
        ``game_evaluations`` ``2^n``.
    """
    n = check_game(game)
    before = model_calls(game)
    # The table (8 bytes) plus the index and size work arrays of shapley_from_table (3 x 8 bytes).
    table = coalition_table(
        game, max_players, method="exact_shapley", bytes_per_coalition=32.0,
        way_out="Use 'kernel_shap' or 'permutation_shap' (sampling, with a budget), or 'spex' for many players; "
                "group features with groups=, or raise max_players.",
    )
    phi = shapley_from_table(table, n)
    return result(game, phi, table[0], table[-1], 2**n, before, 2**n)
