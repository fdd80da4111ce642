"""Axiomatic metrics: does an explanation satisfy a property every explanation of its kind should?

- :func:`completeness` (Sundararajan et al. 2017): the signed gap ``sum(a) - (f(x) - f(x'))``;
- :func:`non_sensitivity` (Nguyen & Martínez 2020): features with zero attribution that the model
  does depend on;
- :func:`input_invariance` (Kindermans et al. 2017): is the explanation unchanged when the input is
  shifted by a constant that the first layer's bias absorbs?

The first two call the model like :func:`featurelens.metrics.faithfulness_correlation`,
``name(model, x, a, target=None, *, baseline=0.0, ..., output=None, executor=None)``, with ``f_t``
the model's ``target`` output in the units ``output=`` asks for (raw by default), every perturbed
copy sent through the model in chunks bounded by the Model's ``batch_size``.
``input_invariance`` re-explains, like :func:`featurelens.metrics.max_sensitivity`:
``input_invariance(explainer, x, target=None, *, model=None, ...)`` with an Explainer (``model=``
None or its own model) or a registered name with ``model=``. Scores are float64 arrays with one entry per sample.
"""

from __future__ import annotations

import copy

import numpy as np
from featurelens._optional import torch

from .._batching import chunks
from .._validation import check_bool, check_float, check_option
from ..explainers._base import Explainer
from ..models import Model
from . import _perturb as P
from .._arrays import host, ops

__all__ = ["completeness", "input_invariance", "non_sensitivity"]


def completeness(model, x, a, target=None, *, baseline=0.0, blur_sigma=None, output=None, executor=None):
    """Completeness gap (Sundararajan, Taly & Yan 2017, "Axiomatic Attribution for Deep Networks",
    ICML, arXiv:1703.01365): an attribution is complete when it sums to the change of the output
    from the baseline to the input. Returns the signed gap per sample,

    ``gap_i = sum_j a_ij - (f_t(x_i) - f_t(x'_i))``,

    0 for a complete explanation (integrated gradients up to its quadrature error; input x gradient
    on a linear model with the zero baseline). ``baseline`` ``x'``: a number, an array shaped like
    ``x`` or like one input, ``"mean"``, ``"min"`` (each sample's minimum, Quantus's "black") or
    ``"blur"`` (sigma ``blur_sigma``). Quantus 0.6's ``Completeness`` returns
    ``sum(a) == f(x) - f(x')`` as an exact float equality, which fails on rounding alone (a
    complete explanation in float32 is reported incomplete); the signed gap keeps the size of the
    violation, which a caller compares with a tolerance of their choice. Returns float64 (n,).
    """
    a_arr = P.attributions_array(a)
    m, xt, _, t, fx = P.prepare(model, x, a_arr, target, output=output, executor=executor)
    base = P.baseline_tensor(baseline, xt, blur_sigma)
    fb = P.forward_copies(m, xt, t, 1, lambda s: base[None])[0]
    total = a_arr.reshape(a_arr.shape[0], -1).sum(axis=1, dtype=np.float64)
    return total - host(fx - fb)


_NS_COUNTS = ("zero_attribution", "symmetric")


