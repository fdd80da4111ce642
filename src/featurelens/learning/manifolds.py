"""Geometry and linear separability of class manifolds, and the linear alignment of features with
their targets.

- :func:`manifold_geometry`: per-class radius, dimension and centre correlations of the point
  clouds that the classes form in a representation (Chung, Lee & Sompolinsky 2018, PRX 8, 031003,
  arXiv 1710.06487; Cohen, Chung, Lee & Sompolinsky 2020, Nat. Commun. 11:746).
- :func:`manifold_capacity`: the simulated capacity, the share of random dichotomies of whole
  classes that a hyperplane separates, as the ambient dimension N varies through random
  projections, with its critical load P/N and a mean-field estimate.
- :func:`target_linearity`: R^2 of the least-squares map from centred features to centred
  targets ("The Weight Gram Matrix Captures Sequential Feature Linearization in Deep Networks",
  arXiv 2605.06258, 2026), and :func:`virtual_covariance`, the same paper's first-order change of
  the feature second moment under one gradient step.
- :func:`monitor_metrics`: the flat dict of the four scalars a training monitor records.

Inputs are numpy arrays or torch tensors of shape (n samples, p features); more dimensions are
flattened to (n, -1). Everything is computed in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._random import numpy_rng
from .._validation import as_numpy, check_float, check_floating, check_int
from .._budgets import check_budget
from .representation_stats import class_stats, feature_matrix, label_vector

__all__ = [
    "ManifoldCapacity",
    "ManifoldGeometry",
    "cover_fraction",
    "manifold_capacity",
    "manifold_geometry",
    "monitor_metrics",
    "target_linearity",
    "virtual_covariance",
]


# ---------------------------------------------------------------------------------------------
# geometry


@dataclass(frozen=True, eq=False)
class ManifoldGeometry:
    """Per-class geometry of class manifolds (see :func:`manifold_geometry`).

    Arrays are indexed like ``classes`` (the sorted unique labels).

    Attributes
    ----------
    classes : (C,) the class labels.
    counts : (C,) points per class.
    radius : (C,) rms distance of the class's points from its centre divided by the norm of the
        centre (both after subtracting the global mean); ``inf`` for a centre at the global mean (NaN
        if that class is also a single point).
    rms_radius : (C,) the unnormalised rms distance sqrt(mean_i ||x_i - c||^2) = sqrt(tr Sigma).
    dimension : (C,) participation ratio (sum_k l_k)^2 / sum_k l_k^2 of the class covariance
        eigenvalues l_k; 0 for a class whose points coincide.
    center_norm : (C,) ||c_mu - g||, the norm of each centre after subtracting the global mean g.
    center_cosines : (C, C) cosines between the centred class centres.
    center_correlation : mean |cos| over the pairs of distinct centred centres (NaN when a centre
        sits at the global mean).
    """

    classes: np.ndarray
    counts: np.ndarray
    radius: np.ndarray
    rms_radius: np.ndarray
    dimension: np.ndarray
    center_norm: np.ndarray
    center_cosines: np.ndarray = field(repr=False)
    center_correlation: float

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def mean_radius(self) -> float:
        """Mean over classes of the normalised radius."""
        return float(np.mean(self.radius))

    @property
    def mean_rms_radius(self) -> float:
        """Mean over classes of the unnormalised rms radius."""
        return float(np.mean(self.rms_radius))

    @property
    def mean_dimension(self) -> float:
        """Mean over classes of the participation-ratio dimension."""
        return float(np.mean(self.dimension))

    def summary(self) -> dict:
        """The class means as a flat dict of floats."""
        return {
            "n_classes": self.n_classes,
            "radius": self.mean_radius,
            "rms_radius": self.mean_rms_radius,
            "dimension": self.mean_dimension,
            "center_correlation": float(self.center_correlation),
        }


def _geometry_arrays(X: np.ndarray, codes: np.ndarray, C: int):
    """(counts, centred centres, rms radius, participation ratio) of each class of X."""
    X = X - X.mean(0)  # the global mean over all points
    means, counts, resid = class_stats(X, codes, C)
    rms = np.empty(C)
    pr = np.empty(C)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts.astype(np.int64))])
    for c in range(C):  # one pass per class, not per sample
        R = resid[order[bounds[c] : bounds[c + 1]]]
        m = R.shape[0]
        # Population covariance Sigma = R^T R / m; tr Sigma = ||R||_F^2 / m and
        # tr Sigma^2 = ||R^T R||_F^2 / m^2, from the smaller of the two Gram matrices.
        tr = float(np.einsum("ij,ij->", R, R)) / m
        G = R @ R.T if m <= R.shape[1] else R.T @ R
        tr2 = float(np.einsum("ij,ij->", G, G)) / m**2
        rms[c] = math.sqrt(tr)
        pr[c] = tr**2 / tr2 if tr2 > 0 else 0.0
    return counts, means, rms, pr


def manifold_geometry(H, y) -> ManifoldGeometry:
    """Radius, dimension and centre correlations of the class manifolds of features H.

    The global mean g of all n points is subtracted first, as in the manifold analysis of Chung,
    Lee & Sompolinsky (2018, "Classification and geometry of general perceptual manifolds",
    Phys. Rev. X 8, 031003, arXiv 1710.06487) and Cohen et al. (2020, Nat. Commun. 11:746). For
    class mu with n_mu points x_i, centre c_mu and population covariance
    Sigma_mu = (1/n_mu) sum_i (x_i - c_mu)(x_i - c_mu)^T:

        rms_radius_mu = sqrt(tr Sigma_mu) = sqrt(mean_i ||x_i - c_mu||^2)
        radius_mu     = rms_radius_mu / ||c_mu - g||
        dimension_mu  = (sum_k l_k)^2 / sum_k l_k^2 = (tr Sigma_mu)^2 / tr(Sigma_mu^2)
        center_correlation = mean_{mu != nu} |cos(c_mu - g, c_nu - g)|

    with l_k the eigenvalues of Sigma_mu (the participation ratio). These are the second-moment
    ("cheap") radius and dimension, not the anchor-point R_M and D_M of the replica theory (which
    weigh the points by how they constrain a separating plane); an isotropic Gaussian cloud of
    variance sigma^2 in a D-dimensional subspace has rms radius sigma sqrt(D) and dimension D. The
    sample participation ratio is biased low by about a factor 1 / (1 + D / n_mu) (Marchenko-Pastur).

    Parameters
    ----------
    H : (n, p) features (numpy or torch; more dimensions are flattened).
    y : (n,) class labels; at least two classes.

    Returns
    -------
    :class:`ManifoldGeometry` (``.summary()`` gives the class means as a dict).
    """
    X = feature_matrix(H, "H")
    classes, codes = label_vector(y, X.shape[0])
    C = len(classes)
    if C < 2:
        raise ValueError(
            f"y must contain at least 2 classes for manifold geometry; got {C} ({classes.tolist()})"
        )
    counts, centres, rms, pr = _geometry_arrays(X, codes, C)
    norms = np.linalg.norm(centres, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        radius = np.where(
            norms > 0,
            rms / np.where(norms > 0, norms, 1.0),
            np.where(rms > 0, np.inf, np.nan),
        )
        cos = (centres @ centres.T) / np.outer(norms, norms)
    off = ~np.eye(C, dtype=bool)
    corr = float(np.mean(np.abs(cos[off]))) if np.all(norms > 0) else float("nan")
    return ManifoldGeometry(
        classes=classes,
        counts=counts.astype(np.int64),
        radius=radius,
        rms_radius=rms,
        dimension=pr,
        center_norm=norms,
        center_cosines=cos,
        center_correlation=corr,
    )


# ---------------------------------------------------------------------------------------------
# capacity


def cover_fraction(P: int, N: int) -> float:
    """Cover's (1965) share of the 2^P dichotomies of P points in general position in R^N that a
    hyperplane through the origin separates: C(P, N) / 2^P = 2^(1-P) sum_{k=0}^{N-1} binom(P-1, k)
    (1 when P <= N; exactly 1/2 at P = 2N). Cover, "Geometrical and statistical properties of
    systems of linear inequalities", IEEE Trans. Electron. Comput. 1965."""
    P = check_int(P, "P", low=1)
    N = check_int(N, "N", low=1)
    if P <= N:
        return 1.0
    total = sum(math.comb(P - 1, k) for k in range(N))
    return float(total / 2 ** (P - 1))


