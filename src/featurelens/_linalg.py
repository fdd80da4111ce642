"""Small dense linear algebra shared by the sampling explainers and the sparse transforms."""

from __future__ import annotations

import numpy as np
import torch


def lstsq(design: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Least-squares coefficients ``argmin ||design @ c - values||`` in float64 (minimum-norm for
    rank-deficient designs: the SVD-based ``gelsd`` driver, like ``numpy.linalg.lstsq``).

    Why torch and not numpy: these solves sit between torch forward passes, and numpy's OpenBLAS
    pool and torch's OpenMP pool then stall each other on a few cores (measured 8 ms instead of
    0.2 ms for a 512 x 29 system on 2 cores, and the next forward passes slow down too); limiting
    OpenBLAS with threadpoolctl costs ~1-3 ms per call. torch solves in its own pool.
    """
    a = torch.as_tensor(np.ascontiguousarray(design, dtype=np.float64))
    b = torch.as_tensor(np.ascontiguousarray(values, dtype=np.float64))
    solution = torch.linalg.lstsq(a, b if b.ndim == 2 else b[:, None], driver="gelsd").solution
    return (solution if b.ndim == 2 else solution[:, 0]).numpy()