def non_sensitivity(
    model,
    x,
    a,
    target=None,
    *,
    baseline=0.0,
    eps: float = 1e-5,
    atol: float = 1e-5,
    count: str = "zero_attribution",
    normalise: bool = True,
    groups=None,
    blur_sigma=None,
    output=None,
    executor=None,
):
    """Non-sensitivity (Nguyen & Martínez 2020, "On quantitative aspects of model
    interpretability", arXiv:2007.07584): zero importance should go only to features the model does
    not depend on.

    Each region ``r`` (element, pixel or ``groups`` label) of each sample is set to the baseline on
    its own, one perturbed copy per region; the model is insensitive to it when
    ``|f_t(x with r at the baseline) - f_t(x)| < atol``. The region's attribution is
    ``A_r = sum_{j in r} |a_j|``, zero when ``A_r < eps * max_r A_r`` (``normalise=True``; ``A_r <
    eps`` with ``normalise=False``). With ``Z_a`` the zero-attribution regions and ``Z_f`` the
    insensitive ones:

    - ``count="zero_attribution"`` (default): ``|Z_a \\ Z_f|``, the regions called irrelevant that
      the model does react to;
    - ``count="symmetric"``: ``|Z_a Δ Z_f|``, also counting regions with attribution that the model
      ignores, as Quantus's ``NonSensitivity`` (``abs=True``, ``normalise=True``, which divides by
      the maximum over the whole batch; equal on maps whose maximum ``|a|`` is the same for every
      sample) with ``baseline="min"`` (its "black").

    0 is best. ``baseline`` as :func:`completeness`. ``atol`` is in the units of ``output``
    (raw by default); Quantus's ``NonSensitivity`` applies a softmax by default (``softmax=True``),
    so pass ``output="probability"`` for its units. Returns the counts as float64 (n,).
    """
    eps = check_float(eps, "eps", low=0.0)
    atol = check_float(atol, "atol", low=0.0)
    count = check_option(count, "count", _NS_COUNTS)
    normalise = check_bool(normalise, "normalise")
    a_arr = P.attributions_array(a)
    m, xt, at, t, fx = P.prepare(model, x, a_arr, target, output=output, executor=executor)
    spatial = a_arr.shape != tuple(xt.shape)
    region_of, n_regions = P.regions(groups, tuple(xt.shape), spatial)
    xp = ops(xt)
    scores = P.region_scores(xp.abs(at), region_of, n_regions)  # (n, G)
    if normalise:
        scores = scores / xp.clamp_min(xp.amax(scores, 1, keepdims=True), xp.tiny(scores.dtype))
    zero = host(scores < eps)
    if region_of is None:
        region_el = xp.arange(n_regions, like=xt).reshape(*xt.shape[1:])
    else:
        region_el = xp.asarray(region_of, like=xt).reshape(*xt.shape[1:])
    base = P.baseline_tensor(baseline, xt, blur_sigma)

    def block(s):
        ids = xp.arange(s.start, s.stop, like=xt).reshape(-1, *([1] * xt.ndim))
        hit = region_el[None, None] == ids  # (k, 1, *one input)
        return xp.where(hit, base[None], xt[None])

    f_pert = P.forward_copies(m, xt, t, n_regions, block)  # (G, n)
    insensitive = host(xp.abs(f_pert - fx[None, :]) < atol).T
    if count == "zero_attribution":
        return (zero & ~insensitive).sum(axis=1).astype(np.float64)
    return (zero ^ insensitive).sum(axis=1).astype(np.float64)


# --------------------------------------------------------------------------------------------------
# input invariance

_SCORES = ("match", "max_abs_diff")


