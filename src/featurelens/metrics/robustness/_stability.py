"""Stability metrics that re-explain moved inputs: continuity, consistency and the relative
stabilities (input, output, representation).

Every metric is called ``name(explainer, x, target=None, *, model=None, ...)``: ``explainer`` a
featurelens Explainer (``fl.explainer(name, model, ...)``; ``model=`` None or its own model) or a
registered name together with ``model=`` (and optional ``explainer_params=``). ``x`` holds
the samples along the first axis; ``target`` is None (the predicted class of the clean input,
kept for every moved copy), an int or one int per sample. The moved copies of the whole batch
are explained in ONE batched ``explain`` call (copies * n rows, copy-major), which the explainer
chunks by its Model's ``batch_size``; the model outputs of the copies go through
:meth:`featurelens.models.Model.predict` (chunked the same way). ``executor`` (None or a
:mod:`featurelens.parallel` executor) explains the rows in parts on its workers. One float64
score per sample.
"""

from __future__ import annotations

import warnings

import numpy as np
from featurelens._optional import torch

from ..._batching import chunks
from ..._random import parse_seed
from ..._validation import check_bool, check_executor, check_float, check_int, check_option
from ..._budgets import check_budget
from ...explainers._base import Explainer
from .. import _perturb as P
from ..._arrays import host, ops

__all__ = [
    "continuity",
    "consistency",
    "relative_input_stability",
    "relative_output_stability",
    "relative_representation_stability",
]


# --------------------------------------------------------------------------------------------------
# private helpers


def _maps(metric: str, ex: Explainer, xt: torch.Tensor, target: np.ndarray, executor, n_rows: int) -> np.ndarray:
    """The explainer's maps of the rows ``xt`` as float64 (n_rows, d) (NaN refused, naming ``metric``)."""
    values = P.explain_maps(ex, xt, target, metric, executor).values
    return np.asarray(values, dtype=np.float64).reshape(n_rows, -1)


def _given_maps(attributions, n: int, d: int | None = None) -> np.ndarray:
    a = P.attributions_array(attributions, "attributions")
    if a.ndim < 1 or a.shape[0] != n:
        raise ValueError(f"attributions must hold one map per sample ({n}); got shape {a.shape}")
    a = np.asarray(a, dtype=np.float64).reshape(n, -1)
    if d is not None and a.shape[1] != d:
        raise ValueError(f"attributions have {a.shape[1]} values per sample but the explainer returns {d}")
    return a


def _normalise_by_max(a: np.ndarray) -> np.ndarray:
    """Each row divided by its largest |value| (an all-zero row stays zero)."""
    m = np.abs(a).max(1, keepdims=True)
    return a / np.where(m == 0, 1.0, m)


