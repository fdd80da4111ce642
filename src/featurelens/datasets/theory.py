"""Generators with planted structure for the theory of feature learning, and the lazy/rich output scale.

Each generator returns a small dataclass holding the data *and* the structure it planted, so that a
method can be scored against the truth:

* :func:`single_index` and :func:`multi_index`: Gaussian inputs ``x ~ N(0, I_d)`` and a target that
  depends on ``x`` only through ``k`` planted directions, ``y = g(W^T x) + noise``. The returned
  ``directions`` are the rows of ``W^T`` (orthonormal). The single-index model is the setting of
  Ben Arous, Gheissari & Jagannath, "Online stochastic gradient descent on non-convex losses from
  high-dimensional inference", JMLR 22 (2021) (the *information exponent* of ``g``: the index of its
  first nonzero Hermite coefficient); the multi-index ``staircase`` link is that of Abbe,
  Boix-Adsera & Misiakiewicz, "The merged-staircase property", COLT 2022 (arXiv 2202.08658).
* :func:`label_noise`: the signal-plus-noise model of benign overfitting with label-flipping noise,
  ``x = y_clean mu + xi`` (or the two patches ``[y_clean mu, xi]``) and a planted share of flipped
  labels, with the flipped rows returned (Cao, Chen, Belkin & Gu, "Benign overfitting in two-layer
  convolutional neural networks", NeurIPS 2022, arXiv 2202.06526; Kou, Chen, Chen & Gu, "Benign
  overfitting in two-layer ReLU convolutional neural networks", ICML 2023, arXiv 2303.04145).
* :func:`spiked_covariance`: ``x = sum_k sqrt(beta_k) z_k u_k + xi`` (Johnstone 2001), with the
  BBP threshold ``sqrt(d / n)`` and the limiting overlap of the top sample eigenvector with the
  spike (Baik, Ben Arous & Peche, Ann. Probab. 33 (2005); Paul, Statistica Sinica 17 (2007)).
* :func:`ica_mixture`: the linear ICA model ``x = A s (+ noise)`` with independent unit-variance
  non-Gaussian sources (Hyvarinen & Oja, "Independent component analysis: algorithms and
  applications", Neural Networks 13 (2000)); the sources and the mixing matrix are returned.
* :func:`continual_tasks`: a sequence of teacher-student regression tasks whose teachers sit at a
  chosen cosine to task 0's (the teacher-student continual-learning setting of Lee, Goldt & Saxe,
  "Continual learning in the teacher-student setup: impact of task similarity", ICML 2021, arXiv
  2107.04384).
* :class:`OutputScaled`: the lazy/rich output scale of Chizat, Oyallon & Bach, "On lazy training in
  differentiable programming", NeurIPS 2019 (arXiv 1812.07956): ``f_alpha(x) = alpha (f(x; w) -
  f(x; w_0))`` trained with the loss divided by ``alpha^2``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .._random import numpy_rng
from .._validation import check_budget, check_float, check_int, check_memory, check_option

__all__ = [
    "IndexModel",
    "single_index",
    "multi_index",
    "LabelNoise",
    "label_noise",
    "SpikedCovariance",
    "spiked_covariance",
    "ICAMixture",
    "ica_mixture",
    "ContinualTasks",
    "continual_tasks",
    "OutputScaled",
    "SINGLE_INDEX_LINKS",
    "MULTI_INDEX_LINKS",
    "ICA_SOURCES",
]


# --------------------------------------------------------------------------------------------------
# shared checks


def _check_size(n_samples, d, what: str, per_row: int = 3) -> tuple[int, int]:
    """``n_samples`` and ``d`` as budgets, and the float64 arrays of about ``per_row`` copies of an
    ``(n_samples, d)`` array refused above the memory available."""
    n_samples = check_budget(n_samples, "n_samples", unit="samples")
    d = check_budget(d, "d", unit="dimensions")
    check_memory(8 * per_row * n_samples * d + 8 * d * d, f"{what}(n_samples={n_samples}, d={d})",
                 "lower n_samples or d.")
    return n_samples, d


def _orthonormal(rng: np.random.Generator, d: int, k: int) -> np.ndarray:
    """``k`` orthonormal rows in ``R^d``, uniformly distributed (Haar): QR of a Gaussian ``(d, k)``
    matrix with the signs of R's diagonal moved into Q (Mezzadri 2007)."""
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    q *= np.where(np.diag(r) < 0, -1.0, 1.0)
    return np.ascontiguousarray(q.T)


