"""Leave-one-out: the drop in the game's value when one player is removed.

``a_i = v(N) - v(N minus {i})``: Captum's ``FeatureAblation`` over the players (the ablation study
of Zeiler & Fergus, "Visualizing and Understanding Convolutional Networks", ECCV 2014,
arXiv 1311.2901, with players instead of image patches); ``n + 1`` evaluations.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from .._coalitions import check_game
from ._common import ApproximationResult, approximator, model_calls, result

__all__ = ["leave_one_out", "leave_one_out_masks"]


def leave_one_out_masks(n: int) -> np.ndarray:
    """The ``(n + 1, n)`` coalitions of leave-one-out: ``N`` first, then ``N minus {i}`` for
    ``i = 0..n-1``."""
    masks = np.ones((n + 1, n), dtype=bool)
    masks[np.arange(1, n + 1), np.arange(n)] = False
    return masks


@approximator("leave_one_out")
def leave_one_out(game, budget: int | None = None) -> ApproximationResult:
    """Leave-one-out values ``a_i = v(N) - v(N minus {i})`` of a game (see the module docstring).

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    budget
        None, or an int >= ``n + 1`` (the method always evaluates exactly ``n + 1`` coalitions; a
        smaller budget is refused, naming that count).

    Returns
    -------
    ApproximationResult
        ``values`` the drops, ``full_value`` ``v(N)`` and ``base_value`` ``v(N) - sum_i a_i``, which
        makes ``base + sum_{i in S} a_i`` the additive reading of the ablation: it equals ``v(N)``
        with every player and ``v(N minus {i})`` leaving one out. ``v(empty)`` is not evaluated.
    """
    n = check_game(game)
    if budget is not None and check_int(budget, "budget", low=1) < n + 1:
        raise ValueError(f"leave_one_out evaluates n_players + 1 = {n + 1} coalitions; got budget={budget}")
    before = model_calls(game)
    v = np.asarray(game(leave_one_out_masks(n)), dtype=np.float64)
    phi = v[0] - v[1:]
    return result(game, phi, v[0] - phi.sum(), v[0], n + 1, before, n + 1)
