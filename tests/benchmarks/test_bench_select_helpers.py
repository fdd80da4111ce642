"""The helpers of benchmarks/bench_iif_learn.py and benchmarks/bench_minshap_inference.py (planted data,
the Markov blanket of the DAG, the LOCO / GCM / Lasso baselines, F1, the verdict rules) against
planted truth, closed forms and brute force. The scripts themselves are run by hand / `make bench`."""

from __future__ import annotations

import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def iif(benchmark_script):
    return benchmark_script("bench_iif_learn")


@pytest.fixture(scope="module")
def ms(benchmark_script):
    return benchmark_script("bench_minshap_inference")


# -- bench_iif_learn ------------------------------------------------------------------------------
def test_planted_clusters_shift_exactly_the_influential_columns(iif):
    n, p, s, K, delta = 3000, 40, 6, 3, 1.5
    X, labels, truth = iif.planted(n, p, s, K, delta, seed=0)
    assert X.shape == (n, p) and truth.sum() == s and set(np.unique(labels)) == {0, 1, 2}
    means = np.array([X[labels == k].mean(axis=0) for k in range(K)])
    # influential columns: cluster means +-delta with both signs present; others ~0
    assert np.all(np.abs(np.abs(means[:, truth]) - delta) < 0.15)
    assert np.all(means[:, truth].max(axis=0) > 0) and np.all(means[:, truth].min(axis=0) < 0)
    assert np.all(np.abs(means[:, ~truth]) < 0.15)


def test_column_scales_keep_the_truth_and_change_only_units(iif):
    X0, l0, t0 = iif.planted(200, 30, 5, 2, 1.0, seed=3)
    X1, l1, t1 = iif.planted(200, 30, 5, 2, 1.0, seed=3, scales=True)
    np.testing.assert_array_equal(l0, l1)
    np.testing.assert_array_equal(t0, t1)
    np.testing.assert_allclose(iif.standardise(X0), iif.standardise(X1), atol=1e-10)


def test_breast_cancer_noise_marks_the_real_columns(iif):
    X, y, truth = iif.breast_cancer_noise(n_noise=20)
    assert X.shape == (569, 50) and truth.sum() == 30 and set(np.unique(y)) == {0, 1}
    # the real columns are correlated with the diagnosis far more often than pure noise is
    corr = np.abs([np.corrcoef(X[:, j], y)[0, 1] for j in range(X.shape[1])])
    assert np.median(corr[truth]) > 0.3 > corr[~truth].max()


def test_iif_verdict_rules(iif):
    row = lambda a_iif, a_other: {m: {"ari": (a_iif if m.startswith("i-IF") else a_other),
                                          "f1": (a_iif if m.startswith("i-IF") else a_other), "precision": 0.5, "recall": 0.5}
                                  for m in iif.METHODS}
    win = {"planted": {1.0: row(0.9, 0.5)}}
    word, text = iif.verdict(win, row(0.9, 0.5))
    assert word == "reproduced" and "reproduced" in text
    word, _ = iif.verdict({"planted": {1.0: row(0.2, 0.5)}}, row(0.2, 0.5))
    assert word == "not"
    word, _ = iif.verdict({"planted": {1.0: row(0.9, 0.5), 1.5: row(0.2, 0.5)}}, row(0.9, 0.5))
    assert word == "partly"


def test_summarise_leaves_failed_fits_out(iif):
    s = iif.summarise([(0.5, 1.0, 0.5, 1.0), (None, None, None, 2.0)])
    assert s["ari"] == 0.5 and s["failed"] == 1
    assert math.isclose(s["f1"], 2 * 1.0 * 0.5 / 1.5)


# -- bench_minshap_inference ----------------------------------------------------------------------
def test_linear_sem_markov_blanket_is_what_ols_finds(ms):
    """In the linear Gaussian SEM E[y | X] is linear, and its coefficients are non-zero exactly on the
    Markov blanket {0..4}: the planted truth of the benchmark."""
    X, y = ms.sem("linear", 40000, np.random.default_rng(0))
    A = np.column_stack([np.ones(len(y)), X])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    se = np.sqrt(np.diag(np.linalg.inv(A.T @ A)) * resid.var())
    t = np.abs(coef[1:] / se[1:])
    assert np.all(t[ms.MB] > 10)
    assert np.all(t[~ms.MB] < 4.5)


