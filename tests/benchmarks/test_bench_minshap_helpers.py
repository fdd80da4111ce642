"""The scoring helpers of benchmarks/bench_minshap_inference.py against hand-computed values (the
script itself is run by `make bench`, not by the tests)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("bench_minshap_inference")


def _mask(idx, d=10):
    m = np.zeros(d, dtype=bool)
    m[list(idx)] = True
    return m


def test_truth_masks_follow_the_roles(bench):
    roles = bench.ROLES
    assert set(np.flatnonzero(bench.MB)) == set(roles["parents"] + roles["child"] + roles["spouse"])
    assert set(np.flatnonzero(bench.VISIBLE)) == set(roles["parents"] + roles["child"])  # no spouse


def test_f1_hand_computed(bench):
    # Selected {0, 3, 7}: 2 of the 5 blanket members, one null -> P = 2/3, R = 2/5, F1 = 2PR/(P+R) = 1/2.
    sel = _mask([0, 3, 7])
    assert bench.f1(sel) == pytest.approx(0.5)
    # Against parents + child {0..3}: P = 2/3, R = 2/4 -> F1 = 4/7.
    assert bench.f1(sel, bench.VISIBLE) == pytest.approx(4 / 7)
    assert bench.f1(_mask([8, 9])) == 0.0 and bench.f1(_mask([])) == 0.0


def test_f1_spouse_blind_selection(bench):
    # A method that finds exactly what MinShap can see: perfect against parents + child, and charged
    # the spouse against the blanket (P = 1, R = 4/5 -> 8/9). Selecting the spouse too costs it
    # precision against the visible set (P = 4/5, R = 1 -> 8/9).
    assert bench.f1(_mask(range(4)), bench.VISIBLE) == 1.0
    assert bench.f1(_mask(range(4))) == pytest.approx(8 / 9)
    assert bench.f1(_mask(range(5)), bench.VISIBLE) == pytest.approx(8 / 9)


def _res(f1, f1v, nog=0.6, null=0.01, spouse=0.0, parents=0.5):
    return {"f1": f1, "f1_visible": f1v, "nogueira_boot": nog, "null_rate": null, "null_trials": 500,
            "power": {"parents": parents, "child": 1.0, "spouse": spouse}}


def test_verdict_scores_both_targets(bench):
    # MinShap best on parents + child, behind on the full blanket; stable and calibrated.
    r = {"MinShap": _res(0.89, 1.0, nog=0.9), "LOCO": _res(0.95, 0.89), "GCM": _res(0.95, 0.89),
         "Lasso": _res(0.8, 0.8, null=0.5)}
    overall, words, text = bench.verdict({"linear": r})
    assert words["accuracy (parents + child)"] == "reproduced"
    assert words["accuracy (Markov blanket)"] == "not"
    assert words["stability"] == "reproduced" and words["type I error"] == "reproduced"
    assert overall == "partly"
    assert "against parents + child 1.00 vs best other 0.89 (win)" in text
    assert "invisible to MinShap by construction" in text
