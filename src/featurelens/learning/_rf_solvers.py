"""The closed-form algebra the random-feature learners share (:mod:`featurelens.learning.random_features`):
the activations and random layers, ridge and sandwiched ridge solves, the softmax cross-entropy,
its curvature, the logistic top (L-BFGS) and the boosting line search, the common parameter
checks and the standardiser."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.optimize

from .._random import parse_seed
from .._validation import check_float, check_int, check_option

ACTIVATIONS = ("tanh", "relu", "sigmoid", "cos")
FEATURES_FROM = ("both", "representation", "input")
FEATURES = ("gaussian", "swim")
SWIM_SAMPLING = ("target", "uniform")
#: Floor on ``||x_j - x_i||`` in the SWIM sampling weight (Bolager et al. 2023).
SWIM_EPS = 0.01
#: Candidate pairs drawn per SWIM unit before the weighted pick.
SWIM_CANDIDATES = 5


def activate(u: np.ndarray, activation: str) -> np.ndarray:
    if activation == "tanh":
        return np.tanh(u, out=u)
    if activation == "relu":
        return np.maximum(u, 0.0, out=u)
    if activation == "sigmoid":
        # 0.5 (1 + tanh(u/2)) is the logistic function without overflow for large |u|.
        return 0.5 * (1.0 + np.tanh(0.5 * u))
    return math.sqrt(2.0) * np.cos(u)


def draw_layer(rng: np.random.Generator, m: int, p: int, activation: str, weight_scale: float):
    """Weights ``A`` (m, p) with entries ``N(0, weight_scale^2 / m)`` and biases ``c`` (p,):
    ``N(0, 1)``, or ``U[0, 2 pi)`` for the cosine (random Fourier) features."""
    A = rng.standard_normal((m, p)) * (weight_scale / math.sqrt(m))
    c = rng.uniform(0.0, 2.0 * math.pi, size=p) if activation == "cos" else rng.standard_normal(p)
    return A, c


def swim_layer(rng: np.random.Generator, Z: np.ndarray, T, p: int, scale: float, sampling: str = "target"):
    """SWIM weights: ``A`` (m, p), ``c`` (p,) and the pairs ``(i, j)`` (p, 2) they were built from.

    Bolager, Burak, Datar, Sun, Dietrich, "Sampling weights of deep neural networks", NeurIPS 2023.
    Unit ``k`` is built from a pair of training rows ``(i, j)``, ``j != i``, of ``Z`` (n, m):

    ``w = 2 scale (z_j - z_i) / ||z_j - z_i||^2``,  ``b = -<w, z_i> - scale``,

    so its pre-activation ``<w, z> + b`` is exactly ``-scale`` at ``z_i`` and ``+scale`` at ``z_j``
    and changes along ``z_j - z_i`` only. Pairs: ``5 p`` candidates ``(i, j)`` are drawn uniformly
    (``i`` uniform, ``j`` uniform among the other rows), then ``p`` of them with replacement,
    uniformly (``sampling="uniform"``) or with probability proportional to
    ``||t_j - t_i|| / max(||z_j - z_i||, 0.01)`` (``sampling="target"``; ``T`` (n, k) the target
    the layer should help to fit). Candidates with ``z_j = z_i`` are never picked; a target that
    is constant on every candidate falls back to uniform. With fewer than two distinct rows no
    pair exists: every unit is then ``w = 0, b = 0`` (a constant feature) and its pair ``(-1, -1)``.
    """
    n, m = Z.shape
    A = np.zeros((m, p))
    c = np.zeros(p)
    pairs = np.full((p, 2), -1, dtype=np.intp)
    if n < 2:
        return A, c, pairs
    M = SWIM_CANDIDATES * p
    i = rng.integers(0, n, size=M)
    j = (i + rng.integers(1, n, size=M)) % n
    dx = Z[j] - Z[i]
    dist2 = np.einsum("ij,ij->i", dx, dx)
    valid = dist2 > 0.0
    if not valid.any():
        return A, c, pairs
    prob = valid.astype(np.float64)
    if sampling == "target":
        T = np.asarray(T, dtype=np.float64)
        T = T[:, None] if T.ndim == 1 else T
        ratio = np.linalg.norm(T[j] - T[i], axis=1) / np.maximum(np.sqrt(dist2), SWIM_EPS)
        ratio[~valid] = 0.0
        if np.isfinite(ratio).all() and ratio.sum() > 0.0:
            prob = ratio
    pick = rng.choice(M, size=p, replace=True, p=prob / prob.sum())
    w = (2.0 * scale) * dx[pick] / dist2[pick, None]
    A = np.ascontiguousarray(w.T)
    c = -np.einsum("ij,ij->i", w, Z[i[pick]]) - scale
    pairs = np.stack([i[pick], j[pick]], axis=1)
    return A, c, pairs


def draw_features(rng, Z, T, p, activation, weight_scale, features, swim_scale, swim_sampling):
    """One random layer on the rows ``Z``: :func:`draw_layer` (``features="gaussian"``, ``Z`` only
    gives the width) or :func:`swim_layer` (``"swim"``); returns ``(A, c)``."""
    if features == "gaussian":
        return draw_layer(rng, Z.shape[1], p, activation, weight_scale)
    A, c, _ = swim_layer(rng, Z, T, p, swim_scale, swim_sampling)
    return A, c


def check_features(est):
    check_option(est.features, "features", FEATURES)
    check_float(est.swim_scale, "swim_scale", low=0.0, low_inclusive=False)
    check_option(est.swim_sampling, "swim_sampling", SWIM_SAMPLING)


def ridge(F: np.ndarray, Y: np.ndarray, alpha: float):
    """``(coef, intercept)`` minimising ``||Y - F coef - 1 intercept^T||_F^2 + alpha ||coef||_F^2``
    (intercept unpenalised: solved on centred ``F`` and ``Y``); primal ``(Fc^T Fc + alpha I)`` when
    ``F`` has no more columns than rows, else dual ``Fc^T (Fc Fc^T + alpha I)^{-1}``; ``alpha = 0``
    gives the minimum-norm least-squares solution."""
    f_mean = F.mean(0)
    y_mean = Y.mean(0)
    Fc = F - f_mean
    Yc = Y - y_mean
    if alpha == 0.0:
        coef = scipy.linalg.lstsq(Fc, Yc, lapack_driver="gelsd")[0]
    elif Fc.shape[1] <= Fc.shape[0]:
        gram = Fc.T @ Fc
        gram[np.diag_indices_from(gram)] += alpha
        coef = scipy.linalg.solve(gram, Fc.T @ Yc, assume_a="pos")
    else:
        gram = Fc @ Fc.T
        gram[np.diag_indices_from(gram)] += alpha
        coef = Fc.T @ scipy.linalg.solve(gram, Yc, assume_a="pos")
    return coef, y_mean - f_mean @ coef


def sandwiched_ridge(F: np.ndarray, W: np.ndarray, R: np.ndarray, lam: float) -> np.ndarray:
    """``Delta = argmin_D (1/N) ||F D W - R||_F^2 + lam ||D||_F^2`` (F: N x p, W: D x k, R: N x k,
    Delta: p x D), in closed form (Zozoulenko et al. 2025, arXiv 2501.18283, the greedy MSE step).

    The normal equations ``F^T F D W W^T + N lam D = F^T R W^T`` decouple in the eigenbases
    ``F^T F = V diag(s) V^T`` and ``W W^T = U diag(t) U^T``:
    ``Delta = V [(V^T F^T R W^T U) / (s t^T + N lam)] U^T`` (elementwise division).
    """
    N = F.shape[0]
    s, V = np.linalg.eigh(F.T @ F)
    t, U = np.linalg.eigh(W @ W.T)
    # Gram eigenvalues are >= 0; rounding can make tiny ones negative.
    s = np.clip(s, 0.0, None)
    t = np.clip(t, 0.0, None)
    inner = V.T @ (F.T @ (R @ W.T)) @ U
    return V @ (inner / (np.outer(s, t) + N * lam)) @ U.T


def softmax(S: np.ndarray) -> np.ndarray:
    E = np.exp(S - S.max(1, keepdims=True))
    return E / E.sum(1, keepdims=True)


def probabilities(S: np.ndarray) -> np.ndarray:
    """Class probabilities of the scores: one column = the sigmoid of the one logit (binary), else
    the softmax over the columns."""
    if S.shape[1] == 1:
        return 0.5 * (1.0 + np.tanh(0.5 * S))
    return softmax(S)


def cross_entropy(S: np.ndarray, Y: np.ndarray) -> float:
    """Mean cross-entropy of the scores ``S`` against the 0/1 targets ``Y`` (one logit per row
    for two classes, else one column per class)."""
    if S.shape[1] == 1:
        # log(1 + e^s) - y s, written with logaddexp so that large |s| neither overflows nor loses bits
        return float(np.mean(np.logaddexp(0.0, S[:, 0]) - Y[:, 0] * S[:, 0]))
    m = S.max(1, keepdims=True)
    lse = (m + np.log(np.exp(S - m).sum(1, keepdims=True)))[:, 0]
    return float(np.mean(lse - (Y * S).sum(1)))


def curvature(P: np.ndarray, V: np.ndarray) -> float:
    """``(1/N) sum_i v_i^T (diag(p_i) - p_i p_i^T) v_i``: the second derivative of the mean
    cross-entropy along the score direction ``V`` (sigmoid: ``p (1 - p) v^2``)."""
    if P.shape[1] == 1:
        return float(np.mean(P[:, 0] * (1.0 - P[:, 0]) * V[:, 0] ** 2))
    return float(np.mean((P * V**2).sum(1) - (P * V).sum(1) ** 2))


def fit_logistic(Phi: np.ndarray, Y: np.ndarray, lam: float, W0: np.ndarray, b0: np.ndarray):
    """``(W, b)`` minimising ``(1/N) sum_i CE(Phi_i W + b, y_i) + lam ||W||_F^2`` (intercept
    unpenalised) by L-BFGS from ``(W0, b0)``: each iterate lowers the objective, so a warm start
    never ends above where it began. This equals scikit-learn's
    ``LogisticRegression(C=1 / (2 N lam))``, whose objective is ``C sum_i CE_i + ||W||^2 / 2``."""
    N, D = Phi.shape
    k = Y.shape[1]

    def objective(theta):
        W = theta[: D * k].reshape(D, k)
        b = theta[D * k :]
        S = Phi @ W + b
        loss = cross_entropy(S, Y) + lam * float((W * W).sum())
        E = (probabilities(S) - Y) / N
        grad = np.concatenate([(Phi.T @ E + 2.0 * lam * W).ravel(), E.sum(0)])
        return loss, grad

    theta0 = np.concatenate([W0.ravel(), b0])
    res = scipy.optimize.minimize(
        objective, theta0, jac=True, method="L-BFGS-B",
        options={"maxiter": 1000, "gtol": 1e-10, "ftol": 1e-15, "maxcor": 20},
    )
    theta = res.x if res.fun <= objective(theta0)[0] else theta0
    return theta[: D * k].reshape(D, k), theta[D * k :].copy()


def line_search(S: np.ndarray, V: np.ndarray, Y: np.ndarray, max_iter: int = 50) -> float:
    """``argmin_{a >= 0} h(a)``, ``h(a) = mean CE(S + a V, Y)`` (convex in ``a``), by Newton's
    method with step halving so that ``h`` never increases; 0 when ``V`` is not a descent
    direction."""
    a = 0.0
    h = cross_entropy(S, Y)
    for _ in range(max_iter):
        P = probabilities(S + a * V)
        g = float(np.mean(((P - Y) * V).sum(1)))
        if a == 0.0 and g >= 0.0:
            return 0.0
        curv = curvature(P, V)
        if abs(g) <= 1e-12 * max(1.0, h) or curv <= 0.0:
            break
        step = -g / curv
        for _ in range(60):
            trial = max(a + step, 0.0)
            h_new = cross_entropy(S + trial * V, Y)
            if h_new <= h:
                break
            step *= 0.5
        else:
            break
        if abs(trial - a) <= 1e-12 * max(1.0, abs(a)):
            a = trial
            break
        a, h = trial, h_new
    return a


def check_common(est, *, classifier: bool):
    check_int(est.n_layers, "n_layers", low=0)
    check_int(est.n_features, "n_features", low=1)
    if classifier:
        check_float(est.l2_reg, "l2_reg", low=0.0, low_inclusive=False)
    else:
        check_float(est.l2_reg, "l2_reg", low=0.0)
    check_float(est.l2_step, "l2_step", low=0.0, low_inclusive=False)
    check_float(est.boost_lr, "boost_lr", low=0.0, high=1.0, low_inclusive=False)
    check_option(est.activation, "activation", ACTIVATIONS)
    check_int(est.hidden_dim, "hidden_dim", low=1, allow_none=True)
    check_option(est.features_from, "features_from", FEATURES_FROM)
    check_float(est.weight_scale, "weight_scale", low=0.0, low_inclusive=False)
    check_features(est)
    parse_seed(est.seed)


def standardiser(Z: np.ndarray):
    """Mean and standard deviation of each column (constant columns: std 1), the fixed affine map
    through which the random features see their input."""
    mu = Z.mean(0)
    sd = Z.std(0)
    sd = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(mu)), sd, 1.0)
    return mu, sd
