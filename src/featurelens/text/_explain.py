"""One call from a text game to an explanation over its players."""

from __future__ import annotations

import time

import numpy as np

from .._random import numpy_rng, seed_record
from .._validation import check_budget, check_float, check_int, check_option

__all__ = ["explain", "METHODS", "SAMPLERS"]

#: Methods of :func:`explain`: Shapley values, LIME and leave-one-out (an Explanation), or sparse
#: Fourier interactions (SPEX, ProxySPEX).
METHODS = ("kernel_shap", "permutation_shap", "exact", "lime", "feature_ablation", "spex", "proxy_spex")
#: LIME's ways to draw coalitions of the players.
SAMPLERS = ("bernoulli", "lime_text")


def _lime_masks(n_samples: int, n: int, sampler: str, rng: np.random.Generator) -> np.ndarray:
    """``(n_samples, n)`` coalitions: each player kept with probability 1/2 (``"bernoulli"``, the
    sampler of Captum's ``Lime`` and of the ``lime`` explainer), or the ``lime`` package's text
    sampler (``"lime_text"``: the number of removed players uniform in ``1..n-1``, then which ones
    uniformly; Ribeiro et al. 2016)."""
    from ..explainers.surrogate import bernoulli_masks

    if sampler == "bernoulli" or n < 2:
        return bernoulli_masks(n_samples, n, rng)
    removed = rng.integers(1, n, size=n_samples)
    order = np.argsort(rng.random((n_samples, n)), axis=1)
    # order is a random permutation per row: the players holding its values below `removed` are
    # a uniform random set of `removed` players.
    return order >= removed[:, None]


def check_lime_budget(budget, n: int | None = None) -> int:
    """LIME's ``budget`` (default 500): an int >= 3, refused before any work above
    :data:`featurelens._validation.MAX_EVALUATIONS` game evaluations, or when its ``(budget, n)``
    coalitions (with ``n`` players, when known) would not fit in memory."""
    nbytes = None if n is None else (lambda v: 10 * v * n)  # the uniform draws (8 B) and the masks (1 B)
    return check_budget(500 if budget is None else budget, "budget", low=3, unit="game evaluations",
                        what="per text" if n is None else f"per text of {n} players", nbytes=nbytes)


def _lime(game, n: int, budget, rng, sampler="bernoulli", surrogate="ridge", alpha=None, distance="cosine",
          kernel_width=None):
    """LIME over the players: ``v(N)`` plus ``budget - 1`` drawn coalitions, the exponential
    kernel on the distance of each coalition from the all-kept one, and the weighted linear
    surrogate of :func:`featurelens.explainers.surrogate.fit_surrogate`."""
    from ..explainers.surrogate import _distances, exponential_kernel, fit_surrogate

    budget = check_lime_budget(budget, n)
    sampler = check_option(sampler, "sampler", SAMPLERS)
    surrogate = check_option(surrogate, "surrogate", ("ridge", "lasso"))
    alpha = check_float(1.0 if alpha is None and surrogate == "ridge" else 0.01 if alpha is None else alpha,
                        "alpha", low=0.0, low_inclusive=surrogate == "ridge")
    distance = check_option(distance, "distance", ("cosine", "euclidean"))
    if kernel_width is None:
        kernel_width = 0.25 if distance == "cosine" else 0.75 * float(np.sqrt(n))
    kernel_width = check_float(kernel_width, "kernel_width", low=0.0, low_inclusive=False)
    masks = _lime_masks(budget - 1, n, sampler, rng)
    values = game(np.vstack([np.ones((1, n), dtype=bool), masks]))
    weights = exponential_kernel(_distances(masks, distance), kernel_width)
    if not weights.sum() > 0:
        raise ValueError(f"kernel_width={kernel_width} gives every sample zero weight; pass a larger "
                         f"kernel_width=<float> (the default: 0.25 for the cosine distance, 0.75 sqrt(n) for the euclidean)")
    coef, intercept, r2 = fit_surrogate(masks, values[1:], weights, surrogate, alpha)
    params = {"n_samples": budget - 1, "sampler": sampler, "surrogate": surrogate, "alpha": alpha,
              "distance": distance, "kernel_width": kernel_width, "surrogate_r2": r2,
              "full_value": float(values[0])}
    return coef, float(intercept), params


def _feature_ablation(game, n: int, budget):
    """Leave-one-out: ``a_i = v(N) - v(N minus {i})`` (Captum's ``FeatureAblation`` over the
    players; Zeiler & Fergus 2014's occlusion), ``n + 1`` evaluations."""
    from ..explainers.ablation import leave_one_out_masks

    if budget is not None and check_int(budget, "budget", low=1) < n + 1:
        raise ValueError(f"feature_ablation evaluates n_players + 1 = {n + 1} coalitions; got budget={budget}")
    v = game(leave_one_out_masks(n))
    phi = v[0] - v[1:]
    # The base value makes base + sum_{i in S} a_i the additive reading of the ablation, which
    # equals v(N) on the full text and v(N minus {i}) on each leave-one-out text.
    return phi, float(v[0] - phi.sum()), {"full_value": float(v[0])}


