"""Approximators: functions of a :class:`featurelens.games.Game` that value its players.

Each approximator maps a game ``v`` over ``n`` players to an :class:`ApproximationResult`:
``values`` (float64 ``(n,)``), ``base_value``, ``full_value`` (``v(N)``), ``game_evaluations``
(``v(empty)`` and ``v(N)`` included where evaluated), ``model_calls`` (model rows, when the game is
a :class:`~featurelens.games.MaskedModel`) and ``info`` (``n_players``, ``budget`` and the
method's diagnostics). The Shapley estimators estimate (Shapley 1953)::

    phi_i = sum_{S subset N minus {i}} |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S)),

* :func:`exact_shapley`: all ``2^n`` coalitions (refuses ``n > max_players`` at once, with the
  memory it would need).
* :func:`kernel_shap`: KernelSHAP (Lundberg & Lee 2017, arXiv 1705.07874) with paired sampling
  (Covert & Lee 2021, arXiv 2012.01536).
* :func:`permutation_shap`: antithetic permutation sampling (Mitchell, Cooper, Frank & Holmes 2022,
  arXiv 2104.12199).
* :func:`minshap`: the minimum of the marginal contributions over the same permutations (Zheng &
  Raskutti 2026, arXiv 2604.15107).
* :func:`spex`, :func:`proxy_spex`: Shapley or Banzhaf values of sparse Fourier interactions
  (Kang et al. 2025, arXiv 2502.13870; Butler et al. 2025, arXiv 2505.17495); the result carries
  the :class:`~featurelens.interactions.Interactions`.

and the other black-box methods:

* :func:`lime`: LIME's kernel-weighted linear surrogate (Ribeiro, Singh & Guestrin 2016,
  arXiv 1602.04938); ``base_value`` is the intercept.
* :func:`leave_one_out`: ``a_i = v(N) - v(N minus {i})`` (feature ablation / occlusion over the
  players); ``base_value = v(N) - sum_i a_i``.

:data:`APPROXIMATORS` maps every name to its function (:func:`get` looks one up, also by the
names in :data:`ALIASES`); ``featurelens.text.explain`` and
:class:`featurelens.explainers.GameExplainer` run any of them, so a new approximator needs no
other registration.

Samplers. One coalition sampler (:func:`kernel_coalitions`, Shapley-kernel sizes, paired) and one
permutation sampler (:func:`iter_antithetic_permutations`) serve every estimator here,
``featurelens.selection.MinShapSelector`` and the explainers of
``featurelens.explainers.shapley``.

Budgets. Every ``budget`` is an int of game evaluations, refused before any evaluation when it is
below the method's minimum for ``n`` players (the message states the minimum) or above
``featurelens._budgets.MAX_EVALUATIONS`` (10^8 evaluations per call; the environment variable
``FEATURELENS_MAX_EVALUATIONS`` raises it), by ``featurelens._budgets.check_budget``.

Memory. Coalitions are generated and evaluated chunk by chunk (at most
:data:`CHUNK_ELEMENTS` mask elements per chunk, read from ``featurelens._coalitions`` at call
time), so the peak memory is bounded by the chunk, not by the budget: KernelSHAP keeps
only its normal equations (``(n-1) x (n-1)``, float64), the permutation estimators only running
sums (and minima/maxima). What must grow with the budget (the distinct sampled pairs of
KernelSHAP, packed at ``n/8`` bytes each; the table of an exact method) is estimated first by
:func:`check_memory`, which refuses, naming the estimate and the way out, before anything is
allocated.
"""

from __future__ import annotations

from .._budgets import check_memory, format_bytes
from .._coalitions import CHUNK_ELEMENTS, MAX_EXACT_PLAYERS, coalition_table, refuse_exact, shapley_from_table
from ..games import all_masks
from ._common import ApproximationResult, default_budget
from .exact import exact_shapley
from .kernel import CoalitionPlan, kernel_coalitions, kernel_shap
from .leave_one_out import leave_one_out, leave_one_out_masks
from .lime import LimeSettings, lime
from .permutation import antithetic_permutations, iter_antithetic_permutations, minshap, permutation_shap
from .sparse import proxy_spex, spex

__all__ = [
    "ALIASES",
    "APPROXIMATORS",
    "ApproximationResult",
    "CHUNK_ELEMENTS",
    "CoalitionPlan",
    "LimeSettings",
    "MAX_EXACT_PLAYERS",
    "exact_shapley",
    "kernel_shap",
    "permutation_shap",
    "minshap",
    "lime",
    "leave_one_out",
    "spex",
    "proxy_spex",
    "get",
    "shapley_from_table",
    "coalition_table",
    "kernel_coalitions",
    "antithetic_permutations",
    "iter_antithetic_permutations",
    "leave_one_out_masks",
    "default_budget",
    "check_memory",
    "format_bytes",
    "all_masks",
    "refuse_exact",
]

#: Every approximator by name, a function ``(game, ...) -> ApproximationResult``.
APPROXIMATORS = {
    "exact_shapley": exact_shapley,
    "kernel_shap": kernel_shap,
    "permutation_shap": permutation_shap,
    "minshap": minshap,
    "lime": lime,
    "leave_one_out": leave_one_out,
    "spex": spex,
    "proxy_spex": proxy_spex,
}
#: Other names of these approximators, the explainer registry's (``feature_ablation`` is
#: leave-one-out over the players) and the short ``exact``.
ALIASES = {"exact": "exact_shapley", "feature_ablation": "leave_one_out"}


def get(name: str):
    """The approximator called ``name`` (a key of :data:`APPROXIMATORS` or :data:`ALIASES`); any
    other name is a ValueError listing them."""
    if isinstance(name, str) and ALIASES.get(name, name) in APPROXIMATORS:
        return APPROXIMATORS[ALIASES.get(name, name)]
    raise ValueError(f"method must be one of {', '.join(list(APPROXIMATORS) + list(ALIASES))}; got {name!r}")