def _nanmax(v: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, by design
        return np.nanmax(v, axis=axis)


# --------------------------------------------------------------------------------------------------
# continuity


def _translate(x, fill, shift: int, axis: int):
    """``x`` moved by ``shift`` positions along ``axis`` (positive: towards higher indices); the
    vacated positions take ``fill``'s values there. A new array (numpy) or tensor, like ``x``."""
    size = x.shape[axis]
    out = ops(x).copy_as(fill, x.dtype)
    if abs(shift) >= size:
        return out
    dst, src = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    if shift >= 0:
        dst[axis], src[axis] = slice(shift, size), slice(0, size - shift)
    else:
        dst[axis], src[axis] = slice(0, size + shift), slice(-shift, size)
    out[tuple(dst)] = x[tuple(src)]
    return out


def continuity(
    explainer,
    x,
    target=None,
    *,
    model=None,
    explainer_params=None,
    steps=8,
    direction="x",
    baseline="min",
    normalise=True,
    abs=True,
    same_prediction=False,
    executor=None,
):
    """Continuity (Montavon, Samek & Mueller 2018, "Methods for interpreting and understanding deep
    neural networks", Digital Signal Processing 73, arXiv:1706.07979), as Quantus 0.6 defines it.

    An explanation is continuous when nearby inputs get nearby explanations:
    ``C(x) = max_k ||a(x) - a(x_k)||_1 / (||x - x_k||_2 + 1e-9)`` over ``steps`` translations
    ``x_k`` of the image (lower is more continuous; the paper's ``max_{x != x'} ||R(x) - R(x')||_1 /
    ||x - x'||_2`` restricted to translates). The translations move the image by
    ``s_k = -L + (k + 1) * dx`` pixels, ``k = 0..steps-1``, ``dx = (2L + 1) // steps``, ``L`` the
    width (``direction="x"``, last axis) or height (``"y"``, axis -2); vacated pixels take
    ``baseline`` (``"min"``: each sample's minimum, Quantus's "black"; ``"mean"``; or a number).
    Quantus 0.6's grid with its default ``nr_steps=28`` on images narrower than 14 pixels has
    ``dx = 0`` (every step the same full shift); here ``steps > 2L + 1`` is an error instead.
    Maps are divided by their largest |value| per sample (``normalise``; Quantus divides the whole
    batch by one maximum, the same for a batch of one) and then made absolute (``abs``).
    ``same_prediction=True``: translates whose predicted class differs from the clean input's are
    left out of the maximum (NaN when all are); Quantus's ``return_nan_when_prediction_changes``
    instead turns the whole score NaN as soon as one translate changes class (NaN propagates
    through its max). ``x``: images (n, c, h, w), or (n, c, w) series (then ``direction="x"``).
    Returns float64 (n,).
    """
    ex = P.as_explainer(explainer, model, explainer_params)
    steps = check_int(steps, "steps", low=1)
    direction = check_option(direction, "direction", ("x", "y"))
    normalise = check_bool(normalise, "normalise")
    abs_ = check_bool(abs, "abs")
    same_prediction = check_bool(same_prediction, "same_prediction")
    executor = check_executor(executor, "executor", rows=True)
    m = ex.model
    xt = m.to_tensor(x, "x")
    if xt.ndim not in (3, 4):
        raise ValueError(
            f"x must be a batch of images (n, c, h, w) or of series (n, c, w) for continuity; got shape {tuple(xt.shape)}"
        )
    if xt.ndim == 3 and direction == "y":
        raise ValueError("direction='y' needs images (n, c, h, w); got series x of shape " f"{tuple(xt.shape)}")
    if isinstance(baseline, str):
        baseline = check_option(baseline, "baseline", ("min", "mean"))
    fill = P.baseline_tensor(baseline, xt)
    axis = xt.ndim - 1 if direction == "x" else xt.ndim - 2
    length = xt.shape[axis]
    if steps > 2 * length + 1:
        raise ValueError(
            f"steps must be at most 2 * {length} + 1 = {2 * length + 1} (the translation grid has step "
            f"(2L + 1) // steps, which would be 0); got {steps}"
        )
    dx = (2 * length + 1) // steps
    shifts = [-length + (k + 1) * dx for k in range(steps)]
    n = xt.shape[0]
    outputs = m.predict(xt)
    t = host(m.resolve_target(target, xt, outputs))
    xp = ops(xt)
    moved = xp.stack([_translate(xt, fill, s, axis) for s in shifts])  # (steps, n, ...)
    rows = moved.reshape(steps * n, *xt.shape[1:])
    a = _maps("continuity", ex, xt, t, executor, n)
    e_k = P.explain_maps(ex, rows, np.tile(t, steps), "continuity", executor)
    a_k = np.asarray(e_k.values, dtype=np.float64).reshape(steps, n, -1)
    if normalise:
        a = _normalise_by_max(a)
        a_k = _normalise_by_max(a_k.reshape(steps * n, -1)).reshape(steps, n, -1)
    if abs_:
        a, a_k = np.abs(a), np.abs(a_k)
    num = np.abs(a_k - a[None]).sum(2)
    diff = (xp.to_float64(moved) - xp.to_float64(xt)[None]).reshape(steps, n, -1)
    den = host(xp.norm(diff, 2)) + 1e-9
    ratio = num / den
    if same_prediction:
        # the translated copies' classes: from the explainer's own pass where it keeps its outputs
        out_k = e_k.extra["outputs"] if "outputs" in e_k.extra else host(m.predict(rows))
        changed = np.asarray(out_k).argmax(1).reshape(steps, n) != host(outputs).argmax(1)[None]
        ratio[changed] = np.nan
        return _nanmax(ratio, 0)
    return ratio.max(0)


# --------------------------------------------------------------------------------------------------
# consistency

_DISCRETISE = ("top_k", "sign", "first_k_sign", "rank", "round")


def _keys(a: np.ndarray, discretise, k: int, decimals: int) -> np.ndarray:
    """One int label per row: rows with equal labels have equal discretised explanations."""
    n = a.shape[0]
    if callable(discretise):
        keys = [discretise(row) for row in a]
        try:
            table: dict = {}
            return np.array([table.setdefault(key, len(table)) for key in keys], dtype=np.int64)
        except TypeError as err:
            raise TypeError(f"discretise must return a hashable value per map; {err}") from None
    if discretise == "top_k":
        # The set of the k largest entries (ties: the smaller index first), as sorted indices.
        order = np.argsort(-a, axis=1, kind="stable")[:, :k]
        disc = np.sort(order, axis=1)
    elif discretise == "sign":
        disc = np.sign(a)
    elif discretise == "first_k_sign":
        disc = np.sign(a[:, :k])
    elif discretise == "rank":
        disc = np.argsort(-a, axis=1, kind="stable")
    else:
        disc = np.round(a, decimals) + 0.0  # + 0.0: -0.0 and 0.0 are one label
    return np.unique(np.ascontiguousarray(disc), axis=0, return_inverse=True)[1].reshape(n).astype(np.int64)


def consistency(
    explainer,
    x,
    target=None,
    *,
    model=None,
    explainer_params=None,
    discretise="top_k",
    k=5,
    decimals=2,
    abs=True,
    normalise=True,
    attributions=None,
    executor=None,
):
    """Consistency (Dasgupta, Frost & Moshkovitz 2022, "Framework for Evaluating Faithfulness of
    Local Explanations", ICML, arXiv:2202.00734).

    Explanations are discretised to a label ``e(x)``; for each sample ``i`` the score is the share
    of the OTHER samples of the batch with the same label that also share its predicted class,
    ``C(x_i) = #{j != i: e(x_j) = e(x_i), f(x_j) = f(x_i)} / #{j != i: e(x_j) = e(x_i)}`` (higher is
    more consistent; the paper's ``P(f(x') = f(x) | e(x') = e(x))`` estimated on the batch). NaN when
    no other sample shares the label (Quantus 0.6 returns 0 there, through its ``+ 1e-9``).
    ``discretise``: ``"top_k"`` (default: the set of the ``k`` largest entries), ``"sign"`` (every
    entry's sign), ``"first_k_sign"`` (the signs of the first ``k`` entries of the flattened map:
    Quantus's default ``top_n_sign``, whose "top" is the position, not the importance; with
    ``abs=True`` every map then shares one label), ``"rank"`` (the whole descending order),
    ``"round"`` (entries rounded to ``decimals``), or a callable mapping a flat float64 map to a
    hashable label. Maps are divided by their largest |value| per sample (``normalise``) and made
    absolute (``abs``) first. Predictions are the argmax of the model's outputs on ``x``;
    ``attributions`` (optional) replaces the explainer's maps of ``x``. Returns float64 (n,).
    """
    ex = P.as_explainer(explainer, model, explainer_params)
    if not callable(discretise):
        discretise = check_option(discretise, "discretise", _DISCRETISE)
    k = check_int(k, "k", low=1)
    decimals = check_int(decimals, "decimals", low=0)
    abs_ = check_bool(abs, "abs")
    normalise = check_bool(normalise, "normalise")
    executor = check_executor(executor, "executor", rows=True)
    m = ex.model
    xt = m.to_tensor(x, "x")
    n = xt.shape[0]
    outputs = m.predict(xt)
    if attributions is None:
        t = host(m.resolve_target(target, xt, outputs))
        a = _maps("consistency", ex, xt, t, executor, n)
    else:
        a = _given_maps(attributions, n)
    if discretise in ("top_k", "first_k_sign") and k > a.shape[1]:
        raise ValueError(f"k must be at most the map size {a.shape[1]}; got {k}")
    if normalise:
        a = _normalise_by_max(a)
    if abs_:
        a = np.abs(a)
    labels = _keys(a, discretise, k, decimals)
    pred = host(outputs).argmax(1).astype(np.int64)
    same_label = np.bincount(labels)[labels] - 1
    pair = labels * (int(pred.max()) + 1) + pred
    both = np.bincount(pair)[pair] - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(same_label > 0, both / np.maximum(same_label, 1), np.nan).astype(np.float64)


# --------------------------------------------------------------------------------------------------
# relative stabilities (Agarwal et al. 2022)


_RRS = "relative_representation_stability"


def _layer_outputs(m, layer, rows: torch.Tensor, with_outputs: bool = False):
    """The named layer's outputs for ``rows``, flattened, float64 (rows, k); chunked like the
    Model's forward passes. ``with_outputs``: also the model's outputs from the same passes
    (``(layer, outputs)``); otherwise each pass stops at the layer."""
    from ...explainers._layer_hooks import LayerHook, resolve_layer

    name, mod = resolve_layer(m.module, layer, _RRS)
    parts, outs = [], []
    with m.evaluating(), torch.no_grad(), LayerHook(mod, name, _RRS) as hook:
        for i, part in enumerate(chunks(rows.shape[0], m.chunk_rows(rows, forward_only=True))):
            # The first chunk runs whole: a pass stopped at the layer cannot see it run twice.
            out, h = hook.run(m, rows[part], stop=not with_outputs and i > 0)
            parts.append(h.reshape(h.shape[0], -1).double().cpu())
            outs.append(out)
    layer_out = torch.cat(parts).numpy()
    return (layer_out, torch.cat(outs).double().cpu().numpy()) if with_outputs else layer_out


def _explain_reading_layer(ex, layer, rows: torch.Tensor, target: np.ndarray, executor,
                           metric: str = "relative_representation_stability"):
    """``(explanation, layer outputs or None)``: explain ``rows`` with a hook on ``layer``. An
    explainer that keeps ``extra["outputs"]`` (saliency, input x gradient) ran its forward passes
    on exactly these rows, in order (after a one-row target check, for explainers that make
    one): the layer's outputs of those passes are the representation, and no second pass is needed. Otherwise (other
    explainers; an ``executor``, whose workers run the passes, and which may pickle the module, so
    no hook is set) None, and the caller runs its own pass."""
    from ...explainers._layer_hooks import LayerHook, resolve_layer

    if executor is not None:
        return P.explain_maps(ex, rows, target, metric, executor), None
    name, mod = resolve_layer(ex.model.module, layer, _RRS)
    with LayerHook(mod, name, _RRS, detach=True) as hook:
        e = P.explain_maps(ex, rows, target, metric, executor)
    sizes = [c.shape[0] for c in hook.captured]
    # The passes over the rows, in order: all of them (the target is checked inside the
    # explainer's own pass), or all but a first one-row pass (an explainer that checks it first).
    skip = 0 if sum(sizes) == rows.shape[0] else 1
    if "outputs" not in e.extra or not sizes or sum(sizes[skip:]) != rows.shape[0] or skip and sizes[0] != 1:
        return e, None
    return e, torch.cat([c.reshape(c.shape[0], -1) for c in hook.captured[skip:]]).double().cpu().numpy()


def _relative(v: np.ndarray, v_moved: np.ndarray, eps: float) -> np.ndarray:
    """Element-wise relative change (v - v') / v, with v = 0 read as eps: (..., d) -> L2 norm (...)."""
    return np.linalg.norm((v - v_moved) / np.where(v == 0, eps, v), axis=-1)


def _relative_stability(kind, explainer, x, target, radius, n_samples, seed, relative, eps_min, same_prediction,
                        attributions, layer, model, explainer_params, executor):
    ex = P.as_explainer(explainer, model, explainer_params)
    radius = check_float(radius, "radius", low=0.0, low_inclusive=False)
    n_samples = check_budget(n_samples, "n_samples", unit="explained inputs", what="per input")
    seed = parse_seed(seed)
    relative = check_bool(relative, "relative")
    eps_min = check_float(eps_min, "eps_min", low=0.0, low_inclusive=False)
    same_prediction = check_bool(same_prediction, "same_prediction")
    executor = check_executor(executor, "executor", rows=True)
    m = ex.model
    if kind == "representation" and m.module is None:
        P.refuse_torch_only(_RRS, f"it reads the output of layer {layer!r}", m.display_name(),
                            prefix="needs model to be a torch.nn.Module")
    xt = m.to_tensor(x, "x")
    xp = ops(xt)
    n = xt.shape[0]
    per_input = int(np.prod(xt.shape[1:]))
    check_budget(n_samples, "n_samples", per=n, unit="explained inputs", what=f"for {n} inputs",
                 nbytes=lambda v: 24 * v * per_input * n, hint="lower n_samples, or pass fewer inputs per call")
    if kind == "representation":  # the clean layer outputs and predictions in one pass
        h, outputs = _layer_outputs(m, layer, xt, with_outputs=True)
        outputs = torch.as_tensor(outputs)
    else:
        outputs = m.predict(xt)
    t = host(m.resolve_target(target, xt, outputs))
    metric = f"relative_{kind}_stability"
    if attributions is None:
        a = _maps(metric, ex, xt, t, executor, n)
    else:
        a = _given_maps(attributions, n)
    _, moved = P.noisy_copies(xt, radius, n_samples, seed, relative)
    t_moved = np.tile(t, n_samples)
    if kind == "representation":
        e_moved, h_moved = _explain_reading_layer(ex, layer, moved, t_moved, executor, metric)
    else:
        e_moved = P.explain_maps(ex, moved, t_moved, metric, executor)
    a_moved = np.asarray(e_moved.values, dtype=np.float64).reshape(n_samples, n, -1)
    if a_moved.shape[2] != a.shape[1]:
        raise ValueError(f"attributions have {a.shape[1]} values per sample but the explainer returns {a_moved.shape[2]}")
    num = _relative(a[None], a_moved, eps_min)  # (n_samples, n)
    # The noisy copies' outputs: from the explainer's own pass where it keeps them (saliency,
    # input x gradient), else one forward pass (shared with the layer's for the representation).
    out_moved = e_moved.extra.get("outputs") if kind == "output" or same_prediction else None
    need_outputs = (kind == "output" or same_prediction) and out_moved is None
    if kind == "input":
        x64 = host(xp.to_float64(xt)).reshape(1, n, -1)
        den = _relative(x64, host(xp.to_float64(moved)).reshape(n_samples, n, -1), eps_min)
    elif kind == "representation":
        if h_moved is None:
            h_moved = _layer_outputs(m, layer, moved, with_outputs=need_outputs)
            if need_outputs:
                h_moved, out_moved = h_moved
                need_outputs = False
        den = _relative(h[None], h_moved.reshape(n_samples, n, -1), eps_min)
    if need_outputs:
        out_moved = host(xp.to_float64(m.predict(moved)))
    if out_moved is not None:
        out_moved = np.asarray(out_moved, dtype=np.float64).reshape(n_samples, n, -1)
    if kind == "output":
        den = np.linalg.norm(host(xp.to_float64(outputs))[None] - out_moved, axis=-1)
    ratio = num / np.maximum(den, eps_min)
    if same_prediction:
        changed = out_moved.argmax(2) != host(outputs).argmax(1)[None]
        ratio[changed] = np.nan
    return _nanmax(ratio, 0)


_STABILITY_DOC = """

    Noise: ``n_samples`` draws uniform in the L-inf ball of radius ``radius * (max x_i - min x_i)``
    (``relative=True``) or ``radius`` (``relative=False``) around each sample, the draws of
    ``featurelens.metrics._perturb.uniform_draws`` of ``seed`` (None, an int or a numpy
    Generator), as :func:`featurelens.metrics.max_sensitivity`. Quantus 0.6 adds U(0.02, 0.2)
    instead (one-sided). Element-wise divisions read a zero divisor as ``eps_min``; the denominator
    norm is at least ``eps_min`` (the paper's ``max(., eps_min)``; Quantus adds ``eps_min`` only to
    an exact 0). ``same_prediction=True`` (the paper's rule): draws whose predicted class differs
    from the clean input's are left out of the maximum; a sample whose draws all change class gets
    NaN. Quantus 0.6 marks those draws NaN and then takes ``np.max``, so ONE changed draw makes the
    whole score NaN. ``attributions`` (optional) replaces ``e_x``. Lower is more stable. Returns
    float64 (n,).
    """


def relative_input_stability(
    explainer, x, target=None, *, model=None, explainer_params=None, radius=0.1, n_samples=20, seed=0, relative=True,
    eps_min=1e-6, same_prediction=True, attributions=None, executor=None,
):
    return _relative_stability("input", explainer, x, target, radius, n_samples, seed, relative, eps_min,
                               same_prediction, attributions, None, model, explainer_params, executor)


def relative_output_stability(
    explainer, x, target=None, *, model=None, explainer_params=None, radius=0.1, n_samples=20, seed=0, relative=True,
    eps_min=1e-6, same_prediction=True, attributions=None, executor=None,
):
    return _relative_stability("output", explainer, x, target, radius, n_samples, seed, relative, eps_min,
                               same_prediction, attributions, None, model, explainer_params, executor)


def relative_representation_stability(
    explainer, x, target=None, *, layer, model=None, explainer_params=None, radius=0.1, n_samples=20, seed=0,
    relative=True, eps_min=1e-6, same_prediction=True, attributions=None, executor=None,
):
    return _relative_stability("representation", explainer, x, target, radius, n_samples, seed, relative, eps_min,
                               same_prediction, attributions, layer, model, explainer_params, executor)


relative_input_stability.__doc__ = """Relative input stability (Agarwal, Johnson, Pawelczyk, Krishna,
    Saxena, Zitnik & Lakkaraju 2022, "Rethinking Stability for Attribution-based Explanations",
    arXiv:2203.06877).

    ``RIS(x) = max_{x'} ||(e_x - e_x') / e_x||_2 / max(||(x - x') / x||_2, eps_min)`` over noisy
    neighbours ``x'`` of ``x`` with the same predicted class: the relative change of the explanation
    per relative change of the input (divisions element-wise, norms over the flattened arrays).""" + _STABILITY_DOC

relative_output_stability.__doc__ = """Relative output stability (Agarwal et al. 2022,
    arXiv:2203.06877).

    ``ROS(x) = max_{x'} ||(e_x - e_x') / e_x||_2 / max(||h(x) - h(x')||_2, eps_min)`` over noisy
    neighbours with the same predicted class, ``h`` the model's outputs (all of them; logits for a
    plain torch module, the Model's ``output`` units otherwise), as in the paper and Quantus 0.6.""" + _STABILITY_DOC

relative_representation_stability.__doc__ = """Relative representation stability (Agarwal et al.
    2022, arXiv:2203.06877).

    ``RRS(x) = max_{x'} ||(e_x - e_x') / e_x||_2 / max(||(L(x) - L(x')) / L(x)||_2, eps_min)`` over
    noisy neighbours with the same predicted class, ``L`` the output of the model's ``layer``
    (keyword-only and required: a submodule name from ``model.named_modules()``, a unique dotted
    suffix of one, or the submodule; it must run once per forward pass), flattened. Needs a torch
    module.""" + _STABILITY_DOC


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def _continuity_steps(length: int, most: int = 8) -> int:
    """The most translations (at most ``most``) whose grid ``s_k = -L + (k + 1) ((2L + 1) // k_max)``
    leaves out the zero shift: a zero shift divides the map change of a stochastic explainer by
    ``0 + 1e-9``."""
    for k in range(min(most, 2 * length + 1), 0, -1):
        dx = (2 * length + 1) // k
        if not (length % dx == 0 and length // dx <= k):
            return k
    return 1


def _stability(fn):
    return lambda ctx: fn(ctx.explainer, ctx.x, target=ctx.target, radius=ctx.radius, n_samples=ctx.n_noise,
                          seed=ctx.seed, attributions=ctx.raw, **ctx.executor_kw())


from .._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "continuity", continuity, "robustness", -1,
        "largest change of the normalised map per unit input change over translations of "
        "the input (Montavon et al. 2018); lower is better",
        requires={"explainer", "translations"}, reexplains=True, quantus="Continuity",
        column="continuity", label="continuity",
        score=lambda ctx: continuity(ctx.explainer, ctx.x, target=ctx.target,
                                     steps=_continuity_steps(ctx.x.shape[-1]), **ctx.executor_kw())),
    MetricSpec(
        "consistency", consistency, "robustness", +1,
        "share of the samples with the same discretised map (top-5 features) that get the "
        "same prediction (Dasgupta et al. 2022); higher is better",
        requires={"explainer", "samples"}, quantus="Consistency", column="consistency", label="consistency",
        score=lambda ctx: consistency(ctx.explainer, ctx.x, target=ctx.target, attributions=ctx.raw,
                                      **ctx.executor_kw())),
    MetricSpec(
        "relative_input_stability", relative_input_stability, "robustness", -1,
        "largest relative map change over the relative input change under "
        "noise that keeps the prediction (Agarwal et al. 2022); lower is better",
        requires={"explainer", "noise"}, reexplains=True, quantus="RelativeInputStability",
        score=_stability(relative_input_stability), column="relative_input_stability", label="RIS"),
    MetricSpec(
        "relative_output_stability", relative_output_stability, "robustness", -1,
        "largest relative map change over the relative change of the outputs "
        "under noise that keeps the prediction (Agarwal et al. 2022); lower is better",
        requires={"explainer", "noise"}, reexplains=True, quantus="RelativeOutputStability",
        score=_stability(relative_output_stability), column="relative_output_stability", label="ROS"),
    MetricSpec(
        "relative_representation_stability", relative_representation_stability, "robustness", -1,
        "largest relative map change over the relative change of a layer's representation "
        "under noise that keeps the prediction (Agarwal et al. 2022); lower is better",
        requires={"explainer", "noise", "layer"}, reexplains=True,
        score=lambda ctx: relative_representation_stability(
            ctx.explainer, ctx.x, target=ctx.target, layer=ctx.layer, radius=ctx.radius, n_samples=ctx.n_noise,
            seed=ctx.seed, attributions=ctx.raw, **ctx.executor_kw())),
)
