"""Localisation by overlap: top-k precision and IoU, the EMD score (XAI-TRIS), relevance mass and rank.

The definitions follow the XAI-TRIS benchmark: B. Clark, R. Wilming, S. Haufe, "XAI-TRIS: Non-linear
image benchmarks to quantify false positive post-hoc attribution of feature importance", Machine
Learning 113 (2024), arXiv:2306.12816.

The top-k and EMD metrics are called ``name(a, masks, *, ...)`` with the maps ``a`` and the
masks shaped (N, H, W) or (N, 1, H, W) (numpy arrays, torch tensors, or objects with a ``.values``
array such as :class:`featurelens.Explanation`) and return a float64 numpy array with one score
per sample. Maps with several channels, (N, C, H, W), are reduced to ``sum_c |a_c|``. Scores use
``|a|``; the sign of an attribution does not matter.

Conventions shared by the top-k and EMD metrics:

* A sample whose mask is empty gets ``NaN`` (there is nothing to localise).
* ``k`` is the number of ground-truth pixels of the sample. The "top-k" set holds the ``k`` pixels with
  the largest ``|a|`` among the pixels with ``|a| > 0`` (as in XAI-TRIS); ties are broken by a stable
  sort, i.e. the pixel with the smaller flat index (row-major) wins. A map with fewer than ``k``
  non-zero pixels selects only those, so an all-zero map scores 0 precision and 0 IoU.
* :func:`precision_at_k` and :func:`iou_at_k` take ``threshold=``, the rule that picks the selected set
  ``S``: ``"top_k"`` (default, the set above), ``"half_max"`` (``S = {|a| >= max|a| / 2}``) or a quantile
  ``q`` in (0, 1) (``S = {|a| >= Q_q(|a|)}``, ``Q_q`` the ``q``-quantile of the sample's ``H * W`` values
  of ``|a|``, numpy's default linear interpolation). Every rule keeps only pixels with ``|a| > 0``, so an
  all-zero map selects nothing and scores 0.
"""

from __future__ import annotations

import sys
import warnings
from functools import lru_cache

import numpy as np

from ..._validation import check_bool, check_int, check_option
from featurelens._optional import is_tensor

__all__ = ["precision_at_k", "iou_at_k", "emd_score", "relevance_mass", "relevance_rank_accuracy"]

_EMD_BACKENDS = ("auto", "pot", "scipy")
_POT_MAX_ITER = 10_000_000
# Above this many transport variables (sources x sinks) scipy's LP takes minutes per map.
_SCIPY_SLOW_VARIABLES = 200_000


THRESHOLDS = ("top_k", "half_max")


def _check_threshold(threshold):
    """``"top_k"``, ``"half_max"`` or a float quantile in (0, 1), checked; returned unchanged (a float
    for a quantile)."""
    if isinstance(threshold, str):
        return check_option(threshold, "threshold", THRESHOLDS)
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"threshold must be 'top_k', 'half_max' or a quantile in (0, 1); got {threshold!r} "
            f"({type(threshold).__name__})"
        )
    q = float(threshold)
    if not (0.0 < q < 1.0):
        raise ValueError(f"threshold must be 'top_k', 'half_max' or a quantile in (0, 1); got {threshold!r}")
    return q


def precision_at_k(a, masks, *, threshold="top_k") -> np.ndarray:
    """Top-k precision: the share of the ``k`` largest ``|a|`` pixels that lie in the mask.

    ``precision = |topk(|a|) ∩ GT| / k`` with ``k = |GT|`` (Clark et al. 2024, arXiv:2306.12816).
    The top-k set is defined in the module docstring (non-zero pixels only, stable tie-breaking).

    With ``threshold="half_max"`` or a quantile ``q`` the selected set ``S`` is the thresholded map of
    the module docstring and ``precision = |S ∩ GT| / |S|`` (0 when ``S`` is empty, i.e. an all-zero
    map); with ``"top_k"`` (default) ``|S| = k`` whenever the map has at least ``k`` non-zero pixels.
    Returns a float64 array (N,); ``NaN`` where the mask is empty.
    """
    threshold = _check_threshold(threshold)
    a, m = _prepare(a, masks)
    if threshold == "top_k":
        inter, _, k = _topk_counts(a, m)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = inter / k
    else:
        inter, selected, k = _threshold_counts(a, m, threshold)
        out = inter / np.maximum(selected, 1.0)
    out[k == 0] = np.nan
    return out


