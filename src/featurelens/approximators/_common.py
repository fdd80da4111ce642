"""What every approximator shares: the result type, the boundary between an approximator and its
game (:func:`approximator`, :func:`check_result`), the blocks sent to a game, the budget checks (the
chunk size, the coalition table and the exact refusal are :mod:`featurelens._coalitions`').

The boundary. Every approximator of :data:`featurelens.approximators.APPROXIMATORS` is decorated
with :func:`approximator`, which is the one place where what a game returns and what an
approximator returns are checked:

* the game: a :class:`featurelens.games.Game` checks its own values (one finite float per mask
  row); any other callable with ``n_players`` is wrapped in a :class:`~featurelens.games.FunctionGame`,
  so its values get the same checks (shape ``(q,)``, numbers, finite) before the method sees them;
* the result: :func:`check_result` (an :class:`ApproximationResult` with ``n_players`` finite
  values and a finite base and full value). When finite game values gave a non-finite result
  (differences or sums of values near 1e308 overflow float64), the method is run once more on the
  game divided by a power of two (exact in floating point) and the result multiplied back; when
  the true result itself exceeds float64 the error says so.

:class:`featurelens.explainers.GameExplainer` checks the result of its approximator with the same
:func:`check_result`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .._budgets import check_budget, format_count, max_evaluations
from .._coalitions import check_game, chunk_rows
from ..games import FunctionGame, Game, local_executor

__all__ = ["ApproximationResult", "CheckedGame", "PlainGame", "approximator", "check_result", "default_budget"]


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


# -- the boundary between an approximator and its game -------------------------------------------

#: Below this largest ``|v(S)|`` a non-finite result is not an overflow of the game's scale (sums
#: and differences of values up to 2^64 fit float64 many times over), so it is not retried.
_RESCALE_ABOVE = 2.0**64


class CheckedGame:
    """The game an approximator sees: ``game`` (a featurelens Game, or a plain callable with
    ``n_players`` wrapped in a :class:`PlainGame`, whose Game checks apply to its values), its
    values multiplied by ``2**-exponent``, and the largest ``|v(S)|`` seen. Every other attribute
    (``chunk_size``, ``model_calls``, ``x``, ``executor``, ...) is the game's own."""

    _own = ("_game", "_exponent", "n_players", "max_abs", "evaluated")

    def __init__(self, game, n_players: int, exponent: int = 0):
        object.__setattr__(self, "_game", game)
        object.__setattr__(self, "_exponent", int(exponent))
        object.__setattr__(self, "n_players", int(n_players))
        object.__setattr__(self, "max_abs", 0.0)
        object.__setattr__(self, "evaluated", 0)  # mask rows evaluated through this view

    @classmethod
    def of(cls, game) -> "CheckedGame":
        """The checked view of ``game``; a TypeError when it is not a callable with ``n_players >= 1``."""
        if isinstance(game, CheckedGame):
            return game
        n = check_game(game)
        return cls(game if isinstance(game, Game) else PlainGame(game, n), n)

    def rescaled(self, exponent: int) -> "CheckedGame":
        """The same game with its values multiplied by ``2**-exponent`` (exact in floating point)."""
        return CheckedGame(self._game, self.n_players, exponent)

    def __call__(self, masks) -> np.ndarray:
        values = self._game(masks)  # float64 (q,), finite: checked by the Game
        object.__setattr__(self, "evaluated", self.evaluated + int(values.size))
        if values.size:
            object.__setattr__(self, "max_abs", max(self.max_abs, float(np.abs(values).max())))
        return np.ldexp(values, -self._exponent) if self._exponent else values

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_game"), name)

    def __setattr__(self, name, value):  # e.g. the executor set by interactions.evaluated_on
        if name in self._own:
            object.__setattr__(self, name, value)
        else:
            setattr(self._game, name, value)

    def __repr__(self) -> str:
        return f"CheckedGame({self._game!r})"


class PlainGame(FunctionGame):
    """A plain callable with ``n_players`` (``fn(masks (q, n) bool) -> (q,) values``) as a Game:
    its values get the Game's checks (shape ``(q,)``, numbers, finite). It is called with the
    blocks the approximator sends, as without the wrapper (its own ``chunk_size``, if it has one,
    sizes them; an executor set by ``executor=`` cuts them into chunks of that size, else 1024);
    its ``model_calls``, if it counts any, are read through."""

    def __init__(self, fn, n_players: int):
        super().__init__(fn, n_players)
        own = getattr(fn, "chunk_size", None)
        self.chunk_size = own if isinstance(own, int) and own >= 1 else None

    def _run_executor(self, masks: np.ndarray) -> np.ndarray:
        if self.executor is local_executor:
            return self._evaluate_chunk(masks)
        return self.executor(self._evaluate_chunk, masks, self.chunk_size or 1024)

    @property
    def model_calls(self):
        return getattr(self.fn, "model_calls", None)

    def __repr__(self) -> str:
        return f"PlainGame({type(self.fn).__name__}, n_players={self.n_players})"


