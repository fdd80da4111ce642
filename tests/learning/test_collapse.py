"""Neural collapse statistics: planted simplex-ETF features (all metrics at their collapsed values)
and planted non-collapsed features checked against brute-force definitions (explicit d x d
covariances, pinv, per-sample and per-pair loops)."""

import numpy as np
import pytest
import torch

from featurelens.learning import neural_collapse


def _etf(C, d, rng, radius=2.0):
    """C centred class means forming a simplex ETF of norm ``radius``, rotated into R^d, and a
    global offset orthogonal to their span."""
    M = np.sqrt(C / (C - 1)) * (np.eye(C) - 1.0 / C)  # rows: unit norm, cosines -1/(C-1)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    means = radius * M @ Q[:C]  # (C, d); rows of Q[:C] are orthonormal
    offset = 5.0 * Q[C]  # orthogonal to the means' span
    return means, offset


def test_planted_etf_is_collapsed():
    rng = np.random.default_rng(0)
    C, d = 5, 12
    centred, offset = _etf(C, d, rng)
    counts = np.array([3, 10, 7, 4, 6])  # imbalanced: the centre is the mean of the class means
    y = np.repeat(np.arange(C), counts)
    H = centred[y] + offset  # no within-class spread
    out = neural_collapse(H, y, W=0.3 * centred)  # a self-dual classifier, any positive scale
    assert out["nc1"] == pytest.approx(0.0, abs=1e-20)
    for key in ("nc2", "nc2_equinorm", "nc2_equiangular", "nc2_maxangle", "nc3", "cdnv"):
        assert out[key] == pytest.approx(0.0, abs=1e-12), key
    assert out["nc4"] == 1.0
    assert out["ncc_accuracy"] == 1.0
    assert out["n_classes"] == C
    # without a classifier NC3/NC4 are NaN (documented) and the rest is unchanged
    bare = neural_collapse(torch.from_numpy(H), torch.from_numpy(y))
    assert np.isnan(bare["nc3"]) and np.isnan(bare["nc4"])
    assert bare["nc2"] == pytest.approx(0.0, abs=1e-12)
    # the network's own predictions instead of W
    assert neural_collapse(H, y, predictions=y)["nc4"] == 1.0


def _brute(H, y, W=None, b=None):
    classes = np.unique(y)
    C = len(classes)
    mus = np.stack([H[y == c].mean(0) for c in classes])
    mg = mus.mean(0)
    Sw = np.zeros((H.shape[1],) * 2)
    for h, c in zip(H, y):
        Sw += np.outer(h - mus[c], h - mus[c])
    Sw /= len(H)
    Sb = sum(np.outer(m - mg, m - mg) for m in mus) / C
    out = {"nc1": np.trace(Sw @ np.linalg.pinv(Sb)) / C}
    Mt = mus - mg
    norms = [np.linalg.norm(m) for m in Mt]
    out["nc2_equinorm"] = np.std(norms) / np.mean(norms)
    cos = [Mt[i] @ Mt[j] / norms[i] / norms[j] for i in range(C) for j in range(C) if i != j]
    out["nc2_equiangular"] = np.std(cos)
    out["nc2_maxangle"] = np.mean([abs(c + 1 / (C - 1)) for c in cos])
    G = Mt @ Mt.T
    out["nc2"] = np.linalg.norm(G / np.linalg.norm(G) - (np.eye(C) - 1 / C) / np.sqrt(C - 1))
    var = [np.mean([np.sum((h - mus[c]) ** 2) for h in H[y == c]]) for c in classes]
    pairs = [(i, j) for i in range(C) for j in range(i + 1, C)]
    out["cdnv"] = np.mean([(var[i] + var[j]) / (2 * np.sum((mus[i] - mus[j]) ** 2)) for i, j in pairs])
    ncc = [int(np.argmin([np.sum((h - m) ** 2) for m in mus])) for h in H]
    out["ncc_accuracy"] = np.mean(np.array(ncc) == y)
    if W is not None:
        out["nc3"] = np.linalg.norm(W / np.linalg.norm(W) - Mt / np.linalg.norm(Mt))
        pred = [int(np.argmax(W @ h + (0 if b is None else b))) for h in H]
        out["nc4"] = np.mean(np.array(pred) == np.array(ncc))
    return out


def test_not_collapsed_matches_brute_force():
    rng = np.random.default_rng(1)
    C, d, n_per, sigma = 4, 10, 30, 0.8
    centred, offset = _etf(C, d, rng)
    centred[0] *= 1.8  # break equinorm (and, through the centre, equiangularity)
    y = np.repeat(np.arange(C), n_per)
    H = centred[y] + offset + sigma * rng.normal(size=(len(y), d))
    W = centred + 0.7 * rng.normal(size=(C, d))
    b = rng.normal(size=C)
    out = neural_collapse(H, y, W=W, b=b)
    ref = _brute(H, y, W, b)
    for key, value in ref.items():
        assert out[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert out["nc1"] > 0.05 and out["nc2"] > 0.05 and out["nc2_equinorm"] > 0.1 and out["nc3"] > 0.05
    assert out["nc4"] < 1.0


def test_nc1_of_isotropic_noise_around_an_etf():
    # Sigma_W ~ s^2 I and Sigma_B has C-1 eigenvalues r^2/(C-1): NC1 ~ s^2 (C-1)^2 / (C r^2)
    rng = np.random.default_rng(2)
    C, d, r, s = 3, 6, 2.0, 0.5
    centred, _ = _etf(C, d, rng, radius=r)
    y = np.repeat(np.arange(C), 4000)
    H = centred[y] + s * rng.normal(size=(len(y), d))
    assert neural_collapse(H, y)["nc1"] == pytest.approx(s**2 * (C - 1) ** 2 / (C * r**2), rel=0.05)


def test_string_labels_map_to_sorted_rows():
    rng = np.random.default_rng(3)
    centred, _ = _etf(3, 5, rng)
    y_int = np.repeat(np.arange(3), 5)
    y_str = np.array(["a", "b", "c"])[y_int]
    H = centred[y_int] + 0.1 * rng.normal(size=(15, 5))
    a, b = neural_collapse(H, y_int, W=centred), neural_collapse(H, y_str, W=centred)
    assert a["nc1"] == pytest.approx(b["nc1"]) and a["nc4"] == b["nc4"] == 1.0


def test_errors():
    rng = np.random.default_rng(4)
    H = rng.normal(size=(20, 4))
    y = np.repeat([0, 1], 10)
    with pytest.raises(ValueError, match="at least 2 classes"):
        neural_collapse(H, np.zeros(20, int))
    with pytest.raises(ValueError, match="one label per row"):
        neural_collapse(H, y[:-2])
    bad = H.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="H contains NaN"):
        neural_collapse(bad, y)
    with pytest.raises(ValueError, match=r"W must be the classifier weight of shape \(n_classes, n_features\) = \(2, 4\)"):
        neural_collapse(H, y, W=np.ones((4, 2)))
    with pytest.raises(ValueError, match="b .* needs W"):
        neural_collapse(H, y, b=np.zeros(2))
    with pytest.raises(ValueError, match="b must have shape"):
        neural_collapse(H, y, W=np.ones((2, 4)), b=np.zeros(3))
    with pytest.raises(ValueError, match="predictions must be"):
        neural_collapse(H, y, predictions=y[:5])
    with pytest.raises(ValueError, match="1-d vector of class labels"):
        neural_collapse(H, y[:, None])
