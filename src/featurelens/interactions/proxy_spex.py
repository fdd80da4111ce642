"""ProxySPEX: sparse Fourier interactions from a gradient-boosted tree proxy of the game.

Written from the description of ProxySPEX (Butler, Agarwal, Kang, Erginbas, Yu, Ramchandran,
NeurIPS 2025, arXiv:2505.17495) in the reference sheet ``shapley-and-spex.md`` sec. 1.8.

1. Draw ``budget`` masks uniformly (each bit Bernoulli(1/2)) and evaluate the game once on all of
   them (one batched call).
2. Fit a scikit-learn :class:`~sklearn.ensemble.GradientBoostingRegressor` on ``masks -> values``
   (no hyper-parameter search; defaults in ``GBT_DEFAULTS``, any of them overridable).
3. Extract the exact Fourier transform of every tree. On 0/1 inputs a split on player ``i`` sends
   ``m_i = 0`` left and ``m_i = 1`` right, and ``[m_i = 0] = (1 + (-1)^{m_i})/2``,
   ``[m_i = 1] = (1 - (-1)^{m_i})/2``; so a node with children ``L`` and ``R`` has
   ``F(K) = (F_L(K) + F_R(K))/2`` and ``F(K xor {i}) = (F_L(K) - F_R(K))/2`` (a leaf is
   ``{(): value}``). The ensemble's transform is ``init + learning_rate * sum_trees F_tree``.
4. Keep the terms of order ``<= max_order`` and, among them, the ``n_terms`` largest by ``|F|``
   (default: the fewest largest terms holding ``ENERGY`` = 99.9% of the non-constant energy
   ``sum F^2``), at most ``budget // 10`` of them; the constant is always kept.
5. Refit the kept coefficients by least squares on the same masks and values (no new queries).

The surrogate is ``f(m) = sum_K F(K) (-1)^{|K & m|}`` (``index="fourier"``), as for
:func:`featurelens.interactions.spex`.
"""

from __future__ import annotations

import time

import numpy as np

from ._interactions import Interactions, evaluated_on
from .._linalg import lstsq, normal_equations
from .._random import numpy_rng, seed_record
from .._validation import check_int
from .. import _coalitions
from .._budgets import check_budget, check_memory
from .spex import fourier_design

__all__ = ["proxy_spex", "proxy_fourier", "tree_fourier", "GBT_DEFAULTS", "ENERGY", "DEFAULT_BUDGET",
           "minimum_budget"]

#: GradientBoostingRegressor settings (``max_depth`` defaults to ``max(max_order, MIN_DEPTH)``). A
#: single fixed point of the grids of the reference implementations (0.1 learning rate), with fewer
#: trees than their 500-5000 so that the fit stays about 2 s at budget 3000, n = 50.
GBT_DEFAULTS = {"n_estimators": 300, "learning_rate": 0.1, "subsample": 1.0}
#: Smallest default tree depth. Greedy splits find parities (XOR-like terms) poorly with shallow
#: trees: on planted Fourier games (n = 50, 10 terms of degree <= 3, budget 3000) depth 3 gave
#: held-out r2 0.41-0.82 over 5 games, depth 5 gave 1.0000 on all 5 (300 trees).
MIN_DEPTH = 5
#: Default truncation: the largest non-constant terms holding this fraction of their energy ``sum F^2``.
ENERGY = 0.999
#: At most ``budget // MAX_TERMS_DIVISOR`` non-constant terms are refitted (ten samples per coefficient).
MAX_TERMS_DIVISOR = 10
#: Masks drawn when ``budget=None`` (also raised to the minimum for large ``n``).
DEFAULT_BUDGET = 5000
#: The minimum budget is ``MIN_FACTOR * (n + 1)``.
MIN_FACTOR = 10


def minimum_budget(n: int) -> int:
    """``10 (n + 1)``: the refit must at least determine the constant and the ``n`` first-order
    terms, and the tree fit needs about ten samples per such coefficient to find them."""
    return MIN_FACTOR * (int(n) + 1)