def _check_noise(noise) -> float:
    return check_float(noise, "noise", low=0.0)


# --------------------------------------------------------------------------------------------------
# single- and multi-index models


def _he2(z):
    return z * z - 1.0


def _he3(z):
    return z ** 3 - 3.0 * z


#: The named links of :func:`single_index`, ``g(z)`` for ``z = <w, x> ~ N(0, 1)``, and their
#: information exponents (the index of the first nonzero Hermite coefficient of ``g``).
SINGLE_INDEX_LINKS = {
    "linear": (lambda z: z, 1),
    "relu": (lambda z: np.maximum(z, 0.0), 1),
    "tanh": (np.tanh, 1),
    "sign": (np.sign, 1),
    "hermite2": (_he2, 2),
    "hermite3": (_he3, 3),
}


def _staircase(z):
    return np.cumprod(z, axis=1).sum(axis=1)


#: The named links of :func:`multi_index`, ``g(z)`` for ``z = W^T x ~ N(0, I_k)`` (rows of ``z``).
MULTI_INDEX_LINKS = {
    # z_1 + z_1 z_2 + ... + z_1 ... z_k (Abbe et al. 2022's merged staircase)
    "staircase": _staircase,
    # z_1 z_2 ... z_k (Gaussian parity: information exponent k)
    "product": lambda z: np.prod(z, axis=1),
    # sum_j (z_j^2 - 1) = ||z||^2 - k (an even target: information exponent 2)
    "norm": lambda z: (z * z).sum(axis=1) - z.shape[1],
    # sum_j relu(z_j) / sqrt(k) (a soft committee machine of ReLU units)
    "committee": lambda z: np.maximum(z, 0.0).sum(axis=1) / math.sqrt(z.shape[1]),
}


