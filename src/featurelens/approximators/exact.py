"""Exact Shapley values from all ``2^n`` coalitions (Shapley 1953)."""

from __future__ import annotations

from .._coalitions import MAX_EXACT_PLAYERS, check_game, coalition_table, shapley_from_table
from ._common import ApproximationResult, approximator, model_calls, result

__all__ = ["exact_shapley"]


@approximator("exact_shapley")
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