def _separable(X: np.ndarray, signs: np.ndarray) -> bool:
    """Whether some w has signs_i (w . x_i) >= 1 for every row (strict linear separability through
    the origin, rescaled to margin 1): a feasibility linear programme."""
    from scipy.optimize import linprog

    A = signs[:, None] * X
    if A.shape[0] <= A.shape[1]:
        # No more points than dimensions: when the rows are independent, A w = 1 has an exact
        # solution, which saves the LP.
        w = np.linalg.lstsq(A, np.ones(A.shape[0]), rcond=None)[0]
        if np.all(A @ w > 0.5):
            return True
    A = -A
    # HiGHS's default solver can stop with status 4 (numerical difficulties) on near-borderline
    # dichotomies of rank-deficient features (dead ReLU columns); its interior-point and dual
    # simplex solvers then usually answer.
    res = None
    for method in ("highs", "highs-ipm", "highs-ds"):
        res = linprog(np.zeros(X.shape[1]), A_ub=A, b_ub=-np.ones(X.shape[0]), bounds=(None, None), method=method)
        if res.status == 0:
            return True
        if res.status == 2:
            return False
    raise RuntimeError(
        f"the separability linear programme did not finish with any HiGHS solver: status {res.status} ({res.message})"
    )


def _ball_alpha0(kappa: np.ndarray) -> np.ndarray:
    """Gardner's (1988) capacity of points at margin kappa:
    alpha_0(kappa)^-1 = int_{-kappa}^inf Dt (t + kappa)^2 = (1 + kappa^2) Phi(kappa) + kappa phi(kappa)."""
    from scipy.stats import norm

    return 1.0 / ((1.0 + kappa**2) * norm.cdf(kappa) + kappa * norm.pdf(kappa))


