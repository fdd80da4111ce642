"""Representation statistics of feature matrices: effective rank, per-layer within-class
compression and between-class discrimination, and the held-out accuracy of a linear probe; with
the feature-matrix and label validators and the per-class statistics shared by the collapse, OOD,
manifold and CKA modules.

All functions take feature matrices (n samples x d features) as numpy arrays or torch tensors; a
tensor with more than two dimensions is flattened to (n, -1), in float64.

Roy & Vetterli, "The effective rank: a measure of effective dimensionality", EUSIPCO 2007;
Garrido, Balestriero, Najman, LeCun, "RankMe: Assessing the downstream performance of pretrained
self-supervised representations by their rank", ICML 2023, arXiv 2210.02885; Wang, Li, Yaras,
Zhu, Balzano, Hu, Qu, "Understanding Deep Representation Learning via Layerwise Feature
Compression and Discrimination", 2023, arXiv 2311.02960; Alain & Bengio, "Understanding
intermediate layers using linear classifier probes", 2016, arXiv 1610.01644.
"""

from __future__ import annotations

import numpy as np

from .._random import parse_seed, root_seed
from .._validation import (
    as_numpy,
    check_bool,
    check_float,
    check_floating,
    check_int,
    check_option,
)

__all__ = ["compression_discrimination", "effective_rank", "linear_probe"]

RANK_METHODS = ("roy", "rankme")


def feature_matrix(a, name: str, min_rows: int = 1) -> np.ndarray:
    """Validated float64 copy-or-view of a feature matrix, shaped (n, d)."""
    arr = as_numpy(a, name)
    check_floating(arr, name)
    if arr.ndim < 2:
        raise ValueError(
            f"{name} must be a feature matrix of shape (n_samples, n_features); got shape {arr.shape}"
        )
    arr = arr.reshape(arr.shape[0], -1)
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows; got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no features; got shape {arr.shape}")
    return np.asarray(arr, dtype=np.float64)


def effective_rank(A, method: str = "roy", center: bool = False, eps: float = 1e-7) -> float:
    """Effective rank of a feature matrix from the entropy of its normalised singular values.

        erank = exp(-sum_i p_i log p_i),   p_i = sigma_i / sum_j sigma_j   ("roy")
                                           p_i = sigma_i / ||sigma||_1 + eps  ("rankme")

    Singular values sigma_i of A (n, d) itself (not of its covariance: sigma, not sigma^2), of the
    column-centred A when ``center=True`` (default False, as both papers). "roy" treats 0 log 0 = 0
    and lies in [1, rank A]; a rank-r matrix with r equal singular values gives exactly r.
    "rankme" adds eps = 1e-7 to every p_i as RankMe does (a smooth, slightly different value).

    Roy & Vetterli, "The effective rank: a measure of effective dimensionality", EUSIPCO 2007;
    Garrido, Balestriero, Najman, LeCun, "RankMe: Assessing the downstream performance of pretrained
    self-supervised representations by their rank", ICML 2023, arXiv 2210.02885.
    """
    method = check_option(method, "method", RANK_METHODS)
    center = check_bool(center, "center")
    eps = check_float(eps, "eps", low=0.0)
    X = feature_matrix(A, "A")
    if center:
        X = X - X.mean(0)
    import scipy.linalg

    s = scipy.linalg.svdvals(X)
    total = s.sum()
    if not total > 0.0:
        raise ValueError("A has no non-zero singular value (all zeros after centring?); effective rank is undefined")
    p = s / total
    if method == "rankme":
        p = p + eps
    else:
        # Round-off leaves ~1e-16 relative singular values where the exact ones are 0.
        p = p[s > s.max() * max(X.shape) * np.finfo(np.float64).eps]
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def label_vector(y, n: int, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """(classes, integer codes) of a label vector of length n."""
    arr = as_numpy(y, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d vector of class labels; got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} must have one label per row of the features; got {arr.shape[0]} labels for {n} rows")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf labels; expected class labels")
    classes, codes = np.unique(arr, return_inverse=True)
    return classes, codes.reshape(-1)


def class_stats(H: np.ndarray, codes: np.ndarray, n_classes: int):
    """(class means (C, d), class counts, within-class residuals H - mu_{y_i}) in float64."""
    counts = np.bincount(codes, minlength=n_classes).astype(np.float64)
    import scipy.sparse

    # A sparse one-hot product sums each class's rows in O(n d), without a loop over classes.
    onehot = scipy.sparse.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(n_classes, len(codes)))
    sums = np.asarray(onehot @ H)
    means = sums / counts[:, None]
    return means, counts, H - means[codes]


