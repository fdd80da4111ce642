"""Pointing game, attribution localisation, top-k intersection, ROC AUC and Focus: hand-computed
cases, brute force, planted truth, errors, and parity with Quantus 0.6 on the same arrays."""

import warnings

import numpy as np
import pytest
import torch

from featurelens.metrics import localisation as L


@pytest.fixture
def maps():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 1, 8, 8))
    s = np.zeros((6, 1, 8, 8), np.float32)
    s[:, :, 1:4, 1:3] = 1
    s[:, :, 4:7, 5:7] = 1
    return a, s


# -- pointing game ---------------------------------------------------------------------------------


def test_pointing_game_hits_misses_ties_and_tolerance():
    a = np.zeros((4, 6, 6))
    m = np.zeros((4, 6, 6), bool)
    m[:, 0:2, 0:2] = True
    a[0, 1, 1] = 5.0  # peak in the mask
    a[1, 4, 4] = 5.0  # peak far away
    a[2, 1, 4] = 5.0  # peak 3 pixels right of the mask pixel (1, 1)
    a[3, 0, 0] = a[3, 5, 5] = 5.0  # a tie, one in the mask
    np.testing.assert_array_equal(L.pointing_game(a, m), [1, 0, 0, 1])
    np.testing.assert_array_equal(L.pointing_game(a, m, tolerance=3.0), [1, 0, 1, 1])
    np.testing.assert_array_equal(L.pointing_game(a, m, tolerance=2.9), [1, 0, 0, 1])


def test_pointing_game_tolerance_brute_force():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(20, 2, 7, 9))
    m = rng.random((20, 7, 9)) < 0.08
    m[:, 3, 4] = True
    rows, cols = np.mgrid[:7, :9]
    for tol in (1.0, 1.5, 2.5):
        got = L.pointing_game(a, m, tolerance=tol)
        for i in range(20):
            _, r, c = np.unravel_index(np.argmax(a[i]), a[i].shape)
            dist = np.sqrt((rows[m[i]] - r) ** 2 + (cols[m[i]] - c) ** 2).min()
            assert got[i] == float(dist <= tol)


def test_pointing_game_abs_channels_and_empty_masks():
    a = np.zeros((2, 3, 4, 4))
    a[:, 2, 0, 0] = -9.0  # the largest |a|, in the mask
    a[:, 1, 3, 3] = 1.0  # the largest signed a, outside
    m = np.zeros((2, 4, 4))  # a spatial mask, spread over the channels
    m[:, 0, 0] = 1
    m[1] = 0
    out = L.pointing_game(a, m)
    assert out[0] == 0 and np.isnan(out[1])
    out = L.pointing_game(a, m, abs=True)
    assert out[0] == 1 and np.isnan(out[1])


# -- attribution localisation, top-k intersection, AUC -------------------------------------------


def test_attribution_localisation_brute_force_and_weighting(maps):
    a, s = maps
    got = L.attribution_localisation(a, s)
    got_abs = L.attribution_localisation(a, s, mode="abs")
    got_w = L.attribution_localisation(a, s, weighted=True)
    for i in range(a.shape[0]):
        v, m = a[i].ravel(), s[i].ravel() > 0
        pos = np.clip(v, 0, None)
        assert got[i] == pytest.approx(pos[m].sum() / pos.sum(), rel=1e-12)
        assert got_abs[i] == pytest.approx(np.abs(v)[m].sum() / np.abs(v).sum(), rel=1e-12)
        assert got_w[i] == pytest.approx(got[i] * v.size / m.sum(), rel=1e-12)
    # A uniform positive map: mu = |GT| / D, so the weighted score is exactly 1.
    np.testing.assert_allclose(L.attribution_localisation(np.ones_like(a), s, weighted=True), 1.0, rtol=1e-12)
    # Negative relevance does not count; no positive relevance at all gives NaN.
    assert np.isnan(L.attribution_localisation(-np.abs(a), s)).all()