@dataclass(frozen=True, eq=False)
class ManifoldCapacity:
    """Simulated and mean-field capacity of class manifolds (see :func:`manifold_capacity`).

    Attributes
    ----------
    n_manifolds : P, the number of classes.
    dims : (k,) the ambient dimensions N tried (the projection sizes, or p without projection).
    load : (k,) the loads P / N (same order as ``dims``).
    separable_fraction : (k,) the share of the random dichotomies found linearly separable.
    n_dichotomies : dichotomies drawn per N.
    critical_load : the P/N where ``separable_fraction`` crosses 1/2, linearly interpolated between
        the two neighbouring loads tried; NaN when the tried loads do not bracket the crossing.
    critical_dim : P / critical_load (NaN likewise).
    mean_field_capacity : the mean-field estimate alpha_MF (see ``mean_field_method``).
    mean_field_method : ``"cover"`` (every manifold a point: alpha = 2) or
        ``"chung2018_scaling"`` (the scaling-regime formula from radius and dimension).
    bias : whether the separating hyperplanes had a bias (an appended constant coordinate).
    """

    n_manifolds: int
    dims: np.ndarray
    load: np.ndarray
    separable_fraction: np.ndarray
    n_dichotomies: int
    critical_load: float
    critical_dim: float
    mean_field_capacity: float
    mean_field_method: str
    bias: bool

    def summary(self) -> dict:
        return {
            "n_manifolds": self.n_manifolds,
            "critical_load": float(self.critical_load),
            "mean_field_capacity": float(self.mean_field_capacity),
        }


def _critical_load(load: np.ndarray, frac: np.ndarray) -> float:
    order = np.argsort(load)
    a, f = load[order], frac[order]
    for i in range(len(a) - 1):
        if f[i] >= 0.5 > f[i + 1]:
            return float(a[i] + (f[i] - 0.5) * (a[i + 1] - a[i]) / (f[i] - f[i + 1]))
    return float("nan")


def _projection_dims(n_projections, p: int) -> np.ndarray | None:
    if n_projections is None:
        return None
    if isinstance(n_projections, (list, tuple, np.ndarray)):
        vals = (
            list(np.asarray(n_projections).reshape(-1))
            if isinstance(n_projections, np.ndarray)
            else list(n_projections)
        )
        if not vals:
            raise ValueError(
                "n_projections is empty; expected None, an int or a sequence of ints in [1, p]"
            )
    else:
        vals = [n_projections]
    dims = [check_int(v, "each entry of n_projections", low=1, high=p) for v in vals]
    return np.array(sorted(set(dims)), dtype=np.int64)


