"""The protocols study of benchmarks/bench_agop_attribution.py (--study protocols): its verdict rules
and the seed aggregation, on hand-made records (the script itself is run by hand, not by the tests)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("bench_agop_attribution")


def _rec(w, g, ig_minus_random, se=0.01):
    return {"w_over_ig": w, "g_over_ig": g, "ig_minus_random": ig_minus_random, "ig_minus_random_se": se}


@pytest.mark.parametrize("w, expect", [(0.44, "reproduced"), (0.22, "reproduced"), (0.88, "reproduced"),
                                       (0.21, "partly"), (1.5, "partly"), (0.0, "not"), (-0.16, "not")])
def test_claim_1_rule(bench, w, expect):
    r = _rec(w, 7.0, -1.0)
    bench._verdicts(r)
    assert r["verdict_1"] == expect


@pytest.mark.parametrize("g, expect", [(7.0, "reproduced"), (3.5, "reproduced"), (14.0, "reproduced"),
                                       (2.7, "partly"), (20.0, "partly"), (1.0, "not"), (0.5, "not")])
def test_claim_2_rule(bench, g, expect):
    r = _rec(0.44, g, -1.0)
    bench._verdicts(r)
    assert r["verdict_2"] == expect


@pytest.mark.parametrize("d, expect", [(-0.05, "reproduced"), (-0.015, "partly"), (0.0, "not"), (0.08, "not")])
def test_claim_3_rule_uses_twice_the_standard_error(bench, d, expect):
    r = _rec(0.44, 7.0, d, se=0.01)
    bench._verdicts(r)
    assert r["verdict_3"] == expect


def _case(seed, ig, w, g, rnd, scenario="multiplicative", n=4):
    def cell(v):
        d = {"mean": v, "std": 0.1}
        return {kind: {thr: {"iou": d, "precision": d} for thr in ("top_k", "half_max")} for kind in ("union", "own")}
    rows = {m: {"n": n, "protocols": cell(v)} for m, v in
            (("integrated_gradients", ig), ("agop_weighted", w), ("agop_global", g), ("random", rnd))}
    return {"setting": "case", "seed": seed, "n_samples": 100, "scenario": scenario, "rows": rows,
            "fit": {"test_accuracy": 0.9}, "n_explained": n}


def test_claim_records_and_seed_means(bench):
    cases = [_case(0, 0.1, 0.15, 0.8, 0.2), _case(1, 0.3, 0.3, 0.9, 0.1)]
    per_seed = bench.claim_records(cases)
    assert len(per_seed) == 2 * 2 * 2  # seeds x masks x thresholds
    r0 = next(r for r in per_seed if r["seed"] == 0 and r["mask"] == "own" and r["threshold"] == "top_k")
    assert r0["g_over_ig"] == pytest.approx(8.0)
    assert r0["w_over_ig"] == pytest.approx(0.5)
    assert r0["ig_minus_random"] == pytest.approx(-0.1)
    assert r0["ig_minus_random_se"] == pytest.approx(np.hypot(0.1 / 2, 0.1 / 2))  # std / sqrt(n) each
    agg = bench.aggregate_seeds(per_seed)
    assert len(agg) == 4
    a = agg[0]
    # Ratios of the seed-mean mIoUs: IG 0.2, AGOP-G 0.85, AGOP-W 0.225; IG - random: -0.1 and +0.2.
    assert a["g_over_ig"] == pytest.approx(0.85 / 0.2)
    assert a["w_over_ig"] == pytest.approx(0.225 / 0.2 - 1)
    assert a["g_over_ig_range"] == pytest.approx([3.0, 8.0])
    assert a["ig_minus_random"] == pytest.approx(0.05)
    assert a["ig_minus_random_se"] == pytest.approx(np.std([-0.1, 0.2], ddof=1) / np.sqrt(2))
    assert a["verdict_2"] == "reproduced" and a["verdict_2_seeds_reproduced"] == 1  # 8x in, 3x out
    assert a["verdict_3"] == "not"


def test_zero_ig_gives_an_infinite_ratio_not_a_crash(bench):
    r = bench.claim_records([_case(0, 0.0, 0.1, 0.5, 0.1)])[0]
    assert r["g_over_ig"] == np.inf and r["verdict_2"] == "partly"
