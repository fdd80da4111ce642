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
    parse_seed(est.seed)


def standardiser(Z: np.ndarray):
    """Mean and standard deviation of each column (constant columns: std 1), the fixed affine map
    through which the random features see their input."""
    mu = Z.mean(0)
    sd = Z.std(0)
    sd = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(mu)), sd, 1.0)
    return mu, sd
