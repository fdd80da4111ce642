"""Small dense linear algebra shared by the sampling explainers and the sparse transforms."""

from __future__ import annotations

import sys

import numpy as np


def _torch():
    """torch when it is already imported (a torch model is being explained: solve in its pool,
    see :func:`lstsq`), else None (numpy alone: no torch forward passes to stall)."""
    return sys.modules.get("torch")


def lstsq(design: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Least-squares coefficients ``argmin ||design @ c - values||`` in float64 (minimum-norm for
    rank-deficient designs: the SVD-based ``gelsd`` driver, like ``numpy.linalg.lstsq``).

    Where torch is already imported, torch, and why torch and not numpy: these solves sit between torch forward passes, and numpy's OpenBLAS
    pool and torch's OpenMP pool then stall each other on a few cores (measured 8 ms instead of
    0.2 ms for a 512 x 29 system on 2 cores, and the next forward passes slow down too); limiting
    OpenBLAS with threadpoolctl costs ~1-3 ms per call. torch solves in its own pool.
    """
    torch = _torch()
    if torch is None:
        b = np.ascontiguousarray(values, dtype=np.float64)
        return np.linalg.lstsq(np.ascontiguousarray(design, dtype=np.float64), b, rcond=None)[0]
    a = torch.as_tensor(np.ascontiguousarray(design, dtype=np.float64))
    b = torch.as_tensor(np.ascontiguousarray(values, dtype=np.float64))
    solution = torch.linalg.lstsq(a, b if b.ndim == 2 else b[:, None], driver="gelsd").solution
    return (solution if b.ndim == 2 else solution[:, 0]).numpy()


def normal_equations(design: np.ndarray, values: np.ndarray, weights: np.ndarray | None = None):
    """``(A^T W A, A^T W y)`` of one block of a least-squares problem, float64 numpy: the terms a
    streamed fit adds up block by block so that the ``(rows, columns)`` design is never held whole.
    ``weights`` None means ``W = I``. Computed in torch's pool for the reason given in
    :func:`lstsq` (numpy's OpenBLAS threads, called between torch forward passes, stall both)."""
    torch = _torch()
    if torch is None:
        a = np.ascontiguousarray(design, dtype=np.float64)
        y = np.ascontiguousarray(values, dtype=np.float64)
        aw = a if weights is None else a * np.asarray(weights, dtype=np.float64)[:, None]
        return aw.T @ a, aw.T @ y
    a = torch.as_tensor(np.ascontiguousarray(design, dtype=np.float64))
    y = torch.as_tensor(np.ascontiguousarray(values, dtype=np.float64))
    aw = a if weights is None else a * torch.as_tensor(np.asarray(weights, dtype=np.float64))[:, None]
    return (aw.T @ a).numpy(), (aw.T @ y).numpy()
