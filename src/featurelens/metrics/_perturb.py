"""Shared machinery of the perturbation metrics (faithfulness and robustness).

Everything here is private. The public metrics call:

- :func:`prepare` to validate ``model``, ``x``, attributions and targets once;
- :func:`regions` to turn optional ``groups`` into a region index per input element;
- the seeded draw functions (:func:`subset_draws`, :func:`gaussian_draws`, :func:`uniform_draws`),
  which the tests call too, so that a naive reference computation sees the very same perturbations;
- :func:`forward_copies`, which sends ``n_copies`` perturbed copies of the whole batch through the
  model with :meth:`featurelens.models.Model.expanded_forward`, in chunks of the Model's rows.

Numpy mode: for a numpy model (a scikit-learn estimator or a numpy callable) :func:`prepare` puts the
Model in numpy mode (:meth:`featurelens.models.Model.with_numpy`), and every helper here takes and
returns numpy arrays for a numpy batch and tensors for a tensor batch (:mod:`featurelens.metrics._ops`
holds the few operations that read differently in numpy and torch), so a metric is written once and
never imports torch on a numpy model.

Parameter checks are those of :mod:`featurelens._validation` (``seed`` is None, an int or a numpy
Generator everywhere); baselines go through :func:`featurelens._validation.resolve_baseline`, with
the metric-specific strings ``"blur"``, ``"mean"`` and ``"min"`` on top (:func:`baseline_tensor`).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from typing import Callable, Iterator

import numpy as np
from featurelens._optional import TORCH_EXTRA, is_tensor, torch

from .._arrays import host, ops

from .._random import numpy_rng
from .._validation import (
    as_numpy,
    check_float,
    check_floating,
    check_option,
    relative_scale,
    resolve_baseline,
)
from ..models import Model

#: The replacement values the perturbation metrics accept besides resolve_baseline's numbers/arrays.
BASELINE_STRINGS = ("blur", "mean", "min")


def attributions_array(a, name: str = "a") -> np.ndarray:
    """Attributions (array, tensor or Explanation) as a finite floating numpy array."""
    arr = as_numpy(a, name)
    if arr.dtype == object or arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    check_floating(arr, name)
    return arr


def broadcast_attributions(a: np.ndarray, x_shape: tuple, name: str = "a") -> np.ndarray:
    """Attributions shaped like ``x``, or an image map (n, h, w) / (n, 1, h, w) spread over channels."""
    if a.shape == tuple(x_shape):
        return a
    n = x_shape[0]
    if len(x_shape) == 4 and a.shape in ((n,) + tuple(x_shape[2:]), (n, 1) + tuple(x_shape[2:])):
        return np.broadcast_to(a.reshape(n, 1, *x_shape[2:]), x_shape)
    raise ValueError(
        f"{name} must have the shape of x {tuple(x_shape)} (or, for images, of the spatial map "
        f"(n, h, w) / (n, 1, h, w)); got shape {a.shape}"
    )


def prepare(model, x, a, target, output: str | None = None, executor=None):
    """Validate once: return (Model, x, a like x, target, f_t(x) (n,) float64).

    A numpy model (a scikit-learn estimator or a numpy callable) is used in numpy mode
    (:meth:`featurelens.models.Model.with_numpy`): ``x`` and ``a`` come back as numpy arrays (in
    ``x``'s float dtype), the target as an int64 array and ``f_t(x)`` as a float64 array, and no
    later step of the metric imports torch. A torch model gets tensors on its device (``target``
    a long tensor), as before. The model is called on the same numpy rows either way.

    ``output``: the units the metric sees the model's outputs in, ``"raw"``, ``"probability"`` or
    ``"log_odds"`` (:class:`featurelens.models.Model`); None keeps the Model's own (``"raw"`` for
    anything that is not a ``Model(..., output=...)``). The returned Model is in those units, so
    every later forward pass of the metric is too. ``executor``: the forward passes of the perturbed
    copies run on its workers (:meth:`featurelens.models.Model.with_executor`).
    """
    m = Model.wrap(model, output=output).with_numpy().with_executor(executor)
    xt = m.to_tensor(x, "x")
    xp = ops(xt)
    a_np = broadcast_attributions(attributions_array(a), tuple(xt.shape))
    outputs = m.predict(xt)
    t = m.resolve_target(target, xt, outputs)
    at = xp.copy_as(a_np, xt.dtype, like=xt)  # copies a read-only broadcast
    return m, xt, at, t, xp.to_float64(xp.pick(outputs, t))


def regions(groups, x_shape: tuple, spatial_map: bool) -> tuple[np.ndarray | None, int]:
    """Region index of every element of one input (flattened), and the number of regions.

    ``groups`` None: every element is its own region (``None`` is returned for speed), except for
    an image batch explained by a spatial map, where a pixel (all its channels) is a region.
    Otherwise ``groups`` is an int array shaped like one input or, for images, like the spatial map;
    its labels are renumbered 0..G-1 in sorted order.
    """
    one = tuple(x_shape[1:])
    if groups is None:
        if spatial_map and len(x_shape) == 4 and x_shape[1] > 1:
            pix = np.arange(x_shape[2] * x_shape[3]).reshape(1, *x_shape[2:])
            return np.broadcast_to(pix, one).reshape(-1).copy(), x_shape[2] * x_shape[3]
        return None, int(np.prod(one))
    g = as_numpy(groups, "groups")
    if g.dtype.kind not in "iu":
        raise TypeError(f"groups must be an int array; got dtype {g.dtype}")
    if g.shape != one:
        if len(x_shape) == 4 and g.shape in (tuple(x_shape[2:]), (1,) + tuple(x_shape[2:])):
            g = np.broadcast_to(g.reshape(1, *x_shape[2:]), one)
        else:
            raise ValueError(
                f"groups must have the shape of one input {one}"
                + (f" or of the spatial map {tuple(x_shape[2:])}" if len(x_shape) == 4 else "")
                + f"; got shape {g.shape}"
            )
    labels, inverse = np.unique(g.reshape(-1), return_inverse=True)
    return inverse.astype(np.int64), int(labels.size)


def region_scores(a, region_of: np.ndarray | None, n_regions: int):
    """Summed attribution per region, (n, G), float64 (numpy or torch, as ``a``). The sums run
    element by element in order on both backends, so they agree bit for bit."""
    xp = ops(a)
    flat = xp.to_float64(a.reshape(a.shape[0], -1))
    if region_of is None:
        return flat
    return xp.index_add_columns(a.shape[0], n_regions, region_of, flat)


def descending_ranks(scores):
    """Rank of every region per sample, 0 = largest score; ties go to the smaller index (stable)."""
    xp = ops(scores)
    return xp.inverse_permutation(xp.stable_argsort(-scores, axis=1))


def element_view(per_region, region_of: np.ndarray | None, x_shape: tuple):
    """Spread a per-region array (..., G) over the elements of one input: (..., *x_shape[1:])."""
    if region_of is not None:
        per_region = per_region[..., ops(per_region).asarray(region_of, like=per_region)]
    return per_region.reshape(*per_region.shape[:-1], *x_shape[1:])


# --------------------------------------------------------------------------------------------------
# baselines


def _gaussian_kernel(sigma: float) -> tuple[int, np.ndarray]:
    """The blur's radius ``max(1, ceil(3 sigma))`` and its normalised float64 Gaussian kernel."""
    radius = max(1, int(math.ceil(3 * sigma)))
    t = np.arange(-radius, radius + 1, dtype=np.float64)
    k = np.exp(-0.5 * (t / sigma) ** 2)
    return radius, k / k.sum()