def check_result(res, n_players: int, method: str) -> "ApproximationResult":
    """``res`` when it is an :class:`ApproximationResult` with ``n_players`` finite values and a
    finite ``base_value`` and ``full_value``; otherwise a TypeError or ValueError naming ``method``,
    what it returned and what was expected."""
    if not isinstance(res, ApproximationResult):
        raise TypeError(
            f"{method} must return a featurelens.approximators.ApproximationResult (values, base_value, "
            f"full_value, game_evaluations, ...); got {type(res).__name__}"
        )
    values = np.asarray(res.values)
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{method} returned values of dtype {values.dtype}; expected numbers, float64 ({n_players},)")
    if values.shape != (n_players,):
        raise ValueError(
            f"{method} returned values of shape {values.shape}; expected one value per player, shape "
            f"({n_players},) (the game has n_players = {n_players})"
        )
    bad = np.flatnonzero(~np.isfinite(values.astype(np.float64)))
    if bad.size:
        raise ValueError(
            f"{method} returned NaN or inf values for {bad.size} of {n_players} players (first players "
            f"{bad[:5].tolist()}); expected finite values"
        )
    for name in ("base_value", "full_value"):
        value = getattr(res, name)
        try:
            ok = math.isfinite(float(value))
        except (TypeError, ValueError):
            raise TypeError(f"{method} returned {name} = {value!r}; expected a finite number") from None
        if not ok:
            raise ValueError(f"{method} returned {name} = {value}; expected a finite number")
    return res


def _finite(res) -> bool:
    return (bool(np.isfinite(np.asarray(res.values, dtype=np.float64)).all())
            and math.isfinite(res.base_value) and math.isfinite(res.full_value))


def _scaled_back(res, exponent: int, method: str, max_abs: float):
    """``res`` (a result on the game divided by ``2**exponent``) multiplied back, or a ValueError
    when it then exceeds float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.ldexp(np.asarray(res.values, dtype=np.float64), exponent)
        base, full = (float(v) for v in np.ldexp([res.base_value, res.full_value], exponent))
        inter = res.interactions
        terms = None if inter is None else {k: float(np.ldexp(v, exponent)) for k, v in inter.terms.items()}
    finite = (np.isfinite(values).all() and math.isfinite(base) and math.isfinite(full)
              and (terms is None or all(map(math.isfinite, terms.values()))))
    if not finite:
        worst = np.flatnonzero(~np.isfinite(values))
        what = f"the values of players {worst[:5].tolist()}" if worst.size else "the base, full or interaction values"
        raise ValueError(
            f"{method}: the game's values reach |v| = {max_abs:.3g}, and {what} exceed the largest float64 "
            f"({np.finfo(np.float64).max:.3g}) even when computed on the rescaled game; expected game values "
            "whose differences and sums fit float64: divide the game's values by a constant (e.g. 1e10) and "
            "multiply the result back"
        )
    if inter is not None:
        inter = type(inter)(terms, inter.index, inter.n_players, inter.max_order, inter.queries,
                            {**inter.params, "rescaled": int(exponent)})
    return dataclasses.replace(res, values=values, base_value=base, full_value=full, interactions=inter)


def approximator(method: str):
    """Decorate the approximator ``method`` (a function ``(game, ...) -> ApproximationResult``) with
    the boundary of the module docstring.

    The game is wrapped once in a :class:`CheckedGame` (a plain callable's values checked like a
    Game's), the result checked once by :func:`check_result`. When the game's values are larger
    than ``2**64`` and the method's float64 arithmetic overflowed on them (a non-finite result,
    or an error raised from the overflow), the method runs again on the game divided by
    ``2**e`` (``e`` the binary exponent of the largest ``|v(S)|``; exact in floating point) and the
    result is multiplied back: ``info["rescaled"]`` records ``e``, ``game_evaluations`` and
    ``model_calls`` count both runs. A result that does not fit float64 even then is refused.
    """

    def decorate(fn):
        @functools.wraps(fn)
        def run(game, *args, **kwargs):
            checked = CheckedGame.of(game)
            n = checked.n_players
            before = model_calls(checked)
            try:
                with np.errstate(over="ignore", invalid="ignore"):
                    res = fn(checked, *args, **kwargs)
            except (ValueError, RuntimeError, ArithmeticError):
                if checked.max_abs <= _RESCALE_ABOVE:
                    raise
                res = None  # the overflow raised inside the method (a solver, a term check)
            if res is not None and (not isinstance(res, ApproximationResult) or _finite(res)
                                    or checked.max_abs <= _RESCALE_ABOVE):
                return check_result(res, n, method)
            exponent = math.frexp(checked.max_abs)[1]  # values / 2^exponent lie in (-1, 1)
            with np.errstate(over="ignore", invalid="ignore"):
                again = check_result(fn(checked.rescaled(exponent), *args, **kwargs), n, method)
            out = _scaled_back(again, exponent, method, checked.max_abs)
            after = model_calls(checked)
            out = dataclasses.replace(
                out, game_evaluations=checked.evaluated + int(again.game_evaluations),
                model_calls=None if before is None or after is None else int(after - before),
                info={**out.info, "rescaled": int(exponent)})
            return check_result(out, n, method)

        return run

    return decorate
