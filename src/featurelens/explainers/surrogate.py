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

The explainer is :func:`featurelens.approximators.lime` as a
:class:`~featurelens.explainers.GameExplainer` (the sampler, the kernel and the fit live there, in
:class:`featurelens.approximators.LimeSettings`); with a baseline fill and no executor the model
rows of all the rows of a batch go through one batched pass, with the same per-row samples and fits.
"""

from __future__ import annotations

import numpy as np

from .._arrays import host, ops

from .. import approximators
from .._random import parse_seed
from .._budgets import check_budget
from ..approximators.lime import LimeSettings
from ._base import register
from .game_explainer import GameExplainer

__all__ = ["Lime"]


@register("lime")
class Lime(GameExplainer):
    """LIME: the coefficients of a kernel-weighted linear surrogate on random coalitions (see the
    module docstring for the formulas; Ribeiro, Singh & Guestrin 2016, arXiv 1602.04938).

    Parameters
    ----------
    model
        A torch module or any callable the Model adapter wraps (forward passes only).
    baseline, background
        The fill, as for ``kernel_shap`` (:class:`featurelens.games.MaskedModel`);
        images and signals default to ``baseline=0.0``, tabular inputs need one of the two.
    groups
        The interpretable features: None (every element), an int array shaped like one input, or
        for images ``"patches"`` (``"patches:N"``), ``"slic"`` (``"slic:N"``) or a callable
        ``image -> labels`` (per image), as for :class:`~featurelens.explainers.GameExplainer`.
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
        ``SeedSequence(root, spawn_key=(i,))`` (``featurelens.approximators.lime.bernoulli_masks``), so an int seed gives the
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
        self.settings = LimeSettings(surrogate=surrogate, alpha=alpha, distance=distance, kernel_width=kernel_width,
                                     distance_space=distance_space)
        self.surrogate, self.alpha = self.settings.surrogate, self.settings.alpha
        self.distance, self.kernel_width = self.settings.distance, self.settings.kernel_width
        self.distance_space = self.settings.distance_space
        if self.distance_space == "input" and background is not None:
            raise ValueError("distance_space='input' measures the distance to the filled input, which needs a "
                             "baseline fill; got background= (use distance_space='interpretable')")
        self.seed = parse_seed(seed)

    def params(self) -> dict:
        return {**super().params(), "n_samples": self.n_samples, "surrogate": self.surrogate, "alpha": self.alpha,
                "distance": self.distance, "kernel_width": self.kernel_width, "distance_space": self.distance_space,
                **self.seed_params()}

    approximator = staticmethod(approximators.lime)
    numpy_inputs = True  # a numpy model is fitted in numpy (the batched passes through ops())

    def width(self, n_players: int) -> float:
        """The kernel width used for ``n_players`` players."""
        return self.settings.width(n_players)

    def approximator_options(self, row: int) -> dict:
        # v(N) plus n_samples coalitions from row i's stream SeedSequence(root, spawn_key=(i,)).
        return {"budget": self.n_samples + 1, "seed": self.row_rng(row), "surrogate": self.surrogate,
                "alpha": self.alpha, "distance": self.distance, "kernel_width": self.kernel_width,
                "distance_space": self.distance_space}

    def row_record(self, result) -> dict:
        return {"surrogate_r2": result.info["surrogate_r2"]}

    def _batched(self, x, target):
        """LIME of every row with a baseline fill: the same per-row samples (row ``i``'s stream)
        and fits as :func:`featurelens.approximators.lime` on each row's game, but the model rows
        of all rows (``v(N)`` and the ``n_samples`` masked copies each) go through
        :meth:`Model.expanded_forward` in batched chunks, as Captum batches
        ``perturbations_per_eval`` rows."""
        self._check_fill(x)
        groups = self.batch_groups(x)
        n = x.shape[0]
        flat = x.reshape(n, -1)
        d = flat.shape[1]
        fill = self._resolve_baseline(x).reshape(n, -1)
        if groups is None:
            labels, n_players = np.arange(d), d
        else:
            labels = np.asarray(groups).reshape(-1).astype(np.int64)
            n_players = int(labels.max()) + 1
        masks = np.stack([self.settings.masks(self.n_samples, n_players, self.row_rng(i)) for i in range(n)])
        keep_all = np.concatenate([np.ones((n, 1, n_players), dtype=bool), masks], axis=1)  # (n, S + 1, G)
        xp = ops(x)  # numpy for a numpy model (numpy mode), torch otherwise
        keep_t = xp.asarray(keep_all, like=x)
        player = xp.asarray(labels, like=x)

        def make_rows(copy_idx, sample_idx):
            kept = keep_t[sample_idx, copy_idx][:, player]  # (m, d)
            return xp.where(kept, flat[sample_idx], fill[sample_idx]).reshape(-1, *x.shape[1:])

        v = self.model.expanded_forward(x, self.n_samples + 1, make_rows, target=target,
                                        transform=lambda out, c, s: xp.to_float64(out))
        v = host(v)  # (S + 1, n)
        maps, base, r2s = [], [], []
        for i in range(n):
            space = ()
            if self.distance_space == "input":
                space = (host(flat[i]).astype(np.float64), host(fill[i]).astype(np.float64),
                         None if groups is None else labels)
            weights = self.settings.weights(masks[i], *space)
            coef, intercept, r2 = self.settings.fit(masks[i], v[1:, i], weights)
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

    def plan(self, n_players: int, way_out: str):
        # v(N) and n_samples coalitions; the uniform draws (8 B) and masks (1 B) and the fit's design.
        return self.n_samples + 1, 18 * (self.n_samples + 1) * n_players

    def _attribute(self, x, target, outputs=None):
        # Per-image groups (slic, a callable) give the rows different players: one game per row.
        if self.background is None and self.executor is None and not isinstance(self.batch_groups(x), list):
            return self._batched(x, target)
        return super()._attribute(x, target, outputs)