def gaussian_blur(x, sigma: float):
    """Separable Gaussian blur over the last two axes (reflect padding, kernel radius 3 sigma).

    Parameters
    ----------
    x
        Images ``(..., h, w)``: a tensor (blurred with torch's convolutions on its device) or a
        numpy array (numpy mode: the same padding and kernel, the same numbers up to the order of
        the kernel's sums).
    sigma
        The standard deviation of the Gaussian, in pixels (> 0).

    Returns
    -------
    array or tensor
        The blurred images, shaped and typed like ``x``.
    """
    radius, k_np = _gaussian_kernel(sigma)
    shape = tuple(x.shape)
    # reflect padding needs pad < size; replicate covers tiny images.
    reflect = radius < min(shape[-2], shape[-1])
    if isinstance(x, np.ndarray):
        h, w = shape[-2:]
        k = k_np.astype(x.dtype)
        img = np.pad(x.reshape(-1, h, w), ((0, 0), (radius, radius), (radius, radius)),
                     mode="reflect" if reflect else "edge")
        rows = k[0] * img[:, :, 0:w]
        for j in range(1, k.size):  # along the width first, as torch's first convolution
            rows = rows + k[j] * img[:, :, j : j + w]
        out = k[0] * rows[:, 0:h, :]
        for j in range(1, k.size):
            out = out + k[j] * rows[:, j : j + h, :]
        return out.reshape(shape)
    t = torch.arange(-radius, radius + 1, dtype=torch.float64)  # torch's own exp, as it always was
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = (k / k.sum()).to(device=x.device, dtype=x.dtype)
    img = x.reshape(-1, 1, shape[-2], shape[-1])
    img = torch.nn.functional.pad(img, (radius, radius, radius, radius), mode="reflect" if reflect else "replicate")
    img = torch.nn.functional.conv2d(img, k.view(1, 1, 1, -1))
    img = torch.nn.functional.conv2d(img, k.view(1, 1, -1, 1))
    return img.reshape(shape)