def manifold_capacity(
    H, y, n_dichotomies: int = 100, n_projections=None, seed=0, bias: bool = False
) -> ManifoldCapacity:
    """Simulated linear capacity of class manifolds, and its mean-field estimate.

    Simulation (Cohen, Chung, Lee & Sompolinsky 2020, Nat. Commun. 11:746): subtract the global
    mean of all points; for each ambient dimension N, draw ``n_dichotomies`` random labellings
    sigma in {-1, +1}^P of the P classes (every point of class mu gets sigma_mu) and, for each, a
    fresh Gaussian projection R^p -> R^N (without ``n_projections``, the features themselves, N = p).
    A dichotomy counts as separable when a linear programme (scipy ``linprog``, HiGHS) finds w with
    sigma_mu (w . x) >= 1 for every point x, i.e. a hyperplane through the origin (with ``bias``, a
    constant coordinate is appended: an affine hyperplane). The separable share falls with the load
    alpha = P/N; the capacity is the load where it crosses 1/2, interpolated linearly between the
    loads tried. After centring, a dichotomy giving every class the same sign is never separable
    through the origin (the points sum to zero); with ``bias`` it always is. For P points in
    general position the share is Cover's (1965)
    2^(1-P) sum_{k<N} binom(P-1, k) (:func:`cover_fraction`), 1/2 at P/N = 2.

    Mean-field estimate: points (every class a single point, or all radii 0) give Cover's
    alpha_c = 2. Otherwise the scaling-regime formula of Chung, Lee & Sompolinsky (2018, Phys. Rev.
    X 8, 031003, arXiv 1710.06487) for manifolds of radius R and dimension D at zero margin,

        alpha_mu = (1 + R^2) alpha_0(R sqrt(D)),
        alpha_0(kappa)^-1 = (1 + kappa^2) Phi(kappa) + kappa phi(kappa)   (Gardner 1988),
        alpha_MF = 1 / mean_mu (1 / alpha_mu),

    evaluated with the second-moment radius and participation-ratio dimension of
    :func:`manifold_geometry` in place of the paper's anchor-point R_M and D_M. It equals 2 at R = 0
    and tends to (1 + R^-2) / D when R sqrt(D) >> 1. It is a heuristic: the anchor radius of a
    finite Gaussian cloud exceeds its rms radius, so it overestimates the capacity of such clouds,
    and it ignores centre correlations.

    Parameters
    ----------
    H : (n, p) features; y : (n,) labels with at least two classes.
    n_dichotomies : random dichotomies per N (>= 1; one linear program each, refused above
        ``featurelens._budgets.MAX_EVALUATIONS`` = 10^8).
    n_projections : None (no projection, N = p), an int N or a sequence of ints N, each in [1, p].
    seed : int, None or numpy Generator (dichotomies and projections).
    bias : allow an affine hyperplane (Cover's N becomes N + 1).
    """
    X = feature_matrix(H, "H")
    n, p = X.shape
    classes, codes = label_vector(y, n)
    P = len(classes)
    if P < 2:
        raise ValueError(
            f"y must contain at least 2 classes for manifold capacity; got {P} ({classes.tolist()})"
        )
    n_dichotomies = check_budget(n_dichotomies, "n_dichotomies", unit="linear programs")
    if not isinstance(bias, (bool, np.bool_)):
        raise TypeError(
            f"bias must be True or False; got {bias!r} ({type(bias).__name__})"
        )
    dims = _projection_dims(n_projections, p)
    rng = numpy_rng(seed)

    Xc = X - X.mean(0)
    scale = np.sqrt(np.mean(np.einsum("ij,ij->i", Xc, Xc)))
    if scale > 0:
        Xc = (
            Xc / scale
        )  # separability is scale-free; this keeps the LP well conditioned
    Ns = np.array([p]) if dims is None else dims
    fractions = np.empty(len(Ns))
    for j, N in enumerate(Ns):
        hits = 0
        for _ in range(n_dichotomies):
            signs_class = rng.choice(np.array([-1.0, 1.0]), size=P)
            Z = (
                Xc
                if dims is None
                else Xc @ (rng.standard_normal((p, int(N))) / math.sqrt(N))
            )
            if bias:
                Z = np.hstack([Z, np.ones((n, 1))])
            hits += _separable(Z, signs_class[codes])
        fractions[j] = hits / n_dichotomies
    load = P / Ns.astype(np.float64)
    crit = _critical_load(load, fractions)

    _, centres, rms, pr = _geometry_arrays(X, codes, P)
    norms = np.linalg.norm(centres, axis=1)
    if np.all(rms == 0):
        mf, method = 2.0, "cover"
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            R = np.where(norms > 0, rms / np.where(norms > 0, norms, 1.0), np.inf)
            # A centre at the global mean (R = inf) takes the large-R limit (1 + R^-2) / D -> 1 / D.
            alpha = np.where(
                np.isfinite(R),
                (1.0 + R**2) * _ball_alpha0(R * np.sqrt(pr)),
                1.0 / np.maximum(pr, 1.0),
            )
        mf, method = float(1.0 / np.mean(1.0 / alpha)), "chung2018_scaling"
    return ManifoldCapacity(
        n_manifolds=P,
        dims=Ns,
        load=load,
        separable_fraction=fractions,
        n_dichotomies=n_dichotomies,
        critical_load=crit,
        critical_dim=float(P / crit)
        if np.isfinite(crit) and crit > 0
        else float("nan"),
        mean_field_capacity=mf,
        mean_field_method=method,
        bias=bool(bias),
    )


