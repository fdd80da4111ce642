"""Shapley values of black-box models: exact, KernelSHAP and antithetic permutation sampling.

Every explainer here is a :class:`featurelens.explainers.GameExplainer` that runs a function of
:mod:`featurelens.approximators` on the game :class:`featurelens.games.MaskedModel` of one sample at
a time: ``v(S)`` is the target output when only the players in ``S`` keep their values (dropped
players take the ``baseline``, or are averaged over ``background`` rows). The Shapley value of
player ``i`` (Shapley 1953) is::

    phi_i = sum_{S subset N minus {i}} |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S))

and the values satisfy efficiency, ``sum_i phi_i = v(N) - v(empty)``.

Registered names:

* ``exact_shapley``: all ``2^n`` coalitions, the formula above (refuses ``n > max_players``).
* ``kernel_shap``: KernelSHAP (Lundberg & Lee 2017, arXiv 1705.07874), the Shapley-kernel weighted
  least squares with efficiency imposed exactly, complete enumeration of the extreme coalition
  sizes while the budget allows and paired sampling of the rest (Covert & Lee 2021, "Improving
  KernelSHAP", arXiv 2012.01536).
* ``permutation_shap``: marginal contributions averaged along permutations drawn in antithetic
  pairs (a permutation and its reverse; Mitchell, Cooper, Frank & Holmes 2022, "Sampling
  permutations for Shapley value estimation", arXiv 2104.12199).
* ``minshap``: the same permutations, the minimum instead of the mean of each player's marginal
  contributions (Zheng & Raskutti 2026, arXiv 2604.15107), for direct effects.

Fill: on tabular data (one input is a row, shape ``(d,)``) a ``background`` (rows, or the weighted
summary of :func:`featurelens.games.summarize_background`) or an explicit ``baseline`` is required;
images and signals default to ``baseline=0.0``.

Output layout: ``explain(x)`` returns values shaped like ``x``; every input element carries the
full value of its player. With ``groups`` that means all elements of a group hold the same number,
``phi_player``, so summing a map over a group multiplies the player's value by the group size (take
one element per group, or use :meth:`explain_players`, which returns ``(n_samples, n_players)``).

Cost: the per-sample loop builds one game per sample (one forward pass to set up the game) and
evaluates that sample's coalitions in batches; with ``B`` background rows each coalition costs
``B`` model rows. ``Explanation.model_calls`` counts all model rows.

Parallel: ``executor=`` (constructor) evaluates each sample's coalitions on an executor's workers;
``explain(x, executor=...)`` explains the rows in parts on the workers. Row ``i`` of a batch draws
its coalitions or permutations from its own stream ``SeedSequence(seed, spawn_key=(i,))``, so
serial, row-split and parallel runs with the same int seed are bitwise equal.
"""

from __future__ import annotations

import numpy as np

from .. import approximators
from .._random import parse_seed
from .._validation import check_int, check_option
from .._budgets import check_budget
from .._coalitions import refuse_exact
from ..approximators._common import default_budget
from ..approximators.kernel import kernel_bytes
from ..approximators.permutation import STATISTICS, contribution_chunks
from ._base import Requires, register
from .game_explainer import GameExplainer

__all__ = ["ExactShapley", "KernelShap", "MinShap", "PermutationShap"]


