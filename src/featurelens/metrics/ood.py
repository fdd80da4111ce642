"""Scores for OOD detection: AUROC and the false-positive rate at a given true-positive rate.

Convention throughout: a *higher* score means *more in-distribution* (as returned by
:class:`featurelens.learning.MahalanobisOOD`); in-distribution samples are the positives.
Hendrycks & Gimpel, "A Baseline for Detecting Misclassified and Out-of-Distribution Examples in
Neural Networks", ICLR 2017, arXiv 1610.02136 (AUROC, FPR at 95% TPR).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_numpy, check_float

__all__ = ["auroc", "fpr_at_tpr"]


def _scores(s, name: str) -> np.ndarray:
    arr = as_numpy(s, name)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    arr = arr.astype(np.float64).reshape(-1) if arr.ndim <= 1 else arr
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d vector of scores; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; expected at least one score")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf values; expected finite scores")
    return arr


def auroc(scores_in, scores_out) -> float:
    """Area under the ROC curve for separating in-distribution (positive) from OOD scores.

        AUROC = P(s_in > s_out) + 1/2 P(s_in = s_out)
              = (R_in - n_in (n_in + 1) / 2) / (n_in n_out)

    with R_in the sum of the in-distribution scores' ranks in the pooled sample (tied scores get
    their average rank, so each tie counts 1/2): the Mann-Whitney U statistic, exact, O(n log n).
    Equals scikit-learn's ``roc_auc_score`` with in-distribution labelled 1. 1 = perfect
    separation, 0.5 = chance.
    """
    from scipy.stats import rankdata

    a = _scores(scores_in, "scores_in")
    b = _scores(scores_out, "scores_out")
    ranks = rankdata(np.concatenate([a, b]), method="average")
    n_in, n_out = a.size, b.size
    return float((ranks[:n_in].sum() - n_in * (n_in + 1) / 2.0) / (n_in * n_out))


def fpr_at_tpr(scores_in, scores_out, tpr: float = 0.95) -> float:
    """False-positive rate (fraction of OOD scores accepted) at the threshold reaching ``tpr``.

        t* = max { t : mean(s_in >= t) >= tpr },   FPR = mean(s_out >= t*)

    A sample is accepted as in-distribution when its score is >= t. t* is the largest threshold
    keeping at least a fraction ``tpr`` of the in-distribution scores: the k-th largest of them with
    k = ceil(tpr * n_in). OOD scores tied with t* count as accepted (the pessimistic choice).
    This is the "FPR at 95% TPR" of Hendrycks & Gimpel (2017) for ``tpr=0.95``; it can differ
    slightly from implementations that take an interpolated percentile of the in-distribution scores.
    """
    tpr = check_float(tpr, "tpr", low=0.0, low_inclusive=False, high=1.0)
    a = _scores(scores_in, "scores_in")
    b = _scores(scores_out, "scores_out")
    # Guard tpr * n_in against round-off just above an integer (e.g. 0.95 * 20 = 19.000000000000004).
    k = max(1, math.ceil(round(float(tpr) * a.size, 9)))
    threshold = np.sort(a)[::-1][k - 1]
    return float(np.mean(b >= threshold))