# ---------------------------------------------------------------------------------------------
# target linearity and the virtual covariance


def _targets(Y, n: int) -> np.ndarray:
    """(n, k) float64 targets: one-hot for a vector of class labels (ints, bools, strings), a single
    column for a float vector, the matrix itself for 2-d input."""
    arr = as_numpy(Y, "Y")
    if arr.ndim == 1:
        if arr.shape[0] != n:
            raise ValueError(
                f"Y must have one target per row of H; got {arr.shape[0]} targets for {n} rows"
            )
        if arr.dtype.kind == "f":
            check_floating(arr, "Y")
            return arr.astype(np.float64)[:, None]
        classes, codes = label_vector(arr, n, "Y")
        out = np.zeros((n, len(classes)))
        out[np.arange(n), codes] = 1.0
        return out
    if arr.ndim != 2:
        raise ValueError(
            f"Y must be a vector of labels or targets, or an (n, k) target matrix; got shape {arr.shape}"
        )
    if arr.shape[0] != n:
        raise ValueError(
            f"Y must have one row per row of H; got {arr.shape[0]} rows for {n}"
        )
    if arr.dtype.kind in "iub":
        arr = arr.astype(np.float64)
    check_floating(arr, "Y")
    return arr.astype(np.float64)


def target_linearity(H, Y, ridge: float = 0.0) -> float:
    """Target linearity: R^2 of the least-squares linear map from centred features to centred targets.

        TL = 1 - ||Y_c - H_c B||_F^2 / ||Y_c||_F^2,   B = argmin_B ||Y_c - H_c B||_F^2 (+ ridge ||B||_F^2)

    with H_c, Y_c centred by their column means (so the fit has an intercept), and Y the one-hot
    matrix of class labels or real targets. "The Weight Gram Matrix Captures Sequential Feature
    Linearization in Deep Networks" (arXiv 2605.06258, 2026) introduces TL as the linear alignment
    of features with targets (rising layer by layer; 1 under neural collapse). Its code centres
    each one-hot row rather than each column; this is the column-centred R^2, the least-squares
    reading. Computed from the thin SVD H_c = U S V^T (through the smaller Gram matrix): with a_k = u_k^T Y_c and shrinkage
    f_k = s_k^2 / (s_k^2 + ridge), ||Y_c - fit||^2 = ||Y_c||^2 - sum_k (1 - (1 - f_k)^2) ||a_k||^2.

    In-sample, independent noise scores about rank(H_c) / n, and any targets score 1 when
    p >= n - 1: compare layers at n >> p, or with a ridge.

    Parameters
    ----------
    H : (n, p) features. Y : (n,) class labels (ints, bools, strings: one-hot), (n,) float targets
        (one column) or an (n, k) target matrix.
    ridge : L2 penalty >= 0 on B (0: ordinary least squares, minimum-norm when rank-deficient).
    """
    X = feature_matrix(H, "H", min_rows=2)
    n = X.shape[0]
    T = _targets(Y, n)
    ridge = check_float(ridge, "ridge", low=0.0)
    Xc = X - X.mean(0)
    Tc = T - T.mean(0)
    total = float(np.einsum("ij,ij->", Tc, Tc))
    if total <= 0:
        raise ValueError(
            "Y is constant (zero variance after centring); target linearity needs varying targets or at least 2 classes"
        )
    # The eigendecomposition of the smaller Gram matrix gives the same s_k^2 and ||a_k||^2 as the
    # thin SVD at a fraction of its cost for tall or wide H.
    n_, p_ = Xc.shape
    if n_ <= p_:
        lam, U = np.linalg.eigh(Xc @ Xc.T)
        proj = U.T @ Tc
    else:
        lam, V = np.linalg.eigh(Xc.T @ Xc)
        proj = V.T @ (Xc.T @ Tc)  # = diag(s) U^T Y_c
    top = lam.max() if lam.size else 0.0
    keep = (
        lam > top * max(n_, p_) * np.finfo(np.float64).eps
        if top > 0
        else np.zeros(lam.shape, bool)
    )
    s2 = lam[keep]
    a2 = np.einsum("ij,ij->i", proj[keep], proj[keep])
    if n_ > p_:
        a2 = a2 / s2
    f = s2 / (s2 + ridge)
    explained = float(np.sum((1.0 - (1.0 - f) ** 2) * a2))
    return float(1.0 - max(total - explained, 0.0) / total)


