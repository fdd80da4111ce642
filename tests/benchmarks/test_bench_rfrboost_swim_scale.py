"""The swim_scale study's helpers in benchmarks/bench_rfrboost.py: scoring one RFRBoost variant at a
time with the main study's verdict rule, and the seed-claims entry (planted per-fold tables)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def boost(benchmark_script):
    return benchmark_script("bench_rfrboost")


def _rows(scores):
    """scores: {method: [test score per fold]} -> per-fold rows as the script records them."""
    return [{"method": m, "test": t, "fold": f, "fit_s": 0.0, "tune_s": 0.0, "config": {}}
            for m, ts in scores.items() for f, t in enumerate(ts)]


def _results(variant_scores):
    # Three data sets; the baselines are the same for every variant.
    out = {}
    for name in ("a", "b", "c"):
        scores = {"RFNN (ridge readout)": [0.80, 0.80, 0.80], "MLP ResNet": [0.70, 0.70, 0.70],
                  "HistGradientBoosting": [0.5, 0.5, 0.5], **{v: s[name] for v, s in variant_scores.items()}}
        out[name] = {"per_fold": _rows(scores), "info": {"n": 10, "d": 2, "task": "regression"}}
    return out


def test_as_rfrboost_scores_one_variant_against_the_baselines(boost):
    good = {k: [0.9, 0.9, 0.9] for k in "abc"}  # beats both baselines everywhere
    bad = {k: [0.6, 0.6, 0.6] for k in "abc"}  # loses to both everywhere
    results = _results({"RFRBoost (c=0.5)": bad, "RFRBoost (c tuned)": good})
    view = boost.as_rfrboost(results, "RFRBoost (c tuned)")
    methods = {r["method"] for r in view["a"]["per_fold"]}
    assert methods == {"RFRBoost", "RFNN (ridge readout)", "MLP ResNet", "HistGradientBoosting"}
    assert view["a"]["summary"]["RFRBoost"]["mean"] == pytest.approx(0.9)
    assert boost.verdict(view)[0] == "reproduced"
    assert boost.verdict(boost.as_rfrboost(results, "RFRBoost (c=0.5)"))[0] == "not"
    # the input is not modified (the other variant's rows are still there)
    assert {r["method"] for r in results["a"]["per_fold"]} >= {"RFRBoost (c=0.5)", "RFRBoost (c tuned)"}


def test_seed_claim_entry(boost):
    c = boost.seed_claim("partly", 1, 4, 4, 6, 5, "iid Gaussian random features")
    assert c["verdict"] == "partly" and c["paper"].endswith("arXiv 2501.18283")
    assert set(c) == {"method", "paper", "claim", "verdict", "measured", "protocol", "paper_protocol", "differences"}
    assert "1 of 6" in c["measured"] and "4 of 6" in c["measured"] and "iid Gaussian" in c["protocol"]


def test_seed_claim_names_the_data_sets_run(boost):
    c = boost.seed_claim("not", 0, 1, 2, 2, 2, "SWIM", names=["diabetes", "iris"])
    assert "2 bundled scikit-learn sets (diabetes, iris)" in c["protocol"]
