"""SPEX and ProxySPEX as approximators: per-player values from sparse Fourier interactions.

:func:`featurelens.interactions.spex` (Kang et al., ICML 2025, arXiv 2502.13870) and
:func:`featurelens.interactions.proxy_spex` (Butler et al., NeurIPS 2025, arXiv 2505.17495)
recover a sparse Fourier surrogate of the game; its Moebius coefficients ``a(T)`` give the
Shapley values ``SV_i = sum_{T ni i} a(T) / |T|`` or the Banzhaf values
``BV_i = sum_{T ni i} a(T) / 2^{|T|-1}`` (``index=``). The result carries the recovered
:class:`~featurelens.interactions.Interactions` in ``interactions``; ``base_value`` and
``full_value`` are the surrogate's values at ``empty`` and ``N`` (no evaluation beyond the method's
queries; with the Shapley index ``base + sum_i values_i = full`` holds for the surrogate). The
``spex`` explainer reports the game's own ``v(empty)`` and ``v(N)`` instead.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_option
from .._coalitions import check_game
from ._common import ApproximationResult, approximator, model_calls, result

__all__ = ["INDICES", "proxy_spex", "spex"]

#: The per-player indices derived from the interactions.
INDICES = ("shapley", "banzhaf")


def _from_interactions(game, n, inter, index, before, budget, **info) -> ApproximationResult:
    terms = inter.to(index).terms
    phi = np.array([terms.get((i,), 0.0) for i in range(n)], dtype=np.float64)
    v0, vn = inter.predict(np.stack([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)]))
    return result(game, phi, v0, vn, inter.queries, before, budget, interactions=inter, index=index, **info)


@approximator("spex")
def spex(game, budget: int | None = None, seed=0, max_order: int = 5, decoder: str = "soft",
         index: str = "shapley", executor=None) -> ApproximationResult:
    """Shapley (or Banzhaf) values of ``game`` from SPEX's sparse Fourier interactions.

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    budget, seed, max_order, decoder, executor
        As for :func:`featurelens.interactions.spex` (``budget`` None: its default, 15,000 with
        ``b <= 8``; ``seed`` an int, a Generator or None for the subsampling matrices).
    index
        ``"shapley"`` (default) or ``"banzhaf"``.

    Returns
    -------
    ApproximationResult
        ``game_evaluations`` = SPEX's queries; ``info``: ``spex_queries``, ``b``, ``t``,
        ``decoder``, ``n_terms`` (recovered Fourier terms, constant included), ``index``;
        ``interactions`` the Fourier :class:`~featurelens.interactions.Interactions`.
    """
    from ..interactions.spex import spex as run_spex  # loaded on first use (interactions stay lazy)

    n = check_game(game)
    index = check_option(index, "index", INDICES)
    before = model_calls(game)
    inter = run_spex(game, budget=budget, max_order=max_order, decoder=decoder, seed=seed, executor=executor)
    p = inter.params
    return _from_interactions(game, n, inter, index, before, budget, spex_queries=inter.queries, b=p["b"],
                              t=p["t"], decoder=p["decoder"], n_terms=p["n_terms"])


@approximator("proxy_spex")
def proxy_spex(game, budget: int | None = None, seed=0, max_order: int = 5, n_terms=None, index: str = "shapley",
               executor=None, **gbt_params) -> ApproximationResult:
    """Shapley (or Banzhaf) values of ``game`` from ProxySPEX's sparse Fourier interactions.

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    budget, seed, max_order, n_terms, executor, **gbt_params
        As for :func:`featurelens.interactions.proxy_spex` (needs scikit-learn).
    index
        ``"shapley"`` (default) or ``"banzhaf"``.

    Returns
    -------
    ApproximationResult
        ``game_evaluations`` = ProxySPEX's queries; ``info``: ``queries``, ``index``;
        ``interactions`` the Fourier :class:`~featurelens.interactions.Interactions`.
    """
    from ..interactions.proxy_spex import proxy_spex as run_proxy_spex

    n = check_game(game)
    index = check_option(index, "index", INDICES)
    before = model_calls(game)
    inter = run_proxy_spex(game, budget=budget, max_order=max_order, n_terms=n_terms, seed=seed, executor=executor,
                           **gbt_params)
    return _from_interactions(game, n, inter, index, before, budget, queries=inter.queries)