def tree_fourier(tree) -> dict:
    """The exact Fourier transform of one fitted scikit-learn regression tree on 0/1 inputs.

    ``tree`` is a ``DecisionTreeRegressor`` (or its ``tree_``). Returns ``{bitmask: F}`` where bit
    ``i`` of the int key is player ``i``, with ``tree.predict(m) = sum_K F(K) (-1)^{|K & m|}`` for
    every 0/1 mask ``m`` (splits at thresholds in ``(0, 1)``; a threshold outside sends every 0/1
    value one way, and is handled as such).
    """
    t = getattr(tree, "tree_", tree)
    left, right = t.children_left, t.children_right
    feature, threshold = t.feature, t.threshold
    value = t.value[:, 0, 0]

    def walk(node: int) -> dict:
        if left[node] == -1:
            return {0: float(value[node])}
        i, thr = int(feature[node]), float(threshold[node])
        if thr >= 1.0:  # 0 and 1 both go left
            return walk(int(left[node]))
        if thr < 0.0:  # 0 and 1 both go right
            return walk(int(right[node]))
        fl, fr = walk(int(left[node])), walk(int(right[node]))
        bit = 1 << i
        out: dict = {}
        for k in fl.keys() | fr.keys():
            a, b = fl.get(k, 0.0), fr.get(k, 0.0)
            out[k] = out.get(k, 0.0) + (a + b) / 2.0
            out[k ^ bit] = out.get(k ^ bit, 0.0) + (a - b) / 2.0
        return out

    return walk(0)


def proxy_fourier(gbr, n_features: int) -> dict:
    """The exact Fourier transform ``{bitmask: F}`` of a fitted ``GradientBoostingRegressor``
    (squared-error loss) on 0/1 inputs: ``init + learning_rate * sum over trees``."""
    init = gbr.init_
    if isinstance(init, str) and init == "zero":
        const = 0.0
    else:
        const = float(np.ravel(init.predict(np.zeros((1, n_features))))[0])
    total: dict = {0: const}
    lr = float(gbr.learning_rate)
    for est in gbr.estimators_[:, 0]:
        for k, v in tree_fourier(est).items():
            total[k] = total.get(k, 0.0) + lr * v
    return total


def _bits_to_tuple(k: int) -> tuple:
    out = []
    i = 0
    while k:
        if k & 1:
            out.append(i)
        k >>= 1
        i += 1
    return tuple(out)