def test_top_k_intersection_brute_force(maps):
    a, s = maps
    for k in (1, 10, 64):
        got = L.top_k_intersection(a, s, k=k)
        got_ci = L.top_k_intersection(a, s, k=k, concept_influence=True)
        got_abs = L.top_k_intersection(a, s, k=k, abs=True)
        for i in range(a.shape[0]):
            v, m = a[i].ravel(), s[i].ravel() > 0
            assert got[i] == pytest.approx(m[np.argsort(-v)[:k]].mean())
            assert got_abs[i] == pytest.approx(m[np.argsort(-np.abs(v))[:k]].mean())
            assert got_ci[i] == pytest.approx(got[i] * v.size / m.sum())
    np.testing.assert_allclose(L.top_k_intersection(a, s, k=64), s.reshape(6, -1).mean(1))  # k = D: the mask share


def test_auc_against_sklearn_with_ties(maps):
    from sklearn.metrics import roc_auc_score

    a, s = maps
    tied = np.round(a * 2) / 2  # many ties: the rank formula must count them as 1/2
    for arr in (a, tied, np.abs(a)):
        got = L.auc(arr, s)
        for i in range(arr.shape[0]):
            assert got[i] == pytest.approx(roc_auc_score(s[i].ravel() > 0, arr[i].ravel()), abs=1e-12)
    np.testing.assert_allclose(L.auc(s * 3.0 + 1.0, s), 1.0)  # the mask itself ranks perfectly
    full = np.ones_like(s)
    assert np.isnan(L.auc(a, full)).all()  # no negatives: undefined


# -- Focus -----------------------------------------------------------------------------------------


def test_focus_mosaics_layout_and_tiles():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(9, 2, 3, 4)).astype(np.float32)
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 1])
    d = L.focus_mosaics(x, y, n_mosaics=20, seed=3)
    assert d["mosaics"].shape == (20, 2, 6, 8) and d["mosaics"].dtype == np.float32
    assert (d["layout"].sum(1) == 2).all()  # two target images, two others, per mosaic
    np.testing.assert_array_equal(d["layout"], y[d["indices"]] == d["target"][:, None])
    for j in range(20):
        tiles = [d["mosaics"][j, :, :3, :4], d["mosaics"][j, :, :3, 4:], d["mosaics"][j, :, 3:, :4],
                 d["mosaics"][j, :, 3:, 4:]]
        for q in range(4):
            np.testing.assert_array_equal(tiles[q], x[d["indices"][j, q]])
        target_idx = d["indices"][j][d["layout"][j]]
        assert target_idx[0] != target_idx[1]  # distinct images of the target class
    again = L.focus_mosaics(x, y, n_mosaics=20, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(again["indices"], d["indices"])


def test_focus_planted_values():
    layout = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], bool)
    a = np.zeros((3, 1, 4, 4))
    a[0, 0, :2, :2] = 1.0  # all positive relevance on a target tile
    a[0, 0, 2:, :2] = -5.0  # negative relevance elsewhere does not count
    a[1] = 1.0  # uniform: half of it on target tiles
    a[2, 0, 0, 0] = 3.0  # TL (target)
    a[2, 0, 3, 3] = 1.0  # BR (not)
    np.testing.assert_allclose(L.focus(a, layout), [1.0, 0.5, 0.75])
    assert np.isnan(L.focus(-np.ones((1, 4, 4)), layout[:1]))


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [L.pointing_game, L.attribution_localisation, L.auc,
                                lambda a, s: L.top_k_intersection(a, s, k=3)])
def test_bad_maps_and_masks(fn, maps):
    a, s = maps
    with pytest.raises(ValueError, match="masks must have the shape"):
        fn(a[:, :, :4], s)
    bad = a.copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fn(bad, s)
    with pytest.raises(ValueError, match="empty for every sample"):
        fn(a, np.zeros_like(s))
    with pytest.raises(ValueError, match="only 0 and 1"):
        fn(a, s * 2)


