"""Relevance mass and rank accuracy against brute-force per-sample sums and sorts."""

import numpy as np
import pytest

import featurelens as fl

M = fl.metrics


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 1, 5, 5))
    masks = rng.random((6, 5, 5)) < 0.3
    masks[0] = False  # an empty mask
    return a, masks


def test_relevance_mass_modes(data):
    a, masks = data
    for mode, f in [("positive", lambda v: np.maximum(v, 0)), ("abs", np.abs), ("signed", lambda v: v)]:
        got = M.relevance_mass(a, masks, mode=mode)
        assert np.isnan(got[0])
        for i in range(1, 6):
            v = f(a[i, 0])
            np.testing.assert_allclose(got[i], v[masks[i]].sum() / v.sum(), rtol=1e-12)


def test_relevance_mass_planted_truth():
    a = np.zeros((2, 4, 4))
    masks = np.zeros((2, 4, 4), bool)
    masks[:, :2] = True
    a[0, :2] = 1.0          # all positive relevance inside
    a[1, :2] = 1.0
    a[1, 2:] = 1.0          # half inside
    a[1, 3, 3] = -5.0       # |-5| counts by default, not at all with mode="positive"
    np.testing.assert_allclose(M.relevance_mass(a, masks), [1.0, 8 / 20])
    np.testing.assert_allclose(M.relevance_mass(a, masks, mode="positive"), [1.0, 8 / 15])


def test_relevance_rank_accuracy(data):
    a, masks = data
    got = M.relevance_rank_accuracy(fl.Explanation(values=a, method="x"), masks)
    got_abs = M.relevance_rank_accuracy(a, masks, abs=True)
    assert np.isnan(got[0]) and np.isnan(got_abs[0])
    for i in range(1, 6):
        for vals, out in [(a[i, 0].ravel(), got[i]), (np.abs(a[i, 0]).ravel(), got_abs[i])]:
            k = masks[i].sum()
            top = set(sorted(range(25), key=lambda j: -vals[j])[:k])
            inside = set(np.flatnonzero(masks[i].ravel()))
            np.testing.assert_allclose(out, len(top & inside) / k)
    # A map equal to the mask ranks every mask pixel first.
    np.testing.assert_allclose(M.relevance_rank_accuracy(masks.astype(float), masks)[1:], 1.0)


def test_mask_spread_over_channels():
    rng = np.random.default_rng(1)
    a = rng.random((2, 3, 4, 4))
    m = rng.random((2, 4, 4)) < 0.5
    np.testing.assert_allclose(M.relevance_mass(a, m), M.relevance_mass(a, np.repeat(m[:, None], 3, 1)))


def test_errors(data):
    a, masks = data
    with pytest.raises(ValueError, match="masks must have the shape of a"):
        M.relevance_mass(a, masks[:, :3])
    with pytest.raises(ValueError, match="mode must be one of"):
        M.relevance_mass(a, masks, mode="pos")
    with pytest.raises(ValueError, match="masks must be boolean or hold only 0 and 1"):
        M.relevance_rank_accuracy(a, masks * 2.0 + 0.5)
    with pytest.raises(ValueError, match="a contains NaN"):
        M.relevance_rank_accuracy(np.full_like(a, np.nan), masks)