@register("exact_shapley")
class ExactShapley(GameExplainer):
    """Exact Shapley values from all ``2^n`` coalitions of each sample's game.

    ``phi_i = sum_{S subset N minus i} |S|!(n-|S|-1)!/n! (v(S + i) - v(S))`` (Shapley 1953), from
    the full table of ``v``, evaluated in batches. Refuses games with more than ``max_players``
    players (``2^n`` evaluations); use ``kernel_shap``, ``permutation_shap`` or ``spex`` for those.

    Parameters
    ----------
    model
        A torch module or a numpy/torch callable (no gradients needed).
    groups
        The players: None (every input element), an int array shaped like one input, or for
        images ``(C, H, W)`` / ``(H, W)`` ``"patches"`` (square patches, 196 of 16 px on a 224 x 224
        image; ``"patches:N"``), ``"slic"`` / ``"superpixels"`` (SLIC superpixels per image,
        ``"slic:N"``; needs scikit-image) or a callable ``image -> int labels`` called once per
        image; see :class:`~featurelens.explainers.GameExplainer`. An ungrouped image whose game
        cannot fit (too many coalitions, too much memory) is refused before any model call, the
        message naming ``groups="patches"`` and ``groups="slic"`` with their players.
    baseline, background
        The value function, see :class:`featurelens.games.MaskedModel`. On tabular
        data (one input of shape ``(d,)``) give ``background`` (rows, or weighted rows from
        :func:`featurelens.games.summarize_background`) or an explicit ``baseline``; without either
        ``explain`` raises a ValueError (a zero fill is meaningless on unscaled features). Images
        and signals (ndim >= 2 per input) default to ``baseline=0.0``.
    max_players
        The largest number of players evaluated exactly (default 20: about a million coalitions).
    batch_size
        Most model rows per forward pass.
    progress
        A tqdm bar over the samples of a batch; None (default): only when stderr is a terminal.
    executor
        Where each sample's coalitions are evaluated: a :mod:`featurelens.parallel` executor
        (``ThreadExecutor(8)`` for a model behind an API, ``RayExecutor()``...) or any callable of
        the game hook (:class:`featurelens.games.Game`); None: in this process, chunk after chunk.
        The values equal those of the serial path (the chunks are the same). Recorded in
        ``params["executor"]`` by its repr. To spread the *rows* instead, pass
        ``explain(x, executor=...)``.
    """

    audit_order = 3
    requires = Requires(gradients=False, max_players=20)

    def __init__(self, model, baseline=None, background=None, groups=None, max_players: int = 20, batch_size=None,
                 progress: bool | None = None, executor=None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, batch_size=batch_size,
                         progress=progress, executor=executor)
        self.max_players = check_int(max_players, "max_players", low=1)

    def params(self):
        return {**super().params(), "max_players": self.max_players}

    def plan(self, n_players: int, way_out: str):
        # The exact refusal of the approximator, before any model call, naming the grouping too.
        refuse_exact("exact_shapley", n_players, self.max_players, 32.0,
                     "Use 'kernel_shap' or 'permutation_shap' (sampling, with a budget), or 'spex' for many "
                     f"players; {way_out}; or raise max_players.")
        return 2**n_players, None

    approximator = staticmethod(approximators.exact_shapley)

    def approximator_options(self, row: int) -> dict:
        return {"max_players": self.max_players}


class _SampledShapley(GameExplainer):
    accepts = frozenset({"baseline", "groups", "progress", "seed", "executor"})  # the harness options it takes (see Explainer.accepts)

    def __init__(self, model, baseline=None, background=None, groups=None, budget=None, seed=0, batch_size=None,
                 progress: bool | None = None, executor=None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, batch_size=batch_size,
                         progress=progress, executor=executor)
        self.budget = check_budget(budget, "budget", allow_none=True, unit="game evaluations", what="per input")
        self.seed = parse_seed(seed)

    def params(self):
        return {**super().params(), "budget": self.budget, **self.seed_params()}

    def plan(self, n_players: int, way_out: str):
        budget = default_budget(n_players) if self.budget is None else self.budget
        minimum = self.minimum_budget(n_players)
        if budget < minimum:
            raise ValueError(f"budget = {budget} game evaluations is too small for {self.name} with n_players = "
                             f"{n_players}; it needs at least {minimum}; raise the budget or {way_out}")
        return budget, None

    def approximator_options(self, row: int) -> dict:
        # One stream per row, SeedSequence(seed, spawn_key=(i,)) for row i of the batch: the same
        # seed gives the same values on every call, for each row alone, in parts or in parallel.
        return {"budget": self.budget, "seed": self.row_rng(row)}


