"""What every approximator shares: the result type, the blocks sent to a game, the budget checks (the
chunk size, the coalition table and the exact refusal are :mod:`featurelens._coalitions`')."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._budgets import check_budget, format_count, max_evaluations
from .._coalitions import chunk_rows

__all__ = ["ApproximationResult", "default_budget"]


@dataclass(frozen=True, eq=False)
class ApproximationResult:
    """What an approximator returns: per-player values of one game and how they were bought.

    Attributes
    ----------
    values
        float64 ``(n,)``, one value per player (Shapley values, LIME coefficients, leave-one-out
        drops, ... as the approximator says).
    base_value
        The value the players' values start from: ``v(empty)`` for the Shapley estimators (so
        ``base_value + values.sum() = full_value`` by efficiency), the surrogate's intercept for
        LIME, ``v(N) - sum_i values_i`` for leave-one-out.
    full_value
        ``v(N)``, the game's value with every player kept.
    game_evaluations
        Coalitions evaluated (``v(empty)`` and ``v(N)`` included where they were evaluated).
    model_calls
        Model rows spent when the game counts them (a :class:`~featurelens.games.MaskedModel`'s
        ``model_calls``), else None.
    info
        Further diagnostics of the method: ``n_players`` and ``budget`` always, then e.g.
        ``n_permutations``, ``surrogate_r2``, ``mean`` / ``max`` (MinShap).
    interactions
        The :class:`featurelens.interactions.Interactions` the values were derived from (SPEX,
        ProxySPEX), else None.
    """

    values: np.ndarray
    base_value: float
    full_value: float
    game_evaluations: int
    model_calls: int | None = None
    info: dict = field(default_factory=dict)
    interactions: object = None

    @property
    def n_players(self) -> int:
        return int(self.values.shape[0])

    def record(self) -> dict:
        """One flat dict of everything but the values (``base_value``, ``full_value``,
        ``game_evaluations``, ``model_calls`` where counted, and ``info``), as recorded in an
        Explanation's params."""
        out = {"n_players": self.n_players, "budget": self.info.get("budget"),
               "game_evaluations": int(self.game_evaluations), "base_value": self.base_value,
               "full_value": self.full_value}
        if self.model_calls is not None:
            out["model_calls"] = int(self.model_calls)
        out.update(self.info)
        return out

    def __repr__(self) -> str:
        return (f"ApproximationResult(n_players={self.n_players}, base_value={self.base_value:.6g}, "
                f"full_value={self.full_value:.6g}, game_evaluations={self.game_evaluations}, "
                f"model_calls={self.model_calls}, info keys={sorted(self.info)})")


def result(game, values, base_value, full_value, used, calls_before, budget, interactions=None,
           **info) -> ApproximationResult:
    """The :class:`ApproximationResult` of an approximator that spent ``used`` evaluations of
    ``game`` (``model_calls`` counted from ``calls_before``)."""
    calls = model_calls(game)
    spent = None if calls is None or calls_before is None else int(calls - calls_before)
    values = np.asarray(values, dtype=np.float64)
    return ApproximationResult(values=values, base_value=float(base_value), full_value=float(full_value),
                               game_evaluations=int(used), model_calls=spent,
                               info={"n_players": int(values.shape[0]), "budget": budget, **info},
                               interactions=interactions)


def game_rows(game, n: int) -> int:
    """Mask rows per block sent to ``game``: about :data:`CHUNK_ELEMENTS` mask elements, rounded to
    a multiple of the game's own chunk size so that no block leaves a small partial chunk (each
    chunk is one model call)."""
    per_call = max(1, int(getattr(game, "chunk_size", 1) or 1))
    return max(per_call, chunk_rows(n) // per_call * per_call)


def regroup(pieces, rows: int, first_rows: int | None = None):
    """Concatenate consecutive ``(masks, weights)`` pieces into blocks of exactly ``rows`` rows
    (``first_rows`` for the first block, which leaves room for rows added to it; the last block may
    be shorter), so that many small pieces (the enumerated sizes of a KernelSHAP plan) cost few
    game calls; memory stays bounded by ``rows``."""
    buffer_m, buffer_w, held = [], [], 0
    target = rows if first_rows is None else max(1, first_rows)
    for masks, weights in pieces:
        start = 0
        while start < masks.shape[0]:
            take = min(target - held, masks.shape[0] - start)
            buffer_m.append(masks[start : start + take])
            buffer_w.append(weights[start : start + take])
            held += take
            start += take
            if held == target:
                yield np.concatenate(buffer_m), np.concatenate(buffer_w)
                buffer_m, buffer_w, held, target = [], [], 0, rows
    if held:
        yield np.concatenate(buffer_m), np.concatenate(buffer_w)


def ends(game, n: int) -> tuple[float, float]:
    """``(v(empty), v(N))`` in one game call."""
    values = game(np.stack([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)]))
    return float(values[0]), float(values[1])


def model_calls(game):
    """The game's count of model rows (a MaskedModel's ``model_calls``), or None."""
    return getattr(game, "model_calls", None)


def default_budget(n: int) -> int:
    """The default budget of the sampling estimators: ``2 n + 2048`` game evaluations."""
    return 2 * n + 2048


def sampling_budget(budget, n: int, method: str, minimum: int, reason: str) -> int:
    """The checked budget: the default for None; refused below ``minimum`` (stated, with the
    reason) or above ``featurelens._budgets.max_evaluations``, before any evaluation."""
    hint = (f"lower the budget (at least {minimum} for {method} with n_players = {n}), or group players "
            "(groups=)")
    if minimum > max_evaluations():
        raise ValueError(
            f"{method} with n_players = {n} needs at least {format_count(minimum)} game evaluations ({reason}), "
            f"more than the limit of {format_count(max_evaluations())} per call "
            "(featurelens._budgets.MAX_EVALUATIONS); group players (groups=) into fewer players"
        )
    budget = check_budget(budget, "budget", allow_none=True, unit="game evaluations",
                          what=f"for {method} with n_players = {n}", hint=hint)
    budget = default_budget(n) if budget is None else budget
    if budget < minimum:
        raise ValueError(
            f"budget = {budget} game evaluations is too small for {method} with n_players = {n}; "
            f"it needs at least {minimum} ({reason})"
        )
    return budget
