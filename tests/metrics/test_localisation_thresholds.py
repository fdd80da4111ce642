"""precision_at_k / iou_at_k with threshold="top_k" | "half_max" | a quantile, on hand-made maps whose
selected sets are known."""

import numpy as np
import pytest

import featurelens as fl


def _map_and_mask():
    # 1 x 4 x 4 map: values 8, 6, 4, 3.9 and 1 elsewhere (one zero); mask = the first row.
    a = np.ones((1, 4, 4))
    a[0, 0] = [8.0, 6.0, 4.0, 3.9]
    a[0, 3, 3] = 0.0
    a[0, 1, 0] = -5.0  # sign does not matter: |a| = 5
    m = np.zeros((1, 4, 4), bool)
    m[0, 0] = True
    return a, m


def test_half_max_selects_pixels_at_or_above_half_the_maximum():
    a, m = _map_and_mask()
    # |a| >= 4: 8, 6, 4 (in the mask), 5 (outside) -> S has 4 pixels, 3 of them in the mask.
    p = fl.metrics.precision_at_k(a, m, threshold="half_max")
    iou = fl.metrics.iou_at_k(a, m, threshold="half_max")
    np.testing.assert_allclose(p, [3 / 4])
    np.testing.assert_allclose(iou, [3 / (4 + 4 - 3)])


def test_top_k_default_is_unchanged():
    a, m = _map_and_mask()
    # k = 4: the top-4 |a| are 8, 6, 5, 4 -> 3 in the mask.
    for kw in ({}, {"threshold": "top_k"}):
        np.testing.assert_allclose(fl.metrics.precision_at_k(a, m, **kw), [3 / 4])
        np.testing.assert_allclose(fl.metrics.iou_at_k(a, m, **kw), [3 / 5])


def test_quantile_threshold_against_a_brute_force_count():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 5, 5))
    a[0] = 0.0  # an all-zero map selects nothing
    m = rng.random((6, 5, 5)) < 0.3
    m[1] = False  # an empty mask -> NaN
    for q in (0.25, 0.5, 0.9):
        p = fl.metrics.precision_at_k(a, m, threshold=q)
        iou = fl.metrics.iou_at_k(a, m, threshold=q)
        for i in range(6):
            v = np.abs(a[i]).ravel()
            srt = np.sort(v)  # the q-quantile by linear interpolation between order statistics
            pos = q * (v.size - 1)
            lo = int(np.floor(pos))
            cut = srt[lo] + (pos - lo) * (srt[min(lo + 1, v.size - 1)] - srt[lo])
            s = (v >= cut) & (v > 0)
            g = m[i].ravel()
            if not g.any():
                assert np.isnan(p[i]) and np.isnan(iou[i])
                continue
            exp_p = (s & g).sum() / s.sum() if s.any() else 0.0
            np.testing.assert_allclose(p[i], exp_p)
            np.testing.assert_allclose(iou[i], (s & g).sum() / (s | g).sum())
    assert fl.metrics.precision_at_k(a, m, threshold=0.5)[0] == 0.0


def test_quantile_counts_on_distinct_values():
    # 10 distinct values 1..10; the 0.75-quantile (linear interpolation) is 7.75 -> S = {8, 9, 10}.
    a = np.arange(1.0, 11.0).reshape(1, 2, 5)
    m = np.zeros((1, 2, 5), bool)
    m[0, 1, 4] = m[0, 1, 3] = m[0, 0, 0] = True  # the 10, the 9 and the 1
    np.testing.assert_allclose(fl.metrics.precision_at_k(a, m, threshold=0.75), [2 / 3])
    np.testing.assert_allclose(fl.metrics.iou_at_k(a, m, threshold=0.75), [2 / 4])


def test_half_max_matches_a_thresholded_iou_over_channels_and_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 3, 6, 6))
    m = rng.random((4, 6, 6)) < 0.25
    red = np.abs(a).sum(axis=1)
    s = red >= red.max(axis=(1, 2), keepdims=True) / 2
    exp = (s & m).sum(axis=(1, 2)) / (s | m).sum(axis=(1, 2))
    np.testing.assert_allclose(fl.metrics.iou_at_k(torch.as_tensor(a), m, threshold="half_max"), exp)


@pytest.mark.parametrize("bad, err", [("max", ValueError), (0.0, ValueError), (1.0, ValueError),
                                      (1.5, ValueError), (True, TypeError), (None, TypeError),
                                      ([0.5], TypeError)])
def test_threshold_is_checked(bad, err):
    a, m = _map_and_mask()
    for fn in (fl.metrics.precision_at_k, fl.metrics.iou_at_k):
        with pytest.raises(err, match="threshold"):
            fn(a, m, threshold=bad)
