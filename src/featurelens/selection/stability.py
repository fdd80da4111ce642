"""How much a feature selection varies over bootstrap resamples of the data.

``stability(selector, X, y)`` refits a clone of ``selector`` on ``n_bootstrap`` bootstrap resamples
and summarises the resulting binary selection matrix Z (one row per resample, one column per
feature) by Nogueira's stability index and by the mean pairwise Jaccard index.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from .._random import numpy_rng
from .._validation import check_int
from .._budgets import check_budget

__all__ = ["stability", "nogueira_index", "mean_pairwise_jaccard"]


def _check_selection_matrix(Z, name: str = "Z") -> np.ndarray:
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_resamples, n_features), got shape {Z.shape}")
    if Z.shape[0] < 2 or Z.shape[1] < 1:
        raise ValueError(
            f"{name} must have at least 2 rows (resamples) and 1 column (feature), got shape {Z.shape}"
        )
    if Z.dtype != bool:
        if not np.all(np.isin(Z, (0, 1))):
            raise ValueError(f"{name} must hold 0/1 or boolean selection indicators")
        Z = Z.astype(bool)
    return Z


def nogueira_index(Z) -> float:
    """Nogueira's stability index of a selection matrix ``Z`` (M resamples x d features, 0/1).

    Phi = 1 - mean_f s_f^2 / ((kbar / d) (1 - kbar / d)), where s_f^2 = M / (M - 1) p_f (1 - p_f)
    is the unbiased variance of feature f's selection indicator (p_f its selection frequency) and
    kbar the mean number of selected features; the denominator is the variance expected when kbar
    features are drawn at random, so Phi = 1 for identical selections and E[Phi] = 0 for random
    ones (also when the number of selected features varies between resamples). When every
    resample selects all features or none, the selections are identical and Phi = 1.

    Nogueira, Sechidis, Brown, "On the Stability of Feature Selection Algorithms", JMLR 18(174),
    2018.
    """
    Z = _check_selection_matrix(Z)
    M, d = Z.shape
    p = Z.mean(axis=0, dtype=np.float64)
    s2 = M / (M - 1) * p * (1.0 - p)
    kbar = Z.sum(axis=1, dtype=np.float64).mean()
    denom = (kbar / d) * (1.0 - kbar / d)
    if denom <= 0.0:
        # kbar in {0, d}: every resample made the same (empty or full) selection.
        return 1.0
    return float(1.0 - s2.mean() / denom)


def mean_pairwise_jaccard(Z) -> float:
    """Mean over the M(M-1)/2 pairs of resamples of |S_i & S_j| / |S_i | S_j| (1 when both are empty).

    Not corrected for chance: random selections of k among d features score about k / (2d - k).
    """
    Z = _check_selection_matrix(Z)
    Zf = Z.astype(np.float64)
    inter = Zf @ Zf.T
    sizes = Zf.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - inter
    jac = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 1.0)
    iu = np.triu_indices(Z.shape[0], k=1)
    return float(jac[iu].mean())


def _take_rows(data, idx):
    if hasattr(data, "iloc"):
        return data.iloc[idx]
    return np.asarray(data)[idx]


def stability(selector, X, y=None, n_bootstrap: int = 30, seed=0) -> dict:
    """Refit clones of ``selector`` on bootstrap resamples and measure how stable the selection is.

    For b = 1..B, rows are drawn with replacement (n of n), ``sklearn.base.clone(selector)`` is fit
    on them (``fit(X_b)`` when ``y`` is None, for unsupervised selectors; ``fit(X_b, y_b)``
    otherwise), and its ``get_support()`` becomes row b of the selection matrix Z (B x d).

    Returns a dict with
      ``"nogueira"``: Nogueira's index (see ``nogueira_index``; 1 = identical selections,
      about 0 = no better than random; corrected for the mean selection size kbar),
      ``"jaccard"``: mean pairwise Jaccard index of the selected sets,
      ``"supports"``: Z as a (B, d) bool array, ``"frequency"``: Z.mean(axis=0) (per-feature
      selection frequency), ``"n_selected"``: Z.sum(axis=1), and ``"n_bootstrap"``.

    The clone keeps the selector's parameters (including its own seed); the resamples come from
    ``seed`` (None, an int or a ``numpy.random.Generator``), so an int seed gives the same result
    on every call.

    Nogueira, Sechidis, Brown, JMLR 18(174), 2018 (the index); Jaccard (1901).
    """
    if not hasattr(selector, "fit") or not hasattr(selector, "get_params"):
        raise TypeError(
            f"selector must be a scikit-learn selector (with fit, get_params and get_support), "
            f"got {type(selector).__name__}"
        )
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", low=2)
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    if len(X.shape) != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X must have at least 2 rows to resample, got {n}")
    # Each refit sees n resampled rows: refused before the first refit above the evaluation bound.
    check_budget(n_bootstrap, "n_bootstrap", low=2, per=n, unit="resampled rows", what=f"({n} rows per refit)")
    if y is not None:
        y_len = len(y) if hasattr(y, "__len__") else None
        if y_len != n:
            raise ValueError(f"y has {y_len} entries but X has {n} rows; expected one target per row of X")

    rng = numpy_rng(seed)
    supports = []
    for _ in range(int(n_bootstrap)):
        idx = rng.integers(0, n, size=n)
        est = clone(selector)
        if y is None:
            est.fit(_take_rows(X, idx))
        else:
            est.fit(_take_rows(X, idx), _take_rows(y, idx))
        supports.append(np.asarray(est.get_support(), dtype=bool))
    Z = np.vstack(supports)
    return {
        "nogueira": nogueira_index(Z),
        "jaccard": mean_pairwise_jaccard(Z),
        "supports": Z,
        "frequency": Z.mean(axis=0),
        "n_selected": Z.sum(axis=1),
        "n_bootstrap": int(n_bootstrap),
    }
