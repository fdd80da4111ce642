"""One call from a text game to an explanation over its players: any approximator of
:mod:`featurelens.approximators`, by name."""

from __future__ import annotations

import inspect
import time

import numpy as np

from .. import approximators
from .._random import seed_record
from .._validation import check_option
from ..approximators.lime import SAMPLERS

__all__ = ["explain", "methods", "METHODS", "SAMPLERS"]

def methods() -> tuple[str, ...]:
    """The methods of :func:`explain` now: every approximator of
    :data:`featurelens.approximators.APPROXIMATORS` and its other names
    (:data:`featurelens.approximators.ALIASES`), read at call time."""
    return tuple(approximators.APPROXIMATORS) + tuple(approximators.ALIASES)


#: The methods of :func:`explain` at import (:func:`methods` reads them at call time).
METHODS = methods()
#: The keywords :func:`explain` passes itself, where the approximator takes them.
OWN = ("budget", "seed", "max_order")


def method_keywords(method: str) -> tuple[tuple[str, ...], bool]:
    """``(the approximator's keywords beyond the game, whether it takes any other keyword)``."""
    params = list(inspect.signature(approximators.get(method)).parameters.values())[1:]
    names = tuple(p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
    return names, any(p.kind == p.VAR_KEYWORD for p in params)


def explain(game, method: str = "kernel_shap", budget=None, seed=0, max_order: int = 3, **kwargs):
    """Explain a text game (:class:`ClassifierGame`, :class:`GenerationGame`, or any
    :class:`featurelens.games.Game` with a ``players`` attribute) over its players.

    ``method``: any approximator of :mod:`featurelens.approximators` by name (or by an alias of
    :data:`featurelens.approximators.ALIASES`), run on the game as it is:

    - ``"kernel_shap"``: KernelSHAP (Lundberg & Lee 2017, arXiv 1705.07874), ``budget`` game
      evaluations;
    - ``"permutation_shap"``: antithetic permutations (Mitchell et al. 2022, arXiv 2104.12199);
    - ``"minshap"``: the minimum marginal contribution over the same permutations (Zheng &
      Raskutti 2026, arXiv 2604.15107);
    - ``"exact_shapley"`` / ``"exact"``: all ``2^n`` coalitions (Shapley 1953);
    - ``"lime"``: LIME (Ribeiro, Singh & Guestrin 2016, arXiv 1602.04938),
      :func:`featurelens.approximators.lime`: ``v(N)`` and ``budget - 1`` (default 499) random
      coalitions, weighted by ``exp(-d^2 / (2 w^2))`` with ``d`` the cosine (default) or euclidean
      distance of the coalition from the all-kept one, and a weighted ridge (alpha 1, the ``lime``
      package's) or lasso fit. Options: ``sampler="bernoulli"`` (each player kept with probability
      1/2, as Captum's ``Lime``) or ``"lime_text"`` (the ``lime`` package's text sampler: the
      number of removed players uniform in ``1..n-1``), ``surrogate``, ``alpha``, ``distance``,
      ``kernel_width`` (default 0.25 for cosine, ``0.75 sqrt(n)`` for euclidean). The values are
      the coefficients, ``base_values`` the intercept, ``params["surrogate_r2"]`` the weighted R^2;
    - ``"leave_one_out"`` / ``"feature_ablation"``: ``a_i = v(N) - v(N minus {i})`` (Captum's
      ``FeatureAblation``), ``n + 1`` evaluations; ``base_values`` = ``v(N) - sum_i a_i``, so that
      ``base + sum_{i in S} a_i`` is its additive surrogate;
    - ``"spex"``: :func:`featurelens.interactions.spex` (Kang et al. 2025, arXiv 2502.13870);
    - ``"proxy_spex"``: :func:`featurelens.interactions.proxy_spex` (Butler et al. 2025,
      arXiv 2505.17495).

    ``budget``, ``seed`` and ``max_order`` go to the approximators that take them (a ``budget``
    for one that takes none, such as exact Shapley, is a ValueError; ``max_order`` applies to SPEX
    / ProxySPEX); further ``kwargs`` are the approximator's own options (any other keyword is a
    TypeError naming the options it takes).

    An approximator whose result carries interactions (SPEX, ProxySPEX) returns them as
    ``featurelens.Interactions`` (Fourier terms over the player indices;
    ``params["player_names"]`` names them, ``.top(k, names=True)`` lists the terms by those
    names; ``.to("shapley")`` or ``.to("fsii", max_order=2)`` for an index; ``.predict(masks)``
    their surrogate). Every other returns an :class:`featurelens.Explanation` with ``values`` of
    shape ``(1, n)`` (one value per player), ``feature_names`` = the players' names and
    ``base_values`` such that ``base + sum_{i in S} values_i`` is the method's additive model of
    ``v(S)`` (``v(empty)`` for the Shapley methods); ``params`` holds the result's record
    (``featurelens.approximators.ApproximationResult.record``). ``params`` records the game
    too: its ``removal`` and ``empty_token_id`` (the token sent as the empty text, None where no
    coalition is empty), and ``value``: ``"class_output"`` with ``target`` and ``output`` (a
    :class:`ClassifierGame`; the Explanation's ``target`` too), or ``"continuation_log_prob"``
    with ``continuation`` (token ids), ``continuation_text`` and ``reduce`` (a
    :class:`GenerationGame`), as the gradient methods record them.
    """
    from ..explanation import Explanation

    method = check_option(method, "method", methods())
    players = getattr(game, "players", None)
    n = getattr(game, "n_players", None)
    if not callable(game) or n is None:
        raise TypeError(f"game must be a featurelens Game over the players of a text; got {type(game).__name__}")
    names = list(players.names) if players is not None else [str(i) for i in range(n)]
    keywords, any_keyword = method_keywords(method)
    call = {}
    if "budget" in keywords:
        call["budget"] = budget
    elif budget is not None:
        raise ValueError(f"budget does not apply to method={method!r} (it takes no budget); got budget={budget!r}")
    call.update({k: v for k, v in (("seed", seed), ("max_order", max_order)) if k in keywords})
    options = [k for k in keywords if k not in OWN]
    unknown = sorted(k for k in kwargs if k in OWN or (k not in options and not any_keyword))
    if unknown:
        raise TypeError(f"method={method!r} got unexpected options {unknown}; its options are "
                        f"{', '.join(options) or 'none'}")
    # How the game removes players, recorded with the result: the removal and, where a coalition
    # can keep no token, the one token sent as the empty text (ClassifierGame / GenerationGame).
    # What the value is: a classifier's class output (its target and output units) or a causal
    # LM's continuation log-probability (the continuation, as ids and as given, and the reduce).
    recorded = {k: getattr(game, k) for k in ("removal", "empty_token_id") if hasattr(game, k)}
    target = None
    if isinstance(getattr(game, "continuation", None), np.ndarray):
        recorded.update(value="continuation_log_prob", continuation=game.continuation.tolist(),
                        continuation_text=getattr(game, "continuation_text", None),
                        reduce=getattr(game, "reduce", None))
    elif isinstance(getattr(game, "target", None), (int, np.integer)) and hasattr(game, "output"):
        target = int(game.target)
        recorded.update(value="class_output", target=target, output=game.output)
    recorded = {k: (int(v) if isinstance(v, np.integer) else v) for k, v in recorded.items()}
    start, calls = time.perf_counter(), game.calls
    res = approximators.get(method)(game, **call, **kwargs)
    if res.interactions is not None:
        from ..interactions import Interactions

        inter = res.interactions
        return Interactions(inter.terms, inter.index, inter.n_players, inter.max_order, inter.queries,
                            {**recorded, **inter.params, "player_names": names})
    seconds = time.perf_counter() - start
    return Explanation(
        values=np.asarray(res.values, dtype=np.float64)[None, :], method=method,
        params={**recorded, **res.record(), **seed_record(seed)},
        model_calls=int(game.calls - calls), seconds=seconds, feature_names=names,
        base_values=np.array([res.base_value]), target=None if target is None else np.array([target]),
    )
