"""Faithfulness along orderings and random subsets: deletion and insertion curves, faithfulness
correlation, infidelity. The arguments, units and ``groups`` are those of
:mod:`featurelens.metrics.faithfulness`.
"""

from __future__ import annotations

import numpy as np

from ..._random import numpy_rng, parse_seed
from ..._validation import check_bool, check_float, check_int, check_option
from ..._budgets import check_budget
from .. import _perturb as P
from ..._arrays import host, ops

__all__ = ["deletion_curve", "insertion_curve", "faithfulness_correlation", "infidelity"]


def _curve(model, x, a, target, steps, baseline, groups, blur_sigma, insert: bool, output=None, executor=None):
    steps = check_int(steps, "steps", low=1)
    a_arr = P.attributions_array(a)
    m, xt, at, t, _ = P.prepare(model, x, a_arr, target, output=output, executor=executor)
    spatial = a_arr.shape != tuple(xt.shape)
    region_of, n_regions = P.regions(groups, tuple(xt.shape), spatial)
    base = P.baseline_tensor(baseline, xt, blur_sigma)
    xp = ops(xt)
    ranks = P.descending_ranks(P.region_scores(at, region_of, n_regions))
    rank_el = P.element_view(ranks, region_of, tuple(xt.shape))  # (n, *one input)
    # Regions removed (inserted) after step k: the round(k G / steps) most relevant ones
    # (round half to even, torch.round's rule and numpy's).
    removed_np = np.round(np.arange(steps + 1, dtype=np.float64) * n_regions / steps).astype(np.int64)
    removed = xp.asarray(removed_np, like=xt)

    def block(s):
        k = removed[s].reshape(-1, 1, *([1] * (xt.ndim - 1)))
        hit = rank_el[None] < k  # (k, n, ...): the regions already removed / inserted
        keep, fill = (base, xt) if insert else (xt, base)
        return xp.where(hit, fill[None], keep[None])

    curves = host(P.forward_copies(m, xt, t, steps + 1, block)).T
    fractions = removed_np / n_regions
    # The trapezoid rule by hand: np.trapezoid is numpy >= 2 only (np.trapz is deprecated there).
    auc = (0.5 * (curves[:, 1:] + curves[:, :-1]) * np.diff(fractions)[None, :]).sum(1)
    return curves, auc


def deletion_curve(model, x, a, target=None, *, steps=20, baseline=0.0, groups=None, blur_sigma=None, output=None,
                   executor=None):
    """Deletion (pixel-flipping) curve: the target output as the most relevant features are removed.

    ``curve[i, k] = f_t(x_i with its round(k G / steps) highest-attributed regions set to the
    baseline)``, k = 0..steps, G = number of regions (elements, pixels or ``groups``); regions are
    ranked by their summed attribution, ties broken by the smaller region index. The area is the
    trapezoid rule over the fraction removed, ``auc_i = int_0^1 curve_i(f) df``; a faithful map
    makes it drop fast (low deletion AUC). Bach et al. 2015 (PLoS ONE, pixel flipping); Samek et
    al. 2017 (IEEE TNNLS, arXiv:1509.06321; regions); Petsiuk et al. 2018 (RISE,
    arXiv:1806.07421; deletion / insertion).

    Args:
        baseline: the replacement value: a number, an array shaped like ``x`` or like one input,
            ``"blur"`` (a Gaussian blur of the image, sigma ``blur_sigma`` pixels, default
            max(1, min(h, w) / 8)), ``"mean"`` (each sample's mean) or ``"min"`` (each sample's
            minimum; Quantus's "black").
        groups: optional regions, see the module docstring.
        output: the units of f, "raw", "probability" or "log_odds" (see
            :class:`featurelens.models.Model`); None keeps the model's own ("raw" unless a
            ``Model(..., output=...)`` is given). The same for every model-calling metric.
        executor: None, or a :mod:`featurelens.parallel` executor that runs the forward passes of
            the perturbed copies on its workers (the copies are built here in the same chunks, so
            the values equal the serial ones). The same for every model-calling metric.

    Returns:
        ``(curves, auc)``: float64 arrays (n, steps + 1) and (n,). ``steps = G`` with ``"min"``
        reproduces Quantus's ``PixelFlipping`` curve (its entries 1..G) in the units chosen on both
        sides: ``output="probability"`` for Quantus's default ``softmax=True``, the default
        ``output=None`` (raw) for ``softmax=False``.
    """
    return _curve(model, x, a, target, steps, baseline, groups, blur_sigma, insert=False, output=output,
                  executor=executor)