@dataclass
class IndexModel:
    """A single- or multi-index data set: ``y = g(W^T x) + noise`` (:func:`single_index`,
    :func:`multi_index`).

    Attributes
    ----------
    X : (n_samples, d) float64, inputs ``x ~ N(0, I_d)``.
    y : (n_samples,) float64, the target ``g(latent) + noise * N(0, 1)``.
    y_clean : (n_samples,) float64, the noiseless target ``g(latent)``.
    directions : (k, d) float64, the planted directions (orthonormal rows; the columns of ``W``).
    latent : (n_samples, k) float64, the index values ``X @ directions.T`` (each ``N(0, I_k)``).
    link : str or callable, the link ``g`` as given.
    information_exponent : int or None, of a named single-index link (None otherwise).
    noise : float, the std of the additive Gaussian label noise.
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    directions: np.ndarray
    latent: np.ndarray
    link: object
    information_exponent: int | None
    noise: float

    @property
    def direction(self) -> np.ndarray:
        """The one planted direction ``w`` (d,) of a single-index model."""
        if self.directions.shape[0] != 1:
            raise AttributeError(
                f"direction is defined for a single-index model; this one has {self.directions.shape[0]} "
                "directions: use directions"
            )
        return self.directions[0]


def _apply_link(g, z: np.ndarray, name: str, vector: bool) -> np.ndarray:
    """``g`` applied to the latent (``(n,)`` for single-index, ``(n, k)`` for multi-index), checked to
    give one finite value per row."""
    out = np.asarray(g(z), dtype=np.float64)
    if out.shape != (z.shape[0],):
        expected = f"({z.shape[0]},)"
        raise ValueError(
            f"{name} must map the {'(n_samples,)' if vector else '(n_samples, k)'} latent to one value per "
            f"row, shape {expected}; got shape {out.shape}"
        )
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} returned non-finite values")
    return out


def _resolve_link(link, options: dict, name: str = "link"):
    if callable(link):
        return link
    if not isinstance(link, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, options))} or a callable; got {link!r} "
                        f"({type(link).__name__})")
    return check_option(link, name, tuple(options))


def single_index(n_samples: int = 1000, d: int = 20, link="relu", noise: float = 0.0, seed=0) -> IndexModel:
    """A single-index model: ``x ~ N(0, I_d)``, ``y = g(<w, x>) + noise * eps``, ``eps ~ N(0, 1)``.

    The direction ``w`` is uniform on the unit sphere (returned as ``direction`` and
    ``directions[0]``). Named links (:data:`SINGLE_INDEX_LINKS`, with their information exponents
    in the sense of Ben Arous, Gheissari & Jagannath, JMLR 2021): ``"linear"`` (``z``, 1),
    ``"relu"`` (1), ``"tanh"`` (1), ``"sign"`` (1), ``"hermite2"`` (``z^2 - 1``, 2), ``"hermite3"``
    (``z^3 - 3z``, 3). For a linear link, least squares recovers ``w`` (``E[x y] = w``); for
    ``"hermite2"`` the first moment vanishes and ``w`` is the top eigenvector of ``E[y x x^T] = 2 w w^T``.

    Parameters
    ----------
    n_samples, d : int >= 1.
    link : a name above, or a callable mapping the ``(n_samples,)`` array of ``<w, x>`` to ``(n_samples,)``.
    noise : float >= 0, the std of the additive Gaussian noise on ``y``.
    seed : None, int or numpy Generator.

    Returns
    -------
    IndexModel
    """
    n_samples, d = _check_size(n_samples, d, "single_index")
    g = _resolve_link(link, SINGLE_INDEX_LINKS)
    noise = _check_noise(noise)
    rng = numpy_rng(seed)
    directions = _orthonormal(rng, d, 1)
    X = rng.standard_normal((n_samples, d))
    latent = X @ directions.T
    if callable(g):
        y_clean, exponent = _apply_link(g, latent[:, 0], "link", vector=True), None
    else:
        fn, exponent = SINGLE_INDEX_LINKS[g]
        y_clean = fn(latent[:, 0])
    y = y_clean + noise * rng.standard_normal(n_samples) if noise > 0 else y_clean.copy()
    return IndexModel(X=X, y=y, y_clean=y_clean, directions=directions, latent=latent, link=link,
                      information_exponent=exponent, noise=noise)


def multi_index(n_samples: int = 1000, d: int = 20, n_directions: int = 2, link="staircase", noise: float = 0.0,
                seed=0) -> IndexModel:
    """A multi-index model: ``x ~ N(0, I_d)``, ``y = g(W^T x) + noise * eps``, ``W`` a Haar-random
    ``(d, k)`` matrix with orthonormal columns (returned as the rows of ``directions``).

    Named links (:data:`MULTI_INDEX_LINKS`, ``z = W^T x``): ``"staircase"``
    (``z_1 + z_1 z_2 + ... + z_1...z_k``, Abbe, Boix-Adsera & Misiakiewicz, COLT 2022),
    ``"product"`` (``z_1 ... z_k``, a Gaussian parity), ``"norm"`` (``||z||^2 - k``) and
    ``"committee"`` (``sum_j relu(z_j) / sqrt(k)``). The target depends on ``x`` only through the
    span of ``directions``: the expected gradient outer product ``E[grad y grad y^T]`` has rank ``k``
    and its column space is that span.

    Parameters
    ----------
    n_samples, d : int >= 1.
    n_directions : int, ``1 <= k <= d``.
    link : a name above, or a callable mapping the ``(n_samples, k)`` latent to ``(n_samples,)``.
    noise : float >= 0, the std of the additive Gaussian noise on ``y``.
    seed : None, int or numpy Generator.

    Returns
    -------
    IndexModel
    """
    n_samples, d = _check_size(n_samples, d, "multi_index")
    k = check_int(n_directions, "n_directions", low=1)
    if k > d:
        raise ValueError(f"n_directions={k} is larger than d={d}; expected 1 <= n_directions <= d "
                         "(the directions are orthonormal in R^d)")
    g = _resolve_link(link, MULTI_INDEX_LINKS)
    noise = _check_noise(noise)
    rng = numpy_rng(seed)
    directions = _orthonormal(rng, d, k)
    X = rng.standard_normal((n_samples, d))
    latent = X @ directions.T
    y_clean = _apply_link(g if callable(g) else MULTI_INDEX_LINKS[g], latent, "link", vector=False)
    y = y_clean + noise * rng.standard_normal(n_samples) if noise > 0 else y_clean.copy()
    return IndexModel(X=X, y=y, y_clean=y_clean, directions=directions, latent=latent, link=link,
                      information_exponent=None, noise=noise)


# --------------------------------------------------------------------------------------------------
# label noise


@dataclass
class LabelNoise:
    """The signal-plus-noise data set with flipped labels returned by :func:`label_noise`.

    Attributes
    ----------
    X : float64, ``(n_samples, d)`` for ``layout="sum"`` (``x = y_clean mu + xi``) or
        ``(n_samples, 2, d)`` for ``layout="patches"`` (``x = [y_clean mu, xi]``).
    y : (n_samples,) int, the observed labels in {-1, +1} (``-y_clean`` on the flipped rows).
    y_clean : (n_samples,) int, the labels that generated ``X``.
    flipped : (n_samples,) bool, the rows whose label was flipped (``y != y_clean``).
    signal : (d,) float64, the planted signal ``mu`` (norm ``signal_norm``).
    noise : float64 array shaped like one patch per row, ``(n_samples, d)``: the noise ``xi``.
    signal_norm, noise_std, flip, layout, orthogonal : the generating parameters.
    bayes_accuracy : float, for ``layout="sum"`` without orthogonal noise the accuracy of the Bayes
        classifier ``sign(<mu, x>)`` against the clean labels, ``Phi(||mu|| / sigma)``; 1.0 when the
        noise is orthogonal to ``mu`` or the layout is ``"patches"`` (the signal patch gives the label).
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    flipped: np.ndarray
    signal: np.ndarray
    noise: np.ndarray
    signal_norm: float
    noise_std: float
    flip: float
    layout: str
    orthogonal: bool
    bayes_accuracy: float


