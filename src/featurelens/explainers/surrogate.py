"""LIME: a local linear surrogate fitted to the model on random coalitions of the players.

Registered name: ``lime`` (Ribeiro, Singh & Guestrin, "Why Should I Trust You?: Explaining the
Predictions of Any Classifier", KDD 2016, arXiv 1602.04938; the sampling distribution of Captum's
``Lime``).

For one input ``x`` the interpretable features are the players (every input element, or the
labels of ``groups=``); a binary vector ``z`` in ``{0, 1}^n`` keeps the players with ``z_g = 1``
and fills the others, the value function of :class:`featurelens.games.MaskedModel`
(``v(z) = f_t(x_z, fill)``). LIME draws ``n_samples`` vectors with each player kept independently
with probability 1/2 (Captum's default ``perturb_func``), weighs each by the exponential kernel

    pi(z) = exp(-d(z)^2 / (2 kernel_width^2))

and fits the weighted linear surrogate ``v(z) ~ b + sum_g c_g z_g``:

* ``surrogate="ridge"``: ``min_{b, c} sum_s pi_s (v_s - b - c . z_s)^2 + alpha ||c||^2`` (the
  intercept is not penalised; scikit-learn's ``Ridge`` with ``sample_weight``), solved in
  float64 by least squares (``alpha = 0`` gives the minimum-norm weighted least-squares fit);
* ``surrogate="lasso"``: scikit-learn's ``Lasso(alpha)`` fitted with ``sample_weight`` (Captum's
  default surrogate, ``SkLearnLasso(alpha=0.01)``).

The values are the coefficients ``c_g`` (copied to every element of a group, Captum's
``return_input_shape=True`` layout); the intercept ``b`` is the base value. Distances
``d(z)`` (``distance=``): ``"cosine"``, ``1 - cos(z, 1)`` = ``1 - sqrt(|z| / n)``, or
``"euclidean"``, ``||z - 1|| = sqrt(n - |z|)``, both between the sample and the all-kept vector
in the interpretable space (the LIME paper and the ``lime`` package); with
``distance_space="input"`` they are taken between ``x`` and the filled input instead (flattened),
which is what Captum's default similarity function does.
"""

from __future__ import annotations

import numpy as np
import torch

from .._random import parse_seed
from .._validation import check_budget, check_float, check_int, check_option, resolve_baseline
from ..games import MaskedModel
from ._base import register
from .shapley import _ShapleyExplainer

__all__ = ["Lime", "bernoulli_masks", "exponential_kernel", "fit_surrogate"]


