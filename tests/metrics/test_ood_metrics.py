"""AUROC against scikit-learn's roc_auc_score (with ties) and FPR at a TPR against a brute-force
threshold scan."""

import numpy as np
import pytest
import torch

from featurelens.metrics import auroc, fpr_at_tpr


def test_auroc_equals_sklearn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    for _ in range(5):
        a = rng.integers(0, 6, size=rng.integers(5, 40)).astype(float)  # many ties
        b = rng.integers(0, 5, size=rng.integers(5, 40)).astype(float)
        ref = roc_auc_score(np.r_[np.ones(len(a)), np.zeros(len(b))], np.r_[a, b])
        assert auroc(a, b) == pytest.approx(ref, abs=1e-12)
    a, b = rng.normal(size=200) + 1, rng.normal(size=300)
    ref = roc_auc_score(np.r_[np.ones(200), np.zeros(300)], np.r_[a, b])
    assert auroc(torch.from_numpy(a), b) == pytest.approx(ref, abs=1e-12)


def test_auroc_definition():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 4, 30), rng.integers(0, 4, 20)
    pairs = np.mean([(x > z) + 0.5 * (x == z) for x in a for z in b])  # P(in > out) + P(tie)/2
    assert auroc(a, b) == pytest.approx(pairs, abs=1e-12)
    assert auroc([2.0, 3.0], [0.0, 1.0]) == 1.0
    assert auroc([0.0, 1.0], [2.0, 3.0]) == 0.0
    assert auroc([1.0, 1.0], [1.0]) == 0.5
    assert auroc(a, b) + auroc(b, a) == pytest.approx(1.0)


def _fpr_scan(a, b, tpr):
    """Try every candidate threshold; keep the largest with TPR >= tpr."""
    best = None
    for t in np.unique(np.r_[a, b]):
        if np.mean(a >= t) >= tpr:
            best = t
    return np.mean(b >= best)


@pytest.mark.parametrize("tpr", [0.95, 0.8, 0.5, 1.0, 0.33])
def test_fpr_at_tpr_against_threshold_scan(tpr):
    rng = np.random.default_rng(2)
    for n_in in (20, 37, 100):
        a = np.round(rng.normal(size=n_in) + 1.0, 1)  # ties
        b = np.round(rng.normal(size=50), 1)
        assert fpr_at_tpr(a, b, tpr=tpr) == pytest.approx(_fpr_scan(a, b, tpr), abs=1e-15)


def test_fpr_at_tpr_values():
    a = np.arange(1, 21, dtype=float)  # 20 in-distribution scores
    # TPR 0.95 keeps 19 of 20: threshold 2; OOD scores >= 2 are accepted
    assert fpr_at_tpr(a, [0.0, 1.0, 2.0, 3.0]) == 0.5
    assert fpr_at_tpr(a, [100.0]) == 1.0
    assert fpr_at_tpr(a, [-5.0]) == 0.0


def test_errors():
    with pytest.raises(ValueError, match="scores_in contains NaN"):
        auroc([1.0, np.nan], [0.0])
    with pytest.raises(ValueError, match="scores_out is empty"):
        auroc([1.0], [])
    with pytest.raises(ValueError, match="1-d vector"):
        auroc(np.ones((2, 2)), [0.0])
    with pytest.raises(TypeError, match="real numbers"):
        auroc(["a"], [0.0])
    with pytest.raises(ValueError, match=r"tpr must be a finite number > 0.0 and <= 1.0"):
        fpr_at_tpr([1.0], [0.0], tpr=0.0)
    with pytest.raises(ValueError, match=r"tpr must be a finite number > 0.0 and <= 1.0"):
        fpr_at_tpr([1.0], [0.0], tpr=95)
    with pytest.raises(ValueError, match="scores_out contains NaN"):
        fpr_at_tpr([1.0], [np.inf])
