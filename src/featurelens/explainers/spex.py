"""SPEX attributions of black-box models: Shapley (or Banzhaf) values of sparse Fourier interactions.

For each sample the explainer plays the game :class:`featurelens.games.MaskedModel` (as the
Shapley explainers of :mod:`featurelens.explainers.shapley` do), recovers its sparse Fourier
spectrum with :func:`featurelens.interactions.spex` (Kang et al., ICML 2025, arXiv:2502.13870),
converts it to Moebius coefficients and from those to the Shapley values
``SV_i = sum_{T ni i} a(T) / |T|`` (or the Banzhaf values ``BV_i = sum_{T ni i} a(T) / 2^{|T|-1}``).

Registered name: ``spex``. ``explain(x)`` returns values shaped like ``x``, each element carrying
its player's value (with ``groups``, every element of a group holds the group's value), as in
:mod:`featurelens.explainers.shapley`; :meth:`Spex.explain_players` gives one value per player and
:meth:`Spex.explain_interactions` the per-sample Fourier :class:`~featurelens.interactions.Interactions`.

The Shapley values of the surrogate satisfy efficiency with respect to the surrogate; when SPEX
recovers the spectrum exactly (a Fourier-sparse game of degree ``<= max_order``) they are the game's
Shapley values and ``sum_i phi_i = v(N) - v(empty)`` holds for the game itself.
"""

from __future__ import annotations

import dataclasses

from .. import approximators
from .._random import parse_seed
from .._validation import check_int, check_option
from .._budgets import check_budget
from ..approximators._common import ends
from ..approximators.sparse import INDICES
from ._base import register
from .game_explainer import GameExplainer

__all__ = ["Spex"]

_DECODERS = ("soft", "hard")


@register("spex")
class Spex(GameExplainer):
    """Shapley or Banzhaf values from SPEX's sparse Fourier interactions of each sample's game.

    Parameters
    ----------
    model
        A torch module or a numpy/torch callable (no gradients needed).
    baseline, background, groups
        The value function and the players, see :class:`featurelens.games.MaskedModel`. On tabular
        data (one input of shape ``(d,)``) give ``background`` (rows, or weighted rows from
        :func:`featurelens.games.summarize_background`) or an explicit ``baseline``; without either
        ``explain`` raises a ValueError (a zero fill is meaningless on unscaled features). Images
        and signals (ndim >= 2 per input) default to ``baseline=0.0``. ``groups``: None, an int
        array shaped like one input, or for images ``"patches"`` (``"patches:N"``), ``"slic"``
        (``"slic:N"``) or a callable ``image -> labels`` called once per image, as for
        :class:`~featurelens.explainers.GameExplainer`.
    budget
        Game evaluations per sample for :func:`featurelens.interactions.spex` (None: its default,
        15,000 with ``b <= 8``); too small a budget raises its ValueError (naming the minimum).
    max_order
        The degree bound ``t`` of the recovered Fourier terms (default 5).
    decoder
        ``"soft"`` (default) or ``"hard"`` BCH decoding of the delays.
    index
        ``"shapley"`` (default) or ``"banzhaf"``: the values derived from the interactions.
    seed
        Int, numpy Generator or None for SPEX's random subsampling matrices: every row of a call
        uses the same matrices, from the int seed (an int drawn from a Generator once per call;
        fresh entropy per call for None). So an int seed gives the same matrices for every sample
        and every call, and a row's values never depend on the other rows: serial, row-split and
        row-parallel (``explain(x, executor=...)``) runs are bitwise equal.
    batch_size, progress, executor
        As for ``exact_shapley``.

    Provenance (``Explanation.params``): the constructor settings plus, per sample,
    ``game_evaluations`` (SPEX's queries plus the 2 evaluations of ``v(empty)`` and ``v(N)``
    reported in ``base_values``/``full_values``), ``spex_queries``, ``b``, ``t``, ``decoder`` and
    ``n_terms`` (recovered Fourier terms, constant included). The surrogate's r2 is not computed
    (it would cost extra evaluations; use ``explain_interactions(x)[i].r2(game)``).
    """

    audit_default = "made for games with hundreds of players; request it with methods="
    accepts = frozenset({"baseline", "groups", "progress", "seed", "executor"})  # the harness options it takes (see Explainer.accepts)
    row_params = frozenset({"base_values", "full_values", "game_evaluations", "spex_queries", "b", "t", "decoder",
                            "n_terms"})

    def __init__(self, model, baseline=None, background=None, groups=None, budget=None, max_order: int = 5,
                 decoder: str = "soft", index: str = "shapley", seed=0, batch_size=None,
                 progress: bool | None = None, executor=None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, batch_size=batch_size,
                         progress=progress, executor=executor)
        self.budget = check_budget(budget, "budget", allow_none=True, unit="game evaluations", what="per input")
        self.max_order = check_int(max_order, "max_order", low=1)
        self.decoder = check_option(decoder, "decoder", _DECODERS)
        self.index = check_option(index, "index", INDICES)
        self.seed = parse_seed(seed)
        self._interactions: list = []

    def params(self) -> dict:
        return {**super().params(), "budget": self.budget, "max_order": self.max_order, "decoder": self.decoder,
                "index": self.index, **self.seed_params()}

    approximator = staticmethod(approximators.spex)

    def approximator_options(self, row: int) -> dict:
        # The same matrices for every row: the call's root (the int seed as it is; for a Generator
        # or None one draw per call), so the rows of one call never depend on each other.
        return {"budget": self.budget, "max_order": self.max_order, "decoder": self.decoder, "index": self.index,
                "seed": self._stream_root}

    def run(self, game, row: int):
        # The base and full values are the game's own v(empty) and v(N) (2 evaluations beyond
        # SPEX's queries), as for the Shapley explainers, not the surrogate's.
        res = super().run(game, row)
        self._interactions.append(res.interactions)
        v0, vn = ends(game, game.n_players)
        return dataclasses.replace(res, base_value=v0, full_value=vn, game_evaluations=res.game_evaluations + 2)

    def row_record(self, result) -> dict:
        return {key: result.info[key] for key in ("spex_queries", "b", "t", "decoder", "n_terms")}

    def _attribute(self, x, target, outputs=None):
        self._interactions = []
        values, extra = super()._attribute(x, target, outputs=outputs)
        extra["interactions_index"] = "fourier"
        return values, extra

    def _worker_copy(self):
        # A worker's copy starts without the interactions of earlier calls (they would travel).
        ex = super()._worker_copy()
        ex._interactions = []
        return ex

    def explain_interactions(self, x, target=None) -> list:
        """The per-sample Fourier :class:`~featurelens.interactions.Interactions` recovered by SPEX
        (one per sample, or per (sample, target) pair for ``(n, k)`` targets, in row order)."""
        self.explain(x, target=target)
        return list(self._interactions)
