"""The scoring helpers of benchmarks/bench_agop_attribution.py and benchmarks/bench_ood.py, against
hand-computed values (the scripts themselves are run by `make bench`, not by the tests)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def scripts(benchmark_script):
    return benchmark_script("bench_agop_attribution"), benchmark_script("bench_ood")


def test_half_max_iou_planted(scripts):
    agop_bench, _ = scripts
    mask = np.zeros((3, 4, 4), dtype=bool)
    mask[:, :2, :2] = True  # 4 pixels
    a = np.zeros((3, 1, 4, 4))
    a[0, 0] = mask[0] * 2.0  # the mask itself: IoU 1
    a[1, 0, 0, 0] = 1.0  # one pixel at the max, inside the mask; others below half: 1/4
    a[1, 0, 3, 3] = 0.4
    # a[2] all zero: selects nothing, IoU 0
    got = agop_bench.half_max_iou(a, mask)
    np.testing.assert_allclose(got, [1.0, 0.25, 0.0])
    # A pixel at >= half the max outside the mask joins the union: 1 / (4 + 1).
    a[1, 0, 3, 3] = -0.5
    assert agop_bench.half_max_iou(a, mask)[1] == pytest.approx(0.2)


def test_fpr_at_95_and_auroc(scripts):
    _, ood = scripts
    s_id = np.arange(100.0)  # 5% quantile = 4.95
    assert ood.fpr_at_95(s_id, np.arange(10.0)) == pytest.approx(0.5)  # 5..9 pass
    assert ood.fpr_at_95(s_id, np.full(7, -1.0)) == 0.0
    assert ood.auroc(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 1.0
    assert ood.auroc(np.array([0.0, 1.0]), np.array([2.0, 3.0])) == 0.0
    assert ood.auroc(np.array([1.0, 1.0]), np.array([1.0, 1.0])) == 0.5


def test_photo_patches_shape_and_range(scripts):
    _, ood = scripts
    p = ood.photo_patches(6, np.random.default_rng(0))
    assert p.shape == (6, 64)
    np.testing.assert_allclose(p.min(1), 0.0)
    np.testing.assert_allclose(p.max(1), 1.0)
    again = ood.photo_patches(6, np.random.default_rng(0))
    np.testing.assert_array_equal(p, again)  # seeded


def test_mahalanobis_plus_plus_scale_invariance(scripts):
    """The detectors of bench_ood: scaling one test feature vector leaves its ++ score unchanged
    (it is l2-normalised first) but changes the plain Mahalanobis score."""
    _, ood = scripts
    rng = np.random.default_rng(1)
    H = np.abs(rng.normal(size=(60, 5))) + np.repeat(np.eye(3, 5) * 3, 20, axis=0)
    y = np.repeat(np.arange(3), 20)
    feats = {"id": H[:4], "scaled": H[:4] * 3.0}
    logits = {"id": H[:4, :3], "scaled": H[:4, :3] * 3.0}
    sc = ood.detector_scores(H, y, feats, logits)
    np.testing.assert_allclose(sc["mahalanobis++"]["id"], sc["mahalanobis++"]["scaled"], rtol=1e-10, atol=1e-10)
    assert not np.allclose(sc["mahalanobis"]["id"], sc["mahalanobis"]["scaled"])
    # energy = logsumexp of the logits (brute force)
    np.testing.assert_allclose(sc["energy"]["id"], np.log(np.exp(logits["id"]).sum(1)))
