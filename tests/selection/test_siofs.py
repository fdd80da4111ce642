import math

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection import SIOFS
from featurelens.selection.siofs import _class_radius, refined_density_mean, siofs_intrusion


def test_refined_density_mean_hand_example():
    # 1-D values 1..5, alpha = 0.5: row medians of |r_i - r_j| are (2, 1, 1, 1, 2); the
    # ceil(2.5) = 3 densest are 2, 3, 4, whose mean is 3.
    r = np.arange(1.0, 6.0)
    assert refined_density_mean(r, 0.5)[0] == pytest.approx(3.0)
    # dev = (-2..2), s = sqrt(2), skewness 0: radius = 3 + 2 sqrt(2)
    assert _class_radius(r, 0.5) == pytest.approx(3 + 2 * math.sqrt(2))
    # Fewer than 3 members: the plain mean.
    np.testing.assert_allclose(refined_density_mean(np.array([[0.0, 1.0], [2.0, 5.0]]), 0.5), [1.0, 3.0])


def test_refined_density_mean_ignores_outliers():
    rng = np.random.default_rng(0)
    S = np.vstack([rng.normal(0, 0.1, size=(30, 2)), rng.normal(20, 0.1, size=(8, 2))])
    c = refined_density_mean(S, 0.5)
    assert np.abs(c).max() < 0.2  # the dense group, while the plain mean is pulled to ~4
    assert S.mean(axis=0).min() > 3
    # brute force: the 19 rows with the smallest median L1 distance, averaged
    D = np.abs(S[:, None, :] - S[None, :, :]).sum(axis=2)
    keep = np.argsort(np.median(D, axis=1), kind="stable")[:19]
    np.testing.assert_allclose(c, S[keep].mean(axis=0))


def test_refined_density_mean_blocked_rows_match_full_matrix():
    # 2100 rows: the row medians are computed in two blocks (2^22 // 2100 = 1997 rows each).
    S = np.random.default_rng(2).standard_t(3, size=(2100, 2))
    D = np.abs(S[:, None, :] - S[None, :, :]).sum(axis=2)
    keep = np.argsort(np.median(D, axis=1), kind="stable")[:630]
    np.testing.assert_allclose(refined_density_mean(S, 0.3), S[keep].mean(axis=0))


def _intrusion_by_lists(X, y, alpha):
    """The algorithm step by step with Python lists, as written in the reference sheet."""
    classes = np.unique(y)
    c = len(classes)
    mu = [refined_density_mean(X[y == k], alpha) for k in classes]
    R = [_class_radius(np.abs(X[y == k] - mu[i]).sum(axis=1), alpha) for i, k in enumerate(classes)]
    A = {(a, b): [] for a in range(c) for b in range(c)}
    B = {(a, b): [] for a in range(c) for b in range(c)}
    for x, lab in zip(X, y):
        k = int(np.searchsorted(classes, lab))
        v = np.abs(x - mu[k])
        dist = {l: np.abs(x - mu[l]).sum() for l in range(c) if l != k}
        L = [l for l in dist if dist[l] < R[l]]
        if L:
            A[(k, min(L, key=lambda l: dist[l]))].append(v)
            for l in L:
                B[(k, l)].append(v)
    rows = []
    for k in range(c):
        for l in range(c):
            if k != l and A[(k, l)] and B[(l, k)]:
                us = [v + np.mean(B[(l, k)], axis=0) - np.abs(mu[k] - mu[l]) for v in A[(k, l)]]
                sio = [u for u in us if u.sum() > 0]
                if sio:
                    rows.append(np.mean(sio, axis=0))
    rows.sort(key=lambda r: r.sum())
    return np.mean(rows[: math.ceil(len(rows) / 2)], axis=0)


def test_intrusion_matches_list_implementation():
    X, y = make_classification(n_samples=150, n_features=6, n_informative=3, n_redundant=0, n_classes=3, class_sep=0.6, random_state=1)
    deg, rows = siofs_intrusion(X, y, 0.4)
    assert len(rows) >= 2
    np.testing.assert_allclose(deg, _intrusion_by_lists(X, y, 0.4), rtol=1e-10)
    s = SIOFS(k=3, alpha=0.4, standardize=False).fit(X, y)
    np.testing.assert_allclose(s.scores_, -deg)  # sign convention: higher = less intrusion
    np.testing.assert_allclose(s.intrusion_, deg)


def test_acceptance_make_classification_top5():
    X, y = make_classification(n_samples=1000, n_features=50, n_informative=5, n_redundant=0, shuffle=False, random_state=0)
    s = SIOFS(k=5).fit(X, y)
    assert len(set(np.flatnonzero(s.support_)) & set(range(5))) >= 4
    assert s.ranking_[np.argmax(s.scores_)] == 1


def test_separated_classes_fall_back_without_nan():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 40)
    X = rng.normal(size=(80, 4))
    X[:, 2] += 30 * y  # feature 2 separates the classes completely: nobody intrudes
    s = SIOFS(k=1, standardize=False).fit(X, y)
    assert s.fallback_ and np.isfinite(s.scores_).all() and np.isfinite(s.intrusion_).all()
    assert s.get_support()[2] and s.ranking_[2] == 1


def test_a_class_without_intruders_gives_no_nan():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], 50)
    X = rng.normal(size=(150, 5))
    X[:, 0] += 1.0 * (y == 1)  # classes 0 and 1 overlap (mutual intruders) along feature 0
    X[:, 1] += 40.0 * (y == 2)  # class 2 lies far away: it neither intrudes nor is intruded
    s = SIOFS(k=2).fit(X, y)
    assert not s.fallback_ and s.n_intrusion_rows_ >= 1
    assert np.isfinite(s.scores_).all()
    assert s.ranking_[0] <= 2  # the feature separating the overlapping pair ranks high


def test_constant_feature_ranks_last_and_dataframe_roundtrip():
    X, y = make_classification(n_samples=200, n_features=8, n_informative=3, n_redundant=0, shuffle=False, random_state=2)
    X[:, 6] = 1.5
    df = pd.DataFrame(X, columns=list("abcdefgh"))
    s = SIOFS(k=3).fit(df, y)
    assert np.isfinite(s.scores_).all() and s.ranking_[6] == 8 and s.intrusion_[6] == np.inf
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(s.get_feature_names_out())
    # k = None: the features at or above the median score
    s2 = SIOFS().fit(X, y)
    assert s2.get_support().sum() == 4 and not s2.get_support()[6]


def test_errors():
    X, y = make_classification(n_samples=60, n_features=5, random_state=0)
    with pytest.raises(ValueError, match="y has 59 entries but X has 60 rows"):
        SIOFS(k=2).fit(X, y[:-1])
    with pytest.raises(ValueError, match="k=6 is larger than the number of features"):
        SIOFS(k=6).fit(X, y)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SIOFS(k=2).fit(Xn, y)
    with pytest.raises(ValueError, match=r"at least 2 distinct target values \(2 classes"):
        SIOFS(k=2).fit(X, np.zeros(60))
    with pytest.raises(ValueError, match=r"alpha must be a finite number > 0.0 and <= 1.0; got 1.5"):
        SIOFS(k=2, alpha=1.5).fit(X, y)
    with pytest.raises(ValueError, match="SIOFS needs class labels in y .* got a continuous target"):
        SIOFS(k=2).fit(X, np.linspace(0, 1, 60))
    with pytest.raises(ValueError, match="requires y to be passed"):
        SIOFS(k=2).fit(X)


@parametrize_with_checks([SIOFS()])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