def baseline_tensor(baseline, x, blur_sigma: float | None = None):
    """The replacement values, shaped like ``x`` (a numpy array for a numpy ``x``, numpy mode;
    a tensor on ``x``'s device otherwise).

    Anything :func:`featurelens._validation.resolve_baseline` takes (a number for a constant,
    an array shaped like ``x`` or like one input; None is its policy ``"zeros"``, the metrics'
    one meaning of None), or one of the strings: ``"blur"`` (Gaussian blur of each image, sigma
    ``blur_sigma``, default max(1, min(h, w) / 8) pixels), ``"mean"`` (each sample's mean),
    ``"min"`` (each sample's minimum, Quantus's "black"). The result may be a broadcast view:
    do not write into it.
    """
    if not isinstance(baseline, str):
        return resolve_baseline(baseline, x, "baseline", default="zeros")
    baseline = check_option(baseline, "baseline", BASELINE_STRINGS)
    if baseline == "blur":
        if x.ndim < 3:
            raise ValueError(
                f"baseline='blur' needs images (n, h, w) or (n, c, h, w); got x of shape {tuple(x.shape)}"
            )
        sigma = check_float(blur_sigma, "blur_sigma", low=0.0, low_inclusive=False, allow_none=True)
        return gaussian_blur(x, max(1.0, min(x.shape[-2:]) / 8) if sigma is None else sigma)
    xp = ops(x)
    flat = x.reshape(x.shape[0], -1)
    per_sample = flat.mean(1) if baseline == "mean" else xp.amin(flat, 1)
    return xp.expand(per_sample.reshape(-1, *([1] * (x.ndim - 1))), tuple(x.shape))


# --------------------------------------------------------------------------------------------------
# seeded draws (the tests call these to recompute a metric naively on the same perturbations)


def subset_draws(seed, n: int, n_regions: int, n_subsets: int, subset_size: int) -> Iterator[np.ndarray]:
    """Yield ``n_subsets`` bool masks (n, G): per sample a uniformly random subset of
    ``subset_size`` regions (without replacement), drawn one run after the other from one stream,
    ``numpy_rng(seed)`` (``default_rng(seed)`` for an int, the Generator itself for a Generator),
    so the draws do not depend on chunking."""
    rng = numpy_rng(seed)
    rows = np.arange(n)[:, None]
    for _ in range(n_subsets):
        # The subset_size smallest of G uniform keys form a uniform random subset.
        keys = rng.random((n, n_regions))
        idx = np.argpartition(keys, subset_size - 1, axis=1)[:, :subset_size]
        mask = np.zeros((n, n_regions), dtype=bool)
        mask[rows, idx] = True
        yield mask


