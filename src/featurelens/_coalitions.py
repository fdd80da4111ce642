"""The coalitions of a game: masks in chunks, the table of all ``2^n`` coalition values, and the
exact Shapley values read from that table (Shapley 1953).

Below both :mod:`featurelens.interactions` (the exact transforms, SPEX and ProxySPEX) and
:mod:`featurelens.approximators` (exact Shapley, KernelSHAP's enumerated sizes, the permutation
estimators), which read the one chunk size (:data:`CHUNK_ELEMENTS`), the one table of a game
(:func:`coalition_table`) and the one exact-Shapley routine (:func:`shapley_from_table`) from here.
The public names are ``featurelens.approximators.CHUNK_ELEMENTS``, ``coalition_table``,
``shapley_from_table``, ``refuse_exact`` and ``MAX_EXACT_PLAYERS``.
"""

from __future__ import annotations

import math

import numpy as np

from ._budgets import check_memory, format_bytes, format_count, max_evaluations
from ._validation import check_int

__all__ = ["CHUNK_ELEMENTS", "MAX_EXACT_PLAYERS", "check_game", "chunk_rows", "mask_rows", "refuse_exact",
           "coalition_table", "shapley_from_table"]

#: Mask elements (rows x players) generated and evaluated per chunk (1 MiB of bool masks; the
#: float64 work arrays built from one chunk stay around 8-24 MiB). Read at call time, so setting
#: ``featurelens._coalitions.CHUNK_ELEMENTS`` changes the chunks (never the values).
CHUNK_ELEMENTS = 2**20
#: Largest n whose 2^n coalitions ``exact_shapley`` evaluates by default (about a million).
MAX_EXACT_PLAYERS = 20


def check_game(game) -> int:
    """``game.n_players`` of a featurelens Game (callable, with ``n_players >= 1``)."""
    n = getattr(game, "n_players", None)
    if not callable(game) or n is None:
        raise TypeError(f"game must be a featurelens Game (callable, with n_players); got {type(game).__name__}")
    return check_int(n, "game.n_players", low=1)


def chunk_rows(n: int) -> int:
    """Mask rows per chunk for ``n`` players: :data:`CHUNK_ELEMENTS` ``// n`` (at least 1)."""
    return max(1, CHUNK_ELEMENTS // max(1, n))


def mask_rows(start: int, stop: int, n: int) -> np.ndarray:
    """Rows ``start..stop-1`` of :func:`featurelens.games.all_masks` ``(n)`` (bitmask order: player
    ``i`` is bit ``i`` of the row index), without the others."""
    rows = np.arange(start, stop, dtype=np.int64)
    return ((rows[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


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
    step = chunk_rows(n)
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
