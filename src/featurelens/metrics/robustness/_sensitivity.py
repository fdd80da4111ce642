"""Robustness metrics: does the explanation stay put when the input moves a little?

Each metric is called ``name(explainer, x, target=None, *, model=None, ...)``: a featurelens
Explainer (``fl.explainer(name, model, ...)``; ``model=`` None or its own model) or a registered
explainer name with ``model=`` (and ``explainer_params=``), a batch ``x`` (samples first) and
``target`` (None = the predicted class of the clean input, kept for the noisy copies; an int; or
one int per sample). The ``n_samples`` noisy copies of every sample are
explained in ONE batched ``explain`` call on the expanded batch (n_samples * n rows,
copy-major), which the explainer chunks through the Model's batching.

Noise: uniform in the L-inf ball of radius ``r_i = radius * (max x_i - min x_i)`` around each
sample (``relative=True``, default: the scale follows the data, as SmoothGrad's noise does; a
constant sample, whose range is 0, gets the unit range 1, so ``r_i = radius`` there:
:func:`featurelens._validation.relative_scale`), or
``r_i = radius`` (``relative=False``; Quantus's ``MaxSensitivity`` adds U(-0.2, 0.2), i.e.
``radius=0.2, relative=False``). The draws are
:func:`featurelens.metrics._perturb.uniform_draws` of ``seed``: None, an int or a
``numpy.random.Generator`` (one built from an int gives the same draws as the int).

``executor`` (None or a :mod:`featurelens.parallel` executor): the explain calls (the clean batch
when ``attributions`` is None, and the batch of noisy copies) explain their rows in parts on its
workers (``explainer.explain(x, executor=...)``). Each row keeps its random stream, so the metrics
equal the serial ones bitwise for the Shapley explainers and SPEX; the gradient explainers batch
rows together, and a part's batches may change the last bit (see
:meth:`featurelens.explainers.Explainer.explain`).
"""

from __future__ import annotations

import numpy as np

from ..._random import parse_seed
from ..._validation import check_bool, check_executor, check_float
from ..._budgets import check_budget
from .. import _perturb as P
from ..._arrays import host

__all__ = ["max_sensitivity", "avg_sensitivity", "local_lipschitz"]


def _noisy_explanations(metric, explainer, x, target, radius, n_samples, seed, relative, attributions,
                        executor=None, model=None, explainer_params=None):
    explainer = P.as_explainer(explainer, model, explainer_params)
    radius = check_float(radius, "radius", low=0.0, low_inclusive=False)
    n_samples = check_budget(n_samples, "n_samples", unit="explained inputs", what="per input")
    seed = parse_seed(seed)
    relative = check_bool(relative, "relative")
    executor = check_executor(executor, "executor", rows=True)
    m = explainer.model
    xt = m.to_tensor(x, "x")
    n = xt.shape[0]
    # The noisy copies, their noise (float64) and their maps are held whole.
    per_input = int(np.prod(xt.shape[1:]))
    check_budget(n_samples, "n_samples", per=n, unit="explained inputs", what=f"for {n} inputs",
                 nbytes=lambda v: 24 * v * per_input * n, hint="lower n_samples, or pass fewer inputs per call")
    t = host(m.resolve_target(target, xt))  # numpy mode (a numpy explainer's Model): no torch
    if attributions is None:
        a = P.explain_maps(explainer, xt, t, metric, executor).values
    else:
        a = P.attributions_array(attributions, "attributions")
    if a.ndim < 1 or a.shape[0] != n:
        raise ValueError(f"attributions must hold one map per sample ({n}); got shape {a.shape}")
    a = np.asarray(a, dtype=np.float64).reshape(n, -1)
    noise, x_noisy = P.noisy_copies(xt, radius, n_samples, seed, relative)
    e = P.explain_maps(explainer, x_noisy, np.tile(t, n_samples), metric, executor)
    a_noisy = np.asarray(e.values, dtype=np.float64).reshape(n_samples, n, -1)
    if a_noisy.shape[2] != a.shape[1]:
        raise ValueError(
            f"attributions have {a.shape[1]} values per sample but the explainer returns {a_noisy.shape[2]}"
        )
    return a, a_noisy, noise.reshape(n_samples, n, -1)