def gaussian_draws(seed, n_copies: int, shape: tuple, scale: np.ndarray) -> Iterator[np.ndarray]:
    """Yield ``n_copies`` arrays shaped ``shape`` (= x.shape) of N(0, scale_i^2) noise, float64,
    one copy after the other from one ``numpy_rng(seed)`` stream."""
    rng = numpy_rng(seed)
    s = np.asarray(scale, dtype=np.float64).reshape(-1, *([1] * (len(shape) - 1)))
    for _ in range(n_copies):
        yield rng.standard_normal(shape) * s


def uniform_draws(seed, n_copies: int, shape: tuple, radius: np.ndarray) -> Iterator[np.ndarray]:
    """Yield ``n_copies`` arrays shaped ``shape`` of noise uniform in [-radius_i, radius_i] (the
    L-inf ball), float64, one copy after the other from one ``numpy_rng(seed)`` stream."""
    rng = numpy_rng(seed)
    r = np.asarray(radius, dtype=np.float64).reshape(-1, *([1] * (len(shape) - 1)))
    for _ in range(n_copies):
        yield rng.uniform(-1.0, 1.0, size=shape) * r


def sample_scale(x):
    """:func:`featurelens._validation.relative_scale` of ``x`` (its value range per sample, 1 for a
    constant sample), for a tensor or a numpy array (numpy mode), in ``x``'s kind and dtype."""
    if not isinstance(x, np.ndarray):
        return relative_scale(x)
    flat = x.reshape(x.shape[0], -1)
    r = flat.max(1) - flat.min(1)
    return np.where(r > 0, r, np.ones_like(r))


def noisy_copies(xt, radius: float, n_samples: int, seed, relative: bool):
    """The robustness metrics' noisy neighbours of a batch: ``n_samples`` copies of ``xt`` plus
    noise uniform in the L-inf ball of radius ``radius * (max x_i - min x_i)`` (``relative``, see
    :func:`featurelens._validation.relative_scale`) or ``radius``, drawn by :func:`uniform_draws`
    of ``seed``. Returns ``(noise, moved)``: the float64 draws (n_samples, n, *x.shape[1:]) and
    the copies as one copy-major batch (n_samples * n, *x.shape[1:]) in ``xt``'s kind and dtype
    (numpy in numpy mode, else a tensor on ``xt``'s device)."""
    xp = ops(xt)
    n = xt.shape[0]
    r = radius * (sample_scale(xt) if relative else xp.ones(n, like=xt, dtype=xp.float32))  # float32 ones, as always
    noise = np.stack(list(uniform_draws(numpy_rng(seed), n_samples, tuple(xt.shape), host(xp.to_float64(r)))))
    noise_t = xp.astype(xp.asarray(noise, like=xt), xt.dtype)
    return noise, (xt[None] + noise_t).reshape(n_samples * n, *xt.shape[1:])


# --------------------------------------------------------------------------------------------------
# batched forward passes over perturbed copies


def forward_copies(
    m: Model,
    x,
    target,
    n_copies: int,
    make_block: Callable,
):
    """Target outputs of ``n_copies`` perturbed copies of the batch, (n_copies, n) float64 (a
    numpy array for a numpy ``x``, numpy mode; else a tensor on ``x``'s device).

    ``make_block(copies)`` returns the inputs of the copies in the slice, shaped
    (k, n, *x.shape[1:]); it is called once per copy, in order (the seeded draws are consumed
    sequentially). The rows go through :meth:`Model.expanded_forward` in chunks of
    :meth:`Model.chunk_rows` rows: the Model's ``batch_size`` when one was given, else the
    gradient-pass default (at most 1024 rows and 2**19 input elements), not the 16k-row
    forward-only cap. Why: a perturbation metric sends image batches through conv nets, whose
    activations are many times the input; on the XAI-TRIS 8x8 CNN 1024-4096-row chunks run at
    ~9 us/row on one core and 8192-16384-row chunks at ~16 us/row (benchmarks/bench_metrics.py).
    The Model is only read, never changed.
    """
    make_rows = copy_rows(x, make_block)
    to_float64 = ops(x).to_float64
    return m.expanded_forward(
        x, n_copies, make_rows, target=target, transform=lambda v, c, s: to_float64(v), batch_size=m.chunk_rows(x)
    )