def explain(game, method: str = "kernel_shap", budget=None, seed=0, max_order: int = 3, **kwargs):
    """Explain a text game (:class:`ClassifierGame`, :class:`GenerationGame`, or any
    :class:`featurelens.games.Game` with a ``players`` attribute) over its players.

    ``method``:

    - ``"kernel_shap"``: :func:`featurelens.approximators.kernel_shap` (Lundberg & Lee 2017,
      arXiv 1705.07874), ``budget`` game evaluations;
    - ``"permutation_shap"``: :func:`featurelens.approximators.permutation_shap` (antithetic
      permutations; Mitchell et al. 2022, arXiv 2104.12199);
    - ``"exact"``: :func:`featurelens.approximators.exact_shapley` (all ``2^n`` coalitions);
    - ``"lime"``: LIME (Ribeiro, Singh & Guestrin 2016, arXiv 1602.04938): ``v(N)`` and
      ``budget - 1`` (default 499) random coalitions, weighted by ``exp(-d^2 / (2 w^2))`` with
      ``d`` the cosine (default) or euclidean distance of the coalition from the all-kept one, and
      a weighted ridge (alpha 1, the ``lime`` package's) or lasso fit of the values on the
      coalitions. Options: ``sampler="bernoulli"`` (each player kept with probability 1/2, as
      Captum's ``Lime``) or ``"lime_text"`` (the ``lime`` package's text sampler: the number of
      removed players uniform in ``1..n-1``), ``surrogate``, ``alpha``, ``distance``,
      ``kernel_width`` (default 0.25 for cosine, ``0.75 sqrt(n)`` for euclidean). The values are
      the coefficients, ``base_values`` the intercept, ``params["surrogate_r2"]`` the weighted R^2;
    - ``"feature_ablation"``: leave one player out, ``a_i = v(N) - v(N minus {i})`` (Captum's
      ``FeatureAblation``), ``n + 1`` evaluations; ``base_values`` = ``v(N) - sum_i a_i``, so that
      ``base + sum_{i in S} a_i`` is its additive surrogate;
    - ``"spex"``: :func:`featurelens.interactions.spex` (Kang et al. 2025, arXiv 2502.13870);
    - ``"proxy_spex"``: :func:`featurelens.interactions.proxy_spex` (Butler et al. 2025,
      arXiv 2505.17495).

    Every method but SPEX / ProxySPEX returns an :class:`featurelens.Explanation` with ``values``
    of shape ``(1, n)`` (one value per player), ``feature_names`` = the players' names and
    ``base_values`` such that ``base + sum_{i in S} values_i`` is the method's additive model of
    ``v(S)`` (``v(empty)`` for the Shapley methods). SPEX and ProxySPEX return
    :class:`featurelens.Interactions` (Fourier terms over the player indices;
    ``params["player_names"]`` names them, ``.top(k, names=True)`` lists the terms by those
    names; ``.to("shapley")`` or ``.to("fsii", max_order=2)`` for an index; ``.predict(masks)``
    their surrogate). ``max_order`` applies to SPEX / ProxySPEX; further ``kwargs`` go to the
    estimator. ``params`` records the game: its ``removal`` and ``empty_token_id`` (the token sent
    as the empty text, None where no coalition is empty), and ``value``: ``"class_output"`` with
    ``target`` and ``output`` (a :class:`ClassifierGame`; the Explanation's ``target`` too), or
    ``"continuation_log_prob"`` with ``continuation`` (token ids), ``continuation_text`` and
    ``reduce`` (a :class:`GenerationGame`), as the gradient methods record them.
    """
    from .. import approximators
    from ..explanation import Explanation

    method = check_option(method, "method", METHODS)
    players = getattr(game, "players", None)
    n = getattr(game, "n_players", None)
    if not callable(game) or n is None:
        raise TypeError(f"game must be a featurelens Game over the players of a text; got {type(game).__name__}")
    names = list(players.names) if players is not None else [str(i) for i in range(n)]
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
    if method in ("spex", "proxy_spex"):
        from .. import interactions

        fn = interactions.spex if method == "spex" else interactions.proxy_spex
        result = fn(game, budget=budget, max_order=max_order, seed=seed, **kwargs)
        return interactions.Interactions(result.terms, result.index, result.n_players, result.max_order,
                                         result.queries, {**recorded, **result.params, "player_names": names})
    if method == "exact":
        if budget is not None:
            raise ValueError("budget does not apply to method='exact' (it evaluates all 2^n coalitions); got budget="
                             f"{budget!r}")
        res = approximators.exact_shapley(game, **kwargs)
        phi, base, info = res.values, res.base_value, res.record()
    elif method == "lime":
        phi, base, info = _lime(game, n, budget, numpy_rng(seed), **kwargs)
    elif method == "feature_ablation":
        if kwargs:
            raise TypeError(f"feature_ablation takes no options; got {sorted(kwargs)}")
        phi, base, info = _feature_ablation(game, n, budget)
    else:
        res = getattr(approximators, method)(game, budget=budget, seed=seed, **kwargs)
        phi, base, info = res.values, res.base_value, res.record()
    seconds = time.perf_counter() - start
    return Explanation(
        values=np.asarray(phi, dtype=np.float64)[None, :], method=method,
        params={**recorded, **info, **seed_record(seed)},
        model_calls=int(game.calls - calls), seconds=seconds, feature_names=names,
        base_values=np.array([base]), target=None if target is None else np.array([target]),
    )