@register("kernel_shap")
class KernelShap(_SampledShapley):
    """KernelSHAP: Shapley values as the efficiency-constrained weighted least-squares fit

        min_phi sum_S k(S) (v(S) - v(empty) - sum_{i in S} phi_i)^2   s.t.  sum_i phi_i = v(N) - v(empty)

    with the Shapley kernel ``k(S) = (n-1) / (C(n,|S|) |S| (n-|S|))`` over ``0 < |S| < n``
    (Lundberg & Lee 2017, arXiv 1705.07874); with all coalitions the solution is exactly the
    Shapley value. The constraint is imposed by eliminating the last player's value.

    Coalitions: ``empty`` and ``N`` always; then, for sizes ``(1, n-1), (2, n-2), ...``, a pair of
    sizes is enumerated completely, with its exact kernel weights, when its count fits in the
    remaining budget and is no more than the draws sampling would give it (remaining budget times
    its share of the remaining kernel mass); the rest of the budget is drawn in pairs ``S`` and its
    complement (Covert & Lee 2021, arXiv 2012.01536) with the size drawn proportional to the kernel
    mass ``1/(s(n-s))`` and the subset uniformly; each draw carries an equal share of the remaining
    mass, and repeated draws are evaluated once with their weights added. Drawing continues until
    the distinct pairs fill the budget (or every pair has been found, or after ``64 x`` the pairs
    the budget holds). When ``budget >= 2^n`` every coalition is enumerated.

    Parameters
    ----------
    model, baseline, background, groups, batch_size, progress
        As for ``exact_shapley``.
    budget
        Game evaluations (coalitions, ``empty`` and ``N`` included) per sample; default
        ``2 n + 2048``. At least ``min(n + 2, 2^n)``. One fewer is used when the budget left for
        sampling is odd (reported per sample in ``params["game_evaluations"]``).
    seed
        Int, numpy Generator or None. Row ``i`` of a batch draws from its own stream,
        ``SeedSequence(root, spawn_key=(i,))`` with ``root`` the int seed (an int drawn from a
        Generator once per call; fresh entropy for None), so an int seed gives the same values on
        every call, for a row explained alone, in a row split or in parallel.
    executor
        As for ``exact_shapley``.
    """

    audit_order = 1
    approximator = staticmethod(approximators.kernel_shap)

    @staticmethod
    def minimum_budget(n: int) -> int:
        return min(n + 2, 2**n)

    def plan(self, n_players: int, way_out: str):
        evaluations, _ = super().plan(n_players, way_out)
        return evaluations, kernel_bytes(n_players)

    def _coalitions(self, n: int, budget: int, rng):
        """All masks ``(q, n)`` of the coalitions with ``0 < |S| < n`` and their kernel weights, at
        once (for inspection; :func:`featurelens.approximators.kernel_shap` streams them)."""
        parts = list(approximators.kernel_coalitions(n, budget, rng).chunks())
        if not parts:
            return np.zeros((0, n), dtype=bool), np.zeros(0)
        return np.concatenate([m for m, _ in parts]), np.concatenate([w for _, w in parts])