def compression_discrimination(features_by_layer, y) -> dict:
    """Within-class compression and between-class discrimination of each layer's features.

        compression_l    = tr(Sigma_W) / tr(Sigma_B)
        discrimination_l = max_{k != l} cos(mu_k, mu_l)

    Sigma_W = (1/n) sum_i (h_i - mu_{y_i})(h_i - mu_{y_i})^T, Sigma_B = (1/C) sum_c (mu_c - mu)(mu_c - mu)^T
    with mu the mean of the class means; the cosines use the *uncentred* class means mu_c, as in
    Wang et al. Smaller is better for both: features collapse onto their class means
    (compression -> 0) and class means separate (discrimination falls, towards -1/(C-1) for a
    centred simplex). Wang, Li, Yaras, Zhu, Balzano, Hu, Qu, "Understanding Deep Representation
    Learning via Layerwise Feature Compression and Discrimination", 2023, arXiv 2311.02960.

    Parameters
    ----------
    features_by_layer : dict {name: (n, d_l) array} or a list of arrays (keys 0, 1, ...).
    y : (n,) class labels, at least two classes.

    Returns
    -------
    dict {name: {"compression": float, "discrimination": float}} in the input's order.
    """
    if isinstance(features_by_layer, dict):
        items = list(features_by_layer.items())
    elif isinstance(features_by_layer, (list, tuple)):
        items = list(enumerate(features_by_layer))
    else:
        raise TypeError(
            f"features_by_layer must be a dict {{layer name: features}} or a list of feature matrices; "
            f"got {type(features_by_layer).__name__}"
        )
    if not items:
        raise ValueError("features_by_layer is empty; expected at least one layer")
    out = {}
    for name, feats in items:
        H = feature_matrix(feats, f"features_by_layer[{name!r}]")
        classes, codes = label_vector(y, H.shape[0])
        if len(classes) < 2:
            raise ValueError(f"y must contain at least 2 classes; got {len(classes)}")
        means, _, resid = class_stats(H, codes, len(classes))
        centred = means - means.mean(0)
        tr_w = float(np.einsum("ij,ij->", resid, resid)) / H.shape[0]
        tr_b = float(np.einsum("ij,ij->", centred, centred)) / len(classes)
        norms = np.linalg.norm(means, axis=1)
        if np.any(norms == 0):
            cos_max = float("nan")  # a zero class mean has no direction
        else:
            cos = (means @ means.T) / np.outer(norms, norms)
            cos_max = float(cos[~np.eye(len(classes), dtype=bool)].max())
        out[name] = {
            "compression": tr_w / tr_b if tr_b > 0 else float("inf"),
            "discrimination": cos_max,
        }
    return out


def linear_probe(H, y, test_size: float = 0.25, seed=0, C: float = 1.0, max_iter: int = 1000) -> float:
    """Held-out accuracy of a linear probe on frozen features.

    A stratified split (``test_size`` of the rows held out, drawn with ``seed``: None, an int, or a
    numpy Generator, from which one int is drawn for scikit-learn's ``random_state``, so a
    Generator gives reproducible splits but not those of the int it was built from), features
    standardised with
    the training rows' mean and standard deviation, then multinomial logistic regression
    (scikit-learn, L2 penalty ``C``, L-BFGS) on the training rows; returns the accuracy on the
    held-out rows. Alain & Bengio, "Understanding intermediate layers using linear classifier
    probes", 2016, arXiv 1610.01644.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    test_size = check_float(test_size, "test_size", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    seed = parse_seed(seed)
    if isinstance(seed, np.random.Generator):
        seed = root_seed(seed, high=2**31 - 1)  # scikit-learn takes an int or a RandomState
    C = check_float(C, "C", low=0.0, low_inclusive=False)
    max_iter = check_int(max_iter, "max_iter", low=1)
    X = feature_matrix(H, "H")
    classes, codes = label_vector(y, X.shape[0])
    if len(classes) < 2:
        raise ValueError(f"y must contain at least 2 classes; got {len(classes)}")
    counts = np.bincount(codes)
    stratify = codes if counts.min() >= 2 else None
    try:
        Xtr, Xte, ytr, yte = train_test_split(X, codes, test_size=test_size, random_state=seed, stratify=stratify)
    except ValueError as err:
        raise ValueError(f"cannot split {X.shape[0]} rows with test_size={test_size}: {err}") from err
    if len(np.unique(ytr)) < 2:
        raise ValueError("the training split holds a single class; use more rows or a smaller test_size")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter))
    clf.fit(Xtr, ytr)
    return float(np.mean(clf.predict(Xte) == yte))
