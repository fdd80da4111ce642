"""SIOFS: supervised feature selection from stray intrusive outliers.

Instead of scoring features on all instances, SIOFS looks only at the instances of one class that
lie inside the body of another class ("stray intrusive outliers", SIOs) and scores each feature by
how much those intrusions spread along it: a discriminative feature keeps the classes apart even for
the instances that intrude, so its intrusion degree is small.

Yuan, Wu, Zhang, Yuan, Liu, "Stray Intrusive Outliers-Based Feature Selection on Intra-Class
Asymmetric Instance Distribution or Multiple High-Density Clusters", ICML 2025 (PMLR 267:73683);
predecessor IOFS, IEEE TIP 33 (2024) 809-824.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.utils.multiclass import type_of_target

from .._validation import check_bool, check_float
from ._base import ScoreSelector

__all__ = ["SIOFS", "refined_density_mean", "siofs_intrusion"]


def refined_density_mean(S: np.ndarray, alpha: float) -> np.ndarray:
    """Refined density-mean (RDM) centre of the rows of S (N x d).

    Each row's density is the median of its L1 distances to all rows (including the zero distance
    to itself); the centre is the plain mean of the ceil(alpha * N) densest rows (smallest medians).
    Sets of fewer than 3 rows give their plain mean. Time O(N^2 d) (the pairwise distances, as in
    the authors' code), memory bounded by computing them a block of rows at a time. (SIOFS, ICML 2025; reconstructed from the
    authors' MATLAB code.)
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim == 1:
        S = S[:, None]
    N = S.shape[0]
    if N < 3:
        return S.mean(axis=0)
    # Row medians of the N x N distance matrix, a block of rows at a time (memory ~ 2^22 floats).
    step = max(1, 2**22 // N)
    dens = np.concatenate(
        [np.median(cdist(S[i : i + step], S, metric="cityblock"), axis=1) for i in range(0, N, step)]
    )
    m = max(1, math.ceil(alpha * N))
    keep = np.argsort(dens, kind="stable")[:m]
    return S[keep].mean(axis=0)


def _class_radius(r: np.ndarray, alpha: float) -> float:
    """Skewness-adjusted 3-sigma radius of the 1-D distances r of a class to its centre.

    d = RDM centre of r, s = sqrt(mean((r - d)^2)), CS = sum (r - d)^3 / (N s^3) (0 when s = 0),
    R = d + (2 - CS / 3) s: a 2-sigma body when the distances are symmetric, up to 3 sigma when they
    are skewed towards the centre and down to 1 sigma when they have a long outer tail.
    """
    d = float(refined_density_mean(r, alpha)[0])
    dev = r - d
    s = math.sqrt(float(np.mean(dev**2)))
    cs = float(np.sum(dev**3) / (len(r) * s**3)) if s > 0 else 0.0
    return d + (2.0 - cs / 3.0) * s


def siofs_intrusion(X, y, alpha: float = 0.5):
    """Per-feature intrusion degree of SIOFS (lower = more discriminative) and the per-pair rows.

    Steps (reconstructed from the authors' SIOFS.m; unverified against the paper's text):
    1. class centres mu_k = refined density means (alpha = density fraction), L1 geometry;
    2. class radii R_k from the skewness-adjusted 3-sigma rule on ||x_i - mu_k||_1 (zero radii
       replaced by (std/mean of the non-zero radii) * (c - 1) * their minimum);
    3. instance i of class k intrudes class l != k when ||x_i - mu_l||_1 < R_l; A[k, l] collects
       v_i = |x_i - mu_k| for the nearest intruded class l, B[k, l] for every intruded class;
    4. for each ordered pair (k, l) with A[k, l] and B[l, k] non-empty:
       u = v + mean(B[l, k]) - |mu_k - mu_l| for v in A[k, l]; rows with sum(u) > 0 are SIOs, and
       their mean u (a d-vector) is one intrusion row;
    5. intrusion degree of feature f = mean over the ceil(|rows| / 2) rows of smallest total of
       row_f.
    Returns (degree (d,), rows (m, d)); when no pair of classes intrudes mutually (m = 0) the
    degree is None: the classes are separated and SIOFS has nothing to score.
    """
    X = np.asarray(X, dtype=np.float64)
    classes, yi = np.unique(np.asarray(y), return_inverse=True)
    c = len(classes)
    n, d = X.shape
    mu = np.vstack([refined_density_mean(X[yi == k], alpha) for k in range(c)])
    R = np.empty(c)
    for k in range(c):
        r = np.abs(X[yi == k] - mu[k]).sum(axis=1)
        R[k] = _class_radius(r, alpha)
    nz = R > 0
    if (~nz).any() and nz.sum() >= 1:
        Rn = R[nz]
        R[~nz] = (Rn.std() / Rn.mean()) * (c - 1) * Rn.min()

    V = np.abs(X - mu[yi])  # deviation of each instance from its own class centre, per feature
    Dist = cdist(X, mu, metric="cityblock")  # (n, c)
    intrudes = Dist < R[None, :]
    intrudes[np.arange(n), yi] = False
    any_intr = intrudes.any(axis=1)
    nearest = np.where(intrudes, Dist, np.inf).argmin(axis=1)
    nearest[~any_intr] = -1

    rows = []
    for k in range(c):
        for l in range(c):
            if k == l:
                continue
            A = V[(yi == k) & (nearest == l)]
            B = V[(yi == l) & intrudes[:, k]]
            if len(A) == 0 or len(B) == 0:
                continue
            u = A + B.mean(axis=0) - np.abs(mu[k] - mu[l])
            sio = u.sum(axis=1) > 0
            if sio.any():
                rows.append(u[sio].mean(axis=0))
    if not rows:
        return None, np.empty((0, d))
    rows = np.vstack(rows)
    m = math.ceil(0.5 * len(rows))
    keep = np.argsort(rows.sum(axis=1), kind="stable")[:m]
    return rows[keep].mean(axis=0), rows


def _fisher_score(X: np.ndarray, yi: np.ndarray) -> np.ndarray:
    """sum_k n_k (mean_k - mean)^2 / sum_k n_k var_k per feature (0 where both are 0)."""
    counts = np.bincount(yi).astype(float)
    means = np.vstack([X[yi == k].mean(axis=0) for k in range(len(counts))])
    varis = np.vstack([X[yi == k].var(axis=0) for k in range(len(counts))])
    between = (counts[:, None] * (means - X.mean(axis=0)) ** 2).sum(axis=0)
    within = (counts[:, None] * varis).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(within > 0, between / np.where(within > 0, within, 1.0), np.where(between > 0, np.inf, 0.0))
    # A feature that separates the classes perfectly (zero within-class spread) ranks first.
    finite = np.isfinite(f)
    if (~finite).any():
        f[~finite] = (f[finite].max() if finite.any() else 0.0) + 1.0
    return f


class SIOFS(ScoreSelector):
    """Stray-intrusive-outlier feature selection (supervised filter, classification labels).

    The intrusion degree I_f of feature f (see ``siofs_intrusion``; L1 geometry, refined
    density-mean class centres, skewness-adjusted 3-sigma class bodies) is small for
    discriminative features. Sign conversion: ``scores_ = -I_f`` (higher = more important);
    ``intrusion_`` keeps I_f. Columns are z-scored first when ``standardize`` (a featurelens
    choice: the per-feature intrusion degrees are in the feature's units and are only comparable
    across features on a common scale).

    Documented handling: constant columns (zero variance; the paper gives them I = +inf) get a
    score strictly below every other feature (the lowest ranks), never NaN or inf. When no pair of
    classes intrudes mutually (well separated classes; the authors' code returns NaN), the scores
    fall back to the Fisher score (between- over within-class variance), ``fallback_`` is True and
    ``intrusion_`` holds minus the Fisher score (so that ``scores_ = -intrusion_`` still holds).
    ``n_intrusion_rows_`` counts the (class, class) intrusion rows behind the degrees.
    With ``k=None`` the selection is the non-constant features whose intrusion degree is at or below
    the median one.

    Caveat (inherent to the method, as in the authors' code): a quasi-constant column (e.g. a border
    pixel of scikit-learn's digits, non-zero in 0.1-1% of the rows) has a near-zero deviation from
    its class centres for almost every instance, so its intrusion degree is tiny and it ranks among
    the first (7 of the top 16 digits pixels at alpha = 0.5; benchmarks/bench_selection_protocols.py).
    Drop such columns first (e.g. ``VarianceThreshold`` on the raw data) when they are not wanted.
    Needs class labels with at least two classes (a continuous target is refused).

    ``alpha`` in (0, 1] is the density fraction of the refined density mean (the authors
    grid-search 0.05..0.95). The algorithm is reconstructed from the authors' MATLAB code
    (github.com/XXXly/2025-ICML-SIOFS, ``SIOFS.m``) and not verified against the paper's text.

    Yuan, Wu, Zhang, Yuan, Liu, ICML 2025, PMLR 267:73683-73700 (OpenReview kUagmiIN5x).
    """

    _requires_y = True

    def __init__(self, k=None, alpha: float = 0.5, standardize: bool = True):
        self.k = k
        self.alpha = alpha
        self.standardize = standardize

    def _compute_scores(self, X, y):
        a = check_float(self.alpha, "alpha", low=0.0, high=1.0, low_inclusive=False)
        check_bool(self.standardize, "standardize")
        kind = type_of_target(y, raise_unknown=True)  # sklearn's 'Unknown label type' error
        if kind not in ("binary", "multiclass"):
            raise ValueError(
                f"SIOFS needs class labels in y (a binary or multiclass target), got a {kind} target"
            )
        classes, yi = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y must hold at least 2 classes for SIOFS, got 1 class ({classes[0]!r})")
        self.classes_ = classes
        n, d = X.shape
        const = np.ptp(X, axis=0) == 0
        Z = X.copy()
        if self.standardize:
            sd = Z.std(axis=0)
            Z = (Z - Z.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        intrusion = np.full(d, np.inf)
        self.fallback_ = False
        scores = np.zeros(d)
        if (~const).any():
            deg, rows = siofs_intrusion(Z[:, ~const], yi, float(a))
            self.n_intrusion_rows_ = len(rows)
            if deg is None:
                self.fallback_ = True
                scores[~const] = _fisher_score(Z[:, ~const], yi)
                intrusion[~const] = -scores[~const]
            else:
                intrusion[~const] = deg
                scores[~const] = -deg
        else:
            self.n_intrusion_rows_ = 0
        if const.any():
            floor = scores[~const].min() if (~const).any() else 0.0
            spread = np.ptp(scores[~const]) if (~const).any() else 0.0
            scores[const] = floor - 1.0 - spread
        self.intrusion_ = intrusion
        return scores

    def _default_support(self, scores):
        varying = np.isfinite(self.intrusion_)
        if not varying.any():
            return np.zeros(len(scores), bool)
        return varying & (scores >= np.median(scores[varying]))
