"""Shared machinery of the perturbation metrics (faithfulness and robustness).

Everything here is private. The public metrics call:

- :func:`prepare` to validate ``model``, ``x``, attributions and targets once;
- :func:`regions` to turn optional ``groups`` into a region index per input element;
- the seeded draw functions (:func:`subset_draws`, :func:`gaussian_draws`, :func:`uniform_draws`),
  which the tests call too, so that a naive reference computation sees the very same perturbations;
- :func:`forward_copies`, which sends ``n_copies`` perturbed copies of the whole batch through the
  model, a block of copies at a time, with the rows chunked by the Model's batching.
"""

from __future__ import annotations

import math
import numbers
from typing import Callable, Iterator

import numpy as np
import torch

from .._batching import chunks
from .._validation import as_numpy, check_floating
from ..models import Model


# --------------------------------------------------------------------------------------------------
# validation


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int; got {seed!r}")
    return int(seed)


def check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
    return int(value)


def check_positive_float(value, name: str, allow_zero: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}; got {value!r}")
    return float(value)


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


def prepare(model, x, a, target):
    """Validate once: return (Model, x tensor, a tensor like x, target long tensor, f_t(x) (n,))."""
    m = Model.wrap(model)
    xt = m.to_tensor(x, "x")
    a_np = broadcast_attributions(attributions_array(a), tuple(xt.shape))
    outputs = m.predict(xt)
    t = m.resolve_target(target, xt, outputs)
    at = torch.tensor(np.asarray(a_np), device=xt.device).to(xt.dtype)  # copies a read-only broadcast
    return m, xt, at, t, outputs.gather(1, t[:, None])[:, 0].double()


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


def region_scores(a: torch.Tensor, region_of: np.ndarray | None, n_regions: int) -> torch.Tensor:
    """Summed attribution per region, (n, G), float64."""
    flat = a.reshape(a.shape[0], -1).double()
    if region_of is None:
        return flat
    idx = torch.as_tensor(region_of, device=a.device)
    return torch.zeros(a.shape[0], n_regions, dtype=torch.float64, device=a.device).index_add_(1, idx, flat)


def descending_ranks(scores: torch.Tensor) -> torch.Tensor:
    """Rank of every region per sample, 0 = largest score; ties go to the smaller index (stable)."""
    order = torch.sort(-scores, dim=1, stable=True).indices
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(scores.shape[1], device=scores.device).expand_as(order))
    return ranks


def element_view(per_region: torch.Tensor, region_of: np.ndarray | None, x_shape: tuple) -> torch.Tensor:
    """Spread a per-region tensor (..., G) over the elements of one input: (..., *x_shape[1:])."""
    if region_of is not None:
        per_region = per_region[..., torch.as_tensor(region_of, device=per_region.device)]
    return per_region.reshape(*per_region.shape[:-1], *x_shape[1:])


# --------------------------------------------------------------------------------------------------
# baselines