def _sensitivities(metric, explainer, x, target, radius, n_samples, seed, relative, attributions, executor=None,
                   model=None, explainer_params=None):
    a, a_noisy, _ = _noisy_explanations(metric, explainer, x, target, radius, n_samples, seed, relative,
                                        attributions, executor, model, explainer_params)
    num = np.linalg.norm(a_noisy - a[None], axis=2)  # (n_samples, n)
    den = np.linalg.norm(a, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den[None]


def max_sensitivity(
    explainer, x, target=None, *, model=None, explainer_params=None, radius=0.1, n_samples=10, seed=0, relative=True,
    attributions=None, executor=None,
):
    """Max-sensitivity (Yeh, Hsieh, Suggala, Inouye & Ravikumar 2019, NeurIPS, arXiv:1901.09392).

    ``SENS_max(x) = max_j ||a(x + u_j) - a(x)||_2 / ||a(x)||_2`` over ``n_samples`` noise draws
    ``u_j`` uniform in the L-inf ball (see the module docstring); norms over the flattened map
    (Frobenius), normalised by ``||a(x)||`` as in Quantus's ``MaxSensitivity``. Lower is more
    robust. ``attributions`` (optional) replaces ``a(x)``; by default the explainer computes it.
    NaN for an all-zero map. ``executor``: the explain calls' rows in parts on its workers (see the
    module docstring). Returns float64 (n,).
    """
    return _sensitivities("max_sensitivity", explainer, x, target, radius, n_samples, seed, relative, attributions,
                          executor, model, explainer_params).max(0)


def avg_sensitivity(
    explainer, x, target=None, *, model=None, explainer_params=None, radius=0.1, n_samples=10, seed=0, relative=True,
    attributions=None, executor=None,
):
    """Average sensitivity (Yeh et al. 2019, arXiv:1901.09392): as :func:`max_sensitivity` with the
    mean over the noise draws instead of the maximum,
    ``SENS_avg(x) = mean_j ||a(x + u_j) - a(x)||_2 / ||a(x)||_2``. ``executor``: see the module
    docstring. Returns float64 (n,)."""
    return _sensitivities("avg_sensitivity", explainer, x, target, radius, n_samples, seed, relative, attributions,
                          executor, model, explainer_params).mean(0)


def local_lipschitz(
    explainer, x, target=None, *, model=None, explainer_params=None, radius=0.1, n_samples=10, seed=0, relative=True,
    attributions=None, executor=None,
):
    """Local Lipschitz estimate (Alvarez-Melis & Jaakkola 2018, arXiv:1806.08049).

    ``L(x) = max_j ||a(x + u_j) - a(x)||_2 / ||u_j||_2`` over ``n_samples`` points of the L-inf
    ball around ``x`` (uniform draws, see the module docstring; the paper maximises over the ball,
    this is the sampled estimate). Unnormalised: in attribution units per input unit. Quantus's
    ``LocalLipschitzEstimate`` uses Gaussian noise and max-normalised maps instead. Lower is more
    robust. ``executor``: see the module docstring. Returns float64 (n,).
    """
    a, a_noisy, noise = _noisy_explanations("local_lipschitz", explainer, x, target, radius, n_samples, seed,
                                            relative, attributions, executor, model, explainer_params)
    num = np.linalg.norm(a_noisy - a[None], axis=2)
    return (num / np.linalg.norm(noise, axis=2)).max(0)


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def _shared_sensitivities(ctx):
    """The relative sensitivities (n_samples, n) of ONE set of re-explained noisy copies, shared by
    the average and the maximum (explaining the copies twice would only double the cost); the
    explainer's own maps ``ctx.raw`` are the clean maps its re-explanations are compared with."""
    return ctx.shared("sensitivities", lambda: _sensitivities(
        "avg_sensitivity / max_sensitivity", ctx.explainer, ctx.x, ctx.target, ctx.radius, ctx.n_noise, ctx.seed, True, ctx.raw, ctx.executor))


from .._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "avg_sensitivity", avg_sensitivity, "robustness", -1,
        "relative change of the map under small input noise, mean over the draws "
        "(Yeh et al. 2019); lower is better; breaks faithfulness ties",
        requires={"explainer", "noise"}, reexplains=True, quantus="AvgSensitivity",
        score=lambda ctx: _shared_sensitivities(ctx).mean(0), column="avg_sensitivity", label="avg sens.",
        audit_default=True, computed_with=("max_sensitivity",)),
    MetricSpec(
        "max_sensitivity", max_sensitivity, "robustness", -1,
        "the largest relative change of the map under small input noise (Yeh et al. "
        "2019); lower is better",
        requires={"explainer", "noise"}, reexplains=True, quantus="MaxSensitivity",
        score=lambda ctx: _shared_sensitivities(ctx).max(0), column="max_sensitivity", label="max sens.",
        audit_default=True, computed_with=("avg_sensitivity",)),
    MetricSpec(
        "local_lipschitz", local_lipschitz, "robustness", -1,
        "the largest change of the map per unit input change over noisy neighbours "
        "(Alvarez-Melis & Jaakkola 2018); lower is better",
        requires={"explainer", "noise"}, reexplains=True,
        score=lambda ctx: local_lipschitz(ctx.explainer, ctx.x, target=ctx.target, radius=ctx.radius,
                                          n_samples=ctx.n_noise, seed=ctx.seed, attributions=ctx.raw,
                                          **ctx.executor_kw())),
)
