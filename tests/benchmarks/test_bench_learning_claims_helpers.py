"""The fits, verdict rules and the virtual-covariance residual of benchmarks/bench_learning_claims.py
against planted numbers and hand-computed values (the studies themselves are run by the script)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("bench_learning_claims")


def test_fit_line_planted_and_hand_computed(bench):
    x = np.arange(6.0)
    f = bench.fit_line(x, 3.0 - 0.5 * x)
    assert f["slope"] == pytest.approx(-0.5) and f["intercept"] == pytest.approx(3.0) and f["r2"] == pytest.approx(1.0)
    # y = (0, 2, 1): slope 1/2, intercept 1/2, residuals (-1/2, 1, -1/2) -> SS_res 3/2, SS_tot 2, R^2 = 1/4.
    f = bench.fit_line([0, 1, 2], [0, 2, 1])
    assert f["slope"] == pytest.approx(0.5) and f["intercept"] == pytest.approx(0.5) and f["r2"] == pytest.approx(0.25)
    # geometric decay: log C linear in the layer index, the ratio recovered from the slope
    C = 12.0 * 0.3 ** x
    assert np.exp(bench.fit_line(x, np.log(C))["slope"]) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        bench.fit_line([1, 1], [0, 1])


def test_trend_verdict_rules(bench):
    good = {"slope": -1.0, "r2": 0.99}
    weak = {"slope": -1.0, "r2": 0.85}
    rising = {"slope": +1.0, "r2": 0.99}
    assert bench.trend_verdict([good, good, good]) == "reproduced"
    assert bench.trend_verdict([good, weak, rising]) == "partly"  # 2 of 3 agree at 0.8
    assert bench.trend_verdict([good, rising, rising]) == "not"  # 1 of 3
    assert bench.trend_verdict([rising, rising]) == "not"
    assert bench.trend_verdict([rising, rising], direction=+1) == "reproduced"
    assert bench.trend_verdict([{"slope": -1.0, "r2": 0.5}] * 3) == "not"


def test_combine_and_power_verdict(bench):
    assert bench.combine(["reproduced", "reproduced"]) == "reproduced"
    assert bench.combine(["not", "not"]) == "not"
    assert bench.combine(["reproduced", "not"]) == "partly"
    with pytest.raises(ValueError):
        bench.combine(["yes"])
    assert bench.power_verdict(2.02, 0.9999) == "reproduced"
    assert bench.power_verdict(2.02, 0.9) == "partly"  # slope right, fit too loose
    assert bench.power_verdict(1.3, 0.9999) == "not"  # first order: the weight-decay case
    assert bench.power_verdict(2.4, 1.0) == "partly"


def test_topk_membership_with_ties(bench):
    m = bench.topk_membership([3.0, 1.0, 1.0, 1.0, 0.0], 2)
    np.testing.assert_allclose(m, [1, 1 / 3, 1 / 3, 1 / 3, 0])
    assert m.sum() == pytest.approx(2)
    # M = 1 (no metric learned): every coordinate has chance k/d
    np.testing.assert_allclose(bench.topk_membership(np.ones(50), 3), np.full(50, 3 / 50))
    # recovery of S = {4, 7, 9} when 4 and 9 lead and 7 ties with one null for the last slot
    scores = np.zeros(10)
    scores[[4, 9]] = 2.0
    scores[[7, 1]] = 1.0
    assert bench.recovery(scores, [4, 7, 9]) == pytest.approx((1 + 0.5 + 1) / 3)
    assert bench.recovery(scores, [4, 7, 9], [7]) == pytest.approx(0.5)


def _cells(lap_nl, gau_nl, gau_lin, Ls=(10.0, 100.0), n=1000):
    cells = {}
    for i, L in enumerate(Ls):
        for t in ("mixed", "interaction"):
            cells[(t, "laplace", L, n)] = {"nonlinear": lap_nl[i], "linear": 1.0 if t == "mixed" else None}
            cells[(t, "gaussian", L, n)] = {"nonlinear": gau_nl[i], "linear": gau_lin[i] if t == "mixed" else None}
        cells[("linear", "laplace", L, n)] = {"nonlinear": None, "linear": 1.0}
        cells[("linear", "gaussian", L, n)] = {"nonlinear": None, "linear": 1.0}
    return cells


def test_krr_verdict_planted(bench):
    # Laplace recovers everywhere; the Gaussian drops the interaction pair but keeps x_a at L = 100.
    v, det = bench.krr_verdict(_cells([1.0, 1.0], [1.0, 0.0], [1.0, 1.0]), 1000)
    assert v == "reproduced" and det[100.0]["gaussian_linear_only"] and not det[10.0]["gaussian_linear_only"]
    # both kernels recover everything: no contrast
    v, _ = bench.krr_verdict(_cells([1.0, 1.0], [1.0, 1.0], [1.0, 1.0]), 1000)
    assert v == "not"
    # the Gaussian loses everything (the linear coordinate too) at L = 100: a Laplace lead, not the pattern
    v, _ = bench.krr_verdict(_cells([1.0, 1.0], [1.0, 0.0], [1.0, 0.0]), 1000)
    assert v == "partly"
    # Laplace itself fails at one bandwidth
    v, _ = bench.krr_verdict(_cells([1.0, 0.5], [1.0, 0.0], [1.0, 1.0]), 1000)
    assert v == "partly"


def test_gram_residual_scalar_layer_by_hand(bench):
    # z = w h, L = (w h - t)^2 / 2: dL/dz = w h - t = 2 (w = 2, h = 1, t = 0), dL/dw = 2 h = 2, dL/dh = w 2 = 4.
    # W'^2 - W^2 = (2 - 2 eta)^2 - 4 = -8 eta + 4 eta^2; VC = -2 eta (4)(1) + eta^2 16 = -8 eta + 16 eta^2.
    # Residual = |4 - 16| eta^2 = 12 eta^2: exactly second order.
    for eta in (1e-3, 0.1, 1.0):
        r = bench.gram_residual([[2.0]], [[2.0]], [[1.0]], [[4.0]], eta)
        assert r == pytest.approx(12 * eta**2, rel=1e-9)


def test_gram_residual_is_eta_squared_on_a_linear_layer(bench):
    # A 3 -> 2 linear layer, squared loss on 5 rows: the residual / eta^2 is the fixed matrix
    # dL/dW^T dL/dW - sum_i g_i g_i^T (written out here), so the log-log slope is 2.
    rng = np.random.default_rng(0)
    W, H, T = rng.standard_normal((2, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    Gz = H @ W.T - T  # dL/dz_i for L = sum_i ||W h_i - t_i||^2 / 2
    gW = Gz.T @ H
    G = Gz @ W  # dL/dh_i = W^T dL/dz_i
    expected = np.linalg.norm(gW.T @ gW - G.T @ G)
    etas = np.logspace(-4, 0, 5)
    res = np.array([bench.gram_residual(W, gW, H, G, e) for e in etas])
    np.testing.assert_allclose(res / etas**2, expected, rtol=1e-6)
    assert bench.fit_line(np.log(etas), np.log(res))["slope"] == pytest.approx(2.0, abs=1e-6)


def test_seed_claim_refuses_unknown_verdicts(bench):
    c = bench.seed_claim("m", "p", "c", "partly", "x", "ours", "theirs", "diff")
    assert set(c) == {"method", "paper", "claim", "verdict", "measured", "protocol", "paper_protocol", "differences"}
    with pytest.raises(ValueError):
        bench.seed_claim("m", "p", "c", "maybe", "x", "ours", "theirs", "diff")


def test_max_abs_cosine_hand_computed_and_the_library_signed_max(bench):
    import featurelens as fl

    # class means (1, 0) and (-1, 1): cos = -1/sqrt(2); the library's discrimination is the signed
    # maximum (-0.707), the paper code's docstring reading its absolute value (0.707).
    H = np.array([[1.0, 0.5], [1.0, -0.5], [-1.0, 1.0], [-1.0, 1.0]])
    y = np.array([0, 0, 1, 1])
    assert bench.max_abs_cosine(H, y) == pytest.approx(1 / np.sqrt(2))
    assert fl.learning.compression_discrimination([H], y)[0]["discrimination"] == pytest.approx(-1 / np.sqrt(2))


def _pnc_run(bench, arch, C, D, seed=0):
    layers = np.arange(len(C))
    return {"seed": seed, "depth": len(C) - 1, "arch": arch, "epochs": 1, "loss": 0.0, "C": C, "D": D,
            "D_abs": np.abs(D).tolist(), "C_init": [C[0]] * len(C), "D_init": [D[0]] * len(D),
            "fit_logC": bench.fit_line(layers, np.log(C)), "fit_D": bench.fit_line(layers, D),
            "fit_Dabs": bench.fit_line(layers, np.abs(D)), "ratio": float(np.exp(bench.fit_line(layers, np.log(C))["slope"]))}


def test_pnc_claims_on_planted_runs(bench):
    l = np.arange(6)
    geometric, linear_fall = (10 * 0.3**l).tolist(), (0.3 - 0.1 * l).tolist()
    flat_c, jumpy_d = [10.0, 9.0, 10.0, 9.0, 10.0, 9.0], [0.0, 0.6, 0.5, 0.6, 0.5, 0.6]
    runs = [_pnc_run(bench, "linear", geometric, linear_fall, s) for s in range(2)]
    runs += [_pnc_run(bench, "relu", geometric, jumpy_d)]
    claims, v = bench.pnc_claims(runs)
    assert (v["compression"], v["discrimination"], v["nonlinear_compression"], v["nonlinear_discrimination"]) == (
        "reproduced", "reproduced", "reproduced", "not")
    assert v["nonlinear"] == "partly" and [c["verdict"] for c in claims] == ["reproduced", "reproduced", "partly"]
    # D falls linearly through zero: the signed reading agrees, |D| does not fall linearly
    assert v["discrimination_abs"] == "not"
    runs = [_pnc_run(bench, "linear", flat_c, linear_fall)] + [_pnc_run(bench, "relu", flat_c, jumpy_d)]
    _, v = bench.pnc_claims(runs)
    assert v["compression"] == "not" and v["nonlinear"] == "not"