def iou_at_k(a, masks, *, threshold="top_k") -> np.ndarray:
    """Intersection over union of the top-k pixels of ``|a|`` (``k = |GT|``) with the mask.

    ``IoU = |S ∩ GT| / |S ∪ GT|`` with ``S`` the top-k set of the module docstring. When the map has at
    least ``k`` non-zero pixels, ``|S| = k`` and ``IoU = p / (2 - p)`` with ``p`` the
    :func:`precision_at_k`, a monotone transform (XAI-TRIS reports only ``p``).

    ``threshold`` picks ``S`` (module docstring): ``"top_k"`` (default), ``"half_max"``
    (``|a| >= max|a| / 2``, the fixed fraction of the maximum a mIoU is often thresholded at) or a
    quantile ``q`` in (0, 1). With a threshold rule ``|S|`` is not tied to ``|GT|``, so the IoU is no
    longer a function of the top-k precision. Returns a float64 array (N,); ``NaN`` where the mask is
    empty.
    """
    threshold = _check_threshold(threshold)
    a, m = _prepare(a, masks)
    if threshold == "top_k":
        inter, selected, k = _topk_counts(a, m)
    else:
        inter, selected, k = _threshold_counts(a, m, threshold)
    union = selected + k - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = inter / union
    out[k == 0] = np.nan
    return out