def _first_layers() -> tuple:
    """The layer types whose bias can absorb a constant shift of the input (torch imported here,
    on first use, never when this module is imported)."""
    return (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def _first_layer(module: torch.nn.Module) -> tuple[str, torch.nn.Module]:
    kinds = _first_layers()
    for name, sub in module.named_modules():
        if isinstance(sub, kinds):
            return name, sub
    raise ValueError(
        "input_invariance needs a model whose first layer is a torch.nn.Linear or ConvNd (its bias "
        "absorbs the shift); found none"
    )


def _shifted_module(m: Model, xt: torch.Tensor, shift: float) -> tuple[torch.nn.Module, str]:
    """A deep copy of ``module`` whose first layer's bias absorbs ``+shift`` on every input element:
    ``b2 = b1 - W (shift * 1)``, so that ``f2(x + shift) = f1(x)`` (Kindermans et al. 2017). The
    probe rows go through the module in chunks of the Model's rows (its ``batch_size``)."""
    module = m.module
    work = copy.deepcopy(module)
    name, layer = _first_layer(work)
    _, original = _first_layer(module)
    rows = xt[:8]  # a few rows show the response to the shift; all of them cost memory
    parts = list(chunks(rows.shape[0], m.chunk_rows(rows, forward_only=True)))

    def run(net, inputs):
        return torch.cat([net(inputs[s]) for s in parts])

    captured = []
    hook = original.register_forward_hook(lambda mod, inp, out: captured.append(out.detach()))
    try:
        with torch.no_grad(), m.evaluating():
            run(module, rows)
            run(module, rows + shift)
    finally:
        hook.remove()
    if len(captured) != 2 * len(parts):
        raise ValueError(f"the first layer {name!r} must run exactly once per forward pass; it ran "
                         f"{len(captured) // (2 * len(parts))} times")
    diff = (torch.cat(captured[len(parts):]) - torch.cat(captured[: len(parts)])).double()
    axis = diff.ndim - 1 if isinstance(layer, torch.nn.Linear) else 1
    per_channel = diff.movedim(axis, -1).reshape(-1, diff.shape[axis])
    delta = per_channel.mean(0)
    spread = (per_channel - delta).abs().max()
    scale = diff.abs().max().clamp_min(1.0)
    if float(spread) > 1e-4 * float(scale):
        raise ValueError(
            f"the first layer {name!r} does not respond to a constant shift with one constant per "
            f"output channel (spread {float(spread):.3g}): a convolution with zero padding sees the "
            "shift only partly at the borders, and a layer after another operation on the input "
            "cannot absorb it; use a first layer without padding"
        )
    with torch.no_grad():
        if layer.bias is None:
            layer.bias = torch.nn.Parameter(torch.zeros(delta.shape[0], dtype=layer.weight.dtype,
                                                        device=layer.weight.device))
        layer.bias -= delta.to(layer.bias.dtype)
        with m.evaluating():
            f1 = run(module, rows).double()
        work.eval()
        f2 = run(work, rows + shift).double()
    err = float((f2 - f1).abs().max())
    if err > 1e-4 * max(1.0, float(f1.abs().max())):
        raise ValueError(
            f"the first layer {name!r} absorbs the shift but the network's outputs still move by up to "
            f"{err:.3g} (an operation before it that is not affine?); expected f2(x + shift) = f(x)"
        )
    return work, name


def _copy_on(explainer: Explainer, original: torch.nn.Module, work: torch.nn.Module) -> Explainer:
    """The explainer with its model replaced by ``work`` (same batch size, device and units);
    attributes that point into the original module (a hooked layer) point into ``work`` instead."""
    old = explainer.model
    ex = copy.copy(explainer)
    ex.model = Model(work, batch_size=None if old.auto_batch else old.batch_size, device=old.device,
                     output=old.output)
    names = {id(sub): n for n, sub in original.named_modules()}
    subs = dict(work.named_modules())
    for key, value in list(vars(ex).items()):
        if isinstance(value, torch.nn.Module) and id(value) in names:
            setattr(ex, key, subs[names[id(value)]])
    return ex


def input_invariance(
    explainer,
    x,
    target=None,
    *,
    model=None,
    shift: float = -1.0,
    explainer_params=None,
    atol: float = 1e-4,
    score: str = "match",
    attributions=None,
):
    """Input invariance (Kindermans, Hooker, Adebayo, Alber, Schütt, Dähne, Erhan & Kim 2017,
    "The (Un)reliability of Saliency Methods", arXiv:1711.00867).

    A second network ``f2`` equals the trained one ``f1`` except for the first layer's bias,
    ``b2 = b1 - W m`` with ``m = shift * 1``, so that ``f2(x + m) = f1(x)`` for every ``x``: the two
    networks compute the same function of their own inputs. An input-invariant method gives the same
    explanation, ``a(f2, x + m) = a(f1, x)``. Saliency is (its gradients agree), input x gradient is
    not (its ``x`` moves by ``m``), integrated gradients is with a baseline shifted alongside and not
    with the zero baseline.

    Every element of every input is shifted. Quantus 0.6's ``InputInvariance`` never shifts the
    first element (its perturbation skips the first index) and picks the smallest per-channel
    response of a padded convolution, so its ``f2(x + m)`` differs from ``f1(x)``; here the bias
    must absorb the shift exactly: a first layer that cannot (a zero-padded convolution, whose
    borders see part of the shift) is an error.

    Args:
        explainer: a featurelens Explainer on a ``torch.nn.Module`` (``model=`` None or its own
            model), or a registered name with ``model=`` (and ``explainer_params=``, keyword
            arguments of ``fl.explainer``).
        target: None (the predicted class of ``f1`` on ``x``, kept for ``f2``), an int or one per
            sample.
        shift: the constant ``m`` added to every input element (Quantus's ``input_shift=-1``).
        atol: ``score="match"``: 1.0 when ``|a1 - a2| <= atol + 1e-5 |a2|`` everywhere (numpy's
            ``isclose``, Quantus's test), else 0.0. ``score="max_abs_diff"``: ``max |a1 - a2|``.
        attributions: optional ``a(f1, x)`` (default: computed).

    Returns:
        float64 (n,).
    """
    shift = check_float(shift, "shift")
    atol = check_float(atol, "atol", low=0.0)
    score = check_option(score, "score", _SCORES)
    ex = P.as_explainer(explainer, model, explainer_params)
    module = ex.model.module
    if module is None:
        P.refuse_torch_only("input_invariance", "it changes the first layer's bias",
                            ex.model.display_name(), prefix="the model must be a torch.nn.Module")
    xt = ex.model.to_tensor(x, "x")
    n = xt.shape[0]
    t = host(ex.model.resolve_target(target, xt))
    if attributions is None:
        a1 = P.explain_maps(ex, xt, t, "input_invariance").values
    else:
        a1 = P.attributions_array(attributions, "attributions")
    a1 = np.asarray(a1, dtype=np.float64)
    if a1.ndim < 1 or a1.shape[0] != n:
        raise ValueError(f"attributions must hold one map per sample ({n}); got shape {a1.shape}")
    work, _ = _shifted_module(ex.model, xt, shift)
    a2 = np.asarray(P.explain_maps(_copy_on(ex, module, work), xt + shift, t, "input_invariance").values,
                    dtype=np.float64)
    if a2.size != a1.size:
        raise ValueError(f"attributions have shape {a1.shape} but the explainer returns {a2.shape}")
    a1, a2 = a1.reshape(n, -1), a2.reshape(n, -1)
    if score == "max_abs_diff":
        return np.abs(a1 - a2).max(axis=1)
    return np.isclose(a1, a2, atol=atol).all(axis=1).astype(np.float64)


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it

from ._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "completeness", completeness, "axiomatic", -1,
        "|sum of the map - (f(x) - f(baseline))| (Sundararajan et al. 2017); lower is "
        "better, 0 for a complete method (IG up to quadrature); other methods need not be complete",
        requires={"model"}, quantus="Completeness", column="completeness", label="|compl. gap|",
        score=lambda ctx: np.abs(completeness(ctx.model, ctx.x, ctx.a, target=ctx.target, baseline=ctx.baseline,
                                              **ctx.executor_kw()))),
    MetricSpec(
        "non_sensitivity", non_sensitivity, "axiomatic", -1,
        "number of regions with zero attribution that the model does react to (Nguyen & Martinez "
        "2020); lower is better, 0 when zero attribution goes only to features the model ignores",
        requires={"model"}, quantus="NonSensitivity",
        score=lambda ctx: non_sensitivity(ctx.model, ctx.x, ctx.a, target=ctx.target, baseline=ctx.baseline,
                                          groups=ctx.regions, **ctx.executor_kw())),
    MetricSpec(
        "input_invariance", input_invariance, "axiomatic", +1,
        "whether the map stays the same when the input and the first layer's bias are shifted so that "
        "the network computes the same function (Kindermans et al. 2017); higher is better",
        requires={"explainer", "parameters"}, reexplains=True, quantus="InputInvariance",
        score=lambda ctx: input_invariance(ctx.explainer, ctx.x, target=ctx.target, attributions=ctx.raw)),
)