@register("permutation_shap")
class PermutationShap(_SampledShapley):
    """Permutation sampling with antithetic pairs: ``phi_i`` is the mean over permutations ``pi``
    of ``v(Pre_pi(i) + i) - v(Pre_pi(i))``, the marginal contribution of ``i`` to the players before
    it; every permutation is followed by its reverse (Mitchell, Cooper, Frank & Holmes 2022,
    arXiv 2104.12199). Along each permutation the contributions telescope to ``v(N) - v(empty)``,
    so efficiency holds exactly for any number of permutations.

    ``v(empty)`` and ``v(N)`` are evaluated once per sample and shared by all chains; each
    permutation costs the ``n - 1`` interior coalitions of its chain, evaluated together with
    those of the other permutations in one batch. The number of permutations is
    ``(budget - 2) // (n - 1)`` rounded down to an even number.

    Parameters
    ----------
    model, baseline, background, groups, batch_size, progress
        As for ``exact_shapley``.
    budget
        Game evaluations per sample (default ``2 n + 2048``); at least ``2 n`` (one antithetic
        pair).
    seed
        Int, numpy Generator or None: per-row streams, as for ``kernel_shap``.
    executor
        As for ``exact_shapley``.
    """

    audit_order = 2
    approximator = staticmethod(approximators.permutation_shap)

    @staticmethod
    def minimum_budget(n: int) -> int:
        return 2 if n == 1 else 2 * n

    def _contributions(self, game, rng) -> tuple[np.ndarray, float, float, int]:
        """All marginal contributions along the antithetic permutations at once: ``(deltas (P, n),
        v0, vn, evaluations)`` (for inspection; the estimators stream them)."""
        n, budget, v0, vn, n_perm, chunks = contribution_chunks(game, self.budget, rng, self.name)
        deltas = np.concatenate(list(chunks))
        return deltas, v0, vn, 2 + (n_perm * (n - 1) if n > 1 else 0)

    def params(self):
        return {**super().params(), "antithetic": True}


@register("minshap")
class MinShap(PermutationShap):
    """MinShap: the minimum, instead of the mean, of each player's marginal contributions over
    sampled permutations (Zheng & Raskutti 2026, "MinShap: A Modified Shapley Value Approach for
    Feature Selection", arXiv 2604.15107)::

        minshap_i = min_pi [ v(Pre_pi(i) + i) - v(Pre_pi(i)) ]      (Shapley: the mean over pi)

    A player whose contribution vanishes for some coalition of the others (its effect runs only
    through other players, or it is a dummy) gets ``minshap_i <= 0``; one with a direct positive
    effect in every context keeps ``minshap_i > 0``. With ``statistic="min_abs"`` the minimum of
    ``|contribution|`` is returned instead: the smallest effect size a player shows in any sampled
    context, whatever its sign. The permutations are those of ``permutation_shap`` (antithetic
    pairs, same ``budget`` and ``seed`` semantics), so with the same seed the two explainers see
    the same coalitions.

    The minimum over sampled permutations is an upper bound of the minimum over all of them; it
    decreases (weakly) as the budget grows, unlike the mean, which converges. The explanation's
    ``extra`` holds ``"shapley"`` (the mean over the same permutations, an unbiased Shapley
    estimate) and ``"max"`` (the largest contribution), both shaped like ``values``.

    The paper's feature-selection procedure (a global game of the model's loss, per-permutation
    tests combined into p-values) is :class:`featurelens.selection.MinShapSelector`; this
    explainer is the local (one prediction) version.

    Parameters
    ----------
    model, baseline, background, groups, batch_size, progress, budget, seed, executor
        As for ``permutation_shap``.
    statistic
        ``"min"`` (default) or ``"min_abs"``.
    """

    audit_default = "a Shapley variant for feature selection; request it with methods="

    _STATISTICS = STATISTICS

    def __init__(self, model, baseline=None, background=None, groups=None, budget=None, seed=0, batch_size=None,
                 progress: bool | None = None, statistic: str = "min", executor=None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, budget=budget, seed=seed,
                         batch_size=batch_size, progress=progress, executor=executor)
        self.statistic = check_option(statistic, "statistic", self._STATISTICS)

    def params(self):
        return {**super().params(), "statistic": self.statistic}

    approximator = staticmethod(approximators.minshap)

    def approximator_options(self, row: int) -> dict:
        return {**super().approximator_options(row), "statistic": self.statistic}

    def row_arrays(self, result) -> dict:
        return {"shapley": result.info["mean"], "max": result.info["max"]}
