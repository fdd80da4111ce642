"""LIME over the players of a game: a kernel-weighted linear surrogate on random coalitions.

Ribeiro, Singh & Guestrin, "Why Should I Trust You?: Explaining the Predictions of Any
Classifier", KDD 2016, arXiv 1602.04938; the sampling distribution of Captum's ``Lime``.

A binary vector ``z`` in ``{0, 1}^n`` keeps the players with ``z_i = 1``, and ``v(z)`` is the
game's value on that coalition. LIME draws coalitions (``sampler``), weighs each by the
exponential kernel

    pi(z) = exp(-d(z)^2 / (2 kernel_width^2))

of its distance ``d(z)`` from the all-kept vector, and fits the weighted linear surrogate
``v(z) ~ b + sum_i c_i z_i``:

* ``surrogate="ridge"``: ``min_{b, c} sum_s pi_s (v_s - b - c . z_s)^2 + alpha ||c||^2`` (the
  intercept is not penalised; scikit-learn's ``Ridge`` with ``sample_weight``), solved in float64
  by least squares (``alpha = 0`` gives the minimum-norm weighted least-squares fit);
* ``surrogate="lasso"``: scikit-learn's ``Lasso(alpha)`` fitted with ``sample_weight`` (Captum's
  default surrogate, ``SkLearnLasso(alpha=0.01)``).

The values are the coefficients ``c_i``, the base value the intercept ``b``. Distances
(``distance=``): ``"cosine"``, ``1 - cos(z, 1) = 1 - sqrt(|z| / n)``, or ``"euclidean"``,
``||z - 1|| = sqrt(n - |z|)``, in the interpretable space (the LIME paper and the ``lime``
package); with ``distance_space="input"`` they are taken between the game's input ``x`` and the
filled input instead (flattened; Captum's default similarity), which needs a
:class:`featurelens.games.MaskedModel` with a baseline fill.

One implementation: :func:`lime` on a game, and :class:`LimeSettings` (checked options, kernel
weights, the fit) which the batched ``lime`` explainer uses on the same per-row masks.
"""

from __future__ import annotations

import numpy as np

from .._random import numpy_rng
from .._validation import check_float, check_option
from .._budgets import check_budget
from .._coalitions import check_game
from ._common import ApproximationResult, approximator, model_calls, result

__all__ = ["DISTANCES", "DISTANCE_SPACES", "SAMPLERS", "SURROGATES", "LimeSettings", "bernoulli_masks",
           "check_lime_budget", "distances", "exponential_kernel", "fit_surrogate", "lime", "lime_masks"]

#: LIME's ways to draw coalitions of the players.
SAMPLERS = ("bernoulli", "lime_text")
SURROGATES = ("ridge", "lasso")
DISTANCES = ("cosine", "euclidean")
DISTANCE_SPACES = ("interpretable", "input")
#: The default budget of :func:`lime`: ``v(N)`` and 499 drawn coalitions.
DEFAULT_BUDGET = 500