def insertion_curve(model, x, a, target=None, *, steps=20, baseline=0.0, groups=None, blur_sigma=None, output=None,
                    executor=None):
    """Insertion curve: start from the baseline and insert the most relevant regions first.

    ``curve[i, k] = f_t(baseline_i with the round(k G / steps) highest-attributed regions of x_i
    put back)``, k = 0..steps (``curve[:, 0] = f_t(baseline)``, ``curve[:, -1] = f_t(x)``); area
    by the trapezoid rule over the fraction inserted in [0, 1]; higher is better. Petsiuk et al.
    2018 (RISE, arXiv:1806.07421). Arguments and returns as :func:`deletion_curve`.
    """
    return _curve(model, x, a, target, steps, baseline, groups, blur_sigma, insert=True, output=output,
                  executor=executor)


#: faithfulness_correlation's ``similarity``: the row-wise correlations of the attribution sums and drops.
_CORRELATIONS = {"pearson": P.row_pearson, "spearman": P.row_spearman}


def faithfulness_correlation(
    model,
    x,
    a,
    target=None,
    *,
    n_subsets=100,
    subset_size=None,
    seed=0,
    baseline=0.0,
    groups=None,
    blur_sigma=None,
    output=None,
    executor=None,
    similarity="pearson",
):
    """Faithfulness correlation (Bhatt, Weller & Moura 2020, IJCAI, arXiv:2005.00631).

    For runs j = 1..n_subsets draw a uniformly random subset S_j of ``subset_size`` regions per
    sample, set it to the baseline, and record ``sum_{e in S_j} a_e`` and
    ``f_t(x) - f_t(x with S_j removed)``; the score is the correlation of the two over the runs,
    per sample (in [-1, 1], higher is better; NaN when either side is constant): Pearson's (the
    paper's, default) or, with ``similarity="spearman"``, Spearman's rank correlation (average
    ranks for ties, as ``scipy.stats.spearmanr``), which asks only that larger attribution sums
    go with larger drops. Quantus's ``FaithfulnessCorrelation`` is this with elements as regions
    and ``baseline="min"`` ("black"); its ``similarity_func=correlation_spearman`` is
    ``similarity="spearman"``.

    Args:
        subset_size: regions per subset; None means a quarter of the regions (at least one).
        seed: None, an int or a ``numpy.random.Generator``; the subsets are
            ``featurelens.metrics._perturb.subset_draws`` of ``seed`` (a Generator built from
            an int gives the same subsets as the int; a Generator is advanced by the call).
        baseline, groups, blur_sigma, output, executor: see :func:`deletion_curve`.
        similarity: ``"pearson"`` (default) or ``"spearman"``.

    Returns:
        float64 array (n,).
    """
    similarity = check_option(similarity, "similarity", tuple(_CORRELATIONS))
    # A correlation needs two runs; the bound (MAX_EVALUATIONS model evaluations) is checked per input
    # here, before any work, and for the whole batch once its size is known.
    n_subsets = check_budget(n_subsets, "n_subsets", low=2, unit="model evaluations", what="per input")
    seed = parse_seed(seed)
    a_arr = P.attributions_array(a)
    m, xt, at, t, f0 = P.prepare(model, x, a_arr, target, output=output, executor=executor)
    spatial = a_arr.shape != tuple(xt.shape)
    region_of, n_regions = P.regions(groups, tuple(xt.shape), spatial)
    if subset_size is None:
        subset_size = max(1, n_regions // 4)
    subset_size = check_int(subset_size, f"subset_size (regions per subset, of {n_regions})", low=1, high=n_regions)
    base = P.baseline_tensor(baseline, xt, blur_sigma)
    scores = P.region_scores(at, region_of, n_regions)  # (n, G) float64
    n = xt.shape[0]
    check_budget(n_subsets, "n_subsets", low=2, per=n, unit="model evaluations", what=f"for {n} inputs",
                 nbytes=lambda v: 32 * v * n, hint="lower n_subsets, or pass fewer inputs per call")
    draws = P.subset_draws(numpy_rng(seed), n, n_regions, n_subsets, subset_size)
    xp = ops(xt)
    sums = xp.empty((n_subsets, n), like=xt, dtype=xp.float64)

    def block(s):
        masks = xp.asarray(np.stack([next(draws) for _ in range(s.stop - s.start)]), like=xt)
        sums[s] = (masks * scores[None]).sum(-1)
        hit = P.element_view(masks, region_of, tuple(xt.shape))
        return xp.where(hit, base[None], xt[None])

    outs = P.forward_copies(m, xt, t, n_subsets, block)
    drops = f0[None] - outs
    return _CORRELATIONS[similarity](sums.T, drops.T)


def infidelity(
    model,
    x,
    a,
    target=None,
    *,
    n_perturbations=50,
    noise_std=0.1,
    seed=0,
    relative=True,
    normalise=False,
    output=None,
    executor=None,
):
    """Infidelity (Yeh, Hsieh, Suggala, Inouye & Ravikumar 2019, NeurIPS, arXiv:1901.09392).

    ``INFD(a, f, x) = E_I[(I . a - (f_t(x) - f_t(x - I)))^2]`` estimated by the mean over
    ``n_perturbations`` draws of Gaussian noise ``I ~ N(0, sigma^2 Id)`` per sample, with
    ``sigma = noise_std * (max x_i - min x_i)`` (``relative=True``, default; a constant sample,
    whose range is 0, gets the unit range 1) or ``sigma = noise_std`` (``relative=False``). Lower
    is better. ``normalise=True`` first rescales the attribution by the optimal
    ``beta = E[(I.a) Delta] / E[(I.a)^2]`` (Yeh et al.'s scale-free variant; Captum's
    ``normalize=True``), i.e. ``E[(beta I.a - Delta)^2]``. The perturbations are
    ``featurelens.metrics._perturb.gaussian_draws`` of ``seed`` (None, an int or a numpy
    Generator; one built from an int gives the same draws as the int). This is the estimator of
    Captum's ``infidelity``; Quantus's ``Infidelity`` instead removes square patches one after the
    other (no noise), a different quantity. A map with one channel on a c-channel input (Grad-CAM's
    ``(n, 1, h, w)``) is broadcast over the channels, so ``I . a`` counts each pixel's attribution
    once per channel (as Captum does). ``output``, ``executor``: see :func:`deletion_curve`.

    Returns:
        float64 array (n,).
    """
    n_perturbations = check_budget(n_perturbations, "n_perturbations", unit="model evaluations", what="per input")
    noise_std = check_float(noise_std, "noise_std", low=0.0, low_inclusive=False)
    seed = parse_seed(seed)
    relative = check_bool(relative, "relative")
    normalise = check_bool(normalise, "normalise")
    m, xt, at, t, f0 = P.prepare(model, x, a, target, output=output, executor=executor)
    xp = ops(xt)
    scale = noise_std * (P.sample_scale(xt) if relative else xp.ones(xt.shape[0], like=xt, dtype=xp.float32))
    n = xt.shape[0]
    check_budget(n_perturbations, "n_perturbations", per=n, unit="model evaluations", what=f"for {n} inputs",
                 hint="lower n_perturbations, or pass fewer inputs per call")
    draws = P.gaussian_draws(numpy_rng(seed), n_perturbations, tuple(xt.shape), host(xp.to_float64(scale)))
    dots = xp.empty((n_perturbations, n), like=xt, dtype=xp.float64)
    a64 = xp.to_float64(at)

    def block(s):
        noise = xp.asarray(np.stack([next(draws) for _ in range(s.stop - s.start)]), like=xt)
        dots[s] = (noise * a64[None]).reshape(noise.shape[0], n, -1).sum(-1)
        return xt[None] - xp.astype(noise, xt.dtype)

    outs = P.forward_copies(m, xt, t, n_perturbations, block)
    drops = f0[None] - outs  # (N, n)
    if normalise:
        den = (dots * dots).mean(0)
        positive = den > 0
        ones, zeros = xp.ones(tuple(den.shape), like=den), xp.zeros(tuple(den.shape), like=den)
        beta = xp.where(positive, (dots * drops).mean(0) / xp.where(positive, den, ones), zeros)
        dots = dots * beta
    return host(((dots - drops) ** 2).mean(0))


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def _curve_auc(key, fn):
    def score(ctx):
        c, auc = fn(ctx.model, ctx.x, ctx.a, target=ctx.target, steps=ctx.steps, baseline=ctx.baseline,
                    executor=ctx.executor)
        ctx.curves[key] = np.asarray(c, dtype=np.float64).reshape(len(ctx.x), -1).mean(0)
        return auc

    return score


def _score_faithfulness_correlation(ctx):
    # The audit's subsets: subset_size, else 10 % of the elements (at least one).
    d = int(np.prod(ctx.x.shape[1:]))
    subset = ctx.subset_size or max(1, int(round(0.1 * d)))
    return faithfulness_correlation(ctx.model, ctx.x, ctx.a, target=ctx.target, n_subsets=ctx.n_subsets,
                                    subset_size=min(subset, d), baseline=ctx.baseline, seed=ctx.seed,
                                    executor=ctx.executor)


from .._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "deletion", deletion_curve, "faithfulness", -1,
        "the target output as the most relevant features are replaced by the baseline, "
        "averaged over the curve (Petsiuk et al. 2018); lower is better",
        requires={"model"}, quantus="PixelFlipping", score=_curve_auc("deletion", deletion_curve),
        column="deletion_auc", label="deletion AUC", audit_default=True),
    MetricSpec(
        "insertion", insertion_curve, "faithfulness", +1,
        "the target output as the most relevant features are put back into the baseline "
        "(Petsiuk et al. 2018); higher is better; with deletion, ins - del ranks the methods",
        requires={"model"}, score=_curve_auc("insertion", insertion_curve),
        column="insertion_auc", label="insertion AUC", audit_default=True),
    MetricSpec(
        "faithfulness_correlation", faithfulness_correlation, "faithfulness", +1,
        "Pearson correlation of the attribution summed over random subsets with the output drop when "
        "they are removed (Bhatt et al. 2020); higher is better",
        requires={"model"}, quantus="FaithfulnessCorrelation", score=_score_faithfulness_correlation,
        column="faithfulness_correlation", label="faithf. corr.", audit_default=True),
    MetricSpec(
        "infidelity", infidelity, "faithfulness", -1,
        "mean squared gap between the attribution's dot product with Gaussian input noise and the "
        "output change it causes (Yeh et al. 2019); lower is better",
        requires={"model"},
        score=lambda ctx: infidelity(ctx.model, ctx.x, ctx.a, target=ctx.target, n_perturbations=ctx.n_subsets,
                                     noise_std=ctx.radius, seed=ctx.seed, executor=ctx.executor)),
)
