"""Tests for the localization metrics (precision / IoU at k, EMD score as in XAI-TRIS)."""

import math

import numpy as np
import pytest
import torch

from featurelens.metrics import emd_score, iou_at_k, precision_at_k
from featurelens.metrics.localisation import _overlap as localization

UNION = [(1, 1), (2, 1), (3, 1), (2, 2), (4, 5), (5, 5), (6, 5), (6, 6)]  # XAI-TRIS 8x8 union mask
NORM_8 = math.sqrt(128)


def _mask(pixels, n=1, size=8):
    m = np.zeros((n, size, size), dtype=bool)
    for r, c in pixels:
        m[:, r, c] = True
    return m


@pytest.fixture
def mask():
    return _mask(UNION)


def test_perfect_map_scores_one(mask):
    a = mask.astype(np.float64) * 3.0
    assert precision_at_k(a, mask)[0] == 1.0
    assert iou_at_k(a, mask)[0] == 1.0
    assert emd_score(a, mask)[0] == pytest.approx(1.0, abs=1e-12)


def test_map_on_the_complement_scores_zero(mask):
    a = (~mask).astype(np.float64)
    assert precision_at_k(a, mask)[0] == 0.0
    assert iou_at_k(a, mask)[0] == 0.0
    assert emd_score(a, mask)[0] < 0.9


def test_partial_overlap_hand_computed(mask):
    a = np.ones((1, 8, 8))
    for r, c in UNION[:4]:
        a[0, r, c] = 10.0  # 4 of the 8 mask pixels ...
    for r, c in [(0, 7), (7, 0), (7, 7), (0, 4)]:
        a[0, r, c] = -9.0  # ... and 4 pixels outside it (sign ignored) make the top 8
    assert precision_at_k(a, mask)[0] == pytest.approx(0.5)
    assert iou_at_k(a, mask)[0] == pytest.approx(1 / 3)


def test_ties_are_broken_by_flat_index():
    m = _mask([(0, 0), (7, 7)])
    a = np.ones((1, 8, 8))  # all tied: the top 2 are pixels 0 and 1
    assert precision_at_k(a, m)[0] == 0.5
    assert iou_at_k(a, m)[0] == pytest.approx(1 / 3)


def test_only_nonzero_attributions_are_selected(mask):
    a = np.zeros((1, 8, 8))
    a[0, 1, 1] = a[0, 6, 6] = 1.0  # 2 non-zero pixels, both in the 8-px mask
    assert precision_at_k(a, mask)[0] == pytest.approx(2 / 8)
    assert iou_at_k(a, mask)[0] == pytest.approx(2 / 8)  # |S ∪ GT| = 8


def test_all_zero_map_and_empty_mask(mask):
    zero = np.zeros((1, 8, 8))
    assert precision_at_k(zero, mask)[0] == 0.0
    assert iou_at_k(zero, mask)[0] == 0.0
    assert np.isnan(emd_score(zero, mask)[0])
    a = np.random.default_rng(0).normal(size=(2, 8, 8))
    m = np.concatenate([mask, np.zeros((1, 8, 8), dtype=bool)])
    for metric in (precision_at_k, iou_at_k, emd_score):
        out = metric(a, m)
        assert out.dtype == np.float64 and out.shape == (2,)
        assert np.isfinite(out[0]) and np.isnan(out[1])


def test_iou_equals_p_over_two_minus_p_for_dense_maps():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(300, 8, 8))
    m = rng.random((300, 8, 8)) < rng.uniform(0.05, 0.5, size=(300, 1, 1))
    m[:, 0, 0] = True
    p = precision_at_k(a, m)
    assert np.unique(p).size > 10
    np.testing.assert_allclose(iou_at_k(a, m), p / (2 - p), rtol=1e-12)


def test_precision_matches_a_per_sample_reference():
    rng = np.random.default_rng(2)
    a = np.round(rng.normal(size=(50, 8, 8)), 1)  # rounding creates ties
    m = rng.random((50, 8, 8)) < 0.2
    m[:, 3, 3] = True
    expected = []
    for ai, mi in zip(a.reshape(50, -1), m.reshape(50, -1)):
        k = mi.sum()
        top = sorted(range(64), key=lambda j: (-abs(ai[j]), j))[:k]
        expected.append(mi[top].sum() / k)
    np.testing.assert_allclose(precision_at_k(a, m), expected)


@pytest.mark.parametrize("backend", ["auto", "scipy"])
def test_emd_single_pixels_at_distance_three_and_five(backend):
    m = _mask([(0, 3)])
    a = _mask([(0, 0)]).astype(float)
    assert emd_score(a, m, backend=backend)[0] == pytest.approx(1 - 3 / NORM_8, abs=1e-12)
    m = _mask([(3, 4)])  # Euclidean, not Manhattan: distance 5
    assert emd_score(a, m, backend=backend)[0] == pytest.approx(1 - 5 / NORM_8, abs=1e-12)


@pytest.mark.parametrize("backend", ["auto", "scipy"])
def test_emd_two_by_two_hand_solved(backend):
    # mass 3/4 at (0,0) and 1/4 at (0,1); mask (0,3) and (4,0), 1/2 each. Optimal plan:
    # (0,1)->(0,3) 1/4 [cost 2], (0,0)->(0,3) 1/4 [3], (0,0)->(4,0) 1/2 [4]: EMD = 0.5 + 0.75 + 2 = 3.25
    # (the other vertex of the plan polytope costs 0.25*sqrt(17) + 0.5*3 + 0.25*4 = 3.53)
    a = np.zeros((1, 8, 8))
    a[0, 0, 0], a[0, 0, 1] = 3.0, 1.0
    m = _mask([(0, 3), (4, 0)])
    assert emd_score(a, m, backend=backend)[0] == pytest.approx(1 - 3.25 / NORM_8, abs=1e-9)