def label_noise(n_samples: int = 1000, d: int = 50, signal_norm: float = 2.0, noise_std: float = 1.0,
                flip: float = 0.1, layout: str = "sum", orthogonal: bool = False, seed=0) -> LabelNoise:
    """The signal-plus-noise model with a planted share of flipped labels.

    Clean labels ``y_clean`` are +1 or -1 with probability 1/2 each; the signal ``mu`` is a uniformly
    random direction scaled to ``||mu|| = signal_norm``; the noise is
    ``xi ~ N(0, sigma^2 I_d)`` (``orthogonal=True``: ``N(0, sigma^2 (I - mu mu^T / ||mu||^2))``, as in
    Cao et al. 2022 and Kou et al. 2023). The inputs are

    * ``layout="sum"``: ``x = y_clean mu + xi``, shape ``(n_samples, d)``;
    * ``layout="patches"``: the two patches ``x = [y_clean mu, xi]``, shape ``(n_samples, 2, d)``
      (Cao, Chen, Belkin & Gu, NeurIPS 2022; Kou, Chen, Chen & Gu, ICML 2023).

    Exactly ``round(flip * n_samples)`` rows, chosen uniformly at random, have their observed label
    flipped, ``y = -y_clean`` (the papers flip each label independently with probability ``flip``; a
    fixed count makes the planted share exact). The flipped rows are returned.

    Parameters
    ----------
    n_samples, d : int >= 1.
    signal_norm : float >= 0, ``||mu||``.
    noise_std : float > 0, ``sigma``.
    flip : float in [0, 0.5], the share of flipped labels.
    layout : ``"sum"`` or ``"patches"``.
    orthogonal : bool, draw the noise orthogonal to ``mu``.
    seed : None, int or numpy Generator.

    Returns
    -------
    LabelNoise
    """
    n_samples, d = _check_size(n_samples, d, "label_noise")
    signal_norm = check_float(signal_norm, "signal_norm", low=0.0)
    noise_std = check_float(noise_std, "noise_std", low=0.0, low_inclusive=False)
    flip = check_float(flip, "flip", low=0.0, high=0.5)
    layout = check_option(layout, "layout", ("sum", "patches"))
    if not isinstance(orthogonal, (bool, np.bool_)):
        raise TypeError(f"orthogonal must be True or False; got {orthogonal!r} ({type(orthogonal).__name__})")
    orthogonal = bool(orthogonal)
    rng = numpy_rng(seed)
    u = _orthonormal(rng, d, 1)[0]
    mu = signal_norm * u
    y_clean = np.where(rng.random(n_samples) < 0.5, -1, 1)
    xi = noise_std * rng.standard_normal((n_samples, d))
    if orthogonal:
        xi -= np.outer(xi @ u, u)
    flipped = np.zeros(n_samples, dtype=bool)
    flipped[rng.permutation(n_samples)[: int(round(flip * n_samples))]] = True
    y = np.where(flipped, -y_clean, y_clean)
    if layout == "sum":
        X = y_clean[:, None] * mu[None, :] + xi
    else:
        X = np.stack([y_clean[:, None] * mu[None, :], xi], axis=1)
    if layout == "sum" and not orthogonal:
        bayes = 0.5 * math.erfc(-signal_norm / noise_std / math.sqrt(2.0))
    else:
        bayes = 1.0 if signal_norm > 0 else 0.5
    return LabelNoise(X=X, y=y, y_clean=y_clean, flipped=flipped, signal=mu, noise=xi, signal_norm=signal_norm,
                      noise_std=noise_std, flip=flip, layout=layout, orthogonal=orthogonal, bayes_accuracy=bayes)


