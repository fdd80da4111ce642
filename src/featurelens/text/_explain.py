"""One call from a text game to an explanation over its players."""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_option

__all__ = ["explain", "METHODS"]

#: Methods of :func:`explain`: Shapley values (an Explanation) or sparse Fourier interactions.
METHODS = ("kernel_shap", "permutation_shap", "exact", "spex", "proxy_spex")


def explain(game, method: str = "kernel_shap", budget=None, seed=0, max_order: int = 3, **kwargs):
    """Explain a text game (:class:`ClassifierGame`, :class:`GenerationGame`, or any
    :class:`featurelens.games.Game` with a ``players`` attribute) over its players.

    ``method``:

    - ``"kernel_shap"``: :func:`featurelens.approximators.kernel_shap` (Lundberg & Lee 2017,
      arXiv 1705.07874), ``budget`` game evaluations;
    - ``"permutation_shap"``: :func:`featurelens.approximators.permutation_shap` (antithetic
      permutations; Mitchell et al. 2022, arXiv 2104.12199);
    - ``"exact"``: :func:`featurelens.approximators.exact_shapley` (all ``2^n`` coalitions);
    - ``"spex"``: :func:`featurelens.interactions.spex` (Kang et al. 2025, arXiv 2502.13870);
    - ``"proxy_spex"``: :func:`featurelens.interactions.proxy_spex` (Butler et al. 2025,
      arXiv 2505.17495).

    The Shapley methods return an :class:`featurelens.Explanation` with ``values`` of shape
    ``(1, n)`` (one value per player), ``feature_names`` = the players' names and
    ``base_values`` = ``[v(empty)]``; SPEX and ProxySPEX return :class:`featurelens.Interactions`
    (Fourier terms over the player indices; ``params["player_names"]`` names them; ``.to("shapley")``
    or ``.to("fsii", max_order=2)`` for an index). ``max_order`` applies to SPEX / ProxySPEX;
    further ``kwargs`` go to the estimator.
    """
    from .. import approximators
    from ..explanation import Explanation

    method = check_option(method, "method", METHODS)
    players = getattr(game, "players", None)
    n = getattr(game, "n_players", None)
    if not callable(game) or n is None:
        raise TypeError(f"game must be a featurelens Game over the players of a text; got {type(game).__name__}")
    names = list(players.names) if players is not None else [str(i) for i in range(n)]
    start, calls = time.perf_counter(), game.calls
    if method in ("spex", "proxy_spex"):
        from .. import interactions

        fn = interactions.spex if method == "spex" else interactions.proxy_spex
        result = fn(game, budget=budget, max_order=max_order, seed=seed, **kwargs)
        return interactions.Interactions(result.terms, result.index, result.n_players, result.max_order,
                                         result.queries, {**result.params, "player_names": names})
    if method == "exact":
        if budget is not None:
            raise ValueError("budget does not apply to method='exact' (it evaluates all 2^n coalitions); got budget="
                             f"{budget!r}")
        phi, info = approximators.exact_shapley(game, **kwargs)
    else:
        phi, info = getattr(approximators, method)(game, budget=budget, seed=seed, **kwargs)
    seconds = time.perf_counter() - start
    return Explanation(
        values=np.asarray(phi, dtype=np.float64)[None, :], method=method,
        params={**info, "seed": seed if isinstance(seed, (int, type(None))) else "generator"},
        model_calls=int(game.calls - calls), seconds=seconds, feature_names=names,
        base_values=np.array([info["base_value"]]),
    )
