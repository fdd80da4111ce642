"""Planted sparse features in superposition: ground truth for dictionary learning (sparse autoencoders).

The toy model of Elhage et al., "Toy Models of Superposition", Transformer Circuits Thread, 2022
(arXiv 2209.10652): ``n_features`` sparse features, each zero with probability ``S`` (the
*sparsity*) and otherwise of magnitude Uniform(0, 1), stored along ``n_features`` unit directions
in ``d < n_features`` dimensions::

    x_i = s_i * sum_k c_ik d_k,      c_ik = [u_ik >= S] * m_ik,  u, m ~ Uniform(0, 1),
    s_i = exp(N(0, norm_spread^2))   (a per-sample norm factor; s_i = 1 when norm_spread = 0)

with ``d_k`` the rows of a random unit dictionary (Gaussian rows, normalised). ``normalize=True``
then rescales every nonzero sample to unit norm, as a LayerNorm (without its affine part and
centring) would: ``x_i <- x_i / ||x_i||``. The returned ``codes`` carry every scale applied, so
``X = codes @ dictionary`` holds exactly (up to rounding) in every variant: a dictionary learner
that finds ``dictionary`` and ``codes`` reconstructs ``X`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._random import numpy_rng
from .._validation import check_bool, check_float
from .._budgets import check_budget, check_memory

__all__ = ["Superposition", "superposition"]


@dataclass
class Superposition:
    """The planted data set returned by :func:`superposition`.

    Attributes
    ----------
    X : (n_samples, d) float64, the activations, ``X = codes @ dictionary``.
    codes : (n_samples, n_features) float64, nonnegative true codes (norm factor and
        normalisation included).
    dictionary : (n_features, d) float64, unit-norm rows (the true feature directions).
    norms : (n_samples,) float64, ``||x_i||`` *before* the optional normalisation (after the
        norm factor), i.e. the magnitude a normalising layer would discard.
    scales : (n_samples,) float64, the per-sample norm factors ``exp(N(0, norm_spread^2))``.
    sparsity, norm_spread, normalize : the generating parameters.
    """

    X: np.ndarray
    codes: np.ndarray
    dictionary: np.ndarray
    norms: np.ndarray
    scales: np.ndarray
    sparsity: float
    norm_spread: float
    normalize: bool


def superposition(
    n_features: int,
    d: int,
    sparsity: float,
    norm_spread: float = 0.0,
    normalize: bool = False,
    n_samples: int = 4096,
    seed=0,
) -> Superposition:
    """Sample the toy model of superposition (module docstring; Elhage et al. 2022, arXiv 2209.10652).

    Parameters
    ----------
    n_features : int >= 1, number of true features (dictionary atoms).
    d : int >= 1, dimension of the activations (superposition when ``d < n_features``).
    sparsity : float in [0, 1), Elhage et al.'s ``S``: the probability that a feature is zero in a
        sample (each feature independently).
    norm_spread : float >= 0, std of the log of the per-sample norm factor.
    normalize : bool, rescale each nonzero sample to unit norm (as after LayerNorm). Samples with no
        active feature stay zero.
    n_samples : int >= 1.

    ``n_features``, ``d`` and ``n_samples`` are each refused before any work above
    ``featurelens._budgets.MAX_EVALUATIONS`` (10^8), and together when the arrays would need
    more than the memory available (about ``8 (n_features d + 3 n_samples n_features + 2 n_samples d)``
    bytes).
    seed : None, int or numpy Generator.
    """
    n_features = check_budget(n_features, "n_features", unit="features")
    d = check_budget(d, "d", unit="dimensions")
    sparsity = check_float(sparsity, "sparsity", low=0.0, high=1.0, high_inclusive=False)
    norm_spread = check_float(norm_spread, "norm_spread", low=0.0)
    normalize = check_bool(normalize, "normalize")
    n_samples = check_budget(n_samples, "n_samples", unit="samples")
    # Peak memory: the dictionary, the codes with their uniform draws and product (float64) and the
    # active mask (bool), X and its rescaled copy, the per-sample scales and norms.
    nbytes = 8 * (n_features * d + 3 * n_samples * n_features + 2 * n_samples * d + 2 * n_samples) + n_samples * n_features
    check_memory(nbytes, f"superposition(n_samples={n_samples}, n_features={n_features}, d={d})",
                 "lower n_samples, n_features or d.")
    rng = numpy_rng(seed)

    dictionary = rng.standard_normal((n_features, d))
    dictionary /= np.linalg.norm(dictionary, axis=1, keepdims=True)
    active = rng.random((n_samples, n_features)) >= sparsity
    codes = np.where(active, rng.random((n_samples, n_features)), 0.0)
    scales = np.exp(norm_spread * rng.standard_normal(n_samples)) if norm_spread > 0 else np.ones(n_samples)
    codes *= scales[:, None]
    X = codes @ dictionary
    norms = np.linalg.norm(X, axis=1)
    if normalize:
        # A sample with no active feature has no direction; it stays zero rather than becoming NaN.
        inv = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
        codes *= inv[:, None]
        X = X * inv[:, None]
    return Superposition(
        X=X, codes=codes, dictionary=dictionary, norms=norms, scales=scales,
        sparsity=sparsity, norm_spread=norm_spread, normalize=normalize,
    )