def test_bad_options(maps):
    a, s = maps
    with pytest.raises(ValueError, match="k must be"):
        L.top_k_intersection(a, s, k=65)
    with pytest.raises(ValueError, match="tolerance"):
        L.pointing_game(a, s, tolerance=-1.0)
    with pytest.raises(ValueError, match="two spatial axes"):
        L.pointing_game(a.reshape(6, -1), s.reshape(6, -1), tolerance=1.0)
    with pytest.raises(ValueError, match="mode"):
        L.attribution_localisation(a, s, mode="signed")
    with pytest.raises(ValueError, match="even height"):
        L.focus(np.ones((2, 5, 4)), np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="layout must have shape"):
        L.focus(np.ones((2, 4, 4)), np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="NaN"):
        L.focus(np.full((1, 4, 4), np.nan), np.ones((1, 4), bool))
    with pytest.raises(ValueError, match="two classes"):
        L.focus_mosaics(np.ones((3, 1, 2, 2)), np.zeros(3, int), n_mosaics=2)
    with pytest.raises(ValueError, match="one int label per image"):
        L.focus_mosaics(np.ones((3, 1, 2, 2)), np.zeros(2, int), n_mosaics=2)


# -- Quantus 0.6 ----------------------------------------------------------------------------------


@pytest.fixture
def quantus():
    q = pytest.importorskip("quantus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield q


def _q(metric, a, s, model=None, **kw):
    x = np.zeros(a.shape, np.float32)
    y = np.zeros(a.shape[0], int)
    return np.asarray(metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), s_batch=s, device="cpu", **kw),
                      dtype=np.float64)


def test_quantus_localisation_parity(quantus, maps):
    a, s = maps
    q = _q(quantus.PointingGame(disable_warnings=True), a, s)
    np.testing.assert_array_equal(L.pointing_game(a, s), q)
    q = _q(quantus.AttributionLocalisation(disable_warnings=True), a, s)  # abs=True, +1e-9 in the total
    np.testing.assert_allclose(L.attribution_localisation(a, s, mode="abs"), q, atol=1e-6)
    q = _q(quantus.AttributionLocalisation(abs=False, positive_attributions=True, disable_warnings=True), a, s)
    np.testing.assert_allclose(L.attribution_localisation(a, s), q, atol=1e-6)
    for k, ci in ((10, False), (20, True)):
        q = _q(quantus.TopKIntersection(k=k, concept_influence=ci, disable_warnings=True), a, s)
        np.testing.assert_allclose(L.top_k_intersection(a, s, k=k, concept_influence=ci), q, atol=1e-6)
    q = _q(quantus.AUC(disable_warnings=True), a, s)
    np.testing.assert_allclose(L.auc(a, s), q, atol=1e-6)
    q = _q(quantus.AUC(abs=True, disable_warnings=True), a, s)
    np.testing.assert_allclose(L.auc(a, s, abs=True), q, atol=1e-6)


def test_quantus_focus_parity_on_our_mosaics(quantus):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(10, 1, 4, 4)).astype(np.float32)
    d = L.focus_mosaics(x, np.arange(10) % 3, n_mosaics=6, seed=0)
    a = rng.normal(size=(6, 1, 8, 8))
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3))  # Focus asks for one
    q = np.asarray(quantus.Focus(disable_warnings=True)(
        model=model, x_batch=d["mosaics"], y_batch=d["target"], a_batch=a.copy(),
        custom_batch=d["layout"].astype(int), device="cpu"), dtype=np.float64)
    np.testing.assert_allclose(L.focus(a, d["layout"]), q, atol=1e-6)


def test_quantus_defects_shown_not_copied(quantus, maps):
    a, s = maps
    s = s.copy()
    s[0] = 0
    a = a.copy()
    # An empty mask: Quantus writes NaN into a boolean array, which reads back as a hit.
    assert _q(quantus.PointingGame(disable_warnings=True), a, s)[0] == 1.0
    assert np.isnan(L.pointing_game(a, s)[0])
    # Weighted attribution localisation: Quantus multiplies by |GT| / x_batch[2:].size, the size of
    # the batch minus two samples, not the paper's D / |GT|.
    s = maps[1]
    n, d = a.shape[0], a[0].size
    mu = _q(quantus.AttributionLocalisation(disable_warnings=True), a, s)
    q_w = _q(quantus.AttributionLocalisation(weighted=True, disable_warnings=True), a, s)
    size = s.reshape(n, -1).sum(1)
    np.testing.assert_allclose(q_w, mu * size / ((n - 2) * d), rtol=1e-9)
    np.testing.assert_allclose(L.attribution_localisation(a, s, mode="abs", weighted=True), mu * d / size, rtol=1e-6)
