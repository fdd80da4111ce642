"""Regression: NBSE's 1-D embedding is the authors' one, Lam^(-1/2) x with x the smallest eigenvector
of the normalised L(beta_N) = I - Lam^(-1/2) S Lam^(-1/2) (Lam = 1 + D), i.e. the null vector of the
Bethe Hessian H(beta_N). featurelens used to divide H's own eigenvector by Lam^(1/2) once more,
which counts the degrees twice (on this graph the two vectors have cosine 0.87 and ||H v|| / ||v||
was 24 instead of ~1e-4)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from featurelens.selection.nbse import _couplings, bethe_hessian, nishimori_embedding


def _heterogeneous_couplings():
    # Groups of redundant features of unequal sizes (2 to 12): the kNN graph's degrees and so
    # Lam = 1 + sum_j sinh^2(beta J_ij) vary a lot across nodes.
    rng = np.random.default_rng(0)
    sizes = [2, 3, 5, 8, 12]
    Z = rng.standard_normal((300, len(sizes)))
    X = np.hstack([Z[:, [g]] + 0.7 * rng.standard_normal((300, s)) for g, s in enumerate(sizes)])
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    C = np.abs(X.T @ X) / len(X)
    np.fill_diagonal(C, 0.0)
    return _couplings(C, 6)


def test_embedding_is_the_normalised_laplacians_eigenvector_degree_corrected_once():
    J = _heterogeneous_couplings()
    v, beta, found = nishimori_embedding(J)
    assert found
    lam = 1.0 + (np.sinh(beta * J) ** 2).sum(axis=1)
    assert lam.max() > 2 * lam.min()  # the degree correction matters on this graph
    s = lam**-0.5
    L = np.eye(len(J)) - s[:, None] * (0.5 * np.sinh(2 * beta * J)) * s[None, :]
    x = eigh(L)[1][:, 0]
    ref = s * x
    cos = abs(v @ ref) / (np.linalg.norm(v) * np.linalg.norm(ref))
    assert cos > 1 - 1e-9
    # At beta_N, H is singular and the embedding spans its null space: ||H v|| is at the bisection
    # tolerance, tiny against H's spectral scale.
    H = bethe_hessian(J, beta)
    scale = np.abs(eigh(H, eigvals_only=True)).max()
    assert np.linalg.norm(H @ v) / np.linalg.norm(v) < 1e-4 * scale
    # Sign convention kept: the largest entry in absolute value is positive.
    assert v[np.argmax(np.abs(v))] > 0