def virtual_covariance(H, grad_H, lr: float) -> np.ndarray:
    """The Virtual Covariance of arXiv 2605.06258 ("The Weight Gram Matrix Captures Sequential
    Feature Linearization in Deep Networks", 2026):

        VC = sum_i [ (h_i - lr g_i)(h_i - lr g_i)^T - h_i h_i^T ]
           = -lr sum_i (g_i h_i^T + h_i g_i^T) + lr^2 sum_i g_i g_i^T,    (p, p)

    with h_i the input features of a linear layer z = W h and g_i = dL/dh_i the loss gradient with
    respect to them (L the minibatch loss as optimised, so its reduction sets the scale). The
    "Feature Learning Equation": one gradient step W' = W - lr dL/dW changes the weight Gram by
    W'^T W' - W^T W = VC + O(lr^2), i.e. the Gram follows the covariance change of the "virtual"
    features h_i - lr g_i. Summed over samples (not averaged), as in the paper's code.

    Parameters
    ----------
    H : (n, p) features; grad_H : (n, p) gradients of the loss with respect to H; lr > 0.
    """
    X = feature_matrix(H, "H")
    G = feature_matrix(grad_H, "grad_H")
    if G.shape != X.shape:
        raise ValueError(f"grad_H must have the shape of H {X.shape}; got {G.shape}")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    cross = G.T @ X
    return -lr * (cross + cross.T) + lr**2 * (G.T @ G)


# ---------------------------------------------------------------------------------------------
# monitor


def monitor_metrics(H, y) -> dict:
    """The scalars a training monitor records per layer and step: the class means of the
    normalised radius and participation-ratio dimension, the centre correlation
    (:func:`manifold_geometry`) and the target linearity of the one-hot labels
    (:func:`target_linearity`).

    Returns ``{"manifold_radius", "manifold_dimension", "manifold_center_correlation",
    "target_linearity"}`` (floats)."""
    X = feature_matrix(H, "H", min_rows=2)
    geo = manifold_geometry(X, y)
    labels = as_numpy(y, "y")
    _, codes = label_vector(labels, X.shape[0])
    return {
        "manifold_radius": geo.mean_radius,
        "manifold_dimension": geo.mean_dimension,
        "manifold_center_correlation": float(geo.center_correlation),
        "target_linearity": target_linearity(X, codes),
    }