# --------------------------------------------------------------------------------------------------
# spiked covariance and ICA


@dataclass
class SpikedCovariance:
    """The spiked covariance data set returned by :func:`spiked_covariance`.

    Attributes
    ----------
    X : (n_samples, d) float64, ``x = sum_k sqrt(beta_k) z_k u_k + xi``.
    spikes : (k, d) float64, the planted spikes ``u_k`` (orthonormal rows).
    strengths : (k,) float64, the spike strengths ``beta_k``.
    latent : (n_samples, k) float64, the spike coefficients ``z`` (unit variance).
    latent_distribution : str, ``"gaussian"`` or ``"rademacher"``.
    bbp_threshold : float, ``sqrt(d / n_samples)``: in the proportional limit a spike is seen by the
        top sample eigenvectors only when ``beta > sqrt(d / n)``.
    overlap_limit : (k,) float64, the limiting squared overlap ``<u_hat_k, u_k>^2`` of the k-th sample
        eigenvector with its spike, ``(1 - gamma / beta^2) / (1 + gamma / beta)`` above the threshold
        and 0 below (``gamma = d / n``; Paul 2007).
    eigenvalue_limit : (k,) float64, the limiting k-th sample eigenvalue, ``(1 + beta)(1 + gamma /
        beta)`` above the threshold and the bulk edge ``(1 + sqrt(gamma))^2`` below (BBP 2005).
    """

    X: np.ndarray
    spikes: np.ndarray
    strengths: np.ndarray
    latent: np.ndarray
    latent_distribution: str
    bbp_threshold: float
    overlap_limit: np.ndarray
    eigenvalue_limit: np.ndarray

    @property
    def covariance(self) -> np.ndarray:
        """The population covariance ``I_d + sum_k beta_k u_k u_k^T`` (d, d)."""
        d = self.spikes.shape[1]
        return np.eye(d) + (self.spikes.T * self.strengths) @ self.spikes


def _unit_latent(rng, shape, kind: str) -> np.ndarray:
    if kind == "gaussian":
        return rng.standard_normal(shape)
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def spiked_covariance(n_samples: int = 1000, d: int = 200, strengths=(2.0,), latent: str = "gaussian",
                      seed=0) -> SpikedCovariance:
    """The spiked covariance model (Johnstone, Ann. Statist. 29 (2001)):
    ``x = sum_k sqrt(beta_k) z_k u_k + xi``, ``xi ~ N(0, I_d)``, ``z_k`` i.i.d. with unit variance,
    ``u_k`` Haar-random orthonormal spikes, so ``Cov(x) = I_d + sum_k beta_k u_k u_k^T``.

    With ``gamma = d / n``, the BBP transition (Baik, Ben Arous & Peche, Ann. Probab. 33 (2005)):
    when ``beta > sqrt(gamma)`` the top sample eigenvalue separates from the bulk (limit
    ``(1 + beta)(1 + gamma / beta)``) and its eigenvector keeps the squared overlap
    ``(1 - gamma / beta^2) / (1 + gamma / beta)`` with the spike (Paul, Statistica Sinica 17 (2007));
    below the threshold the overlap tends to 0. Both limits are returned per spike.

    ``latent="rademacher"`` draws ``z = +-1``: the covariance is the same, but the spike direction
    is then also visible in the fourth cumulant (a non-Gaussian direction, as in ICA).

    Parameters
    ----------
    n_samples, d : int >= 1.
    strengths : float > 0 or a sequence of them, the spike strengths ``beta_k`` (``k <= d``).
    latent : ``"gaussian"`` or ``"rademacher"``, the distribution of ``z``.
    seed : None, int or numpy Generator.

    Returns
    -------
    SpikedCovariance
    """
    n_samples, d = _check_size(n_samples, d, "spiked_covariance")
    beta = np.atleast_1d(np.asarray(strengths, dtype=object))
    if beta.ndim != 1 or beta.size == 0:
        raise ValueError(f"strengths must be a positive number or a non-empty sequence of them; got {strengths!r}")
    beta = np.array([check_float(b, "each of strengths", low=0.0, low_inclusive=False) for b in beta])
    k = beta.size
    if k > d:
        raise ValueError(f"strengths has {k} spikes but d={d}; expected at most d spikes (they are orthonormal)")
    latent = check_option(latent, "latent", ("gaussian", "rademacher"))
    rng = numpy_rng(seed)
    spikes = _orthonormal(rng, d, k)
    z = _unit_latent(rng, (n_samples, k), latent)
    X = rng.standard_normal((n_samples, d)) + (z * np.sqrt(beta)) @ spikes
    gamma = d / n_samples
    above = beta > math.sqrt(gamma)
    overlap = np.where(above, (1 - gamma / beta**2) / (1 + gamma / beta), 0.0)
    eig = np.where(above, (1 + beta) * (1 + gamma / beta), (1 + math.sqrt(gamma)) ** 2)
    return SpikedCovariance(X=X, spikes=spikes, strengths=beta, latent=z, latent_distribution=latent,
                            bbp_threshold=math.sqrt(gamma), overlap_limit=overlap, eigenvalue_limit=eig)