def emd_score(a, masks, *, backend: str = "auto", pool: int = 1) -> np.ndarray:
    """Earth mover's distance score between ``|a|`` and the mask, as in XAI-TRIS.

    Both ``|a|`` and the mask are normalised to sum 1 and compared with the exact optimal transport
    cost ``EMD`` under the Euclidean distance between pixel coordinates (row, col), in pixels. The score
    is ``1 - EMD / sqrt(2 * D)`` with ``D = H * W`` (the XAI-TRIS normalisation, Clark et al. 2024,
    arXiv:2306.12816; ``sqrt(128) = 11.3`` for 8x8). Note that ``sqrt(2 * D)`` exceeds the largest
    possible distance ``sqrt((H-1)^2 + (W-1)^2)``, so on an H x H image the score never drops below
    ``1/H`` (0.125 on 8x8); 1 means all attribution mass lies in the mask, spread like it.

    ``NaN`` for a sample whose mask is empty or whose attribution map is all zero (no mass to move).

    Args:
        a, masks: see the module docstring.
        backend: ``"pot"`` uses POT's network simplex (``ot.emd2``, an optional dependency; about
            0.1 ms for an 8x8 map, 0.3 to 3 s for a dense 64x64 map). ``"scipy"`` solves the
            transportation linear program with ``scipy.optimize.linprog(method="highs")`` (always
            available; about 2.5 ms for an 8x8 map, but many minutes for a dense 64x64 map, which
            triggers a ``RuntimeWarning``). ``"auto"`` picks POT when it can be imported, else scipy.
            Both are exact (they agree to about 1e-10).

        pool: ``1`` (default) solves the exact problem on pixels. ``pool = p > 1`` sums ``|a|`` and the
            mask over ``p x p`` blocks first and transports between block centres (distances still in
            pixels, the score still normalised by ``sqrt(2 * H * W)``): a dense 64x64 map then costs
            about 25 ms (``p = 2``) instead of seconds. Moving every unit of mass to its block
            centre shifts it by at most ``(p - 1) / sqrt(2)`` pixels, so the pooled EMD differs from
            the exact one by at most ``sqrt(2) (p - 1)`` pixels, and the score by at most
            ``sqrt(2) (p - 1) / sqrt(2 * H * W)`` (0.016 for ``p = 2`` on 64x64). H and W must be
            multiples of ``p``.

    The transport problem is restricted to the supports: sources are the pixels with ``|a| > 0``,
    sinks the mask pixels.
    """
    backend = check_option(backend, "backend", _EMD_BACKENDS)
    pool = check_int(pool, "pool", low=1)
    a, m = _prepare(a, masks)
    norm = np.sqrt(2.0 * a.shape[1] * a.shape[2])  # of the original image, whatever the pooling
    if pool > 1:
        n, h, w = a.shape
        if h % pool or w % pool:
            raise ValueError(f"pool must divide the image size; got pool={pool} for {h}x{w} maps")
        a = a.reshape(n, h // pool, pool, w // pool, pool).sum(axis=(2, 4))
        m = m.reshape(n, h // pool, pool, w // pool, pool).sum(axis=(2, 4))
    height, width = a.shape[1], a.shape[2]
    solve = _emd_solver(backend)
    flat_a = a.reshape(a.shape[0], -1)
    flat_m = m.reshape(m.shape[0], -1).astype(np.float64)  # mask pixels per block (1 unpooled)
    if solve is _emd_scipy and a.shape[0]:
        largest = int(((flat_a > 0).sum(axis=1) * (flat_m > 0).sum(axis=1)).max())
        if largest > _SCIPY_SLOW_VARIABLES:
            warnings.warn(
                f"emd_score is solving transport problems with up to {largest} variables through "
                "scipy's linprog, which can take minutes per map; install POT (pip install pot) "
                "for its network simplex solver",
                RuntimeWarning,
                stacklevel=2,
            )
    out = np.full(a.shape[0], np.nan)
    for i in range(a.shape[0]):  # one exact transport problem per sample; no batched exact solver
        src = np.flatnonzero(flat_a[i])
        dst = np.flatnonzero(flat_m[i])
        if src.size == 0 or dst.size == 0:
            continue
        mass = flat_a[i, src]
        mass = mass / mass.sum()
        target = flat_m[i, dst] / flat_m[i, dst].sum()
        cost = pool * _pixel_distances(height, width, src, dst)  # block centres, in pixels
        out[i] = 1.0 - solve(mass, target, cost) / norm
    return out


# --------------------------------------------------------------------------------------------------
# input handling


def _to_numpy(obj, name: str) -> np.ndarray:
    # is_tensor never imports torch: a tensor can only exist if torch is already imported
    tensor = is_tensor(obj)
    if not tensor and not isinstance(obj, np.ndarray):
        values = getattr(obj, "values", None)  # Explanation-like; torch's .values() is a method
        if values is not None and not callable(values):
            obj = values
            tensor = is_tensor(obj)
    if tensor:
        torch = sys.modules["torch"]
        t = obj.detach().cpu()
        if t.dtype == torch.bfloat16 or t.dtype == torch.float16:
            t = t.float()
        obj = t.numpy()
    try:
        arr = np.asarray(obj)
    except Exception as err:
        raise TypeError(
            f"{name} must be a numpy array, torch tensor or Explanation; got {type(obj).__name__}"
        ) from err
    if arr.dtype == object or not (arr.dtype.kind in "biuf"):
        raise TypeError(f"{name} must hold real numbers or booleans; got dtype {arr.dtype}")
    return arr


def _squeeze_channels(arr: np.ndarray, name: str, reduce_channels: bool) -> np.ndarray:
    if arr.ndim == 3:
        return arr
    if arr.ndim == 4:
        if arr.shape[1] == 1:
            return arr[:, 0]
        if reduce_channels:
            return np.abs(arr).sum(axis=1)
        raise ValueError(
            f"{name} must have shape (N, H, W) or (N, 1, H, W); got {arr.shape} with {arr.shape[1]} "
            "channels"
        )
    raise ValueError(f"{name} must have shape (N, H, W) or (N, C, H, W); got {arr.shape}")


def _prepare(a, masks) -> tuple[np.ndarray, np.ndarray]:
    """Return (|a| as float64 (N, H, W), mask as bool (N, H, W)), validated."""
    a_raw = _to_numpy(a, "a")
    m_raw = _to_numpy(masks, "masks")
    a = _squeeze_channels(a_raw, "a", reduce_channels=True)
    m = _squeeze_channels(m_raw, "masks", reduce_channels=False)
    if a.shape != m.shape:
        raise ValueError(
            f"a and masks must have the same shape (after dropping a singleton channel axis); got a "
            f"{a_raw.shape} and masks {m_raw.shape}"
        )
    a = np.abs(a.astype(np.float64, copy=False))
    if not np.all(np.isfinite(a)):
        raise ValueError("a contains NaN or inf values; expected finite numbers")
    if m.dtype != bool:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError(
                f"masks must be boolean or hold only 0 and 1; got values such as "
                f"{m[(m != 0) & (m != 1)].flat[0]!r}"
            )
        m = m.astype(bool)
    return a, m


# --------------------------------------------------------------------------------------------------
# top-k


def _topk_counts(a: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: |S ∩ GT|, |S| and k = |GT| as float64, S = top-k non-zero pixels of |a|."""
    n = a.shape[0]
    flat_a = a.reshape(n, -1)
    flat_m = m.reshape(n, -1)
    k = flat_m.sum(axis=1)
    order = np.argsort(-flat_a, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(flat_a.shape[1])[None, :], axis=1)
    selected = (ranks < k[:, None]) & (flat_a > 0)
    inter = (selected & flat_m).sum(axis=1)
    return inter.astype(np.float64), selected.sum(axis=1).astype(np.float64), k.astype(np.float64)


def _threshold_counts(a: np.ndarray, m: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: |S ∩ GT|, |S| and |GT| as float64, S = the non-zero pixels of |a| at or above the
    threshold (``"half_max"``: max|a| / 2; a float q: the q-quantile of |a| over the sample)."""
    n = a.shape[0]
    flat_a = a.reshape(n, -1)
    flat_m = m.reshape(n, -1)
    if threshold == "half_max":
        cut = 0.5 * flat_a.max(axis=1, initial=0.0)
    else:
        cut = np.quantile(flat_a, threshold, axis=1) if flat_a.shape[1] else np.zeros(n)
    selected = (flat_a >= cut[:, None]) & (flat_a > 0)
    inter = (selected & flat_m).sum(axis=1)
    k = flat_m.sum(axis=1)
    return inter.astype(np.float64), selected.sum(axis=1).astype(np.float64), k.astype(np.float64)


# --------------------------------------------------------------------------------------------------
# earth mover's distance


@lru_cache(maxsize=8)
def _all_distances(height: int, width: int) -> np.ndarray:
    rows, cols = np.divmod(np.arange(height * width), width)
    coords = np.stack([rows, cols], axis=1).astype(np.float64)
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff**2).sum(axis=-1))


def _pixel_distances(height: int, width: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Euclidean distances (len(src), len(dst)) between flat pixel indices, C-contiguous float64."""
    if height * width <= 1024:  # cache the full matrix for small images (<= 8 MB)
        return np.ascontiguousarray(_all_distances(height, width)[np.ix_(src, dst)])
    r_s, c_s = np.divmod(src, width)
    r_d, c_d = np.divmod(dst, width)
    return np.hypot(r_s[:, None] - r_d[None, :], c_s[:, None] - c_d[None, :]).astype(np.float64)


def _emd_solver(backend: str):
    if backend in ("auto", "pot"):
        try:
            import ot  # noqa: F401
        except ImportError:
            if backend == "pot":
                raise ImportError(
                    "emd_score(backend='pot') needs the optional dependency POT (pip install pot); "
                    "use backend='scipy' or 'auto'"
                ) from None
        else:
            return _emd_pot
    return _emd_scipy


def _emd_pot(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> float:
    import ot

    value, log = ot.emd2(a, b, cost, numItermax=_POT_MAX_ITER, log=True)
    if log.get("result_code", 1) != 1:
        raise RuntimeError(f"POT's exact EMD solver did not converge: {log.get('warning')}")
    return float(value)


@lru_cache(maxsize=64)
def _transport_constraints(n_src: int, n_dst: int):
    """Equality constraints of the transportation LP over x[i, j] (row-major), as a sparse matrix.

    Rows: sum_j x[i, j] = a_i for every source i, then sum_i x[i, j] = b_j for all sinks but the last
    (that one follows from the others because sum a = sum b; dropping it keeps the system full rank).
    """
    from scipy import sparse

    var = np.arange(n_src * n_dst)
    src_rows = var // n_dst
    dst_rows = n_src + var % n_dst
    keep = dst_rows < n_src + n_dst - 1
    rows = np.concatenate([src_rows, dst_rows[keep]])
    cols = np.concatenate([var, var[keep]])
    data = np.ones(rows.size)
    return sparse.csc_array((data, (rows, cols)), shape=(n_src + n_dst - 1, n_src * n_dst))


def _emd_scipy(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> float:
    from scipy.optimize import linprog

    if a.size == 1 or b.size == 1:  # a single source or sink: the plan is forced
        return float((cost * a[:, None] * b[None, :]).sum())
    a_eq = _transport_constraints(a.size, b.size)
    b_eq = np.concatenate([a, b[:-1]])
    # Presolve buys nothing on a transportation problem and costs ~40 % of the run time.
    res = linprog(
        cost.ravel(), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs",
        options={"presolve": False},
    )
    if res.status != 0:
        raise RuntimeError(f"scipy's linprog failed on the EMD problem: {res.message}")
    return float(res.fun)


# --------------------------------------------------------------------------------------------------
# relevance mass and rank accuracy (Arras et al. 2022)

_MASS_MODES = ("positive", "abs", "signed")


def flat_pair(attributions, masks) -> tuple[np.ndarray, np.ndarray]:
    """(a as float64 (N, D), mask as bool (N, D)); a mask without the channel axis of an image
    batch (N, H, W) / (N, 1, H, W) is spread over the channels."""
    a = _to_numpy(attributions, "a").astype(np.float64, copy=False)
    m = _to_numpy(masks, "masks")
    if a.ndim < 2:
        raise ValueError(f"a must be a batch with the samples first, shape (n, ...); got shape {a.shape}")
    if m.shape != a.shape:
        if a.ndim == 4 and m.shape in ((a.shape[0],) + a.shape[2:], (a.shape[0], 1) + a.shape[2:]):
            m = np.broadcast_to(m.reshape(a.shape[0], 1, *a.shape[2:]), a.shape)
        else:
            raise ValueError(
                f"masks must have the shape of a {a.shape} (or of its spatial map); got shape {m.shape}"
            )
    if not np.all(np.isfinite(a)):
        raise ValueError("a contains NaN or inf values; expected finite numbers")
    if m.dtype != bool:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError("masks must be boolean or hold only 0 and 1; got other values")
        m = m.astype(bool)
    n = a.shape[0]
    return a.reshape(n, -1), m.reshape(n, -1)


def relevance_mass(a, masks, *, mode: str = "abs") -> np.ndarray:
    """Relevance mass accuracy: the share of the relevance that falls inside the mask.

    ``R_in / R_total`` with ``R = sum of r_i`` over the mask / the whole input, per sample (Arras,
    Osman & Samek 2022, Information Fusion 81, arXiv:2003.07258). ``mode`` picks ``r``:
    ``"abs"`` (default: ``|a|``, so that evidence against the class counts as relevance too;
    Quantus ``RelevanceMassAccuracy(abs=True)``), ``"positive"`` (the paper: ``max(a, 0)``) or
    ``"signed"`` (``a`` itself; Quantus's default ``abs=False``, whose ratio can leave [0, 1]). Normalising ``a`` does not change the ratio. NaN
    where the mask is empty or the total is 0. Returns float64 (n,).
    """
    mode = check_option(mode, "mode", _MASS_MODES)
    v, m = flat_pair(a, masks)
    if mode == "positive":
        v = np.maximum(v, 0.0)
    elif mode == "abs":
        v = np.abs(v)
    inside = (v * m).sum(axis=1)
    total = v.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = inside / total
    out[(m.sum(axis=1) == 0) | (total == 0)] = np.nan
    return out


def relevance_rank_accuracy(a, masks, *, abs: bool = False) -> np.ndarray:
    """Relevance rank accuracy: the share of the K highest-ranked elements that lie in the mask.

    ``|top_K(a) ∩ GT| / K`` with ``K = |GT|`` per sample (Arras, Osman & Samek 2022, Information
    Fusion 81, arXiv:2003.07258); ranks by the signed ``a`` as in Quantus's
    ``RelevanceRankAccuracy`` (default ``abs=False``), by ``|a|`` with ``abs=True``. Ties are broken
    by the smaller flat index (stable sort; Quantus's unstable sort may differ only on ties). NaN
    where the mask is empty. Returns float64 (n,).
    """
    abs = check_bool(abs, "abs")
    v, m = flat_pair(a, masks)
    if abs:
        v = np.abs(v)
    k = m.sum(axis=1)
    order = np.argsort(-v, axis=1, kind="stable")
    hits = np.take_along_axis(m, order, axis=1)
    top = np.arange(v.shape[1])[None, :] < k[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (hits & top).sum(axis=1) / k.astype(np.float64)
    out[k == 0] = np.nan
    return out


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def mask_layout(a, masks):
    """Maps and masks in the (n, H, W) layout of the localisation metrics: tabular rows become
    1 x d images; a mask over the length of (n, C, L) signals holds for every channel; a mask
    with the channels of (n, C, H, W) maps keeps its first channel."""
    a = np.asarray(a)
    if masks.ndim == 2 and a.ndim == 3 and masks.shape[1] == a.shape[2]:
        masks = np.broadcast_to(masks[:, None, :], a.shape)
    if masks.ndim == 2:
        return a.reshape(a.shape[0], 1, -1), masks.reshape(masks.shape[0], 1, -1)
    if masks.ndim == a.ndim and masks.shape[1:] == a.shape[1:] and a.ndim == 4:
        return a, masks[:, :1] if masks.shape[1] > 1 else masks
    return a, masks


def on_masks(fn):
    return lambda ctx: fn(*mask_layout(ctx.a, ctx.masks))


from .._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "relevance_mass", relevance_mass, "localisation", +1,
        "share of |a| inside the ground-truth mask (Arras et al. 2022); higher is better",
        requires={"masks"}, quantus="RelevanceMassAccuracy", score=on_masks(relevance_mass),
        column="relevance_mass", label="rel. mass", audit_default=True),
    MetricSpec(
        "relevance_rank_accuracy", relevance_rank_accuracy, "localisation", +1,
        "share of the top-|mask| features inside the mask (Arras et al. 2022); "
        "higher is better",
        requires={"masks"}, quantus="RelevanceRankAccuracy", score=on_masks(relevance_rank_accuracy),
        column="relevance_rank_accuracy", label="rank acc.", audit_default=True),
    MetricSpec(
        "precision_at_k", precision_at_k, "localisation", +1,
        "share of the k most relevant features inside the mask (Clark et al. 2024; threshold= "
        "'top_k' by default, or 'half_max' / a quantile); higher is better",
        requires={"masks"}, score=on_masks(precision_at_k), column="precision_at_k", label="prec@k",
        audit_default=True, benchmark=("precision", "precision")),
    MetricSpec(
        "iou_at_k", iou_at_k, "localisation", +1,
        "intersection over union of the k most relevant features with the mask, k = |mask| "
        "(Clark et al. 2024; threshold= 'top_k' by default, or 'half_max' / a quantile); higher is better",
        requires={"masks"}, score=on_masks(iou_at_k), benchmark=("iou", "IoU")),
    MetricSpec(
        "emd_score", emd_score, "localisation", +1,
        "1 - the earth mover's distance between |a| and the mask, both normalised, over sqrt(2 D) "
        "(Clark et al. 2024); higher is better",
        requires={"masks"}, score=on_masks(emd_score), benchmark=("emd", "EMD")),
)