def bernoulli_masks(n_samples: int, n_players: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_samples, n_players)`` bool coalitions, each player kept with probability 1/2 (one
    ``rng.random((n_samples, n_players)) < 0.5`` draw)."""
    return rng.random((n_samples, n_players)) < 0.5


def _distances(masks: np.ndarray, distance: str, x_flat=None, fill_flat=None, element_player=None) -> np.ndarray:
    """The distance of each sample from the all-kept point, in the interpretable space or (with
    ``x_flat`` and ``fill_flat``) between ``x`` and the filled input."""
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


@register("lime")
class Lime(_ShapleyExplainer):
    """LIME: the coefficients of a kernel-weighted linear surrogate on random coalitions (see the
    module docstring for the formulas; Ribeiro, Singh & Guestrin 2016, arXiv 1602.04938).

    Parameters
    ----------
    model
        A torch module or any callable the Model adapter wraps (forward passes only).
    baseline, background, groups
        The fill and the players, as for ``kernel_shap`` (:class:`featurelens.games.MaskedModel`);
        images and signals default to ``baseline=0.0``, tabular inputs need one of the two.
    n_samples
        Coalitions drawn per row (model rows per row: ``n_samples``, times ``B`` with ``B``
        background rows); default 500. At least 2.
    surrogate
        ``"ridge"`` (default) or ``"lasso"``.
    alpha
        The penalty; None: 1.0 for ridge (the ``lime`` package's ``Ridge(alpha=1)``), 0.01 for
        lasso (Captum's default). Ridge takes ``alpha >= 0`` (0: plain weighted least squares,
        which recovers a model linear in the kept players exactly), lasso ``alpha > 0``.
    distance
        ``"cosine"`` (default) or ``"euclidean"``.
    kernel_width
        Width of the exponential kernel, > 0; None: 0.25 for cosine (the ``lime`` package's width
        25 on 100 x the cosine distance) and ``0.75 sqrt(n_players)`` for euclidean (its tabular
        default). Captum's default is 1.0.
    distance_space
        ``"interpretable"`` (default: between the binary sample and the all-ones vector) or
        ``"input"`` (between ``x`` and the filled input, Captum's default similarity; needs a
        baseline fill, not a background).
    seed
        Int, numpy Generator or None. Row ``i`` of a batch draws its coalitions from its own stream
        ``SeedSequence(root, spawn_key=(i,))`` (:func:`bernoulli_masks`), so an int seed gives the
        same values on every call, alone, in row splits or in parallel.
    batch_size, progress, executor
        As for ``kernel_shap``.

    The explanation's ``base_values`` are the intercepts; ``params["surrogate_r2"]`` holds each
    row's weighted in-sample R^2 of the surrogate and ``params["full_values"]`` ``f_t(x)``.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    accepts = frozenset({"baseline", "groups", "progress", "seed", "executor"})
    row_params = frozenset({"base_values", "full_values", "surrogate_r2"})

    def __init__(self, model, baseline=None, background=None, groups=None, n_samples: int = 500,
                 surrogate: str = "ridge", alpha: float | None = None, distance: str = "cosine",
                 kernel_width: float | None = None, distance_space: str = "interpretable", seed=0,
                 batch_size: int | None = None, progress: bool | None = None, executor=None):
        super().__init__(model, baseline=baseline, background=background, groups=groups, batch_size=batch_size,
                         progress=progress, executor=executor)
        self.n_samples = check_budget(n_samples, "n_samples", low=2, unit="model evaluations", what="per input")
        self.surrogate = check_option(surrogate, "surrogate", ("ridge", "lasso"))
        if alpha is None:
            alpha = 1.0 if self.surrogate == "ridge" else 0.01
        self.alpha = check_float(alpha, "alpha", low=0.0, low_inclusive=self.surrogate == "ridge")
        self.distance = check_option(distance, "distance", ("cosine", "euclidean"))
        self.kernel_width = check_float(kernel_width, "kernel_width", low=0.0, low_inclusive=False,
                                        allow_none=True)
        self.distance_space = check_option(distance_space, "distance_space", ("interpretable", "input"))
        if self.distance_space == "input" and background is not None:
            raise ValueError("distance_space='input' measures the distance to the filled input, which needs a "
                             "baseline fill; got background= (use distance_space='interpretable')")
        self.seed = parse_seed(seed)

    def params(self) -> dict:
        return {**super().params(), "n_samples": self.n_samples, "surrogate": self.surrogate, "alpha": self.alpha,
                "distance": self.distance, "kernel_width": self.kernel_width, "distance_space": self.distance_space,
                **self.seed_params()}

    def width(self, n_players: int) -> float:
        """The kernel width used for ``n_players`` players."""
        if self.kernel_width is not None:
            return self.kernel_width
        return 0.25 if self.distance == "cosine" else 0.75 * float(np.sqrt(n_players))

    def _rng(self, i: int):
        return self.row_rng(i)

    def _batched(self, x, target):
        """LIME of every row with a baseline fill: the same per-row samples (row ``i``'s stream)
        and fits as the one-game-per-row path, but the model rows of all rows (``v(N)`` and the
        ``n_samples`` masked copies each) go through :meth:`Model.expanded_forward` in batched
        chunks, as Captum batches ``perturbations_per_eval`` rows."""
        self._check_fill(x)
        self._check_groups_shape(x)
        n = x.shape[0]
        flat = x.reshape(n, -1)
        d = flat.shape[1]
        fill = resolve_baseline(0.0 if self.baseline is None else self.baseline, x, "baseline").reshape(n, -1)
        if self.groups is None:
            labels, n_players = np.arange(d), d
        else:
            labels = np.asarray(self.groups).reshape(-1).astype(np.int64)
            n_players = int(labels.max()) + 1
        masks = np.stack([bernoulli_masks(self.n_samples, n_players, self._rng(i)) for i in range(n)])
        keep_all = np.concatenate([np.ones((n, 1, n_players), dtype=bool), masks], axis=1)  # (n, S + 1, G)
        keep_t = torch.as_tensor(keep_all, device=x.device)
        player = torch.as_tensor(labels, device=x.device)

        def make_rows(copy_idx, sample_idx):
            kept = keep_t[sample_idx, copy_idx][:, player]  # (m, d)
            return torch.where(kept, flat[sample_idx], fill[sample_idx]).reshape(-1, *x.shape[1:])

        v = self.model.expanded_forward(x, self.n_samples + 1, make_rows, target=target,
                                        transform=lambda out, c, s: out.double())
        v = v.detach().cpu().numpy()  # (S + 1, n)
        width = self.width(n_players)
        maps, base, r2s = [], [], []
        for i in range(n):
            if self.distance_space == "input":
                dist = _distances(masks[i], self.distance, flat[i].double().cpu().numpy(),
                                  fill[i].double().cpu().numpy(), None if self.groups is None else labels)
            else:
                dist = _distances(masks[i], self.distance)
            weights = exponential_kernel(dist, width)
            if not weights.sum() > 0:
                raise ValueError(f"kernel_width={width} gives every sample zero weight (distances from "
                                 f"{dist.min():.3g} to {dist.max():.3g}); use a larger kernel_width")
            coef, intercept, r2 = fit_surrogate(masks[i], v[1:, i], weights, self.surrogate, self.alpha)
            maps.append(np.asarray(coef)[labels])
            base.append(float(intercept))
            r2s.append(r2)
        values = np.stack(maps).reshape(x.shape)
        extra = {
            "n_players": int(n_players),
            "base_values": base,
            "full_values": [float(f) for f in v[0]],
            "game_evaluations": [self.n_samples + 1] * n,
            "surrogate_r2": r2s,
        }
        return values, extra

    def _player_values(self, game: MaskedModel, rng):
        n = game.n_players
        masks = bernoulli_masks(self.n_samples, n, rng)
        if self.distance_space == "input":
            x_flat = game.x.reshape(-1).double().cpu().numpy()
            fill_flat = game.baseline.reshape(-1).double().cpu().numpy()
            element_player = None if game.groups is None else game.groups.reshape(-1)
            d = _distances(masks, self.distance, x_flat, fill_flat, element_player)
        else:
            d = _distances(masks, self.distance)
        weights = exponential_kernel(d, self.width(n))
        if not weights.sum() > 0:
            raise ValueError(f"kernel_width={self.width(n)} gives every sample zero weight (distances from "
                             f"{d.min():.3g} to {d.max():.3g}); use a larger kernel_width")
        values = game(np.vstack([np.ones((1, n), dtype=bool), masks]))
        coef, intercept, r2 = fit_surrogate(masks, values[1:], weights, self.surrogate, self.alpha)
        self._r2.append(r2)
        return coef, intercept, float(values[0]), self.n_samples + 1

    def _attribute(self, x, target, outputs=None):
        if self.background is None and self.executor is None:
            return self._batched(x, target)
        self._r2 = []
        try:
            values, extra = super()._attribute(x, target, outputs)
            extra["surrogate_r2"] = list(self._r2)
        finally:
            self._r2 = []
        return values, extra
