"""Signal plus noise: label noise, spiked covariance and the ICA mixture."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._random import numpy_rng
from ..._validation import check_float, check_option
from ..._budgets import check_budget
from ._checks import check_noise, check_size, orthonormal


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
    n_samples, d = check_size(n_samples, d, "label_noise")
    signal_norm = check_float(signal_norm, "signal_norm", low=0.0)
    noise_std = check_float(noise_std, "noise_std", low=0.0, low_inclusive=False)
    flip = check_float(flip, "flip", low=0.0, high=0.5)
    layout = check_option(layout, "layout", ("sum", "patches"))
    if not isinstance(orthogonal, (bool, np.bool_)):
        raise TypeError(f"orthogonal must be True or False; got {orthogonal!r} ({type(orthogonal).__name__})")
    orthogonal = bool(orthogonal)
    rng = numpy_rng(seed)
    u = orthonormal(rng, d, 1)[0]
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
    n_samples, d = check_size(n_samples, d, "spiked_covariance")
    beta = np.atleast_1d(np.asarray(strengths, dtype=object))
    if beta.ndim != 1 or beta.size == 0:
        raise ValueError(f"strengths must be a positive number or a non-empty sequence of them; got {strengths!r}")
    beta = np.array([check_float(b, "each of strengths", low=0.0, low_inclusive=False) for b in beta])
    k = beta.size
    if k > d:
        raise ValueError(f"strengths has {k} spikes but d={d}; expected at most d spikes (they are orthonormal)")
    latent = check_option(latent, "latent", ("gaussian", "rademacher"))
    rng = numpy_rng(seed)
    spikes = orthonormal(rng, d, k)
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
    n_samples, d = check_size(n_samples, d, "ica_mixture")
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
    noise = check_noise(noise)
    rng = numpy_rng(seed)
    A = rng.standard_normal((d, k))
    A /= np.linalg.norm(A, axis=0, keepdims=True)
    S = np.stack([_draw_source(rng, n_samples, kind) for kind in kinds], axis=1)
    X = S @ A.T
    if noise > 0:
        X = X + noise * rng.standard_normal((n_samples, d))
    return ICAMixture(X=X, sources=S, mixing=A, unmixing=np.linalg.pinv(A), distributions=kinds,
                      kurtosis=np.array([ICA_SOURCES[s] for s in kinds]), noise=noise)
