"""The helpers of benchmarks/bench_rfrboost.py and benchmarks/bench_rf_ensembles.py (scores, paired
differences, the verdict rules, the ensemble error decomposition, the member predictions), against
brute force and planted values. The scripts themselves are run by hand / `make bench`."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def boost(benchmark_script):
    return benchmark_script("bench_rfrboost")


@pytest.fixture(scope="module")
def ens(benchmark_script):
    return benchmark_script("bench_rf_ensembles")


# ------------------------------------------------------------------------------------------------
# bench_rf_ensembles


def test_decomposition_is_exact_and_matches_a_double_loop(ens):
    rng = np.random.default_rng(0)
    K, n = 5, 40
    y = rng.standard_normal(n)
    P = y + rng.standard_normal((K, n)) * 0.5 + rng.standard_normal(n) * 0.3
    e1, e12 = ens.decomposition(P, y)
    v = np.var(y)
    loop_e1 = np.mean([np.mean((P[k] - y) ** 2) for k in range(K)]) / v
    loop_e12 = np.mean([np.mean((P[k] - y) * (P[j] - y)) for k in range(K) for j in range(K) if j != k]) / v
    assert e1 == pytest.approx(loop_e1, rel=1e-12)
    assert e12 == pytest.approx(loop_e12, rel=1e-12)
    # E_K = E_1 / K + (1 - 1/K) E_12 holds exactly for the empirical average of the members
    assert ens.rel_err(y, P.mean(0)) == pytest.approx(e1 / K + (1 - 1 / K) * e12, rel=1e-12)
    assert np.isnan(ens.decomposition(P[:1], y)[1])


def test_members_average_to_the_ensemble_prediction(ens):
    import featurelens as fl

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((30, 3)), rng.standard_normal(30)
    m = fl.learning.RandomFeatureRidge(n_features=7, ensemble=3, alpha=0.1, activation="relu", seed=0).fit(X, y)
    P = ens.members(m, X[:9])
    assert P.shape == (3, 9)
    np.testing.assert_allclose(P.mean(0), m.predict(X[:9]), rtol=1e-12, atol=1e-12)


def _tab(values, n, budgets, ks):
    return {(M, K): {"mean": values[(M, K)], "se": 0.0, "N": M // K} for M in budgets for K in ks
            if (M, K) in values}


def test_ensemble_verdicts_on_planted_tables(ens):
    n, budgets, ks = 100, [50, 1600], [1, 2, 4]
    # K = 1 best everywhere; overparameterised budget flat (+2 %), underparameterised one rising (+40 %)
    planted = {(50, 1): 0.5, (50, 2): 0.6, (50, 4): 0.7, (1600, 1): 0.2, (1600, 2): 0.202, (1600, 4): 0.204}
    w1, c1, rises, steps, _per_m, w2, over_ex, under_ex = ens.verdicts(_tab(planted, n, budgets, ks), budgets, ks, n)
    assert (w1, c1, rises, steps, w2) == ("reproduced", 2, 4, 4, "reproduced")
    assert over_ex == [pytest.approx(0.02)] and under_ex == [pytest.approx(0.4)]
    # an ensemble clearly better than one model at both budgets: claim 1 not reproduced
    planted = {(50, 1): 0.9, (50, 2): 0.6, (50, 4): 0.7, (1600, 1): 0.4, (1600, 2): 0.2, (1600, 4): 0.3}
    w1, c1, *_ = ens.verdicts(_tab(planted, n, budgets, ks), budgets, ks, n)
    assert (w1, c1) == ("not", 0)


# ------------------------------------------------------------------------------------------------
# bench_rfrboost


def test_score_is_r2_and_accuracy(boost):
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(2)
    y, p = rng.standard_normal(20), rng.standard_normal(20)
    assert boost.score(False, y, p) == pytest.approx(r2_score(y, p), rel=1e-12)
    assert boost.score(True, np.array([0, 1, 1, 2]), np.array([0, 1, 2, 2])) == 0.75


def _fold_rows(tests):
    return [{"method": m, "fold": f, "test": t} for m, ts in tests.items() for f, t in enumerate(ts)]


def test_paired_difference_against_brute_force(boost):
    a, b = [0.9, 0.8, 0.7], [0.85, 0.8, 0.6]
    mean, se = boost.paired(_fold_rows({"A": a, "B": b}), "A", "B")
    d = np.subtract(a, b)
    assert mean == pytest.approx(d.mean())
    assert se == pytest.approx(d.std(ddof=1) / np.sqrt(3))


def _results(boost_scores, rfnn, mlp):
    out = {}
    for i, (s_b, s_r, s_m) in enumerate(zip(boost_scores, rfnn, mlp)):
        tests = {"RFRBoost": [s_b, s_b + 0.01], "RFNN (ridge readout)": [s_r, s_r + 0.01], "MLP ResNet": [s_m, s_m + 0.01]}
        per_fold = _fold_rows(tests)
        summary = {m: {"mean": float(np.mean(t))} for m, t in tests.items()}
        out[f"d{i}"] = {"per_fold": per_fold, "summary": summary}
    return out


def test_rfrboost_verdict_rule(boost):
    # wins vs RFNN on 2 of 3 (one clear loss), vs the MLP on 3 of 3: reproduced against both
    word, wins_rf, wins_mlp, clear, _, sub = boost.verdict(_results([0.9] * 3, [0.8, 0.8, 0.95], [0.7] * 3))
    assert (word, wins_rf, wins_mlp, clear, sub) == ("reproduced", 2, 3, 1, ("reproduced", "reproduced"))
    # vs RFNN 2 of 3, vs MLP 1 of 3: partly and not, so partly overall
    word, wins_rf, wins_mlp, _, _, sub = boost.verdict(_results([0.9] * 3, [0.95, 0.8, 0.8], [0.95, 0.95, 0.7]))
    assert (word, wins_rf, wins_mlp, sub) == ("partly", 2, 1, ("reproduced", "not"))
    # loses everywhere: not
    word, *_, sub = boost.verdict(_results([0.5] * 3, [0.9] * 3, [0.9] * 3))
    assert (word, sub) == ("not", ("not", "not"))


def test_mlp_resnet_learns_a_separable_problem_and_early_stops(boost):
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 2))
    y = np.where(X[:, 0] > 0, "b", "a")
    m = boost.MLPResNet(True, max_epochs=8, patience=3, width=16, inner=16, blocks=1, batch=20).fit(
        X[:40], y[:40], X[40:], y[40:])
    assert 1 <= m.best_epoch_ <= 8
    assert set(m.predict(X)) <= {"a", "b"}
    assert np.mean(m.predict(X[40:]) == y[40:]) >= 0.8
    r = boost.MLPResNet(False, epochs=3, width=8, inner=8, blocks=1).fit(X, X[:, 0])
    assert r.best_epoch_ == 3 and r.predict(X).shape == (60,)


def test_one_hot_ridge_classifies_with_the_library_estimator(boost):
    rng = np.random.default_rng(4)
    X = np.concatenate([rng.standard_normal((20, 2)) + 4, rng.standard_normal((20, 2)) - 4])
    y = np.array([3] * 20 + [7] * 20)
    m = boost.OneHotRidge(n_features=32, alpha=1e-2, seed=0).fit(X, y)
    assert list(m.classes_) == [3, 7]
    assert np.mean(m.predict(X) == y) == 1.0
