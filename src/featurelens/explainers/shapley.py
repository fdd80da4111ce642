"""Shapley values of black-box models: exact, KernelSHAP and antithetic permutation sampling.

Every explainer here plays the game :class:`featurelens.games.MaskedModel` of one sample at a
time: ``v(S)`` is the target output when only the players in ``S`` keep their values (dropped
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

Output layout: ``explain(x)`` returns values shaped like ``x``; every input element carries the
full value of its player. With ``groups`` that means all elements of a group hold the same number,
``phi_player``, so summing a map over a group multiplies the player's value by the group size (take
one element per group, or use :meth:`explain_players`, which returns ``(n_samples, n_players)``).

Cost: the per-sample loop builds one game per sample (one forward pass to set up the game) and
evaluates that sample's coalitions in batches; with ``B`` background rows each coalition costs
``B`` model rows. ``Explanation.model_calls`` counts all model rows.
"""

from __future__ import annotations

import math
import sys
from itertools import combinations

import numpy as np
import torch

from .._linalg import lstsq
from ..games import MaskedModel
from ..interactions.transforms import all_masks
from ._base import Explainer, Requires, register

__all__ = ["ExactShapley", "KernelShap", "MinShap", "PermutationShap"]


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}")
    return int(value)


def _check_seed(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and seed >= 0):
        return seed
    raise ValueError(f"seed must be a non-negative int, None or a numpy Generator; got {seed!r}")


