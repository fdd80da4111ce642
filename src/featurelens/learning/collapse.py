"""Neural collapse statistics of last-layer (or any layer's) features.

Papyan, Han, Donoho, "Prevalence of neural collapse during the terminal phase of deep learning
training", PNAS 2020, arXiv 2008.08186; CDNV from Galanti, Gyorgy, Hutter, "On the Role of Neural
Collapse in Transfer Learning", ICLR 2022, arXiv 2112.15121.
"""

from __future__ import annotations

import numpy as np

from .._batching import chunks, rows_for_bytes
from .._validation import as_numpy, check_floating
from .representation_stats import class_stats, feature_matrix, label_vector


def _nearest_mean(H: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Index of the nearest class mean (Euclidean) for each row: argmin_c ||h||^2 - 2 h.mu_c + ||mu_c||^2."""
    sq = np.einsum("ij,ij->i", means, means)
    out = np.empty(H.shape[0], dtype=np.int64)
    # A chunk holds two (rows, C) float64 temporaries (the products and the scores).
    for s in chunks(H.shape[0], rows_for_bytes(16 * means.shape[0])):
        out[s] = np.argmin(sq[None, :] - 2.0 * (H[s] @ means.T), axis=1)
    return out


def neural_collapse(H, y, W=None, b=None, predictions=None) -> dict:
    """Neural collapse (NC1-NC4) and CDNV of features H with labels y.

    Notation: C classes (the sorted unique labels of ``y``), class means mu_c, their mean
    mu_G = (1/C) sum_c mu_c (class-balanced: equal to the global mean for balanced classes, and the
    centre of a simplex ETF also for imbalanced ones), centred means M~ = [mu_c - mu_G] (C x d),
    Sigma_W = (1/n) sum_i (h_i - mu_{y_i})(h_i - mu_{y_i})^T and Sigma_B = (1/C) M~^T M~.

    Returned keys (every value 0 under full collapse unless stated):

    - ``nc1``: (1/C) tr(Sigma_W Sigma_B^+), within-class variability against between-class
      separation (Papyan et al.). Computed in the (C-1)-dimensional span of the class means, without
      a d x d matrix. ``inf`` when all class means coincide.
    - ``nc2``: distance of the class means to a simplex equiangular tight frame,
      ||G/||G||_F - (I - 11^T/C)/sqrt(C-1)||_F with G = M~ M~^T (scale-free; in [0, 2]).
    - ``nc2_equinorm``: std_c ||mu_c - mu_G|| / mean_c ||mu_c - mu_G|| (population std).
    - ``nc2_equiangular``: std over pairs c != c' of cos(mu_c - mu_G, mu_c' - mu_G).
    - ``nc2_maxangle``: mean over pairs c != c' of |cos(mu_c - mu_G, mu_c' - mu_G) + 1/(C-1)|.
    - ``nc3``: self-duality ||W/||W||_F - M~/||M~||_F||_F of the classifier rows and the centred
      means; NaN when ``W`` is not given.
    - ``nc4``: *agreement* (1 under collapse, not 0) of the classifier's decision with the
      nearest-class-mean rule argmin_c ||h - mu_c||: the fraction of rows where
      argmax_c (W h + b)_c (or the given ``predictions``) equals the nearest class mean's label.
      NaN when neither ``W`` nor ``predictions`` is given (see ``ncc_accuracy``).
    - ``ncc_accuracy``: fraction of rows whose nearest class mean is their own class (always
      computed; 1 under collapse).
    - ``cdnv``: class-distance normalised variance averaged over pairs c < c',
      (Var_c + Var_c') / (2 ||mu_c - mu_c'||^2) with Var_c = mean_{i in c} ||h_i - mu_c||^2
      (Galanti et al.); ``inf`` when two class means coincide.
    - ``n_classes``: C.

    Parameters
    ----------
    H : (n, d) features (numpy or torch; more dims are flattened).
    y : (n,) labels; at least two classes.
    W : optional (C, d) classifier weights (``nn.Linear.weight``); row k belongs to the k-th
        sorted label of ``y`` (labels 0..C-1 map to rows 0..C-1).
    b : optional (C,) classifier bias, used with ``W`` for the NC4 predictions.
    predictions : optional (n,) predicted labels of the network (same label values as ``y``);
        when given, NC4 uses them instead of argmax(W h + b).
    """
    X = feature_matrix(H, "H")
    n, d = X.shape
    classes, codes = label_vector(y, n)
    C = len(classes)
    if C < 2:
        raise ValueError(f"y must contain at least 2 classes for neural collapse; got {C} ({classes.tolist()})")

    means, counts, resid = class_stats(X, codes, C)
    centred = means - means.mean(0)

    # NC1 in the span of the centred means: Sigma_B = V diag(s^2 / C) V^T from the SVD of M~, so
    # tr(Sigma_W Sigma_B^+) = sum_k (C / s_k^2) v_k^T Sigma_W v_k and v^T Sigma_W v = ||R v||^2 / n.
    _, s, Vt = np.linalg.svd(centred, full_matrices=False)
    keep = s > s.max() * max(C, d) * np.finfo(np.float64).eps if s.max() > 0 else np.zeros_like(s, bool)
    if keep.any():
        proj = resid @ Vt[keep].T  # (n, r)
        nc1 = float(np.sum((C / s[keep] ** 2) * np.einsum("ij,ij->j", proj, proj) / n)) / C
    else:
        nc1 = float("inf")

    norms = np.linalg.norm(centred, axis=1)
    off = ~np.eye(C, dtype=bool)
    G = centred @ centred.T
    if np.all(norms > 0):
        cos = G / np.outer(norms, norms)
        equinorm = float(norms.std() / norms.mean())
        equiangular = float(cos[off].std())
        maxangle = float(np.mean(np.abs(cos[off] + 1.0 / (C - 1))))
    else:
        equinorm = equiangular = maxangle = float("nan")
    gnorm = np.linalg.norm(G)
    etf = (np.eye(C) - np.full((C, C), 1.0 / C)) / np.sqrt(C - 1)
    nc2 = float(np.linalg.norm(G / gnorm - etf)) if gnorm > 0 else float("nan")

    Wm = None
    if W is not None:
        Wm = as_numpy(W, "W")
        check_floating(Wm, "W")
        if Wm.ndim != 2 or Wm.shape != (C, d):
            raise ValueError(
                f"W must be the classifier weight of shape (n_classes, n_features) = ({C}, {d}); got shape {Wm.shape}"
            )
        Wm = Wm.astype(np.float64)
    bm = None
    if b is not None:
        if Wm is None:
            raise ValueError("b (the classifier bias) needs W; got b without W")
        bm = as_numpy(b, "b")
        check_floating(bm, "b")
        if bm.shape != (C,):
            raise ValueError(f"b must have shape ({C},); got {bm.shape}")
        bm = bm.astype(np.float64)

    if Wm is not None:
        wn, mn = np.linalg.norm(Wm), np.linalg.norm(centred)
        nc3 = float(np.linalg.norm(Wm / wn - centred / mn)) if wn > 0 and mn > 0 else float("nan")
    else:
        nc3 = float("nan")

    ncc = _nearest_mean(X, means)
    ncc_accuracy = float(np.mean(ncc == codes))
    if predictions is not None:
        pred = as_numpy(predictions, "predictions")
        if pred.ndim != 1 or pred.shape[0] != n:
            raise ValueError(f"predictions must be a vector of {n} predicted labels; got shape {pred.shape}")
        nc4 = float(np.mean(pred == classes[ncc]))
    elif Wm is not None:
        logits_arg = np.empty(n, dtype=np.int64)
        for sl in chunks(n, rows_for_bytes(8 * C)):  # one (rows, C) float64 temporary
            z = X[sl] @ Wm.T
            if bm is not None:
                z += bm
            logits_arg[sl] = np.argmax(z, axis=1)
        nc4 = float(np.mean(logits_arg == ncc))
    else:
        nc4 = float("nan")

    var = np.bincount(codes, weights=np.einsum("ij,ij->i", resid, resid), minlength=C) / counts
    # Pairwise distances from the centred means: same differences, less cancellation.
    msq = norms**2
    dist2 = np.maximum(msq[:, None] + msq[None, :] - 2.0 * G, 0.0)
    iu = np.triu_indices(C, k=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (var[iu[0]] + var[iu[1]]) / (2.0 * dist2[iu])
    cdnv = float("inf") if np.any(dist2[iu] == 0) else float(np.mean(ratios))

    return {
        "nc1": nc1,
        "nc2": nc2,
        "nc2_equinorm": equinorm,
        "nc2_equiangular": equiangular,
        "nc2_maxangle": maxangle,
        "nc3": nc3,
        "nc4": nc4,
        "ncc_accuracy": ncc_accuracy,
        "cdnv": cdnv,
        "n_classes": C,
    }