def proxy_spex(game, budget=None, max_order: int = 5, n_terms=None, seed=0, executor=None,
               **gbt_params) -> Interactions:
    """Sparse Fourier interactions of ``game`` by ProxySPEX (Butler et al., NeurIPS 2025,
    arXiv:2505.17495).

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    budget
        Game evaluations: the number of uniform random masks. None: ``DEFAULT_BUDGET`` = 5000
        (at least the minimum). Below ``minimum_budget`` ``= 10 (n + 1)`` a ValueError.
    max_order
        The largest order kept (terms of the trees' transforms above it are dropped). The tree depth
        is ``max(max_order, 5)`` unless ``max_depth`` is given (a depth-``d`` tree has terms of order
        ``<= d``).
    n_terms
        Non-constant terms kept before the refit, the largest ``|F|`` first. None: the fewest
        largest terms that hold ``ENERGY`` = 99.9% of the non-constant energy ``sum F^2``.
        Always capped at ``budget // 10`` (ten samples per refitted coefficient).
    seed
        Int or numpy Generator: the masks, and (an int drawn from it) the trees' ``random_state``.
    executor
        Evaluate the masks on an executor's workers (:mod:`featurelens.parallel`, or any callable
        of the game hook) instead of the game's own; the values are those of the serial path.
    **gbt_params
        Passed to ``GradientBoostingRegressor`` over ``GBT_DEFAULTS`` (``n_estimators=300``,
        ``learning_rate=0.1``, ``subsample=1.0``) and ``max_depth=max(max_order, 5)``. The loss must stay
        squared error (the extraction reads raw tree outputs).

    Returns
    -------
    Interactions
        Fourier terms (``index="fourier"``), ``queries = budget``, ``params`` with ``method``,
        ``budget``, ``n_terms`` (kept, constant included), ``n_extracted`` (terms of the ensemble's
        transform), ``proxy_train_r2`` (the ensemble on the training masks), the tree settings
        and timings (``fit_seconds``, ``extract_seconds``, ``refit_seconds``, ``eval_seconds``).
    """
    from sklearn.ensemble import GradientBoostingRegressor

    if not callable(game) or getattr(game, "n_players", None) is None:
        raise TypeError(f"game must be a featurelens Game with n_players; got {type(game).__name__}")
    max_order = check_int(max_order, "max_order", low=1)
    n = int(game.n_players)
    minimum = minimum_budget(n)
    budget = check_budget(budget, "budget", allow_none=True, unit="game evaluations",
                          what=f"for proxy_spex with n = {n} players",
                          hint=f"lower the budget (at least {minimum}), or use spex, which needs fewer queries")
    if budget is None:
        budget = max(DEFAULT_BUDGET, minimum)
    if budget < minimum:
        raise ValueError(
            f"budget {budget} is too small for ProxySPEX with n={n}: it needs at least {minimum} game "
            f"evaluations (10 x (n + 1): the refit determines at least the constant and the n first-order "
            f"terms, with about ten samples each for the tree fit)"
        )
    n_terms = check_int(n_terms, "n_terms", low=1, allow_none=True)
    if gbt_params.get("loss", "squared_error") != "squared_error":
        raise ValueError(f"proxy_spex needs loss='squared_error'; got loss={gbt_params['loss']!r}")
    # The tree fit needs every mask at once: bool masks (1 byte), their float32 copy for the trees
    # (4 bytes; scikit-learn's own dtype) and its sorted/partitioned work (~4 bytes) per element.
    check_memory(
        9.0 * budget * n + 8.0 * 4 * budget,
        f"proxy_spex with budget = {budget} and n = {n} players",
        "lower the budget, or use spex, which keeps only the values of its queries.",
    )
    rng = numpy_rng(seed)
    settings = dict(GBT_DEFAULTS, max_depth=max(max_order, MIN_DEPTH))
    settings.update(gbt_params)
    if "random_state" not in settings:
        settings["random_state"] = int(rng.integers(0, 2**31 - 1))
    # Drawn and evaluated in chunks: the uniforms come from rng in the order of one large draw.
    rows = _coalitions.chunk_rows(n)
    masks = np.empty((budget, n), dtype=bool)
    values = np.empty(budget, dtype=np.float64)
    eval_seconds = 0.0
    with evaluated_on(game, executor):
        for start in range(0, budget, rows):
            stop = min(start + rows, budget)
            masks[start:stop] = rng.random((stop - start, n)) < 0.5
            t_eval = time.perf_counter()
            values[start:stop] = np.asarray(game(masks[start:stop]), dtype=np.float64)
            eval_seconds += time.perf_counter() - t_eval

    t_fit = time.perf_counter()
    gbr = GradientBoostingRegressor(**settings)
    X = masks.astype(np.float32)  # 0/1 exactly; the trees work in float32 anyway
    gbr.fit(X, values)
    fit_seconds = time.perf_counter() - t_fit
    resid = values - gbr.predict(X)
    total = float(np.sum((values - values.mean()) ** 2))
    train_r2 = 1.0 - float(np.sum(resid**2)) / total if total > 0 else 1.0

    t_ext = time.perf_counter()
    spectrum = proxy_fourier(gbr, n)
    n_extracted = len(spectrum)
    spectrum.pop(0, None)  # the constant is always kept, and refitted
    items = [(k, v) for k, v in spectrum.items() if bin(k).count("1") <= max_order]
    items.sort(key=lambda kv: -abs(kv[1]))
    if n_terms is None and items:
        energy = np.cumsum(np.array([v for _, v in items]) ** 2)
        items = items[: int(np.searchsorted(energy, ENERGY * energy[-1])) + 1]
    limit = budget // MAX_TERMS_DIVISOR if n_terms is None else min(n_terms, budget // MAX_TERMS_DIVISOR)
    items = items[:limit]
    keys = [()] + [_bits_to_tuple(k) for k, _ in items]
    extract_seconds = time.perf_counter() - t_ext

    t_refit = time.perf_counter()
    del X
    # Normal equations of the (budget, terms) design of (-1)^{|K & m|}, accumulated per chunk.
    xtx = np.zeros((len(keys), len(keys)))
    xty = np.zeros(len(keys))
    for start in range(0, budget, rows):
        block_xtx, block_xty = normal_equations(fourier_design(masks[start : start + rows], keys),
                                                values[start : start + rows])
        xtx += block_xtx
        xty += block_xty
    coef = lstsq(xtx, xty)
    refit_seconds = time.perf_counter() - t_refit
    terms = {k: float(c) for k, c in zip(keys, coef)}
    params = {
        "method": "proxy_spex",
        "budget": int(budget),
        **seed_record(seed),
        "n_terms": len(terms),
        "n_extracted": n_extracted,
        "energy": ENERGY if n_terms is None else None,
        "proxy_train_r2": train_r2,
        "gbt": {k: v for k, v in settings.items() if isinstance(v, (int, float, str, bool, type(None)))},
        "fit_seconds": fit_seconds,
        "extract_seconds": extract_seconds,
        "refit_seconds": refit_seconds,
        "eval_seconds": eval_seconds,
    }
    return Interactions(terms, "fourier", n, max_order, budget, params)
