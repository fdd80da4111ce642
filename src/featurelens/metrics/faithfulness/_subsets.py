"""Faithfulness by subsets of features: Sensitivity-n, Monotonicity, Monotonicity correlation and
Sufficiency.

Arguments follow :mod:`featurelens.metrics.faithfulness`: a model, a batch ``x`` (samples first),
attributions ``a`` shaped like ``x`` (or, for images, like the spatial map, spread over the
channels), ``target`` (None = the predicted class, an int, or one int per sample), ``groups``
(regions perturbed whole and scored by their summed attribution), ``output`` (the units of
``f_t``) and ``executor``. Every perturbed copy of the batch goes through
:func:`featurelens.metrics._perturb.forward_copies` (chunks bounded by the Model's batch size).
Scores are float64 numpy arrays with one entry per sample (Sensitivity-n: one per sample and
subset size).

Where Quantus 0.6 computes something else, the docstring says so; ``tests/metrics/test_subsets.py``
shows it on Quantus itself.

Units: ``output=None`` scores the raw outputs (logits). Quantus 0.6's ``SensitivityN``,
``Monotonicity`` and ``MonotonicityCorrelation`` apply a softmax by default (``softmax=True``):
pass ``output="probability"`` to score in Quantus's default units (the parity tests call Quantus
with ``softmax=False`` against the raw default). Sufficiency uses only the arg-max.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from ..._random import numpy_rng, parse_seed
from ..._validation import check_bool, check_float, check_int, check_option
from ..._budgets import check_budget
from ...models import Model
from .. import _perturb as P
from ..._arrays import host, ops

__all__ = ["monotonicity", "monotonicity_correlation", "sensitivity_n", "sufficiency"]


def _scored_regions(model, x, a, target, groups, output, executor, use_abs: bool):
    """Shared set-up: (Model, x, target, f_t(x), region_of, G, region scores (n, G) float64)."""
    a_arr = P.attributions_array(a)
    m, xt, at, t, f0 = P.prepare(model, x, a_arr, target, output=output, executor=executor)
    region_of, n_regions = P.regions(groups, tuple(xt.shape), a_arr.shape != tuple(xt.shape))
    scores = P.region_scores(ops(at).abs(at) if use_abs else at, region_of, n_regions)
    return m, xt, t, f0, region_of, n_regions, scores


def _subset_sizes(ns, n_regions: int) -> tuple[list[int], bool]:
    """The subset sizes as a list, and whether a single int was given."""
    if ns is None:
        top = max(1, int(0.8 * n_regions))
        return sorted({int(v) for v in np.round(np.geomspace(1, top, 10))}), False
    if isinstance(ns, (int, np.integer)) and not isinstance(ns, (bool, np.bool_)):
        return [check_int(ns, f"ns (regions per subset, of {n_regions})", low=1, high=n_regions)], True
    try:
        values = list(ns)
    except TypeError:
        raise TypeError(f"ns must be None, an int or a sequence of ints; got {ns!r} ({type(ns).__name__})") from None
    if not values:
        raise ValueError("ns must hold at least one subset size; got an empty sequence")
    return [check_int(v, f"ns[{k}] (regions per subset, of {n_regions})", low=1, high=n_regions)
            for k, v in enumerate(values)], False


def sensitivity_n(
    model,
    x,
    a,
    target=None,
    *,
    ns=None,
    n_subsets=100,
    seed=0,
    baseline=0.0,
    groups=None,
    blur_sigma=None,
    output=None,
    executor=None,
):
    """Sensitivity-n (Ancona, Ceolini, Oztireli & Gross 2018, ICLR, arXiv:1711.06104).

    An attribution satisfies Sensitivity-n when, for every subset S of n features,
    ``sum_{e in S} a_e = f_t(x) - f_t(x with S removed)``. For each size n in ``ns`` draw
    ``n_subsets`` uniformly random subsets S_j of n regions per sample, set them to the baseline,
    and score the Pearson correlation over j of ``sum_{e in S_j} a_e`` and
    ``f_t(x) - f_t(x_{S_j removed})``: one value per sample and n (in [-1, 1], higher is better;
    NaN when either side is constant). On a linear model with a zero baseline, input x gradient
    gives exactly 1 for every n.

    Quantus 0.6's ``SensitivityN`` computes another quantity: it removes features cumulatively in
    decreasing attribution order, ``features_in_step`` at a time, pairs the cumulative output drop
    after step k with the attribution of step k alone, and correlates over the samples of its
    first batch, returning one value per step instead of one per sample. We follow the paper; fed
    the same subsets (one sample's subsets as a Quantus batch, see the tests), Quantus's Pearson
    equals ours.

    Args:
        ns: the subset sizes (regions per subset): an int (returns (n,)), a sequence of ints
            (returns (n, len(ns))) or None: ``sorted(set(round(geomspace(1, max(1, int(0.8 G)),
            10))))``, G = number of regions (Ancona et al. vary n up to about 80 % of the
            features).
        n_subsets: random subsets per size and sample (>= 2, a correlation needs two). Refused
            before any work when ``n_subsets`` (per input), or ``n_subsets * n * len(ns)`` for the
            batch, exceeds ``featurelens._budgets.MAX_EVALUATIONS`` (10^8) model evaluations.
        seed: None, an int or a numpy Generator; the subsets are
            ``featurelens.metrics._perturb.subset_draws`` of one ``numpy_rng(seed)`` stream,
            size after size in the order of ``ns``.
        baseline, groups, blur_sigma, output, executor: see
            :func:`featurelens.metrics.deletion_curve`.

    Returns:
        float64 array (n,) for an int ``ns``, else (n, len(ns)).
    """
    n_subsets = check_budget(n_subsets, "n_subsets", low=2, unit="model evaluations", what="per input and size")
    seed = parse_seed(seed)
    m, xt, t, f0, region_of, n_regions, scores = _scored_regions(model, x, a, target, groups, output, executor, False)
    sizes, single = _subset_sizes(ns, n_regions)
    base = P.baseline_tensor(baseline, xt, blur_sigma)
    n = xt.shape[0]
    check_budget(n_subsets, "n_subsets", low=2, per=n * len(sizes), unit="model evaluations",
                 what=f"for {n} inputs and {len(sizes)} subset sizes", nbytes=lambda v: 32 * v * n * len(sizes),
                 hint="lower n_subsets, pass fewer subset sizes (ns=) or fewer inputs per call")
    rng = numpy_rng(seed)
    draws = itertools.chain.from_iterable(P.subset_draws(rng, n, n_regions, n_subsets, s) for s in sizes)
    total = len(sizes) * n_subsets
    xp = ops(xt)
    sums = xp.empty((total, n), like=xt, dtype=xp.float64)

    def block(s):
        masks = xp.asarray(np.stack([next(draws) for _ in range(s.stop - s.start)]), like=xt)
        sums[s] = (masks * scores[None]).sum(-1)
        hit = P.element_view(masks, region_of, tuple(xt.shape))
        return xp.where(hit, base[None], xt[None])

    drops = f0[None] - P.forward_copies(m, xt, t, total, block)  # (total, n)
    # (sizes, subsets, n) -> rows (n * sizes) of n_subsets values each
    u = host(sums).reshape(len(sizes), n_subsets, n).transpose(2, 0, 1).reshape(-1, n_subsets)
    v = host(drops).reshape(len(sizes), n_subsets, n).transpose(2, 0, 1).reshape(-1, n_subsets)
    out = P.row_pearson(u, v).reshape(n, len(sizes))
    return out[:, 0] if single else out


def monotonicity(
    model,
    x,
    a,
    target=None,
    *,
    steps=None,
    baseline=0.0,
    abs=True,
    groups=None,
    blur_sigma=None,
    output=None,
    executor=None,
    return_curves=False,
):
    """Monotonicity (Arya et al. 2019, "One explanation does not fit all", arXiv:1909.03012).

    Start from the baseline and insert the regions of ``x`` in increasing order of relevance (least
    relevant first); the map is monotonic when every insertion raises the target output:
    ``c_k = f_t(baseline with the round(k G / steps) least relevant regions of x put back)``,
    k = 0..steps, and ``score = 1.0 if c_{k+1} - c_k >= 0 for all k = 1..steps-1 else 0.0`` (as in
    AIX360 and Quantus, the curve is checked from the first insertion on, not from the bare
    baseline). Relevance is the summed ``|a|`` of a region (``abs=True``, Quantus's default) or
    the signed sum; ties go to the smaller region index.

    Quantus 0.6's ``Monotonicity`` never inserts a feature: it "perturbs" its baseline image with
    the baseline value again at each step, so its curve is constant and every sample scores True,
    whatever the map. We insert the features of ``x`` as the paper does; Quantus given a perturb
    function that inserts them computes our curve (see the tests).

    Args:
        steps: number of insertion steps, 1..G; None = G (one region at a time, as the paper).
        abs: rank regions by the sum of ``|a|`` (default) or of ``a``.
        return_curves: also return the curves ``c`` (n, steps + 1), ``c[:, 0] = f_t(baseline)``.
        baseline, groups, blur_sigma, output, executor: see
            :func:`featurelens.metrics.deletion_curve`.

    Returns:
        float64 array (n,) of 1.0 (monotonic) / 0.0, or ``(scores, curves)``.
    """
    use_abs = check_bool(abs, "abs")
    return_curves = check_bool(return_curves, "return_curves")
    m, xt, t, _, region_of, n_regions, scores = _scored_regions(model, x, a, target, groups, output, executor, use_abs)
    steps = n_regions if steps is None else check_int(steps, f"steps (of {n_regions} regions)", low=1, high=n_regions)
    base = P.baseline_tensor(baseline, xt, blur_sigma)
    xp = ops(xt)
    ranks = P.descending_ranks(-scores)  # 0 = least relevant
    rank_el = P.element_view(ranks, region_of, tuple(xt.shape))
    # round half to even, torch.round's rule and numpy's
    inserted = xp.asarray(np.round(np.arange(steps + 1, dtype=np.float64) * n_regions / steps).astype(np.int64),
                          like=xt)

    def block(s):
        k = inserted[s].reshape(-1, 1, *([1] * (xt.ndim - 1)))
        return xp.where(rank_el[None] < k, xt[None], base[None])

    curves = host(P.forward_copies(m, xt, t, steps + 1, block)).T  # (n, steps + 1)
    ok = np.all(np.diff(curves[:, 1:], axis=1) >= 0, axis=1).astype(np.float64)
    return (ok, curves) if return_curves else ok


def uniform_region_draws(seed, n: int, n_regions: int, n_samples: int, low: float, high: float) -> Iterator[np.ndarray]:
    """Yield ``n_regions * n_samples`` arrays (n,) of U(low, high) values, region after region,
    ``n_samples`` draws each, from one ``numpy_rng(seed)`` stream: copy ``c = g n_samples + r``
    fills region g of every sample i with value ``[i]``."""
    rng = numpy_rng(seed)
    for _ in range(n_regions * n_samples):
        yield rng.uniform(low, high, size=n)


def monotonicity_correlation(
    model,
    x,
    a,
    target=None,
    *,
    n_samples=100,
    seed=0,
    baseline="uniform",
    low=0.0,
    high=1.0,
    abs=True,
    groups=None,
    blur_sigma=None,
    output=None,
    executor=None,
):
    """Monotonicity correlation (Nguyen & Martinez 2020, "On quantitative aspects of model
    interpretability", arXiv:2007.07584).

    A feature the model is uncertain about when it is unknown should carry more relevance: for each
    region g, replace it ``n_samples`` times by a random value and record
    ``v_g = mean_r (f_t(x with region g replaced, draw r) - f_t(x))^2``; the score is the
    Spearman rank correlation over the regions of ``|a|_g`` (summed ``|a|``, ``abs=True``; the
    signed sum otherwise) and ``v_g`` (in [-1, 1], higher is better; average ranks for ties; NaN
    when either side is constant). Quantus 0.6's ``MonotonicityCorrelation`` also divides ``v``
    by ``f_t(x)^2`` (a positive constant per sample, which the ranks ignore) and perturbs one
    ``features_in_step`` block at a time in increasing attribution order; with elements as regions
    it equals this (see the tests).

    Args:
        n_samples: draws per region (``baseline="uniform"``); a deterministic baseline needs one
            pass per region, so it is not repeated. Refused before any work when ``n_samples *
            n * G`` (G regions) exceeds ``featurelens._budgets.MAX_EVALUATIONS`` (10^8).
        baseline: ``"uniform"`` (default, Quantus's): each draw fills all elements of the region
            with one value ~ U(low, high) per sample, from
            ``uniform_region_draws`` of ``seed`` (region after region); or anything
            :func:`featurelens.metrics.deletion_curve` takes (a number, an array, ``"blur"``,
            ``"mean"``, ``"min"``).
        low, high: the range of the uniform draws (Quantus's defaults 0 and 1).
        seed: None, an int or a numpy Generator.
        groups, blur_sigma, output, executor: see :func:`featurelens.metrics.deletion_curve`.

    Returns:
        float64 array (n,).
    """
    n_samples = check_budget(n_samples, "n_samples", unit="model evaluations", what="per input and region")
    seed = parse_seed(seed)
    use_abs = check_bool(abs, "abs")
    uniform = isinstance(baseline, str) and baseline == "uniform"
    if uniform:
        low = check_float(low, "low")
        high = check_float(high, "high")
        if not high > low:
            raise ValueError(f"high must be > low for baseline='uniform'; got low={low}, high={high}")
    m, xt, t, f0, region_of, n_regions, scores = _scored_regions(model, x, a, target, groups, output, executor, use_abs)
    n = xt.shape[0]
    reps = n_samples if uniform else 1
    check_budget(reps, "n_samples", per=n * n_regions, unit="model evaluations",
                 what=f"for {n} inputs and {n_regions} regions", nbytes=lambda v: 16 * v * n * n_regions,
                 hint="lower n_samples, group the features into fewer regions (groups=) or pass fewer inputs")
    fill = None if uniform else P.baseline_tensor(baseline, xt, blur_sigma)
    draws = uniform_region_draws(numpy_rng(seed), n, n_regions, reps, low, high) if uniform else None
    xp = ops(xt)
    eye = xp.eye_bool(n_regions, like=xt)

    def block(s):
        regs = xp.arange(s.start, s.stop, like=xt) // reps
        hit = P.element_view(eye[regs], region_of, tuple(xt.shape))[:, None]  # (k, 1, ...)
        if uniform:
            vals = xp.asarray(np.stack([next(draws) for _ in range(s.stop - s.start)]), like=xt)
            vals = xp.astype(vals, xt.dtype).reshape(*vals.shape, *([1] * (xt.ndim - 1)))  # (k, n, 1, ...)
            return xp.where(hit, vals, xt[None])
        return xp.where(hit, fill[None], xt[None])

    outs = P.forward_copies(m, xt, t, n_regions * reps, block)  # (G * reps, n)
    var = ((outs - f0[None]) ** 2).reshape(n_regions, reps, n).mean(1).T  # (n, G)
    return P.row_spearman(scores, var)


#: The distances :func:`sufficiency` accepts (scipy.spatial.distance.cdist names).
SUFFICIENCY_DISTANCES = ("seuclidean", "euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine")


def sufficiency(model, x, a, target=None, *, threshold=0.6, distance="seuclidean", abs=True, output=None):
    """Sufficiency (Dasgupta, Frost & Moshkovitz 2022, ICML, arXiv:2202.00734).

    Local sufficiency of an explanation at x is the probability that another point to which the same
    explanation applies gets the same prediction, ``P_{x'}[y(x') = y(x) | e(x') ~ e(x)]``. As in
    Quantus 0.6, the pool of other points is the batch ``x`` itself and "the same explanation
    applies" means ``d(e_i, e_j) / max_{k,l} d(e_k, e_l) <= threshold``, with ``e = |a|``
    flattened (``abs=True``) or ``a``, d a ``scipy.spatial.distance.cdist`` metric (default
    ``"seuclidean"``: each feature divided by its variance over the batch), and y the predicted
    class (argmax of the outputs):

        ``score_i = #{j != i : close(i, j), y_j = y_i} / #{j != i : close(i, j)}``.

    Differences from Quantus 0.6, which we do not copy: a sample without any close neighbour scores
    NaN (undefined; Quantus returns 0, the worst score, without evidence); features whose
    attribution is constant over the batch are left out of ``"seuclidean"`` (their variance is 0,
    where scipy gives NaN distances); the pool is the whole ``x`` (Quantus uses each chunk of
    ``batch_size`` = 64 samples on its own, so its scores depend on how the data is chunked).
    When all explanations coincide (every distance 0) every pair is close.

    Args:
        target: must be None: the score compares the samples' predicted classes (the argmax of the
            outputs), whatever class the maps explain; the argument is there so that every
            model metric is called ``name(model, x, a, target, ...)``.
        threshold: the normalised distance under which two explanations count as the same, in
            [0, 1] (Quantus's default 0.6).
        distance: one of ``SUFFICIENCY_DISTANCES``.
        abs: compare ``|a|`` (default, Quantus's) or the signed maps.
        output: the units of the model's outputs (only the argmax is used, so it rarely matters).

    Returns:
        float64 array (n,); needs n >= 2 samples and a model with at least two outputs.
    """
    if target is not None:
        raise ValueError(
            "target must be None for sufficiency: it compares the samples' predicted classes (argmax of the "
            f"outputs), not a target class; got {target!r}"
        )
    threshold = check_float(threshold, "threshold", low=0.0, high=1.0)
    distance = check_option(distance, "distance", SUFFICIENCY_DISTANCES)
    use_abs = check_bool(abs, "abs")
    a_arr = P.attributions_array(a)
    # Only the predicted classes are needed: one forward pass (P.prepare would add a second).
    m = Model.wrap(model, output=output).with_numpy()  # numpy mode for a numpy model: no torch
    xt = m.to_tensor(x, "x")
    P.broadcast_attributions(a_arr, tuple(xt.shape))  # checks the maps' shape
    n = xt.shape[0]
    if n < 2:
        raise ValueError(f"sufficiency compares the samples of a batch with each other: x needs >= 2 samples; got {n}")
    outputs = m.predict(xt)
    if outputs.shape[1] < 2:
        raise ValueError(
            "sufficiency needs the predicted class of a classifier (argmax over >= 2 outputs); the model "
            f"returns {outputs.shape[1]} output per sample"
        )
    labels = host(outputs).argmax(1)
    e = np.asarray(a_arr, dtype=np.float64).reshape(n, -1)
    e = np.abs(e) if use_abs else e
    from scipy.spatial.distance import cdist

    if distance == "seuclidean":
        var = e.var(axis=0, ddof=1)
        keep = var > 0
        # seuclidean is the euclidean distance of the features divided by their standard
        # deviations; scaling first lets cdist run its faster plain euclidean kernel.
        u = e[:, keep] / np.sqrt(var[keep])
        d = cdist(u, u, "euclidean") if keep.any() else np.zeros((n, n))
    elif distance == "cosine":
        norms = np.linalg.norm(e, axis=1)
        if not np.all(norms > 0):
            raise ValueError(f"distance='cosine' needs non-zero maps; sample(s) {np.flatnonzero(norms == 0).tolist()} of a are all zero")
        d = cdist(e, e, "cosine")
    else:
        d = cdist(e, e, distance)
    top = d.max()
    close = (d / top if top > 0 else d) <= threshold
    np.fill_diagonal(close, False)
    same = labels[None, :] == labels[:, None]
    count = close.sum(1)
    hits = (close & same).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, hits / np.maximum(count, 1), np.nan).astype(np.float64)


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def _n_regions(ctx) -> int:
    return int(np.prod(ctx.x.shape[1:])) if ctx.regions is None else int(np.unique(ctx.regions).size)


def _sizes(n_regions: int) -> list:
    """Sensitivity-n's subset sizes in the audit: about 10 %, 30 % and 50 % of the regions (at
    least one)."""
    return sorted({max(1, int(round(f * n_regions))) for f in (0.1, 0.3, 0.5)})


def _score_sensitivity_n(ctx):
    # One value per sample: the mean of the correlations over the sizes that are finite.
    vals = sensitivity_n(ctx.model, ctx.x, ctx.a, target=ctx.target, ns=_sizes(_n_regions(ctx)),
                         n_subsets=ctx.n_subsets, seed=ctx.seed, baseline=ctx.baseline, groups=ctx.regions,
                         **ctx.executor_kw())
    vals = np.asarray(vals, dtype=np.float64).reshape(len(ctx.x), -1)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(vals)
        return np.where(ok.any(1), np.where(ok, vals, 0.0).sum(1) / np.maximum(ok.sum(1), 1), np.nan)


from .._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "sensitivity_n", sensitivity_n, "faithfulness", +1,
        "correlation of the summed attribution of random n-region subsets with the output "
        "drop when they are removed, mean over three sizes n (Ancona et al. 2018); higher is better",
        requires={"model"}, quantus="SensitivityN", score=_score_sensitivity_n, column="sensitivity_n",
        label="sens.-n"),
    MetricSpec(
        "monotonicity", monotonicity, "faithfulness", +1,
        "share of samples whose output rises with every region inserted into the baseline, "
        "least relevant first (Arya et al. 2019); higher is better",
        requires={"model"}, quantus="Monotonicity", column="monotonicity", label="monoton.",
        score=lambda ctx: monotonicity(ctx.model, ctx.x, ctx.a, target=ctx.target,
                                       steps=min(ctx.steps, _n_regions(ctx)), baseline=ctx.baseline,
                                       groups=ctx.regions, **ctx.executor_kw())),
    MetricSpec(
        "monotonicity_correlation", monotonicity_correlation, "faithfulness", +1,
        "Spearman correlation of each region's |attribution| with the squared "
        "output change when it is removed (Nguyen & Martinez 2020); higher is better",
        requires={"model"}, quantus="MonotonicityCorrelation", column="monotonicity_correlation",
        label="monot. corr.",
        score=lambda ctx: monotonicity_correlation(ctx.model, ctx.x, ctx.a, target=ctx.target, baseline=ctx.baseline,
                                                   groups=ctx.regions, **ctx.executor_kw())),
    MetricSpec(
        "sufficiency", sufficiency, "faithfulness", +1,
        "share of the audited samples with a similar map that get the same prediction "
        "(Dasgupta et al. 2022); higher is better",
        requires={"model", "classes", "samples"}, quantus="Sufficiency", column="sufficiency",
        label="sufficiency", score=lambda ctx: sufficiency(ctx.model, ctx.x, ctx.a)),
)