#: The unit-variance source distributions of :func:`ica_mixture` and their excess kurtosis.
ICA_SOURCES = {"laplace": 3.0, "uniform": -1.2, "rademacher": -2.0, "gaussian": 0.0}


@dataclass
class ICAMixture:
    """The linear ICA data set returned by :func:`ica_mixture`.

    Attributes
    ----------
    X : (n_samples, d) float64, ``X = sources @ mixing.T + noise * N(0, I_d)``.
    sources : (n_samples, k) float64, independent zero-mean unit-variance sources.
    mixing : (d, k) float64, the mixing matrix ``A`` (unit-norm columns).
    unmixing : (k, d) float64, ``pinv(A)``: ``unmixing @ x`` gives the sources back when ``noise = 0``.
    distributions : tuple of str, each source's distribution.
    kurtosis : (k,) float64, each source's excess kurtosis (``ICA_SOURCES``).
    noise : float.
    """

    X: np.ndarray
    sources: np.ndarray
    mixing: np.ndarray
    unmixing: np.ndarray
    distributions: tuple
    kurtosis: np.ndarray
    noise: float


def _draw_source(rng, n: int, kind: str) -> np.ndarray:
    if kind == "laplace":
        return rng.laplace(0.0, 1.0 / math.sqrt(2.0), n)
    if kind == "uniform":
        return rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), n)
    return _unit_latent(rng, n, kind)


def ica_mixture(n_samples: int = 2000, n_sources: int = 3, d: int | None = None, sources="laplace",
                noise: float = 0.0, seed=0) -> ICAMixture:
    """The linear ICA model ``x = A s + noise * eps`` (Hyvarinen & Oja, Neural Networks 13 (2000)).

    The ``k`` sources are independent with zero mean and unit variance: ``"laplace"`` (excess
    kurtosis 3), ``"uniform"`` on ``[-sqrt 3, sqrt 3]`` (-1.2), ``"rademacher"`` (+-1, -2) or
    ``"gaussian"`` (0; at most one Gaussian source is identifiable). ``A`` is a Gaussian ``(d, k)``
    matrix with columns scaled to unit norm; the sources are identifiable up to order and sign when
    at most one of them is Gaussian (Comon 1994), so FastICA recovers ``A``'s columns up to
    permutation, sign and scale.

    Parameters
    ----------
    n_samples : int >= 1.
    n_sources : int >= 1, ``k``.
    d : int >= n_sources, the observed dimension (None: ``d = k``, a square mixing).
    sources : a name above, or a sequence of ``k`` names (one per source).
    noise : float >= 0, the std of isotropic Gaussian noise added to ``x``.
    seed : None, int or numpy Generator.

    Returns
    -------
    ICAMixture
    """
    k = check_budget(n_sources, "n_sources", unit="sources")
    d = k if d is None else d
    n_samples, d = _check_size(n_samples, d, "ica_mixture")
    if d < k:
        raise ValueError(f"d={d} is smaller than n_sources={k}; expected d >= n_sources (an invertible mixing)")
    if isinstance(sources, str):
        kinds = (check_option(sources, "sources", tuple(ICA_SOURCES)),) * k
    else:
        try:
            kinds = tuple(sources)
        except TypeError:
            raise TypeError(f"sources must be one of {', '.join(map(repr, ICA_SOURCES))} or a sequence of them; "
                            f"got {sources!r} ({type(sources).__name__})") from None
        if len(kinds) != k:
            raise ValueError(f"sources has {len(kinds)} entries; expected one per source (n_sources={k})")
        kinds = tuple(check_option(s, "each of sources", tuple(ICA_SOURCES)) for s in kinds)
    noise = _check_noise(noise)
    rng = numpy_rng(seed)
    A = rng.standard_normal((d, k))
    A /= np.linalg.norm(A, axis=0, keepdims=True)
    S = np.stack([_draw_source(rng, n_samples, kind) for kind in kinds], axis=1)
    X = S @ A.T
    if noise > 0:
        X = X + noise * rng.standard_normal((n_samples, d))
    return ICAMixture(X=X, sources=S, mixing=A, unmixing=np.linalg.pinv(A), distributions=kinds,
                      kurtosis=np.array([ICA_SOURCES[s] for s in kinds]), noise=noise)