def gaussian_blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur over the last two axes (reflect padding, kernel radius 3 sigma)."""
    radius = max(1, int(math.ceil(3 * sigma)))
    t = torch.arange(-radius, radius + 1, dtype=torch.float64)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = (k / k.sum()).to(device=x.device, dtype=x.dtype)
    shape = x.shape
    img = x.reshape(-1, 1, shape[-2], shape[-1])
    # reflect padding needs pad < size; replicate covers tiny images.
    mode = "reflect" if radius < min(shape[-2], shape[-1]) else "replicate"
    img = torch.nn.functional.pad(img, (radius, radius, radius, radius), mode=mode)
    img = torch.nn.functional.conv2d(img, k.view(1, 1, 1, -1))
    img = torch.nn.functional.conv2d(img, k.view(1, 1, -1, 1))
    return img.reshape(shape)


def baseline_tensor(baseline, x: torch.Tensor, blur_sigma: float | None = None) -> torch.Tensor:
    """The replacement values, shaped like ``x``.

    A number; an array shaped like ``x`` or like one input; ``"blur"`` (Gaussian blur of each image,
    sigma ``blur_sigma``, default max(1, min(h, w) / 8) pixels); ``"mean"`` (each sample's mean);
    ``"min"`` (each sample's minimum, Quantus's "black").
    """
    if isinstance(baseline, str):
        if baseline == "blur":
            if x.ndim < 3:
                raise ValueError(
                    f"baseline='blur' needs images (n, h, w) or (n, c, h, w); got x of shape {tuple(x.shape)}"
                )
            sigma = max(1.0, min(x.shape[-2:]) / 8) if blur_sigma is None else check_positive_float(blur_sigma, "blur_sigma")
            return gaussian_blur(x, sigma)
        flat = x.reshape(x.shape[0], -1)
        if baseline == "mean":
            return flat.mean(1).view(-1, *([1] * (x.ndim - 1))).expand_as(x)
        if baseline == "min":
            return flat.min(1).values.view(-1, *([1] * (x.ndim - 1))).expand_as(x)
        raise ValueError(f"baseline must be a number, an array, 'blur', 'mean' or 'min'; got {baseline!r}")
    if isinstance(baseline, numbers.Real) and not isinstance(baseline, bool):
        if not math.isfinite(baseline):
            raise ValueError(f"baseline must be finite; got {baseline!r}")
        return torch.full_like(x, float(baseline))
    b = as_numpy(baseline, "baseline")
    if b.dtype.kind not in "fiu":
        raise TypeError(f"baseline must be a number, an array, 'blur', 'mean' or 'min'; got dtype {b.dtype}")
    b = b.astype(np.float64)
    check_floating(b, "baseline")
    if b.shape == tuple(x.shape):
        return torch.as_tensor(b, device=x.device).to(x.dtype)
    if b.shape == tuple(x.shape[1:]):
        return torch.as_tensor(b, device=x.device).to(x.dtype).expand_as(x)
    raise ValueError(
        f"baseline must be a number or an array shaped like x {tuple(x.shape)} or like one input "
        f"{tuple(x.shape[1:])}; got shape {b.shape}"
    )


def input_range(x: torch.Tensor) -> torch.Tensor:
    """max(x) - min(x) per sample, (n,); 1 where a sample is constant (so that a relative scale
    stays usable)."""
    flat = x.reshape(x.shape[0], -1)
    r = flat.max(1).values - flat.min(1).values
    return torch.where(r > 0, r, torch.ones_like(r))


# --------------------------------------------------------------------------------------------------
# seeded draws (the tests call these to recompute a metric naively on the same perturbations)


def subset_draws(seed: int, n: int, n_regions: int, n_subsets: int, subset_size: int) -> Iterator[np.ndarray]:
    """Yield ``n_subsets`` bool masks (n, G): per sample a uniformly random subset of
    ``subset_size`` regions (without replacement), drawn one run after the other from one
    ``numpy.random.default_rng(seed)`` stream, so the draws do not depend on chunking."""
    rng = np.random.default_rng(seed)
    rows = np.arange(n)[:, None]
    for _ in range(n_subsets):
        # The subset_size smallest of G uniform keys form a uniform random subset.
        keys = rng.random((n, n_regions))
        idx = np.argpartition(keys, subset_size - 1, axis=1)[:, :subset_size]
        mask = np.zeros((n, n_regions), dtype=bool)
        mask[rows, idx] = True
        yield mask


def gaussian_draws(seed: int, n_copies: int, shape: tuple, scale: np.ndarray) -> Iterator[np.ndarray]:
    """Yield ``n_copies`` arrays shaped ``shape`` (= x.shape) of N(0, scale_i^2) noise, float64,
    one copy after the other from one ``numpy.random.default_rng(seed)`` stream."""
    rng = np.random.default_rng(seed)
    s = np.asarray(scale, dtype=np.float64).reshape(-1, *([1] * (len(shape) - 1)))
    for _ in range(n_copies):
        yield rng.standard_normal(shape) * s


def uniform_draws(seed: int, n_copies: int, shape: tuple, radius: np.ndarray) -> Iterator[np.ndarray]:
    """Yield ``n_copies`` arrays shaped ``shape`` of noise uniform in [-radius_i, radius_i] (the
    L-inf ball), float64, one copy after the other from one ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    r = np.asarray(radius, dtype=np.float64).reshape(-1, *([1] * (len(shape) - 1)))
    for _ in range(n_copies):
        yield rng.uniform(-1.0, 1.0, size=shape) * r


# --------------------------------------------------------------------------------------------------
# batched forward passes over perturbed copies


def block_rows(m: Model, x: torch.Tensor) -> int:
    """Rows per forward chunk: the Model's batch_size when one was given, else the gradient-pass
    default (at most 1024 rows and 2**19 input elements), not the 16k-row forward-only cap.

    Why: a perturbation metric sends image batches through conv nets, whose activations are many
    times the input; on the XAI-TRIS 8x8 CNN 1024-4096-row chunks run at ~9 us/row on one core and
    8192-16384-row chunks at ~16 us/row (benchmarks/bench_metrics.py).
    """
    return m.chunk_rows(x)


def copies_per_block(m: Model, x: torch.Tensor) -> int:
    """Whole copies of the batch per block: as many as fit in one chunk of rows (at least one)."""
    return max(1, block_rows(m, x) // x.shape[0])


def forward_copies(
    m: Model,
    x: torch.Tensor,
    target: torch.Tensor,
    n_copies: int,
    make_block: Callable[[slice], torch.Tensor],
) -> torch.Tensor:
    """Target outputs of ``n_copies`` perturbed copies of the batch, (n_copies, n) float64.

    ``make_block(copies)`` returns the inputs of the copies in the slice, shaped
    (k, n, *x.shape[1:]); rows go through :meth:`Model.predict`, chunked by the Model's batching.
    """
    n = x.shape[0]
    out = torch.empty(n_copies, n, dtype=torch.float64, device=x.device)
    per = copies_per_block(m, x)
    with m.evaluating(), torch.no_grad():
        for s in chunks(n_copies, per):
            rows = make_block(s)
            k = rows.shape[0]
            y = m.predict(rows.reshape(k * n, *x.shape[1:]), batch_size=block_rows(m, x))
            out[s] = y.view(k, n, -1).gather(2, target.view(1, n, 1).expand(k, n, 1))[..., 0].double()
    return out
