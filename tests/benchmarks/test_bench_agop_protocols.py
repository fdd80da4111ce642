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


def _args(bench, *argv):
    import argparse

    seen = {}

    def fake_run(args):
        seen["args"] = args
        return 0

    orig = bench.run_protocols
    bench.run_protocols = fake_run
    try:
        bench.main(["--study", "protocols", *argv])
    finally:
        bench.run_protocols = orig
    assert isinstance(seen["args"], argparse.Namespace)
    return seen["args"]


def test_protocols_sizes_plan(bench):
    # Default: 8x8 at both data sizes; --sizes 64: the default study's subsampled 64x64 setting only.
    assert bench.protocol_plan(_args(bench)) == [(8, "case"), (8, "paper")]
    assert bench.protocol_plan(_args(bench, "--sizes", "64")) == [(64, "case")]
    assert bench.protocol_plan(_args(bench, "--sizes", "8", "64", "--settings", "case")) == [(8, "case"), (64, "case")]
    assert bench.PROTOCOL_SETTINGS_64["case"][0] == bench.SETTINGS[64]["n_samples"]
    with pytest.raises(SystemExit, match="not offered"):
        bench.protocol_plan(_args(bench, "--sizes", "64", "--settings", "paper"))


def test_64x64_cases_are_labelled_and_described(bench):
    c8, c64 = _case(0, 0.1, 0.15, 0.8, 0.2), _case(0, 0.1, 0.15, 0.8, 0.2)
    c64.update(size=64, n_samples=2400, snr=0.65, gt_pixels=862, gt_pixels_own=430,
               settings=dict(bench.SETTINGS[64]), fit={"test_accuracy": 0.9, "epochs": 3, "best_epoch": 2})
    assert bench.setting_label(c8) == "case" and bench.setting_label(c64) == "case 64x64"
    recs = bench.aggregate_seeds(bench.claim_records([c8, c64]))
    assert {(r["setting"], r["size"]) for r in recs} == {("case", 8), ("case 64x64", 64)}
    text = "\n".join(bench.protocol_paragraphs(_args(bench, "--sizes", "64"), [c64], [], [0], 1))
    assert "**Protocol (64x64).**" in text and "Subsampled" in text and "2,400 images" in text
    assert "862 px" in text and "430 px" in text and "8x8" not in text
    c64l = dict(c64, scenario="linear", rows=_case(0, 0.1, 0.15, 0.8, 0.2, scenario="linear")["rows"])
    for c in (c64, c64l):  # the per-method tables list every method
        c["rows"] = {m: c["rows"].get(m, c["rows"]["random"]) for m in bench.METHODS + bench.EXTRA}
    _, data = bench.protocols_report(_args(bench, "--sizes", "64"), [c64l, c64], {"torch": "", "featurelens": "",
                                     "cpu": "", "logical_cpus": 2}, 1.0, None)
    assert {j["setting"] for j in data["joint"]} == {"case 64x64"} and len(data["joint"]) == 4