# --------------------------------------------------------------------------------------------------
# continual learning


@dataclass
class ContinualTasks:
    """A sequence of teacher-student tasks returned by :func:`continual_tasks`.

    Attributes
    ----------
    X : (n_tasks, n_samples, d) float64, each task's inputs ``x ~ N(0, I_d)`` (drawn afresh per task).
    y : (n_tasks, n_samples) float64, ``y = sum_j a_j g(<w_tj, x>) + noise * eps``, ``a_j = 1/sqrt(m)``.
    y_clean : (n_tasks, n_samples) float64, the noiseless targets.
    teachers : (n_tasks, m, d) float64, each task's teacher rows ``w_tj`` (orthonormal per task).
    similarity : (n_tasks,) float64, the cosine asked between task t's and task 0's teacher
        (``similarity[0] = 1``).
    link : str, noise : float.
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    teachers: np.ndarray
    similarity: np.ndarray
    link: str
    noise: float
    tasks: list = field(init=False, repr=False)

    def __post_init__(self):
        self.tasks = [(self.X[t], self.y[t]) for t in range(self.X.shape[0])]

    def overlaps(self) -> np.ndarray:
        """The teacher overlap matrix ``Q[s, t] = trace(W_s W_t^T) / m`` (n_tasks, n_tasks): the mean
        cosine of matched teacher units, ``Q[0, t] = similarity[t]`` and ``Q[s, t] = similarity[s]
        similarity[t]`` for ``s != t`` both >= 1."""
        m = self.teachers.shape[1]
        W = self.teachers.reshape(self.teachers.shape[0], -1)
        return W @ W.T / m


def continual_tasks(n_tasks: int = 3, n_samples: int = 500, d: int = 20, similarity=0.5, n_hidden: int = 1,
                    link: str = "linear", noise: float = 0.0, seed=0) -> ContinualTasks:
    """Teacher-student tasks whose teachers sit at a chosen cosine to task 0's.

    Task 0's teacher is ``W_0``, ``m = n_hidden`` Haar-random orthonormal rows. Task ``t >= 1`` has

        ``W_t = s_t W_0 + sqrt(1 - s_t^2) V_t``,

    where the ``V_t`` are orthonormal rows orthogonal to ``W_0`` and to each other. So every row of
    ``W_t`` is a unit vector, ``<w_tj, w_0j> = s_t`` exactly, ``<w_tj, w_0i> = 0`` for ``i != j``, and
    two later tasks meet at ``s_s s_t`` (:meth:`ContinualTasks.overlaps`). The target is the soft
    committee ``y = sum_j g(<w_tj, x>) / sqrt(m) + noise * eps`` with a shared readout, as in the
    feature-similarity experiments of Lee, Goldt & Saxe (ICML 2021, arXiv 2107.04384). Needs
    ``d >= m n_tasks``.

    Parameters
    ----------
    n_tasks : int >= 1.
    n_samples : int >= 1, rows per task.
    d : int >= 1.
    similarity : float in [-1, 1] (every later task at this cosine to task 0), or a sequence of
        ``n_tasks - 1`` of them (task ``t``'s cosine is ``similarity[t - 1]``).
    n_hidden : int >= 1, the teacher's units ``m``.
    link : a name of :data:`SINGLE_INDEX_LINKS` (the units' activation).
    noise : float >= 0, the std of the additive Gaussian noise on ``y``.
    seed : None, int or numpy Generator.

    Returns
    -------
    ContinualTasks
    """
    T = check_budget(n_tasks, "n_tasks", unit="tasks")
    m = check_int(n_hidden, "n_hidden", low=1)
    n_samples, d = _check_size(n_samples, d, "continual_tasks", per_row=3 * T)
    if isinstance(similarity, (list, tuple, np.ndarray)):
        sims = list(np.asarray(similarity, dtype=object).ravel())
        if len(sims) != T - 1:
            raise ValueError(f"similarity has {len(sims)} entries; expected one per later task (n_tasks - 1 = {T - 1}) "
                             "or a single number")
        sims = [check_float(s, "each of similarity", low=-1.0, high=1.0) for s in sims]
    else:
        sims = [check_float(similarity, "similarity", low=-1.0, high=1.0)] * (T - 1)
    if d < m * T:
        raise ValueError(f"d={d} is too small for {T} tasks of {m} teacher units: the construction needs "
                         f"d >= n_hidden * n_tasks = {m * T} orthogonal directions")
    link = check_option(link, "link", tuple(SINGLE_INDEX_LINKS))
    g = SINGLE_INDEX_LINKS[link][0]
    noise = _check_noise(noise)
    rng = numpy_rng(seed)
    Q = _orthonormal(rng, d, m * T)
    W0 = Q[:m]
    teachers = [W0] + [s * W0 + math.sqrt(max(0.0, 1.0 - s * s)) * Q[m * t: m * (t + 1)]
                       for t, s in enumerate(sims, start=1)]
    teachers = np.stack(teachers)
    X = rng.standard_normal((T, n_samples, d))
    y_clean = np.stack([g(X[t] @ teachers[t].T).sum(axis=1) / math.sqrt(m) for t in range(T)])
    y = y_clean + noise * rng.standard_normal(y_clean.shape) if noise > 0 else y_clean.copy()
    return ContinualTasks(X=X, y=y, y_clean=y_clean, teachers=teachers, similarity=np.array([1.0] + sims),
                          link=link, noise=noise)


# --------------------------------------------------------------------------------------------------
# lazy / rich


class OutputScaled(torch.nn.Module):
    """The lazy/rich output scale: ``f_alpha(x) = alpha (f(x; w) - f(x; w_0))``.

    Chizat, Oyallon & Bach, "On lazy training in differentiable programming", NeurIPS 2019 (arXiv
    1812.07956). ``net`` is trained; ``init`` is a frozen copy of it taken at construction (its
    parameters have ``requires_grad=False``), so ``f_alpha`` is exactly 0 at initialisation and
    ``d f_alpha / d w = alpha d f / d w``. Train with the loss divided by ``alpha^2``
    (:meth:`scale_loss`): to first order the function then moves at the same speed for every
    ``alpha`` while the weights move about ``1 / alpha`` as far, so ``alpha = 1`` is the ordinary
    ("rich", feature-learning) network and a large ``alpha`` the "lazy" (linearised, kernel) regime.

    Parameters
    ----------
    net : torch.nn.Module, the network ``f(.; w)`` (trained in place: optimise ``self.net.parameters()``
        or ``self.parameters()``, whose frozen copies receive no gradient).
    alpha : float > 0, the output scale.

    Attributes
    ----------
    net, init : torch.nn.Module, the trained network and its frozen initial copy (so a layer of the
        trained network is ``"net.<name>"`` in ``named_modules()``).
    alpha : float.
    loss_scale : float, ``1 / alpha^2``.

    Examples
    --------
    >>> model = OutputScaled(torch.nn.Linear(3, 2), alpha=100.0)
    >>> x = torch.randn(5, 3)
    >>> bool((model(x) == 0).all())
    True
    >>> loss = model.scale_loss(torch.nn.functional.mse_loss(model(x), torch.ones(5, 2)))
    """

    def __init__(self, net: torch.nn.Module, alpha: float = 1.0):
        super().__init__()
        if not isinstance(net, torch.nn.Module):
            raise TypeError(f"net must be a torch.nn.Module; got {type(net).__name__}")
        self.alpha = check_float(alpha, "alpha", low=0.0, low_inclusive=False)
        self.net = net
        self.init = copy.deepcopy(net).requires_grad_(False)

    @property
    def loss_scale(self) -> float:
        """``1 / alpha^2``, the factor on the loss."""
        return 1.0 / self.alpha**2

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss / alpha^2`` (Chizat et al. 2019's objective ``L(f_alpha) / alpha^2``)."""
        return loss / self.alpha**2

    def forward(self, x):
        return self.alpha * (self.net(x) - self.init(x))

    def extra_repr(self) -> str:
        return f"alpha={self.alpha:g}"