def test_emd_scipy_matches_pot():
    pytest.importorskip("ot")
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 8, 8)) * (rng.random((40, 8, 8)) < 0.7)
    m = rng.random((40, 8, 8)) < 0.15
    m[:, 2, 5] = True
    pot = emd_score(a, m, backend="pot")
    lp = emd_score(a, m, backend="scipy")
    assert np.all((pot > 0.125) & (pot < 1))
    np.testing.assert_allclose(lp, pot, rtol=0, atol=1e-8)


def test_emd_scipy_warns_on_large_problems(monkeypatch, mask):
    monkeypatch.setattr(localization, "_SCIPY_SLOW_VARIABLES", 100)
    with pytest.warns(RuntimeWarning, match="POT"):
        emd_score(np.ones((1, 8, 8)), mask, backend="scipy")


def test_emd_pot_backend_without_pot_raises(monkeypatch, mask):
    import sys

    monkeypatch.setitem(sys.modules, "ot", None)
    with pytest.raises(ImportError, match="POT"):
        emd_score(np.ones((1, 8, 8)), mask, backend="pot")
    # auto falls back to scipy
    assert emd_score(mask.astype(float), mask, backend="auto")[0] == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------------
# input forms


def _random_case(n=6, seed=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 8, 8)), rng.random((n, 8, 8)) < 0.2


@pytest.mark.parametrize("metric", [precision_at_k, iou_at_k, emd_score])
def test_channel_axis_torch_and_values_inputs_agree(metric):
    a, m = _random_case()
    ref = metric(a, m)
    assert np.unique(ref).size > 1
    np.testing.assert_allclose(metric(a[:, None], m[:, None]), ref)
    np.testing.assert_allclose(metric(a[:, None], m), ref)
    np.testing.assert_allclose(metric(torch.from_numpy(a).float(), torch.from_numpy(m)), ref, atol=1e-6)

    class Holder:
        values = torch.from_numpy(a)

    np.testing.assert_allclose(metric(Holder(), m.astype(np.int64)), ref)
    np.testing.assert_allclose(metric(-a, m), ref)  # only |a| counts


@pytest.mark.parametrize("metric", [precision_at_k, iou_at_k, emd_score])
def test_multichannel_attributions_sum_absolute_values(metric):
    a, m = _random_case()
    split = np.stack([a * 0.25, -a * 0.75, np.zeros_like(a)], axis=1)  # sum_c |a_c| = |a|
    np.testing.assert_allclose(metric(split, m), metric(a, m), rtol=1e-12)


@pytest.mark.parametrize("metric", [precision_at_k, iou_at_k, emd_score])
def test_invalid_inputs_raise(metric):
    a, m = _random_case()
    with pytest.raises(ValueError, match=r"^a and masks must have the same shape.*\(6, 8, 8\).*\(6, 7, 8\)"):
        metric(a, m[:, :7])
    bad = a.copy()
    bad[2, 3, 3] = np.nan
    with pytest.raises(ValueError, match="^a contains NaN"):
        metric(bad, m)
    bad[2, 3, 3] = np.inf
    with pytest.raises(ValueError, match="^a contains NaN or inf"):
        metric(bad, m)
    with pytest.raises(ValueError, match="^masks must be boolean"):
        metric(a, m * 2)
    with pytest.raises(ValueError, match="^masks must be boolean"):
        metric(a, m * 0.5)
    with pytest.raises(ValueError, match=r"^a must have shape \(N, H, W\)"):
        metric(a[0], m[0])
    with pytest.raises(ValueError, match=r"^masks must have shape \(N, H, W\) or \(N, 1, H, W\)"):
        metric(a, np.repeat(m[:, None], 2, axis=1))


def test_bad_backend_raises():
    a, m = _random_case()
    with pytest.raises(ValueError, match="backend.*'fast'"):
        emd_score(a, m, backend="fast")


def test_pooled_emd_stays_within_its_documented_bound():
    rng = np.random.default_rng(3)
    a = np.abs(rng.normal(size=(6, 8, 8)))
    a[:3, :, :4] = 0.0  # partly empty maps too
    masks = rng.random((6, 8, 8)) < 0.2
    masks[:, 0, 0] = True
    exact = emd_score(a, masks)
    for p in (2, 4):
        pooled = emd_score(a, masks, pool=p)
        bound = np.sqrt(2) * (p - 1) / np.sqrt(2 * 64)
        assert np.all(np.abs(pooled - exact) <= bound + 1e-12)
    # Maps that put all mass on the mask's block centres give the same plan pooled or not: a
    # single pixel attribution at distance 4 (two 2x2 blocks) from a single-pixel mask.
    one = np.zeros((1, 8, 8)); one[0, 0, 0] = 1.0
    mask = np.zeros((1, 8, 8), bool); mask[0, 0, 4] = True
    assert emd_score(one, mask, pool=2)[0] == pytest.approx(1 - 4 / np.sqrt(128))
    np.testing.assert_array_equal(emd_score(a, masks, pool=1), exact)


def test_pool_must_divide_the_image():
    with pytest.raises(ValueError, match="pool must divide the image size; got pool=3 for 8x8"):
        emd_score(np.ones((1, 8, 8)), np.ones((1, 8, 8), bool), pool=3)
    with pytest.raises(ValueError, match="pool must be an int >= 1; got 0"):
        emd_score(np.ones((1, 8, 8)), np.ones((1, 8, 8), bool), pool=0)
