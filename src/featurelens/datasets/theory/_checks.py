"""Argument checks shared by the theory generators."""

from __future__ import annotations


import numpy as np

from ..._validation import check_float
from ..._budgets import check_budget, check_memory


# --------------------------------------------------------------------------------------------------
# shared checks


def check_size(n_samples, d, what: str, per_row: int = 3) -> tuple[int, int]:
    """``n_samples`` and ``d`` as budgets, and the float64 arrays of about ``per_row`` copies of an
    ``(n_samples, d)`` array refused above the memory available."""
    n_samples = check_budget(n_samples, "n_samples", unit="samples")
    d = check_budget(d, "d", unit="dimensions")
    check_memory(8 * per_row * n_samples * d + 8 * d * d, f"{what}(n_samples={n_samples}, d={d})",
                 "lower n_samples or d.")
    return n_samples, d


def orthonormal(rng: np.random.Generator, d: int, k: int) -> np.ndarray:
    """``k`` orthonormal rows in ``R^d``, uniformly distributed (Haar): QR of a Gaussian ``(d, k)``
    matrix with the signs of R's diagonal moved into Q (Mezzadri 2007)."""
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    q *= np.where(np.diag(r) < 0, -1.0, 1.0)
    return np.ascontiguousarray(q.T)


def check_noise(noise) -> float:
    return check_float(noise, "noise", low=0.0)
