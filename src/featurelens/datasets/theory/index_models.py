"""Single- and multi-index models: a target that depends on x only through planted directions."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._random import numpy_rng
from ..._validation import check_int, check_option
from ._checks import check_noise, check_size, orthonormal


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
    ``directions[0]``). Named links (``SINGLE_INDEX_LINKS``, with their information exponents
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
    n_samples, d = check_size(n_samples, d, "single_index")
    g = _resolve_link(link, SINGLE_INDEX_LINKS)
    noise = check_noise(noise)
    rng = numpy_rng(seed)
    directions = orthonormal(rng, d, 1)
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

    Named links (``MULTI_INDEX_LINKS``, ``z = W^T x``): ``"staircase"``
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
    n_samples, d = check_size(n_samples, d, "multi_index")
    k = check_int(n_directions, "n_directions", low=1)
    if k > d:
        raise ValueError(f"n_directions={k} is larger than d={d}; expected 1 <= n_directions <= d "
                         "(the directions are orthonormal in R^d)")
    g = _resolve_link(link, MULTI_INDEX_LINKS)
    noise = check_noise(noise)
    rng = numpy_rng(seed)
    directions = orthonormal(rng, d, k)
    X = rng.standard_normal((n_samples, d))
    latent = X @ directions.T
    y_clean = _apply_link(g if callable(g) else MULTI_INDEX_LINKS[g], latent, "link", vector=False)
    y = y_clean + noise * rng.standard_normal(n_samples) if noise > 0 else y_clean.copy()
    return IndexModel(X=X, y=y, y_clean=y_clean, directions=directions, latent=latent, link=link,
                      information_exponent=None, noise=noise)