class _ShapleyExplainer(Explainer):
    """Shared machinery: one MaskedModel game per sample, player values spread back to the input."""

    requires = Requires(gradients=False)

    def __init__(self, model, baseline=None, background=None, groups=None, batch_size: int | None = None,
                 progress: bool | None = None):
        super().__init__(model, batch_size)
        if progress is not None and not isinstance(progress, bool):
            raise TypeError(f"progress must be True, False or None (only on a terminal); got {progress!r}")
        self.progress = progress
        if baseline is not None and background is not None:
            raise ValueError(
                "give either baseline (a fixed fill value) or background (rows to average over), not both; "
                f"got baseline of type {type(baseline).__name__} and background of type {type(background).__name__}"
            )
        self.baseline = baseline
        self.background = background
        self.groups = groups

    def params(self) -> dict:
        p = dict(super().params())
        p["fill"] = "background" if self.background is not None else "baseline"
        if self.background is not None:
            p["n_background"] = int(np.shape(self.background)[0])
        elif self.baseline is None or np.ndim(self.baseline) == 0:
            p["baseline"] = 0.0 if self.baseline is None else float(self.baseline)
        else:
            p["baseline"] = "array"
        p["groups"] = self.groups is not None
        return p

    def _game(self, x_row: torch.Tensor, target: int) -> MaskedModel:
        return MaskedModel(
            self.model, x_row, baseline=self.baseline, background=self.background, groups=self.groups, target=target
        )

    def _player_values(self, game: MaskedModel, rng) -> tuple:
        """Return ``(phi (n,), v(empty), v(N), game evaluations)`` for one game, optionally followed
        by a dict of further per-player arrays (they reach ``Explanation.extra``)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _rng(self):
        return None

    def _attribute(self, x, target, outputs=None):
        rng = self._rng()
        n_samples = x.shape[0]
        maps, base, full, evals = [], [], [], []
        side_maps: dict[str, list] = {}
        n_players = None
        from tqdm.auto import tqdm

        show = sys.stderr.isatty() if self.progress is None else self.progress
        for i in tqdm(range(n_samples), desc=self.name, disable=not show or n_samples < 2, leave=False, unit="sample"):
            game = self._game(x[i], int(target[i]))
            phi, v0, vn, used, *side = self._player_values(game, rng)
            n_players = game.n_players
            spread = (lambda v: v.reshape(game.input_shape)) if game.groups is None else (lambda v: v[game.groups])
            maps.append(spread(phi))
            # Optional per-player side results (a dict), spread over the input like phi.
            for name, player_values in (side[0] if side else {}).items():
                side_maps.setdefault(name, []).append(spread(player_values))
            base.append(v0)
            full.append(vn)
            evals.append(used)
        values = np.stack(maps).reshape(x.shape)
        extra = {
            "n_players": int(n_players),
            "base_values": [float(b) for b in base],
            "full_values": [float(f) for f in full],
            "game_evaluations": [int(e) for e in evals],
        }
        if side_maps:
            extra["arrays"] = {name: np.stack(m).reshape(x.shape) for name, m in side_maps.items()}
        return values, extra

    def explain_players(self, x, target=None) -> np.ndarray:
        """Per-player values, shape ``(n_samples, n_players)`` (``(n_samples, k, n_players)`` for
        ``(n, k)`` targets): the Shapley value of each player once, not spread over its elements."""
        e = self.explain(x, target=target)
        lead = e.values.ndim - (np.ndim(x) - 1)
        flat = e.values.reshape(*e.values.shape[:lead], -1)
        if self.groups is None:
            return flat
        groups = np.asarray(self.groups).reshape(-1)
        first = np.unique(groups, return_index=True)[1]  # first element of each player
        return flat[..., first]


def antithetic_permutations(n_permutations: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n_permutations`` orderings of ``n`` players, shape ``(n_permutations, n)``, in antithetic
    pairs: a uniform permutation (argsort of uniforms), then its reverse (Mitchell, Cooper, Frank &
    Holmes 2022, arXiv 2104.12199). An odd count drops the last reverse."""
    half = np.argsort(rng.random(((n_permutations + 1) // 2, n)), axis=1)
    perms = np.empty((2 * half.shape[0], n), dtype=np.int64)
    perms[0::2] = half
    perms[1::2] = half[:, ::-1]
    return perms[:n_permutations]


def _shapley_from_table(table: np.ndarray, n: int) -> np.ndarray:
    """Exact Shapley values from a ``(2^n,)`` table in bitmask order (player ``i`` is bit ``i``):
    ``phi_i = sum_{S not ni i} |S|!(n-|S|-1)!/n! (v(S + i) - v(S))``, vectorised per player."""
    idx = np.arange(2**n, dtype=np.int64)
    size = np.zeros(2**n, dtype=np.int64)
    for i in range(n):
        size += (idx >> i) & 1
    s = np.arange(n)
    w = np.array([math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n) for k in s])
    phi = np.empty(n)
    for i in range(n):
        without = idx[((idx >> i) & 1) == 0]
        phi[i] = np.dot(w[size[without]], table[without | (1 << i)] - table[without])
    return phi


@register("exact_shapley")
class ExactShapley(_ShapleyExplainer):
    """Exact Shapley values from all ``2^n`` coalitions of each sample's game.

    ``phi_i = sum_{S subset N minus i} |S|!(n-|S|-1)!/n! (v(S + i) - v(S))`` (Shapley 1953), from
    the full table of ``v``, evaluated in batches. Refuses games with more than ``max_players``
    players (``2^n`` evaluations); use ``kernel_shap``, ``permutation_shap`` or ``spex`` for those.

    Parameters
    ----------
    model
        A torch module or a numpy/torch callable (no gradients needed).
    baseline, background, groups
        The value function and the players, see :class:`featurelens.games.MaskedModel`.
    max_players
        The largest number of players evaluated exactly (default 20: about a million coalitions).
    batch_size
        Most model rows per forward pass.
    progress
        A tqdm bar over the samples of a batch; None (default): only when stderr is a terminal.
    """

    requires = Requires(gradients=False, max_players=20)

    def __init__(self, model, baseline=None, background=None, groups=None, max_players: int = 20, batch_size=None,
                 progress: bool | None = None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, batch_size=batch_size,
                         progress=progress)
        self.max_players = _check_int(max_players, "max_players", 1)

    def params(self):
        return {**super().params(), "max_players": self.max_players}

    def _player_values(self, game, rng):
        n = game.n_players
        if n > self.max_players:
            raise ValueError(
                f"exact_shapley evaluates all 2^n coalitions; this input has n_players = {n} > max_players = "
                f"{self.max_players} (2^{n} = {2**n} evaluations). Use 'kernel_shap' or 'permutation_shap' "
                "(sampling, with a budget), or 'spex' for many players; group features with groups=, or "
                "raise max_players."
            )
        table = game(all_masks(n))
        return _shapley_from_table(table, n), float(table[0]), float(table[-1]), 2**n


class _SampledShapley(_ShapleyExplainer):
    def __init__(self, model, baseline=None, background=None, groups=None, budget=None, seed=0, batch_size=None,
                 progress: bool | None = None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, batch_size=batch_size,
                         progress=progress)
        self.budget = None if budget is None else _check_int(budget, "budget", 1)
        self.seed = _check_seed(seed)

    def params(self):
        seed = self.seed if not isinstance(self.seed, np.random.Generator) else "generator"
        return {**super().params(), "budget": self.budget, "seed": seed}

    def _rng(self):
        # One generator per explain call: the same seed gives the same values on every call.
        return self.seed if isinstance(self.seed, np.random.Generator) else np.random.default_rng(self.seed)

    def _budget(self, n: int) -> int:
        budget = 2 * n + 2048 if self.budget is None else self.budget
        minimum = self.minimum_budget(n)
        if budget < minimum:
            raise ValueError(
                f"budget = {budget} game evaluations is too small for {self.name} with n_players = {n}; "
                f"it needs at least {minimum} ({self._minimum_reason(n)})"
            )
        return budget


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
        Int or numpy Generator; an int gives the same values on every call.
    """

    def minimum_budget(self, n: int) -> int:
        return min(n + 2, 2**n)

    def _minimum_reason(self, n):
        return "empty and full coalitions plus n others, for the n - 1 free values of the constrained fit"

    def _coalitions(self, n: int, budget: int, rng):
        """Masks ``(q, n)`` of the coalitions with ``0 < |S| < n`` and their kernel weights
        (normalised so that a size's weights sum to ``1 / (s (n - s))``)."""
        if budget >= 2**n:
            masks = all_masks(n)[1:-1]
            s = masks.sum(1)
            return masks, 1.0 / (s * (n - s) * np.array([math.comb(n, k) for k in range(n + 1)])[s])
        mass = {s: 1.0 / (s * (n - s)) for s in range(1, n)}
        remaining = budget - 2
        parts, weights = [], []
        incomplete = list(range(1, n))
        for p in range(1, n // 2 + 1):
            sizes = [p] if p == n - p else [p, n - p]
            count = sum(math.comb(n, s) for s in sizes)
            share = sum(mass[s] for s in sizes) / sum(mass[s] for s in incomplete)
            if count > remaining or count > remaining * share:
                break
            for s in sizes:
                combos = np.array(list(combinations(range(n), s)), dtype=np.int64)
                m = np.zeros((combos.shape[0], n), dtype=bool)
                np.put_along_axis(m, combos, True, axis=1)
                parts.append(m)
                weights.append(np.full(m.shape[0], mass[s] / math.comb(n, s)))
                incomplete.remove(s)
            remaining -= count
        n_pairs = remaining // 2
        if incomplete and n_pairs > 0:
            sizes = np.array(incomplete)
            prob = np.array([mass[s] for s in incomplete])
            total = prob.sum()
            # Distinct pairs {S, N - S} among the incomplete sizes: sampling stops when it has
            # found n_pairs of them (or all of them, or after a bounded number of draws).
            available = sum(math.comb(n, s) for s in incomplete) // 2
            target = min(n_pairs, available)
            # Rows are packed into byte strings, so that finding repeats is a 1-D sort.
            key = np.dtype((np.void, (n + 7) // 8))
            draws = np.zeros(0, dtype=key)
            batch = n_pairs
            while True:
                size = rng.choice(sizes, size=batch, p=prob / total)
                ranks = np.argsort(np.argsort(rng.random((batch, n)), axis=1), axis=1)
                first = ranks < size[:, None]
                # One representative per pair (the one without player 0), to count distinct pairs.
                rep = np.where(first[:, :1], ~first, first)
                draws = np.concatenate([draws, np.ascontiguousarray(np.packbits(rep, axis=1)).view(key)[:, 0]])
                uniq, first_seen = np.unique(draws, return_index=True)
                if uniq.shape[0] >= target or draws.shape[0] >= 64 * n_pairs:
                    break
                # Overshooting is harmless: the draws are cut at the target-th distinct pair below.
                batch = max(2 * (target - uniq.shape[0]), 64)
            if uniq.shape[0] >= target:
                # Keep the draws up to the one that found the target-th distinct pair.
                draws = draws[: np.sort(first_seen)[target - 1] + 1]
            # Merge repeated draws: each distinct pair is evaluated once, with its summed weight;
            # every draw carries total / n_draws of the kernel mass, half to S and half to N - S.
            uniq, counts = np.unique(draws, return_counts=True)
            uniq = np.unpackbits(uniq.view(np.uint8).reshape(uniq.shape[0], -1), axis=1, count=n).astype(bool)
            share = counts * (total / (2 * draws.shape[0]))
            parts.append(np.concatenate([uniq, ~uniq]))
            weights.append(np.concatenate([share, share]))
        if not parts:
            return np.zeros((0, n), dtype=bool), np.zeros(0)
        return np.concatenate(parts), np.concatenate(weights)

    def _player_values(self, game, rng):
        n = game.n_players
        budget = self._budget(n)
        masks, w = self._coalitions(n, budget, rng)
        ends = np.zeros((2, n), dtype=bool)
        ends[1] = True
        values = game(np.concatenate([ends, masks]))
        v0, vn = float(values[0]), float(values[1])
        delta = vn - v0
        if n == 1:
            return np.array([delta]), v0, vn, values.size
        # Eliminate phi_n = delta - sum_{i<n} phi_i; weighted least squares in the other n - 1.
        z = masks.astype(np.float64)
        a = z[:, :-1] - z[:, -1:]
        y = values[2:] - v0 - z[:, -1] * delta
        sw = np.sqrt(w)
        head = lstsq(a * sw[:, None], y * sw)
        phi = np.append(head, delta - head.sum())
        return phi, v0, vn, values.size


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
        Int or numpy Generator; an int gives the same values on every call.
    """

    def minimum_budget(self, n: int) -> int:
        return 2 if n == 1 else 2 * n

    def _minimum_reason(self, n):
        return "empty and full coalitions plus the n - 1 interior coalitions of each of 2 antithetic permutations"

    def _contributions(self, game, rng) -> tuple[np.ndarray, float, float, int]:
        """Marginal contributions along antithetic permutations: ``(deltas, v0, vn, evaluations)``
        with ``deltas[p, i] = v(Pre_p(i) + i) - v(Pre_p(i))``, shape ``(n_permutations, n)``."""
        n = game.n_players
        budget = self._budget(n)
        ends = game(np.stack([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)]))
        v0, vn = float(ends[0]), float(ends[1])
        if n == 1:
            return np.array([[vn - v0]]), v0, vn, 2
        n_perm = max(2, ((budget - 2) // (n - 1)) // 2 * 2)
        perms = antithetic_permutations(n_perm, n, rng)
        position = np.argsort(perms, axis=1)  # position[p, i]: where player i stands in perm p
        # Chain coalition k (k = 1..n-1) of permutation p holds the players at positions < k.
        k = np.arange(1, n)
        masks = position[:, None, :] < k[None, :, None]  # (P, n - 1, n)
        inner = game(masks.reshape(-1, n)).reshape(n_perm, n - 1)
        chain = np.concatenate([np.full((n_perm, 1), v0), inner, np.full((n_perm, 1), vn)], axis=1)
        gains = np.diff(chain, axis=1)  # gains[p, j]: contribution of the player at position j
        return np.take_along_axis(gains, position, axis=1), v0, vn, 2 + n_perm * (n - 1)

    def _player_values(self, game, rng):
        deltas, v0, vn, used = self._contributions(game, rng)
        return deltas.mean(axis=0), v0, vn, used

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
    model, baseline, background, groups, batch_size, progress, budget, seed
        As for ``permutation_shap``.
    statistic
        ``"min"`` (default) or ``"min_abs"``.
    """

    _STATISTICS = ("min", "min_abs")

    def __init__(self, model, baseline=None, background=None, groups=None, budget=None, seed=0, batch_size=None,
                 progress: bool | None = None, statistic: str = "min"):
        super().__init__(model, baseline=baseline, background=background, groups=groups, budget=budget, seed=seed,
                         batch_size=batch_size, progress=progress)
        if statistic not in self._STATISTICS:
            raise ValueError(f"statistic must be one of {self._STATISTICS}; got {statistic!r}")
        self.statistic = statistic

    def params(self):
        return {**super().params(), "statistic": self.statistic}

    def _player_values(self, game, rng):
        deltas, v0, vn, used = self._contributions(game, rng)
        values = deltas.min(axis=0) if self.statistic == "min" else np.abs(deltas).min(axis=0)
        return values, v0, vn, used, {"shapley": deltas.mean(axis=0), "max": deltas.max(axis=0)}
