"""Localisation metrics of the Quantus family: pointing game, attribution localisation, top-k
intersection, ROC AUC against the mask, and Focus on 2x2 mosaics.

Every metric is called ``name(a, masks, *, ...)``: attributions ``a`` (numpy array, torch tensor
or :class:`featurelens.Explanation`) with the samples first and a ground-truth mask of the same shape
(for images (n, c, h, w) also the spatial mask (n, h, w) / (n, 1, h, w), spread over the channels),
like :func:`featurelens.metrics.relevance_mass`, and returns a float64 array with one score per
sample. A sample whose mask is empty gets NaN (there is nothing to localise); a batch in which every
mask is empty is an error. Maps with NaN or inf are errors.

Focus takes mosaics instead of masks: :func:`focus_mosaics` builds 2x2 mosaics from a labelled image
batch and returns which quadrants hold the target class (its ``"layout"``); ``focus(a, layout)``
scores maps of those mosaics.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from ..._random import numpy_rng
from ..._validation import as_numpy, check_bool, check_float, check_int, check_option
from ..._budgets import check_budget
from .._perturb import attributions_array
from ._overlap import flat_pair

__all__ = [
    "attribution_localisation",
    "auc",
    "focus",
    "focus_mosaics",
    "pointing_game",
    "top_k_intersection",
]

_LOCALISATION_MODES = ("positive", "abs")


def _pair(a, masks):
    """(a float64 (n, D), mask bool (n, D), mask shaped like a); every mask empty is an error."""
    v, m = flat_pair(a, masks)
    if v.shape[0] and not m.any():
        raise ValueError("masks are empty for every sample; expected at least one True element in some mask")
    return v, m


def pointing_game(a, masks, *, tolerance: float = 0.0, abs: bool = False) -> np.ndarray:
    """Pointing game (Zhang, Bargal, Lin, Brandt, Shen & Sclaroff 2018, "Top-down Neural Attention by
    Excitation Backprop", IJCV 126, arXiv:1608.00507).

    ``hit = 1`` if the maximum of the map lies in the mask, else 0:
    ``hit_i = [argmax_j a_ij in GT_i]``. Every element that attains the maximum counts (a hit if any
    of them is in the mask), as in Quantus's ``PointingGame``. ``tolerance`` (the paper's 15-pixel
    tolerance): the maximum may lie within ``tolerance`` pixels (Euclidean distance over the last two
    axes) of the mask; needs maps with at least two spatial axes. ``abs=True`` points with ``|a|``.
    NaN where the mask is empty (Quantus 0.6 scores an empty mask 1: it writes NaN into a boolean
    array). Returns float64 (n,): 1.0 or 0.0.
    """
    tolerance = check_float(tolerance, "tolerance", low=0.0)
    abs = check_bool(abs, "abs")
    v, m = _pair(a, masks)
    if abs:
        v = np.abs(v)
    empty = ~m.any(axis=1)
    if tolerance > 0:
        m = _dilate(m, _map_shape(a, masks), tolerance)
    peak = v == v.max(axis=1, keepdims=True)
    out = (peak & m).any(axis=1).astype(np.float64)
    out[empty] = np.nan
    return out


def _map_shape(a, masks) -> tuple:
    arr = as_numpy(a, "a")
    if arr.ndim < 3:
        raise ValueError(
            f"tolerance > 0 needs maps with two spatial axes, (n, h, w) or (n, c, h, w); got a of shape {arr.shape}"
        )
    return tuple(arr.shape[1:])


def _dilate(m: np.ndarray, one: tuple, tolerance: float) -> np.ndarray:
    """Mask elements within ``tolerance`` pixels (Euclidean, over the last two axes) of a mask element."""
    from scipy.ndimage import binary_dilation

    r = int(np.floor(tolerance))
    dy, dx = np.mgrid[-r : r + 1, -r : r + 1]
    disk = (dy**2 + dx**2 <= tolerance**2)[None]  # one plane at a time: no reach across planes
    planes = m.reshape(-1, *one[-2:])  # every (sample, channel...) plane
    return binary_dilation(planes, structure=disk).reshape(m.shape[0], -1)


def attribution_localisation(a, masks, *, mode: str = "positive", weighted: bool = False) -> np.ndarray:
    """Attribution localisation (Kohlbrenner, Bauer, Nakajima, Binder, Samek & Lapuschkin 2020,
    "Towards Best Practice in Explaining Neural Network Decisions with LRP", IJCNN,
    arXiv:1910.09840).

    The share of the positive relevance that falls inside the mask,
    ``mu = R_in / R_tot`` with ``R = sum_j max(a_j, 0)`` over the mask / the whole input
    (``mode="positive"``, the paper), or with ``|a_j|`` (``mode="abs"``, Quantus's default
    ``abs=True``). ``weighted=True`` is the paper's size-weighted score
    ``mu_w = mu * S_tot / S_in`` (S = number of elements): 1 for a map spread uniformly, larger when
    the relevance concentrates in a small object. Quantus 0.6's ``weighted=True`` multiplies by
    ``S_in / x_batch[2:].size`` instead (the inverse weight, over the batch minus its first two
    samples), which we do not follow. NaN where the mask is empty or the total relevance is 0.
    Returns float64 (n,).
    """
    mode = check_option(mode, "mode", _LOCALISATION_MODES)
    weighted = check_bool(weighted, "weighted")
    v, m = _pair(a, masks)
    v = np.maximum(v, 0.0) if mode == "positive" else np.abs(v)
    inside = (v * m).sum(axis=1)
    total = v.sum(axis=1)
    size = m.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = inside / total
        if weighted:
            out = out * (m.shape[1] / size)
    out[(size == 0) | (total == 0)] = np.nan
    return out


def top_k_intersection(a, masks, *, k: int, abs: bool = False, concept_influence: bool = False) -> np.ndarray:
    """Top-k intersection (Theiner, Müller-Budack & Ewerth 2021, "Interpretable Semantic Photo
    Geolocation", WACV 2022, arXiv:2104.14995).

    The share of the ``k`` highest-attributed elements that lie in the mask,
    ``TKI = |top_k(a) ∩ GT| / k`` (ranked by the signed ``a``, by ``|a|`` with ``abs=True``; ties go
    to the smaller flat index). ``concept_influence=True`` divides by the mask's share of the input,
    ``TKI * D / |GT|`` (1 = no better than chance), as Quantus's ``TopKIntersection``. ``k``
    (keyword-only, required; Quantus's default is 1000) is at most the number of elements per
    sample. NaN where the mask is empty. Returns float64 (n,).
    """
    abs = check_bool(abs, "abs")
    concept_influence = check_bool(concept_influence, "concept_influence")
    v, m = _pair(a, masks)
    k = check_int(k, "k", low=1, high=v.shape[1])
    if abs:
        v = np.abs(v)
    order = np.argsort(-v, axis=1, kind="stable")[:, :k]
    out = np.take_along_axis(m, order, axis=1).mean(axis=1)
    size = m.sum(axis=1)
    if concept_influence:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = out * (m.shape[1] / size)
    out[size == 0] = np.nan
    return out


def auc(a, masks, *, abs: bool = False) -> np.ndarray:
    """Area under the ROC curve of the map as a score for the mask, per sample (Fawcett 2006,
    "An introduction to ROC analysis", Pattern Recognition Letters 27).

    The mask elements are the positives: ``AUC = P(a_pos > a_neg) + P(a_pos = a_neg) / 2`` over
    pairs of a mask element and an element outside it, computed exactly from average ranks (the
    Mann-Whitney statistic, ``(sum of positive ranks - P (P + 1) / 2) / (P N)``), which equals the
    trapezoid area under sklearn's ``roc_curve`` that Quantus's ``AUC`` integrates. Signed ``a`` by
    default (Quantus's ``abs=False``), ``|a|`` with ``abs=True``. 0.5 for a random map, 1 when
    every mask element outranks every other element. NaN where the mask is empty or covers the
    whole input (no negatives). Returns float64 (n,).
    """
    abs = check_bool(abs, "abs")
    v, m = _pair(a, masks)
    if abs:
        v = np.abs(v)
    ranks = rankdata(v, axis=1)  # average ranks for ties, 1-based
    pos = m.sum(axis=1).astype(np.float64)
    neg = m.shape[1] - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ((ranks * m).sum(axis=1) - pos * (pos + 1) / 2) / (pos * neg)
    out[(pos == 0) | (neg == 0)] = np.nan
    return out


# --------------------------------------------------------------------------------------------------
# Focus on mosaics


def focus_mosaics(x, y, *, n_mosaics: int, seed=0) -> dict:
    """Build 2x2 mosaics from a labelled image batch, for :func:`focus` (Arias-Duart, Parés,
    Garcia-Gasulla & Giménez-Ábalos 2022, "Focus! Rating XAI Methods and Finding Biases",
    FUZZ-IEEE, arXiv:2109.15035).

    Each mosaic picks a target class (uniformly among the classes present), two distinct images of
    that class (drawn with replacement from the class when it has a single image) and two images of
    the other classes (uniformly over all images not of the target class), placed in a random order
    into the quadrants (top-left, top-right, bottom-left, bottom-right). Seeded (None, an int or a
    numpy Generator).

    Args:
        x: images (n, c, h, w) or (n, h, w) (numpy or torch), at least two classes in ``y``.
        y: one int label per image.
        n_mosaics: how many mosaics.

    Returns:
        dict with ``"mosaics"`` (m, c, 2h, 2w) (or (m, 2h, 2w)) of x's dtype, ``"target"`` (m,)
        int64 (the class to explain), ``"layout"`` (m, 4) bool (quadrant holds the target class, in
        the order above), ``"indices"`` (m, 4) int64 (the image in each quadrant).
    """
    arr = as_numpy(x, "x")
    if arr.ndim not in (3, 4):
        raise ValueError(f"x must be images (n, c, h, w) or (n, h, w); got shape {arr.shape}")
    labels = as_numpy(y, "y")
    if labels.shape != (arr.shape[0],) or labels.dtype.kind not in "iu":
        raise ValueError(f"y must hold one int label per image, shape ({arr.shape[0]},); got {labels.dtype} "
                         f"of shape {labels.shape}")
    # Each mosaic is four images side by side (float64 copies held whole).
    n_mosaics = check_budget(n_mosaics, "n_mosaics", unit="mosaics", nbytes=lambda v: 64 * v * arr[:1].size,
                             hint="lower n_mosaics")
    classes = np.unique(labels)
    if classes.size < 2:
        raise ValueError(f"y must hold at least two classes to build mosaics; got only {classes.tolist()}")
    rng = numpy_rng(seed)
    target = classes[rng.integers(0, classes.size, size=n_mosaics)]
    indices = np.empty((n_mosaics, 4), dtype=np.int64)
    for c in classes:  # a loop over classes, not mosaics
        rows = np.flatnonzero(target == c)
        if rows.size == 0:
            continue
        own = np.flatnonzero(labels == c)
        other = np.flatnonzero(labels != c)
        if own.size >= 2:  # two distinct images: the two smallest of uniform keys
            pick = np.argsort(rng.random((rows.size, own.size)), axis=1)[:, :2]
            indices[rows, :2] = own[pick]
        else:
            indices[rows, :2] = own[0]
        indices[rows, 2:] = other[rng.integers(0, other.size, size=(rows.size, 2))]
    perm = np.argsort(rng.random((n_mosaics, 4)), axis=1)  # a random quadrant order per mosaic
    indices = np.take_along_axis(indices, perm, axis=1)
    layout = labels[indices] == target[:, None]
    tiles = arr[indices]  # (m, 4, ...)
    top = np.concatenate([tiles[:, 0], tiles[:, 1]], axis=-1)
    bottom = np.concatenate([tiles[:, 2], tiles[:, 3]], axis=-1)
    return {
        "mosaics": np.concatenate([top, bottom], axis=-2),
        "target": target.astype(np.int64),
        "layout": layout,
        "indices": indices,
    }


def focus(a, layout) -> np.ndarray:
    """Focus (Arias-Duart, Parés, Garcia-Gasulla & Giménez-Ábalos 2022, FUZZ-IEEE, arXiv:2109.15035):
    the share of the positive relevance of a mosaic's map that lies on the target-class images,

    ``Focus = sum_{j in target quadrants} max(a_j, 0) / sum_j max(a_j, 0)``,

    i.e. the probability that a pixel drawn with the positive relevance lies on a target-class
    image (2 of the 4 quadrants: 0.5 for a map blind to the class). As Quantus's ``Focus``.

    Args:
        a: maps of the mosaics, (m, h, w) or (m, c, h, w) with even h and w (the quadrants are the
            halves of each axis), e.g. explanations of ``focus_mosaics(...)["mosaics"]`` for their
            ``"target"``.
        layout: (m, 4) bool or 0/1: which quadrants (top-left, top-right, bottom-left,
            bottom-right) hold the target class (``focus_mosaics(...)["layout"]``).

    Returns:
        float64 (m,); NaN where the map has no positive relevance.
    """
    v = attributions_array(a).astype(np.float64, copy=False)
    if v.ndim not in (3, 4):
        raise ValueError(f"a must be mosaic maps (m, h, w) or (m, c, h, w); got shape {v.shape}")
    h, w = v.shape[-2:]
    if h % 2 or w % 2:
        raise ValueError(f"a must have an even height and width (2x2 mosaics); got {h}x{w}")
    lay = as_numpy(layout, "layout")
    if lay.shape != (v.shape[0], 4):
        raise ValueError(f"layout must have shape ({v.shape[0]}, 4), one flag per quadrant; got {lay.shape}")
    if lay.dtype != bool:
        if lay.dtype.kind not in "biuf" or not np.all((lay == 0) | (lay == 1)):
            raise ValueError("layout must be boolean or hold only 0 and 1")
        lay = lay.astype(bool)
    pos = np.maximum(v, 0.0)
    quads = pos.reshape(*v.shape[:-2], 2, h // 2, 2, w // 2)
    per_quadrant = quads.sum(axis=(-1, -3)).reshape(v.shape[0], -1, 4).sum(axis=1)  # (m, 4): TL TR BL BR
    total = per_quadrant.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (per_quadrant * lay).sum(axis=1) / total
    out[total == 0] = np.nan
    return out


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def _score_top_k(ctx):
    a, masks = mask_layout(ctx.a, ctx.masks)
    d = int(np.prod(np.shape(a)[1:]))
    return top_k_intersection(a, masks, k=max(1, int(round(0.1 * d))))


from .._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)
from ._overlap import mask_layout, on_masks  # noqa: E402

SPECS = (
    MetricSpec(
        "pointing_game", pointing_game, "localisation", +1,
        "whether the map's maximum lies in the mask (Zhang et al. 2018); higher is better",
        requires={"masks"}, quantus="PointingGame", score=on_masks(pointing_game)),
    MetricSpec(
        "attribution_localisation", attribution_localisation, "localisation", +1,
        "share of the positive relevance inside the mask (Kohlbrenner et al. 2020); higher is better",
        requires={"masks"}, quantus="AttributionLocalisation", score=on_masks(attribution_localisation)),
    MetricSpec(
        "top_k_intersection", top_k_intersection, "localisation", +1,
        "share of the k highest-attributed features (k: 10 % of them) inside the mask "
        "(Theiner et al. 2021); higher is better",
        requires={"masks"}, quantus="TopKIntersection", score=_score_top_k),
    MetricSpec(
        "auc", auc, "localisation", +1,
        "area under the ROC curve of the map as a score for the mask (Fawcett 2006); higher is better, "
        "0.5 for a random map",
        requires={"masks"}, quantus="AUC", score=on_masks(auc)),
    MetricSpec(
        "focus", focus, "localisation", +1,
        "share of the positive relevance of a 2 x 2 mosaic's map on the target-class images "
        "(Arias-Duart et al. 2022); higher is better, 0.5 for a map blind to the class",
        requires={"labels"}, quantus="Focus", score=lambda ctx: focus(ctx.a, ctx.layout)),
)
