"""Complexity metrics: how concentrated is an attribution map?

All take attributions ``a`` (numpy array, torch tensor or :class:`featurelens.Explanation`) with the
samples first and any shape per sample (flattened), and return a float64 array with one score per
sample. They match Quantus 0.6's ``Sparseness`` and ``Complexity`` (defaults ``abs=True``,
``normalise=True``) on maps whose maximum |a| is 1 per sample; Quantus divides by the maximum over
the whole batch instead, which only matters through the 1e-7 that the Gini index adds.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_bool, check_float
from ._perturb import attributions_array

__all__ = ["complexity", "effective_complexity", "sparseness"]


def _flat(a) -> np.ndarray:
    arr = attributions_array(a)
    if arr.ndim < 2:
        raise ValueError(f"a must be a batch with the samples first, shape (n, ...); got shape {arr.shape}")
    return arr.reshape(arr.shape[0], -1).astype(np.float64)


def sparseness(a, *, abs: bool = True, normalise: bool = True, eps: float = 1e-7) -> np.ndarray:
    """Gini index of the attribution magnitudes, per sample (Chalasani et al. 2020, ICML,
    arXiv:1810.06583; Hurley & Rickard 2009).

    With ``v`` = |a| flattened (``abs=True``), divided by its maximum (``normalise=True``), plus
    ``eps`` (Quantus's 1e-7, which keeps an all-zero map defined), sorted ascending:
    ``G = sum_i (2 i - d - 1) v_(i) / (d sum_i v_i)``, i = 1..d. 0 for a uniform map, (d-1)/d for
    a single non-zero element; higher is sparser. Returns float64 (n,).
    """
    abs = check_bool(abs, "abs")
    normalise = check_bool(normalise, "normalise")
    eps = check_float(eps, "eps", low=0.0)
    v = _flat(a)
    if abs:
        v = np.abs(v)
    if normalise:
        peak = np.abs(v).max(axis=1, keepdims=True)
        v = v / np.where(peak > 0, peak, 1.0)
    v = np.sort(v + eps, axis=1)
    d = v.shape[1]
    weights = 2.0 * np.arange(1, d + 1) - d - 1
    return (v @ weights) / (d * v.sum(axis=1))


def complexity(a, *, eps: float = 1e-12) -> np.ndarray:
    """Entropy of the fractional contributions, per sample (Bhatt, Weller & Moura 2020, IJCAI,
    arXiv:2005.00631).

    ``p_i = |a_i| / sum_j |a_j|``, ``C = -sum_i p_i log(p_i + eps)`` (natural log; ``eps`` = 1e-12
    as in Quantus). 0 for a single non-zero element, log(d) for a uniform map; lower is simpler.
    NaN for an all-zero map (no distribution). Returns float64 (n,).
    """
    eps = check_float(eps, "eps", low=0.0)
    v = np.abs(_flat(a))
    total = v.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = v / total
    return -(p * np.log(p + eps)).sum(axis=1)


def effective_complexity(a, *, eps: float = 1e-5, abs: bool = True, normalise: bool = True) -> np.ndarray:
    """Effective complexity: the number of features whose attribution exceeds a threshold, per
    sample (Nguyen & Martínez 2020, "On quantitative aspects of model interpretability",
    arXiv:2007.07584).

    ``EC = |{j : v_j > eps}|`` with ``v = |a|`` (``abs=True``; the signed ``a`` with ``abs=False``)
    divided by its maximum ``max_j |a_j|`` per sample (``normalise=True``, so ``eps`` is relative to
    the largest attribution; an all-zero map stays zero). Lower is simpler: a map with ``k``
    non-zero elements scores ``k`` for a small enough ``eps``. Quantus's ``EffectiveComplexity``
    (``eps=1e-5``, ``abs=True``, ``normalise=True``) divides by the maximum over the whole batch
    instead; the two agree on maps whose maximum ``|a|`` is the same for every sample. Returns the
    counts as float64 (n,).
    """
    eps = check_float(eps, "eps", low=0.0)
    abs = check_bool(abs, "abs")
    normalise = check_bool(normalise, "normalise")
    v = _flat(a)
    if normalise:
        peak = np.abs(v).max(axis=1, keepdims=True)
        v = v / np.where(peak > 0, peak, 1.0)
    if abs:
        v = np.abs(v)
    return (v > eps).sum(axis=1).astype(np.float64)


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it

from ._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "sparseness", sparseness, "complexity", 0,
        "Gini index of |a| (Chalasani et al. 2020); higher is a more concentrated map, not "
        "better or worse by itself",
        quantus="Sparseness", score=lambda ctx: sparseness(ctx.a), column="sparseness", label="sparseness",
        audit_default=True),
    MetricSpec(
        "complexity", complexity, "complexity", 0,
        "entropy of |a| / sum |a| (Bhatt et al. 2020); lower is a simpler map, not better or "
        "worse by itself",
        quantus="Complexity", score=lambda ctx: complexity(ctx.a), column="complexity", label="complexity",
        audit_default=True),
    MetricSpec(
        "effective_complexity", effective_complexity, "complexity", 0,
        "number of features above 1e-5 of the largest |a| (Nguyen & Martinez 2020); "
        "lower is a simpler map, not better or worse by itself",
        quantus="EffectiveComplexity", score=lambda ctx: effective_complexity(ctx.a),
        column="effective_complexity", label="eff. compl."),
)
