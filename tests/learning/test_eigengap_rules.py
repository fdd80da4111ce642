"""The eigengap detector's slope rule and the sigma_k / sigma_{k+1} gap (k = 2) on planted update
spectra: a synthetic sequence of update matrices whose sigma_2 / sigma_3 gap opens at a known step;
the detector must fire after it, never before, and stay silent on null sequences."""

import numpy as np
import pytest

from featurelens.learning.eigengap import EigengapDetector, SpectrumWindow, spectrum_record

T0, RAMP, STEPS, WINDOW = 150, 40, 320, 20


def _updates(seed, open_gap=True, P=200, noise=0.15):
    """Per step: dW_t = sum_i c_i(t) z_i(t) u_i + noise, u_i random orthonormal directions, z_i(t)
    sqrt(2) cos / sin waves of period WINDOW (2 cos, 2 sin, 2 cos(2 .)), exactly orthogonal with
    norm sqrt(WINDOW) over any WINDOW consecutive steps, so the window's top singular values are
    c_i sqrt(WINDOW) (plus the isotropic noise). Before T0 c = (6, 2, 1): sigma_2 / sigma_3 = 2;
    then c_2 ramps to 8 over RAMP steps: sigma_2 / sigma_3 -> 8, while sigma_1 / sigma_2 falls
    from 3 to below 1 (the first two swap places). The null sequence keeps c = (6, 2, 1)."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((P, 3)))
    phase = rng.uniform(0, 2 * np.pi)
    for t in range(STEPS):
        c2 = 2.0 + (6.0 * min(1.0, max(0.0, (t - T0) / RAMP)) if open_gap else 0.0)
        a = 2 * np.pi * t / WINDOW + phase
        z = np.sqrt(2.0) * np.array([np.cos(a), np.sin(a), np.cos(2 * a)])
        yield U @ (np.array([6.0, c2, 1.0]) * z) + noise * rng.standard_normal(P)


def _gaps(seed, k, open_gap=True):
    import torch

    win = SpectrumWindow(WINDOW)
    steps, gaps = [], []
    for t, v in enumerate(_updates(seed, open_gap)):
        win.push(torch.as_tensor(v))
        if win.full:
            steps.append(t)
            gaps.append(spectrum_record(win.singular_values(), k, "update")["update_gap"])
    return np.array(steps), np.array(gaps)


def _slope(**kw):
    return EigengapDetector(rule="slope", patience=10, warmup=20, slope_window=20, slope_threshold=0.01, **kw)


def test_slope_scores_are_the_least_squares_slope_of_the_log():
    det = EigengapDetector(rule="slope", slope_window=5, warmup=2, patience=1000)
    det.run(np.exp(0.05 * np.arange(30) + 0.3))
    s = np.array(det.scores)
    assert np.isnan(s[:4]).all()
    np.testing.assert_allclose(s[4:], 0.05, rtol=1e-10)
    # a least-squares slope on a noisy series, against numpy's polyfit
    y = np.random.default_rng(0).standard_normal(40)
    det = EigengapDetector(rule="slope", slope_window=7, warmup=2, patience=1000)
    det.run(np.exp(y))
    np.testing.assert_allclose(det.scores[20], np.polyfit(np.arange(7), y[14:21], 1)[0], rtol=1e-10)


def test_planted_sigma2_sigma3_gap_fires_after_it_opens_not_before():
    fired = []
    for seed in range(10):
        steps, gaps = _gaps(seed, k=2)
        assert 1.5 < np.median(gaps[steps < T0]) < 2.2 and np.median(gaps[steps > T0 + RAMP + WINDOW]) > 4.0
        f = _slope().run(gaps, steps)
        assert f is not None and T0 <= f <= T0 + RAMP + WINDOW, (seed, f)
        fired.append(f)
    # the slope rule and the default z-score rule both see the opening gap on k = 2
    steps, gaps = _gaps(0, k=2)
    z = EigengapDetector(patience=10, warmup=20, baseline=60).run(gaps, steps)
    assert z is not None and T0 <= z


def test_null_sequences_raise_no_alarm_and_k1_misses_the_planted_gap():
    false_alarms = sum(_slope().run(*_gaps(seed, k=2, open_gap=False)[::-1]) is not None for seed in range(20))
    assert false_alarms == 0
    # with k = 1 the planted change lowers sigma_1 / sigma_2: an "up" detector stays silent
    steps, gaps = _gaps(0, k=1)
    assert np.median(gaps[steps > T0 + RAMP + WINDOW]) < np.median(gaps[steps < T0])
    assert _slope().run(gaps, steps) is None


def test_slope_rule_refusals_name_the_argument():
    with pytest.raises(ValueError, match="rule"):
        EigengapDetector(rule="slopes")
    with pytest.raises(ValueError, match="slope_window"):
        EigengapDetector(rule="slope", slope_window=1)
    with pytest.raises(ValueError, match="slope_threshold"):
        EigengapDetector(rule="slope", slope_threshold=0.0)
