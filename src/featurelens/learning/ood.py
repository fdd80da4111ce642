"""Mahalanobis(++) OOD scores on (pre-logit) features.

Lee, Lee, Lee, Shin, "A Simple Unified Framework for Detecting Out-of-Distribution Samples and
Adversarial Attacks", NeurIPS 2018, arXiv 1807.03888 (class means, shared covariance);
Mueller & Hein, "Mahalanobis++: Improving OOD Detection via Feature Normalization", ICML 2025,
arXiv 2505.18032 (l2-normalise every feature vector first).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from .._batching import chunks, rows_for_bytes
from .._validation import check_bool, check_float, check_int
from .representation_stats import class_stats, feature_matrix, label_vector


def _l2_normalise(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    # A zero vector has no direction; it stays zero rather than becoming NaN.
    return X / np.where(norms > 0, norms, 1.0)


class MahalanobisOOD(BaseEstimator):
    """Class-conditional Gaussian OOD detector with a shared covariance (Mahalanobis / Mahalanobis++).

        f = h / ||h||_2 (when ``normalize``),   mu_c = mean of f over class c,
        Sigma = (1/n) sum_i (f_i - mu_{y_i})(f_i - mu_{y_i})^T + ridge * (tr(Sigma) / d) * I,
        score(h) = - min_c (f - mu_c)^T Sigma^{-1} (f - mu_c)      (higher = more in-distribution)

    Everything is fitted in float64. Sigma is the maximum-likelihood (1/n) pooled within-class
    covariance, as in the Mahalanobis++ reference code; the ridge is *relative*: ``ridge`` times the
    mean eigenvalue tr(Sigma)/d, so it does not depend on the feature scale. Sigma is inverted
    through its eigendecomposition; with ``ridge=0`` eigenvalues below
    ``max eigenvalue * d * machine eps`` are dropped (a pseudo-inverse). ``normalize=False`` gives
    the plain Mahalanobis detector of Lee et al. (2018); ``normalize=True`` Mahalanobis++
    (Mueller & Hein 2025), which normalises train and test features alike before anything is
    estimated.

    Parameters
    ----------
    normalize : bool, default True
    ridge : float >= 0, default 1e-6, relative to tr(Sigma)/d.
    batch_size : int or None, rows scored at once (None: as many as keep a chunk's float64
        temporaries within ``featurelens._batching.DEFAULT_CHUNK_BYTES``,
        ``featurelens._batching.rows_for_bytes``).

    Attributes (after fit)
    ----------------------
    classes_ : sorted labels; means_ : (C, d) class means of the (normalised) features;
    covariance_ : (d, d) regularised shared covariance; precision_ : (d, d) its (pseudo-)inverse;
    n_features_in_ : d.
    """

    def __init__(self, normalize: bool = True, ridge: float = 1e-6, batch_size: int | None = None):
        self.normalize = normalize
        self.ridge = ridge
        self.batch_size = batch_size

    def fit(self, H, y) -> "MahalanobisOOD":
        """Fit class means and the shared covariance on training features H (n, d) with labels y."""
        check_bool(self.normalize, "normalize")
        check_float(self.ridge, "ridge", low=0.0)  # numpy scalars such as np.float32(1e-3) too
        check_int(self.batch_size, "batch_size", low=1, allow_none=True)
        X = feature_matrix(H, "H", min_rows=2)
        if self.normalize:
            X = _l2_normalise(X)
        classes, codes = label_vector(y, X.shape[0])
        means, _, resid = class_stats(X, codes, len(classes))
        n, d = X.shape
        cov = resid.T @ resid / n
        cov += (float(self.ridge) * np.trace(cov) / d) * np.eye(d)
        evals, evecs = np.linalg.eigh(cov)
        if evals.max() <= 0:
            raise ValueError("H has no within-class variance (every row equals its class mean); cannot fit a covariance")
        keep = evals > evals.max() * d * np.finfo(np.float64).eps
        # Whitening T with T T^T = Sigma^{-1}: distances become Euclidean in T-space.
        self._whiten = evecs[:, keep] / np.sqrt(evals[keep])
        self.classes_ = classes
        self.means_ = means
        self.covariance_ = cov
        self.precision_ = self._whiten @ self._whiten.T
        self.n_features_in_ = d
        centre = means.mean(0)
        self._centre = centre
        self._means_w = (means - centre) @ self._whiten  # centred first: less cancellation below
        return self

    def _check_fitted(self):
        if not hasattr(self, "means_"):
            raise RuntimeError("MahalanobisOOD is not fitted; call fit(H, y) first")

    def distances(self, H) -> np.ndarray:
        """Squared Mahalanobis distances (n, C) of each row to each class mean."""
        self._check_fitted()
        X = feature_matrix(H, "H")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"H must have {self.n_features_in_} features (as in fit); got {X.shape[1]}")
        if self.normalize:
            X = _l2_normalise(X)
        mw = self._means_w
        msq = np.einsum("ij,ij->i", mw, mw)
        out = np.empty((X.shape[0], mw.shape[0]))
        # A chunk holds the shifted rows (d), their whitened image (<= d) and the (rows, C)
        # distances, in float64.
        rows = check_int(self.batch_size, "batch_size", low=1, allow_none=True)
        if rows is None:
            rows = rows_for_bytes(8 * (2 * X.shape[1] + mw.shape[0]))
        for s in chunks(X.shape[0], rows):
            z = (X[s] - self._centre) @ self._whiten
            out[s] = np.einsum("ij,ij->i", z, z)[:, None] - 2.0 * (z @ mw.T) + msq[None, :]
        return np.maximum(out, 0.0)

    def score(self, H) -> np.ndarray:
        """OOD score per row, ``-min_c`` squared Mahalanobis distance; higher = more in-distribution."""
        return -self.distances(H).min(axis=1)
