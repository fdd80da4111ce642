"""The helpers of benchmarks/bench_objectives.py against hand-computed values (the script itself
is run by `make bench`, not by the tests)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("bench_objectives")


def test_decision_geometry_planted(bench):
    # Row 0: positive 2 > 0 > negatives; row 1: positive 0.5 > 0, a negative at 1.0 (above a
    # positive of another row, and above 0). Pooled positives {2, 0.5}, negatives {-1, -3, 1, -2}.
    Z = np.array([[2.0, -1.0, -3.0], [1.0, 0.5, -2.0]])
    y = np.array([0, 1])
    g = bench.decision_geometry(Z, y)
    # Pairs (pos > neg) out of 2 x 4: 2 beats all 4; 0.5 beats -1, -3, -2 -> 7 / 8.
    assert g["pooled_auroc"] == pytest.approx(7 / 8)
    assert g["zero_threshold"] == pytest.approx(0.5)
    pos = np.array([2.0, 0.5])
    assert g["pos_cv"] == pytest.approx(pos.std() / pos.mean())


def test_decision_geometry_one_threshold_separates(bench):
    # BCE-like scores: every positive above every negative of every row -> AUROC 1, all split at 0.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 50)
    Z = -1.0 - rng.random((50, 4))
    Z[np.arange(50), y] = 1.0 + rng.random(50)
    g = bench.decision_geometry(Z, y)
    assert g["pooled_auroc"] == 1.0 and g["zero_threshold"] == 1.0
    # CE-like: the same scores shifted per row keep each row's order but mix the pooled ones.
    Z2 = Z + 10.0 * np.arange(50)[:, None]
    g2 = bench.decision_geometry(Z2, y)
    assert g2["pooled_auroc"] < 1.0 and g2["zero_threshold"] < 1.0


def test_seed_wins_counts(bench):
    runs = [{"objective": "a", "seed": s, "v": v} for s, v in enumerate([1.0, 2.0, 3.0])]
    runs += [{"objective": "b", "seed": s, "v": v} for s, v in enumerate([0.5, 2.5, 3.0])]
    assert bench._count(runs, "a", "b", lambda r: r["v"], +1) == (1, 3)  # a higher on seed 0 only
    assert bench._count(runs, "a", "b", lambda r: r["v"], -1) == (1, 3)  # a lower on seed 1 only (tie: none)


def test_mlp_layers_shapes(bench):
    import torch

    m = bench.MLP()
    hs = m.layers(torch.zeros(3, 1, 8, 8))
    assert [tuple(h.shape) for h in hs] == [(3, 256), (3, 256), (3, 128)]
    assert tuple(m(torch.zeros(3, 64)).shape) == (3, 10)


def _layer(noisy_muon, noisy_adam, clean_muon, clean_adam, won=3, seeds=3):
    return {"noisy_muon": noisy_muon, "noisy_adam": noisy_adam, "clean_muon": clean_muon,
            "clean_adam": clean_adam, "seeds_won": won, "seeds": seeds}


def test_muon_verdict_partly_when_the_gain_is_mostly_clean(bench):
    # Issue 26's numbers: drops 0.101 vs 0.104, 0.089 vs 0.089, 0.072 vs 0.086 with noisy gains
    # 0.023, 0.030, 0.042 -> clean gains 0.020, 0.030, 0.028 (shares 0.87, 1.0, 0.67): no layer robust.
    layers = [_layer(0.872, 0.849, 0.973, 0.953), _layer(0.889, 0.859, 0.978, 0.948),
              _layer(0.904, 0.862, 0.976, 0.948)]
    v = bench.muon_robustness_verdict(layers)
    assert v["verdict"] == "partly" and v["noisy_won"] == 3 and v["robust"] == 0
    assert v["clean_share"] == pytest.approx([0.020 / 0.023, 1.0, 0.028 / 0.042])


def test_muon_verdict_reproduced_when_the_drop_shrinks(bench):
    # Same clean accuracy, higher noisy accuracy: the whole gain is robustness (clean share 0).
    layers = [_layer(0.90, 0.85, 0.95, 0.95)] * 2 + [_layer(0.87, 0.85, 0.96, 0.95)]  # last: share 0.5
    v = bench.muon_robustness_verdict(layers)
    assert v["verdict"] == "reproduced" and v["robust"] == 2
    assert v["clean_share"] == pytest.approx([0.0, 0.0, 0.5])


def test_muon_verdict_not_and_seed_majority(bench):
    assert bench.muon_robustness_verdict([_layer(0.84, 0.85, 0.97, 0.95)])["verdict"] == "not"
    # A higher mean won on only 1 of 3 seeds is not a won layer.
    v = bench.muon_robustness_verdict([_layer(0.90, 0.85, 0.95, 0.95, won=1)])
    assert v["verdict"] == "not" and v["noisy_won"] == 0 and v["robust"] == 0
    assert np.isnan(bench.muon_robustness_verdict([_layer(0.85, 0.85, 0.95, 0.95)])["clean_share"][0])
