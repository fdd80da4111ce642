import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import adjusted_rand_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection.iif_learn import (
    IIFLearn,
    anova_f,
    hc_threshold,
    ks_statistics,
)

FAST = {"n_null": 10, "n_init": 3, "n_ks_null": 2000}


def planted(seed=0, n=120, p=150, s=8, K=3, shift=2.5):
    """K balanced clusters that differ only on the first s features (every one of them separates
    all K clusters: its K means are a permutation of shift * linspace(-1, 1, K)); p - s noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % K
    X = rng.standard_normal((n, p))
    centers = shift * np.stack([rng.permutation(np.linspace(-1, 1, K)) for _ in range(s)], axis=1)
    X[:, :s] += centers[y]
    return X, y


@pytest.mark.parametrize("embedding", ["pca", "laplacian"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_planted_features_and_clusters(embedding, seed):
    X, y = planted(seed)
    sel = IIFLearn(k=8, n_clusters=3, embedding=embedding, seed=0, **FAST).fit(X)
    np.testing.assert_array_equal(np.flatnonzero(sel.support_), np.arange(8))
    assert adjusted_rand_score(y, sel.labels_) > 0.9
    assert sel.scores_[:8].min() > sel.scores_[8:].max()
    assert sel.labels_.shape == (120,) and set(np.unique(sel.labels_)) <= {0, 1, 2}
    assert 1 <= sel.n_iter_ <= 10 and len(sel.reliability_) == sel.n_iter_
    assert all(0.375 - 1e-12 <= w <= 1.0 for w in sel.reliability_)
    # The base class's top-k of scores_ is the selection the last round clustered on.
    np.testing.assert_array_equal(sel.get_support(), sel._final_support)


def test_hct_selection_keeps_every_influential_feature():
    X, y = planted(0)
    sel = IIFLearn(n_clusters=3, seed=0, **FAST).fit(X)
    assert sel.support_[:8].all()
    assert sel.support_.sum() < 30  # a handful of noise features at most, out of 142
    assert adjusted_rand_score(y, sel.labels_) > 0.9
    assert sel.initial_support_.sum() >= 1


def test_ks_statistics_match_scipy():
    Z = np.random.default_rng(0).standard_normal((37, 5)) * [1, 2, 0.5, 1, 1] + [0, 0, 0, 1, -0.3]
    ours = ks_statistics(Z)
    ref = [stats.kstest(Z[:, j], "norm").statistic for j in range(5)]
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_anova_f_matches_scipy_and_edge_cases():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((40, 6))
    labels = rng.integers(0, 4, 40)
    F, df1, df2 = anova_f(Z, labels)
    assert (df1, df2) == (3, 36)
    ref = [stats.f_oneway(*(Z[labels == g, j] for g in range(4))).statistic for j in range(6)]
    np.testing.assert_allclose(F, ref, rtol=1e-10)
    # A constant column has F = 0; a column constant within groups but not across has F = inf.
    Z2 = np.column_stack([np.ones(40), labels.astype(float)])
    F2, _, _ = anova_f(Z2, labels)
    assert F2[0] == 0.0 and F2[1] == np.inf
    F3, d1, _ = anova_f(Z, np.zeros(40))  # one group: no test
    assert d1 == 0 and (F3 == 0).all()


def test_hc_threshold_brute_force():
    rng = np.random.default_rng(2)
    pv = np.concatenate([rng.uniform(0, 1e-4, 6), rng.uniform(size=94)])
    n, p = 50, 100
    pi = np.sort(pv)
    best, best_j = -np.inf, None
    for j in range(1, p + 1):
        g = j / p - pi[j - 1]
        hc = math.sqrt(p) * g / math.sqrt(max(math.sqrt(n) * g, 0.0) + j / p)
        if pi[j - 1] > math.log(p) / p and j < p / 2 and hc > best:
            best, best_j = hc, j
    assert hc_threshold(pv, n) == best_j
    assert hc_threshold(np.array([0.3]), 10) == 1  # nothing qualifies: fall back to j <= max(1, p//2)
    with pytest.raises(ValueError, match="pvalues is empty"):
        hc_threshold(np.array([]), 10)


def test_deterministic_ignores_y_constant_column_last():
    X, _ = planted(1, n=60, p=40)
    X[:, 20] = 3.0
    a = IIFLearn(k=5, n_clusters=3, seed=4, **FAST).fit(X)
    b = IIFLearn(k=5, n_clusters=3, seed=4, **FAST).fit(X, np.arange(60))
    np.testing.assert_array_equal(a.scores_, b.scores_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.ranking_[20] == 40 and np.isfinite(a.scores_).all()


def test_one_cluster_is_ks_screening():
    X, _ = planted(0, n=60, p=40)
    sel = IIFLearn(k=5, n_clusters=1, seed=0, **FAST).fit(X)
    assert (sel.labels_ == 0).all() and sel.reliability_ == [0.0]
    # w = 0: the scores are the KS z-scores, i.e. ranked like the KS p-values.
    order = np.argsort(sel.ks_pvalues_, kind="stable")
    assert set(np.flatnonzero(sel.support_)) == set(order[:5])


def test_errors():
    X, _ = planted(0, n=30, p=20)
    with pytest.raises(ValueError, match="n_clusters=30 needs more rows than clusters"):
        IIFLearn(n_clusters=30, **FAST).fit(X)
    with pytest.raises(ValueError, match="n_clusters must be an int >= 1; got 0"):
        IIFLearn(n_clusters=0, **FAST).fit(X)
    with pytest.raises(ValueError, match="embedding must be one of 'pca', 'laplacian'"):
        IIFLearn(embedding="umap", **FAST).fit(X)
    with pytest.raises(ValueError, match="k=21 is larger than the number of features"):
        IIFLearn(k=21, **FAST).fit(X)
    with pytest.raises(ValueError, match="tol must be a finite number >= 0.0 and <= 1.0; got 2.0"):
        IIFLearn(tol=2.0, **FAST).fit(X)
    with pytest.raises(ValueError, match="n_ks_null must be an int >= 100; got 10"):
        IIFLearn(n_null=2, n_ks_null=10).fit(X)
    with pytest.raises(TypeError, match="n_iter must be an int >= 1; got 2.5"):
        IIFLearn(n_iter=2.5, **FAST).fit(X)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        IIFLearn(**FAST).fit(Xn)


@parametrize_with_checks([IIFLearn(n_null=3, n_init=2, n_ks_null=500)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_the_default_null_sizes_are_not_refused_on_tens_of_thousands_of_rows():
    """The row-pass bound is 100 x MAX_EVALUATIONS: the default n_ks_null=10000 on 50,000 rows is
    5e8 row passes and is accepted by the checks, while 10^9 draws on those rows are refused."""
    from featurelens.selection.iif_learn import IIFLearn

    selector = IIFLearn(n_clusters=2)
    assert selector._check_params(50_000) == 2
    with pytest.raises(ValueError, match="n_ks_null=1000000000 needs about"):
        IIFLearn(n_clusters=2, n_ks_null=10**9)._check_params(50_000)