def bernoulli_masks(n_samples: int, n_players: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_samples, n_players)`` bool coalitions, each player kept with probability 1/2 (one
    ``rng.random((n_samples, n_players)) < 0.5`` draw)."""
    return rng.random((n_samples, n_players)) < 0.5


def lime_masks(n_samples: int, n: int, sampler: str, rng: np.random.Generator) -> np.ndarray:
    """``(n_samples, n)`` coalitions: each player kept with probability 1/2 (``"bernoulli"``, the
    sampler of Captum's ``Lime``), or the ``lime`` package's text sampler (``"lime_text"``: the
    number of removed players uniform in ``1..n-1``, then which ones uniformly; Ribeiro et al.
    2016). With fewer than 2 players both are the Bernoulli draw."""
    if sampler == "bernoulli" or n < 2:
        return bernoulli_masks(n_samples, n, rng)
    removed = rng.integers(1, n, size=n_samples)
    order = np.argsort(rng.random((n_samples, n)), axis=1)
    # order is a random permutation per row: the players holding its values below `removed` are
    # a uniform random set of `removed` players.
    return order >= removed[:, None]


def distances(masks: np.ndarray, distance: str, x_flat=None, fill_flat=None, element_player=None) -> np.ndarray:
    """The distance of each coalition from the all-kept point, in the interpretable space or (with
    ``x_flat`` and ``fill_flat``) between ``x`` and the filled input (``element_player`` maps the
    input's elements to players; None: one element per player)."""
    if x_flat is None:
        z = masks.astype(np.float64)
        kept = z.sum(axis=1)
        n = masks.shape[1]
        if distance == "euclidean":
            return np.sqrt(n - kept)
        return 1.0 - np.sqrt(kept / n)  # cos(z, 1) = |z| / (sqrt|z| sqrt n); 0 for the empty coalition
    keep = masks if element_player is None else masks[:, element_player]
    perturbed = np.where(keep, x_flat[None, :], fill_flat[None, :])
    if distance == "euclidean":
        return np.linalg.norm(perturbed - x_flat[None, :], axis=1)
    norms = np.linalg.norm(perturbed, axis=1) * np.linalg.norm(x_flat)
    dots = perturbed @ x_flat
    cos = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return 1.0 - cos


def exponential_kernel(d: np.ndarray, kernel_width: float) -> np.ndarray:
    """``exp(-d^2 / (2 kernel_width^2))``."""
    return np.exp(-(np.asarray(d, dtype=np.float64) ** 2) / (2.0 * kernel_width**2))


def fit_surrogate(z: np.ndarray, y: np.ndarray, w: np.ndarray, surrogate: str, alpha: float):
    """The weighted linear surrogate ``y ~ b + z c``: ``(c (n,), b, weighted R^2)`` (see the module
    docstring for the objectives)."""
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if surrogate == "lasso":
        from sklearn.linear_model import Lasso

        model = Lasso(alpha=alpha).fit(z, y, sample_weight=w)
        coef, intercept = np.asarray(model.coef_, dtype=np.float64), float(model.intercept_)
    else:
        total = w.sum()
        z_mean = w @ z / total
        y_mean = float(w @ y / total)
        root = np.sqrt(w)[:, None]
        a = root * (z - z_mean)
        b = root[:, 0] * (y - y_mean)
        if alpha > 0:
            a = np.vstack([a, np.sqrt(alpha) * np.eye(z.shape[1])])
            b = np.concatenate([b, np.zeros(z.shape[1])])
        coef = np.linalg.lstsq(a, b, rcond=None)[0]
        intercept = y_mean - float(z_mean @ coef)
    resid = y - intercept - z @ coef
    y_bar = w @ y / w.sum()
    ss_tot = float(w @ (y - y_bar) ** 2)
    r2 = 1.0 - float(w @ resid**2) / ss_tot if ss_tot > 0 else 1.0
    return coef, intercept, r2


def check_lime_budget(budget, n: int | None = None) -> int:
    """LIME's ``budget`` (default :data:`DEFAULT_BUDGET` = 500): an int >= 3, refused before any
    work above ``featurelens._budgets.MAX_EVALUATIONS`` game evaluations, or when its
    ``(budget, n)`` coalitions (with ``n`` players, when known) would not fit in memory."""
    nbytes = None if n is None else (lambda v: 10 * v * n)  # the uniform draws (8 B) and the masks (1 B)
    return check_budget(DEFAULT_BUDGET if budget is None else budget, "budget", low=3, unit="game evaluations",
                        what="per game" if n is None else f"per game of {n} players", nbytes=nbytes)


class LimeSettings:
    """LIME's checked options and the steps that use them: the kernel width, the kernel weights of
    a set of coalitions and the surrogate fit. Bad options are refused here, naming them.

    Parameters
    ----------
    sampler
        ``"bernoulli"`` (default) or ``"lime_text"`` (``lime_masks``).
    surrogate
        ``"ridge"`` (default) or ``"lasso"``.
    alpha
        The penalty; None: 1.0 for ridge (the ``lime`` package's ``Ridge(alpha=1)``), 0.01 for lasso
        (Captum's default). Ridge takes ``alpha >= 0``, lasso ``alpha > 0``.
    distance
        ``"cosine"`` (default) or ``"euclidean"``.
    kernel_width
        > 0; None: 0.25 for cosine (the ``lime`` package's width 25 on 100 x the cosine distance)
        and ``0.75 sqrt(n_players)`` for euclidean (its tabular default).
    distance_space
        ``"interpretable"`` (default) or ``"input"``.
    """

    def __init__(self, sampler: str = "bernoulli", surrogate: str = "ridge", alpha: float | None = None,
                 distance: str = "cosine", kernel_width: float | None = None,
                 distance_space: str = "interpretable"):
        self.sampler = check_option(sampler, "sampler", SAMPLERS)
        self.surrogate = check_option(surrogate, "surrogate", SURROGATES)
        if alpha is None:
            alpha = 1.0 if self.surrogate == "ridge" else 0.01
        self.alpha = check_float(alpha, "alpha", low=0.0, low_inclusive=self.surrogate == "ridge")
        self.distance = check_option(distance, "distance", DISTANCES)
        self.kernel_width = check_float(kernel_width, "kernel_width", low=0.0, low_inclusive=False,
                                        allow_none=True)
        self.distance_space = check_option(distance_space, "distance_space", DISTANCE_SPACES)

    def width(self, n_players: int) -> float:
        """The kernel width used for ``n_players`` players."""
        if self.kernel_width is not None:
            return self.kernel_width
        return 0.25 if self.distance == "cosine" else 0.75 * float(np.sqrt(n_players))

    def masks(self, n_samples: int, n_players: int, rng: np.random.Generator) -> np.ndarray:
        """``n_samples`` coalitions of the sampler."""
        return lime_masks(n_samples, n_players, self.sampler, rng)

    def weights(self, masks: np.ndarray, x_flat=None, fill_flat=None, element_player=None) -> np.ndarray:
        """The kernel weight of each coalition (the input-space distance with ``x_flat`` and
        ``fill_flat``); a width that gives every coalition zero weight is a ValueError."""
        d = distances(masks, self.distance, x_flat, fill_flat, element_player)
        width = self.width(masks.shape[1])
        weights = exponential_kernel(d, width)
        if not weights.sum() > 0:
            raise ValueError(f"kernel_width={width} gives every sample zero weight (distances from "
                             f"{d.min():.3g} to {d.max():.3g}); pass a larger kernel_width=<float> (the default: 0.25 "
                             "for the cosine distance, 0.75 sqrt(n) for the euclidean)")
        return weights

    def fit(self, masks: np.ndarray, values: np.ndarray, weights: np.ndarray):
        """``(coefficients (n,), intercept, weighted R^2)`` of the surrogate."""
        return fit_surrogate(masks, values, weights, self.surrogate, self.alpha)

    def record(self, n_players: int) -> dict:
        return {"sampler": self.sampler, "surrogate": self.surrogate, "alpha": self.alpha, "distance": self.distance,
                "kernel_width": self.width(n_players), "distance_space": self.distance_space}


def input_space(game):
    """``(x_flat, fill_flat, element_player)`` of a :class:`~featurelens.games.MaskedModel` with a
    baseline fill, for ``distance_space="input"``; other games are refused."""
    x, fill = getattr(game, "x", None), getattr(game, "baseline", None)
    if x is None or fill is None:
        raise ValueError("distance_space='input' measures the distance between the game's input and the filled "
                         "input, which needs a featurelens.games.MaskedModel with a baseline fill; got "
                         f"{type(game).__name__}{' with a background' if getattr(game, 'background', None) is not None else ''}"
                         " (use distance_space='interpretable')")
    groups = getattr(game, "groups", None)
    return (x.reshape(-1).double().cpu().numpy(), fill.reshape(-1).double().cpu().numpy(),
            None if groups is None else groups.reshape(-1))


@approximator("lime")
def lime(game, budget: int | None = None, seed=0, sampler: str = "bernoulli", surrogate: str = "ridge",
         alpha: float | None = None, distance: str = "cosine", kernel_width: float | None = None,
         distance_space: str = "interpretable") -> ApproximationResult:
    """LIME of a game (see the module docstring for the formulas; Ribeiro, Singh & Guestrin 2016,
    arXiv 1602.04938).

    Parameters
    ----------
    game
        A :class:`featurelens.games.Game` over ``n`` players.
    budget
        Game evaluations: ``v(N)`` plus ``budget - 1`` drawn coalitions (default 500, at least 3),
        evaluated in one game call (the game cuts it into its chunks).
    seed
        None, an int or a numpy Generator (used as it is).
    sampler, surrogate, alpha, distance, kernel_width, distance_space
        See :class:`LimeSettings`.

    Returns
    -------
    ApproximationResult
        ``values`` the coefficients, ``base_value`` the intercept, ``full_value`` ``v(N)``;
        ``info``: ``n_samples`` (``budget - 1``), the settings (``kernel_width`` as used) and
        ``surrogate_r2``, the weighted in-sample R^2 of the surrogate.
    """
    n = check_game(game)
    settings = LimeSettings(sampler, surrogate, alpha, distance, kernel_width, distance_space)
    budget = check_lime_budget(budget, n)
    space = input_space(game) if settings.distance_space == "input" else ()
    before = model_calls(game)
    masks = settings.masks(budget - 1, n, numpy_rng(seed))
    weights = settings.weights(masks, *space)
    values = game(np.vstack([np.ones((1, n), dtype=bool), masks]))
    coef, intercept, r2 = settings.fit(masks, values[1:], weights)
    return result(game, coef, intercept, values[0], budget, before, budget, n_samples=budget - 1,
                  **settings.record(n), surrogate_r2=r2)