# --------------------------------------------------------------------------------------------------
# additions for the removal metrics (road, irof, selectivity, region_perturbation)


def patch_regions(x_shape: tuple, patch_size: int) -> tuple[np.ndarray, int]:
    """Square patches of an image batch (n, h, w) or (n, c, h, w) as regions of one input.

    The image is thought padded to a multiple of ``patch_size`` on each side, the padding split
    ``floor(pad / 2)`` before and ``ceil(pad / 2)`` after (Quantus's ``get_padding_size``), and
    cut into a grid of ``patch_size`` squares numbered row-major; every channel of a pixel shares
    its patch. Returns (region index of every element of one input, flattened; number of patches).
    Every patch holds at least one pixel, since the padding of a side is below ``patch_size``.
    """
    if len(x_shape) not in (3, 4):
        raise ValueError(f"patches need images (n, h, w) or (n, c, h, w); got x of shape {tuple(x_shape)}")
    h, w = x_shape[-2:]

    def axis(size):
        pad = (-size) % patch_size
        return (np.arange(size) + pad // 2) // patch_size, (size + pad) // patch_size

    rows, n_rows = axis(h)
    cols, n_cols = axis(w)
    pix = rows[:, None] * n_cols + cols[None, :]
    one = tuple(x_shape[1:])
    return np.broadcast_to(pix, one).reshape(-1).astype(np.int64), int(n_rows * n_cols)


def copy_rows(x, make_block: Callable):
    """The ``make_rows(copy_index, sample_index)`` of :meth:`Model.expanded_forward` for perturbed
    copies built whole, ``make_block(copies) -> (k, n, *x.shape[1:])``, called once per copy in order
    (the rule :func:`forward_copies` follows; chunks smaller than a copy keep the copies they cut)."""
    n = x.shape[0]
    built: dict = {}
    next_copy = 0

    def make_rows(copy_idx, sample_idx):
        nonlocal next_copy
        first, last = int(copy_idx[0]), int(copy_idx[-1])
        whole = int(sample_idx[0]) == 0 and sample_idx.shape[0] == (last - first + 1) * n
        if whole and first == next_copy:
            block = make_block(slice(first, last + 1))
            next_copy = last + 1
            return block.reshape(-1, *x.shape[1:])
        for c in [c for c in built if c < first]:
            del built[c]
        if last >= next_copy:
            block = make_block(slice(next_copy, last + 1))
            for j in range(block.shape[0]):
                built[next_copy + j] = block[j]
            next_copy = last + 1
        return ops(x).stack([built[c] for c in range(first, last + 1)])[copy_idx - first, sample_idx]

    return make_rows


def forward_copies_predicted(m: Model, x, n_copies: int, make_block: Callable):
    """The predicted class (argmax of the outputs) of ``n_copies`` perturbed copies of the batch,
    (n_copies, n) int64 (numpy or torch, as ``x``); ``make_block`` and the chunks as in
    :func:`forward_copies`."""
    return m.expanded_forward(
        x, n_copies, copy_rows(x, make_block), target=None, transform=lambda v, c, s: v.argmax(1),
        batch_size=m.chunk_rows(x),
    )


#: Neighbours (row offset, column offset, weight) of the noisy linear imputation (Rong et al. 2022):
#: 1/6 for the four direct neighbours, 1/12 for the four diagonal ones (they sum to 1).
IMPUTATION_NEIGHBOURS = (
    (1, 1, 1 / 12), (0, 1, 1 / 6), (-1, 1, 1 / 12), (1, -1, 1 / 12),
    (0, -1, 1 / 6), (-1, -1, 1 / 12), (1, 0, 1 / 6), (-1, 0, 1 / 6),
)


def noisy_linear_imputation(x: np.ndarray, removed: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
    """Impute the removed pixels of images from their neighbours, plus noise (Rong et al. 2022).

    ``x`` (B, c, h, w) float64, ``removed`` (B, h, w) bool, ``noise`` None or (B, c, h, w). Every
    removed pixel p gets, per channel, the value solving
    ``sum_{q in N(p)} w_q (v_p - v_q) = 0`` with ``v_q = x_q`` for kept neighbours q: a weighted
    mean of its (kept or imputed) 8-neighbours inside the image (weights
    :data:`IMPUTATION_NEIGHBOURS`), then ``+ noise_p``. All B images are solved as one sparse,
    block-diagonal system (one factorisation, c right-hand sides). A component of removed pixels
    with no kept neighbour (the whole image) leaves the system singular: callers keep one pixel.
    """
    from scipy.sparse import csc_matrix
    from scipy.sparse.linalg import spsolve

    _, c, h, w = x.shape
    b_idx, r_idx, q_idx = np.nonzero(removed)
    n_var = b_idx.size
    out = x.copy()
    if n_var == 0:
        return out
    var = np.full(removed.shape, -1, dtype=np.int64)
    var[b_idx, r_idx, q_idx] = np.arange(n_var)
    diag = np.zeros(n_var)
    rhs = np.zeros((n_var, c))
    rows, cols, vals = [np.arange(n_var)], [np.arange(n_var)], []
    for dr, dq, wt in IMPUTATION_NEIGHBOURS:
        rr, qq = r_idx + dr, q_idx + dq
        ok = (rr >= 0) & (rr < h) & (qq >= 0) & (qq < w)
        v, bb, rr, qq = np.flatnonzero(ok), b_idx[ok], rr[ok], qq[ok]
        diag[v] += wt
        nv = var[bb, rr, qq]
        unknown = nv >= 0
        rows.append(v[unknown])
        cols.append(nv[unknown])
        vals.append(np.full(int(unknown.sum()), -wt))
        known = ~unknown
        # v holds each variable once per offset, so the fancy-index += does not lose updates.
        rhs[v[known]] += wt * x[bb[known], :, rr[known], qq[known]]
    a = csc_matrix((np.concatenate([diag] + vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(n_var, n_var))
    sol = np.asarray(spsolve(a, rhs)).reshape(n_var, c)
    if noise is not None:
        sol = sol + noise[b_idx, :, r_idx, q_idx]
    out[b_idx, :, r_idx, q_idx] = sol
    return out


# --------------------------------------------------------------------------------------------------
# row-wise correlations shared by the metrics


def row_pearson(u, v) -> np.ndarray:
    """Row-wise Pearson correlation of two ``(rows, k)`` arrays (numpy or torch), float64; NaN
    where a row is constant."""
    u = np.asarray(u.detach().cpu() if is_tensor(u) else u, dtype=np.float64)
    v = np.asarray(v.detach().cpu() if is_tensor(v) else v, dtype=np.float64)
    u = u - u.mean(1, keepdims=True)
    v = v - v.mean(1, keepdims=True)
    den = np.sqrt((u * u).sum(1) * (v * v).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den == 0, np.nan, (u * v).sum(1) / den)


def row_spearman(u, v) -> np.ndarray:
    """Row-wise Spearman correlation: the Pearson correlation of average ranks (ties as
    scipy.stats.spearmanr); NaN where a row is constant."""
    from scipy.stats import rankdata

    u = np.asarray(u.detach().cpu() if is_tensor(u) else u, dtype=np.float64)
    v = np.asarray(v.detach().cpu() if is_tensor(v) else v, dtype=np.float64)
    return row_pearson(rankdata(u, axis=1), rankdata(v, axis=1))


# --------------------------------------------------------------------------------------------------
# metrics that need a torch module


def torch_installed() -> bool:
    """Whether torch can be found here, without importing it (already imported, or locatable)."""
    if sys.modules.get("torch") is not None:
        return True
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def refuse_torch_only(metric: str, needs: str, got: str, prefix: str = "model must be a torch.nn.Module"):
    """Raise the refusal of a metric that needs a torch module (``metric``, which ``needs`` it: "its
    layers are re-initialised") on a model that is not one (``got``: what was given).

    Parameters
    ----------
    metric
        The metric's name, first in the message.
    needs
        Why it needs a torch module.
    got
        What the model is (``"a RandomForestClassifier"``).
    prefix
        The requirement, as the message states it.

    Raises
    ------
    ImportError
        torch is not installed here: the message names the extra ``featurelens[torch]``.
    TypeError
        torch is installed but the model is not a torch module (the message names the extra too).
    """
    extra = f'pip install "{TORCH_EXTRA}"'
    if not torch_installed():
        raise ImportError(f"{metric} needs torch, which is not installed here ({extra}): {prefix} ({needs}); "
                          f"got {got}")
    raise TypeError(f"{metric}: {prefix} ({needs}; torch models need {extra}); got {got}")


# --------------------------------------------------------------------------------------------------
# the explainer of a metric that re-explains


def explain_maps(ex, rows, target, metric: str, executor=None):
    """``ex.explain(rows, target=target, executor=executor)`` for the metric ``metric``, which
    re-explains: the one call every such metric makes, refusing maps that hold NaN or inf (a model
    whose gradients are NaN, an explainer that divided by zero) with a ValueError naming the metric,
    the explainer and the rows, instead of passing them on as NaN scores. Returns the Explanation."""
    e = ex.explain(rows, target=target, executor=executor)
    values = np.asarray(e.values)
    if values.dtype.kind in "fc" and not bool(np.isfinite(values).all()):
        bad = ~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
        raise ValueError(
            f"{metric}: the explainer {ex.name!r} returned maps holding NaN or inf values for {int(bad.sum())} of "
            f"{bad.size} explained rows (first: row {int(np.flatnonzero(bad)[0])}); {metric} cannot score such "
            "maps. Check the model and the explainer on these inputs (NaN gradients, a division by zero)"
        )
    return e


def own_model(ex, model) -> bool:
    """Whether ``model`` is the Explainer ``ex``'s own model: its :class:`featurelens.models.Model`
    itself, or the module, function or estimator that Model wraps."""
    m = ex.model
    if model is m:
        return True
    from ..models import Model

    if isinstance(model, Model):
        return False
    return any(model is own for own in (m.module, m.function, m.estimator) if own is not None)


def as_explainer(explainer, model=None, explainer_params=None):
    """The Explainer a re-explaining metric uses: ``explainer`` itself (``model`` then None or the
    explainer's own model, :func:`own_model`; ``explainer_params`` empty: it is built already) or
    the registered name ``explainer`` built on ``model`` with ``explainer_params``."""
    from ..explainers._base import Explainer
    from ..explainers._base import explainer as make_explainer

    if isinstance(explainer, Explainer):
        if model is not None and not own_model(explainer, model):
            shape = getattr(model, "shape", None)
            got = f"a {type(model).__name__}" + ("" if shape is None else f" of shape {tuple(shape)}")
            raise ValueError(
                f"model must be None or the explainer's own model when explainer is an Explainer (it explains "
                f"its own model, {type(explainer.model.module or explainer.model.function).__name__}); got "
                f"{got}, another model. Pass x as the second argument: name(explainer, x, target, ...)"
            )
        if explainer_params:
            raise ValueError("explainer_params must be empty when explainer is an Explainer (it is built already)")
        return explainer
    if isinstance(explainer, str):
        if model is None:
            raise ValueError(f"explainer={explainer!r} is a name: pass model= (the model to explain) too")
        return make_explainer(explainer, model, **dict(explainer_params or {}))
    raise TypeError(
        "explainer must be a featurelens Explainer (fl.explainer('saliency', model)) or a registered "
        f"explainer name with model=; got {type(explainer).__name__}"
    )