def test_spouse_is_marginally_independent_of_y(ms):
    X, y = ms.sem("nonlinear", 20000, np.random.default_rng(1))
    assert abs(np.corrcoef(X[:, 4], y)[0, 1]) < 0.03
    assert abs(np.corrcoef(X[:, 3], y)[0, 1]) > 0.5


def test_f1_closed_form(ms):
    sel = np.zeros(10, bool)
    assert ms.f1(sel) == 0.0
    sel[[0, 1, 2, 5]] = True  # 3 of 5 blanket members, 1 false
    assert math.isclose(ms.f1(sel), 2 * 0.75 * 0.6 / 1.35)
    assert ms.f1(ms.MB.copy()) == 1.0


def test_loco_pvalue_matches_a_direct_computation(ms):
    X, y = ms.sem("linear", 200, np.random.default_rng(2))
    sel, p = ms.loco(X, y, "linear", 0)
    from scipy import stats
    from sklearn.linear_model import LinearRegression

    idx = np.random.default_rng(0).permutation(200)
    tr, te = idx[:100], idx[100:]
    base = (y[te] - LinearRegression().fit(X[tr], y[tr]).predict(X[te])) ** 2
    keep = np.arange(10) != 3
    d = (y[te] - LinearRegression().fit(X[tr][:, keep], y[tr]).predict(X[te][:, keep])) ** 2 - base
    expected = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
    assert math.isclose(p[3], expected, rel_tol=1e-9)
    assert sel[3]


def test_gcm_and_loco_find_the_blanket_and_lasso_has_no_pvalues(ms):
    X, y = ms.sem("linear", 500, np.random.default_rng(3))
    sel, p = ms.gcm(X, y, "linear", 0)
    assert np.all(p[ms.MB] < 0.01) and p.shape == (10,)
    sel, p = ms.lasso(X, y, "linear", 0)
    assert p is None and sel[ms.MB].all()


def test_gcm_is_calibrated_on_an_independent_null(ms):
    """Columns independent of y (x8, x9 are N(0, 1) noise): the GCM statistic is ~N(0, 1), so over draws
    the p-values are roughly uniform (mean ~ 1/2, rejection rate at 0.05 small)."""
    ps = []
    for r in range(15):
        X, y = ms.sem("linear", 200, np.random.default_rng(100 + r))
        ps.append(ms.gcm(X, y, "linear", r)[1][[8, 9]])
    ps = np.concatenate(ps)
    assert 0.3 < ps.mean() < 0.7
    assert (ps < 0.05).mean() <= 0.2


def test_minshap_verdict_rules(ms):
    def res(f1, nog, rate):
        return {"f1": f1, "f1_visible": f1, "nogueira_boot": nog, "null_rate": rate, "null_trials": 500,
                "power": {"spouse": 0.0, "parents": 0.5}}

    good = {"linear": {"MinShap": res(0.9, 0.9, 0.04), **{m: res(0.5, 0.5, 0.04) for m in ("LOCO", "GCM", "Lasso")}}}
    overall, words, _ = ms.verdict(good)
    assert overall == "reproduced" and set(words.values()) == {"reproduced"}
    bad = {"linear": {"MinShap": res(0.3, 0.3, 0.2), **{m: res(0.5, 0.5, 0.04) for m in ("LOCO", "GCM", "Lasso")}}}
    overall, words, _ = ms.verdict(bad)
    assert overall == "not"
    mixed = {"linear": {"MinShap": res(0.3, 0.3, 0.04), **{m: res(0.5, 0.5, 0.04) for m in ("LOCO", "GCM", "Lasso")}}}
    overall, words, _ = ms.verdict(mixed)
    assert overall == "partly" and words["type I error"] == "reproduced"
