"""road, irof, selectivity, region_perturbation: closed forms, brute force, errors, and parity with
Quantus 0.6 (fed the same noise / segments)."""

import warnings

import numpy as np
import pytest
import torch

from featurelens.metrics import _perturb as P
from featurelens.metrics.faithfulness import irof, region_perturbation, road, selectivity
from featurelens.models import Model

N = 6


def _linear(d_shape, seed=0):
    """A linear model f(x) = w . x + b with two outputs (f, -f) and its weights."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(int(np.prod(d_shape)), generator=g, dtype=torch.float64)

    def f(x):
        v = torch.as_tensor(x, dtype=torch.float64).reshape(x.shape[0], -1) @ w + 0.3
        return torch.stack([v, -v], 1)

    return f, w.numpy().reshape(d_shape)


# -- the shared helpers ----------------------------------------------------------------------------


def test_patch_regions_match_a_padded_grid():
    region_of, g = P.patch_regions((2, 3, 8, 7), 3)
    # 8 rows: pad 1 -> (0, 1); 7 columns: pad 2 -> (1, 1); a 3 x 3 grid of patches.
    assert g == 9
    pix = region_of.reshape(3, 8, 7)[0]
    assert np.all(region_of.reshape(3, 8, 7) == pix)
    rows = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    cols = np.array([0, 0, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(pix, rows[:, None] * 3 + cols[None, :])


def test_imputation_is_exact_on_a_linear_image_and_a_mean_of_neighbours():
    r, q = np.meshgrid(np.arange(8.0), np.arange(8.0), indexing="ij")
    x = np.stack([0.5 * r - 0.25 * q + 1.0, 2 * r + q]).reshape(1, 2, 8, 8)
    removed = np.zeros((1, 8, 8), bool)
    removed[0, 2:6, 3:6] = True  # interior: every removed pixel has its 8 neighbours in the image
    np.testing.assert_allclose(P.noisy_linear_imputation(x, removed), x, atol=1e-12)
    # One removed corner pixel: the weighted mean of its three neighbours (weights 1/6, 1/6, 1/12).
    x2 = np.random.default_rng(1).normal(size=(2, 1, 4, 4))
    rem = np.zeros((2, 4, 4), bool)
    rem[1, 0, 0] = True
    noise = np.full_like(x2, 0.5)
    out = P.noisy_linear_imputation(x2, rem, noise)
    v = x2[1, 0]
    expect = (v[0, 1] / 6 + v[1, 0] / 6 + v[1, 1] / 12) / (1 / 6 + 1 / 6 + 1 / 12) + 0.5
    assert out[1, 0, 0, 0] == pytest.approx(expect, abs=1e-12)
    np.testing.assert_array_equal(np.delete(out.reshape(-1), 16), np.delete(x2.reshape(-1), 16))


# -- analytic checks -------------------------------------------------------------------------------


def test_selectivity_of_the_perfect_ordering_on_a_linear_model():
    rng = np.random.default_rng(3)
    f, w = _linear((1, 6, 6))
    x = rng.normal(size=(3, 1, 6, 6))
    a = w[None] * x  # exact contributions with a zero baseline
    curves, score = selectivity(f, x, a, target=0, patch_size=2, baseline=0.0)
    contrib = (a.reshape(3, 3, 2, 3, 2).sum((2, 4))).reshape(3, 9)
    f0 = (x.reshape(3, -1) @ w.reshape(-1)) + 0.3
    expect = f0[:, None] - np.cumsum(-np.sort(-contrib, 1), 1)
    np.testing.assert_allclose(curves, expect, atol=1e-10)
    np.testing.assert_allclose(score, 0.5 * (expect[:, 1:] + expect[:, :-1]).sum(1), atol=1e-10)
    for seed in range(5):  # every other ordering lies pointwise above
        other, other_score = selectivity(f, x, np.random.default_rng(seed).normal(size=x.shape), target=0,
                                         patch_size=2, baseline=0.0)
        assert np.all(other >= curves - 1e-10) and np.all(other_score >= score - 1e-10)


def test_region_perturbation_aopc_on_a_linear_model():
    rng = np.random.default_rng(4)
    f, w = _linear((1, 6, 6))
    x = rng.normal(size=(2, 1, 6, 6))
    a = w[None] * x
    curves, aopc = region_perturbation(f, x, a, target=0, patch_size=3, steps=3, baseline=0.0)
    contrib = -np.sort(-(a.reshape(2, 2, 3, 2, 3).sum((2, 4))).reshape(2, 4), 1)
    np.testing.assert_allclose(curves, np.cumsum(contrib, 1)[:, :3], atol=1e-10)
    np.testing.assert_allclose(aopc, curves.sum(1) / 4, atol=1e-12)
    lerf = region_perturbation(f, x, a, target=0, patch_size=3, steps=3, baseline=0.0, order="lerf")[1]
    rand = region_perturbation(f, x, a, target=0, patch_size=3, steps=3, baseline=0.0, order="random", seed=1)[1]
    assert np.all(lerf <= rand + 1e-12) and np.all(rand <= aopc + 1e-12)
    again = region_perturbation(f, x, a, target=0, patch_size=3, steps=3, baseline=0.0, order="random", seed=1)[1]
    np.testing.assert_array_equal(rand, again)


def test_irof_brute_force_on_rows():
    rng = np.random.default_rng(5)
    f, w = _linear((5,))
    x = rng.normal(size=(3, 5)) + 2.0
    a = rng.normal(size=(3, 5))
    curves, score = irof(f, x, a, target=0, baseline=0.0, output="raw")
    for i in range(3):
        order = np.argsort(-a[i], kind="stable")
        f0 = x[i] @ w + 0.3
        c = []
        for k in range(1, 6):
            xk = x[i].copy()
            xk[order[:k]] = 0.0
            c.append((xk @ w + 0.3) / f0)
        np.testing.assert_allclose(curves[i], c, atol=1e-10)
        assert score[i] == pytest.approx(5 - np.trapezoid(c), abs=1e-10)


def test_road_endpoints_lerf_and_chunking(batch):
    model, x, y, a = batch
    curves, _ = road(model, x, a, percentages=[0.0])
    np.testing.assert_array_equal(curves, 1.0)  # nothing removed: the predicted class stays
    full = road(model, x, a, target=y, percentages=[10, 50, 90], seed=3)
    small = road(Model.wrap(model, batch_size=4), x, a, target=y, percentages=[10, 50, 90], seed=3)
    np.testing.assert_array_equal(full[0], small[0])
    lerf = road(model, x, a, target=y, percentages=[10, 50, 90], seed=3, order="lerf")[0]
    assert lerf.shape == (N, 3)
    groups = np.repeat(np.repeat(np.arange(16).reshape(4, 4), 2, 0), 2, 1)
    g_curves, _ = road(model, x, a, target=y, percentages=[50], seed=3, groups=groups)
    assert g_curves.shape == (N, 1)


def test_irof_per_sample_segments_and_chunking(batch):
    model, x, y, a = batch
    seg = np.stack([np.random.default_rng(i).permutation(16)[np.repeat(np.repeat(
        np.arange(16).reshape(4, 4), 2, 0), 2, 1)] for i in range(N)])
    c1, s1 = irof(model, x, a, target=y, groups=seg)
    _, s2 = irof(Model.wrap(model, batch_size=5), x, a, target=y, groups=seg[:, None])
    # float32 conv: oneDNN picks its kernels by batch size, so chunks may differ by float32 rounding
    np.testing.assert_allclose(s1, s2, rtol=1e-5, atol=1e-7)
    assert c1.shape == (N, 16)


# -- bad input -------------------------------------------------------------------------------------


def test_errors(batch):
    model, x, _, a = batch
    with pytest.raises(ValueError, match="percentages"):
        road(model, x, a, percentages=[10, 100])
    with pytest.raises(ValueError, match="percentages"):
        road(model, x, a, percentages=[])
    with pytest.raises(ValueError, match="noise"):
        road(model, x, a, noise_std=-1.0)
    with pytest.raises(ValueError, match="order"):
        road(model, x, a, order="sideways")
    with pytest.raises(ValueError, match="images"):
        road(lambda v: torch.as_tensor(v)[:, :2], x.reshape(N, -1), a.reshape(N, -1))
    with pytest.raises(ValueError, match="groups"):
        road(model, x, a, groups=np.zeros((4, 4), int))
    with pytest.raises(ValueError, match="shape"):
        selectivity(model, x, a[:, :, :4])
    bad = a.copy()
    bad[0, 0, 0, 0] = np.nan
    for metric in (road, irof, selectivity, region_perturbation):
        with pytest.raises(ValueError, match="a"):
            metric(model, x, bad)
    with pytest.raises(ValueError, match="patch_size"):
        selectivity(model, x, a, patch_size=0)
    with pytest.raises(ValueError, match="steps"):
        region_perturbation(model, x, a, steps=0)
    with pytest.raises(ValueError, match="order"):
        region_perturbation(model, x, a, order="best")
    with pytest.raises(ValueError, match="groups"):
        irof(model, x, a, groups=np.zeros((3, 5), int))
    with pytest.raises(TypeError, match="groups"):
        irof(model, x, a, groups=np.zeros((8, 8)))


# -- parity with Quantus 0.6 -----------------------------------------------------------------------


@pytest.fixture
def quantus():
    q = pytest.importorskip("quantus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield q


def _q(metric, model, x, y, a, **kw):
    return metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu", **kw)


def test_road_matches_quantus_on_the_same_noise(batch, quantus, monkeypatch):
    model, x, y, a = batch
    pct, sigma = [10, 30, 50, 70, 90], 0.05
    noise = list(P.gaussian_draws(7, len(pct), x.shape, np.full(N, sigma)))
    order = np.argsort(-a.reshape(N, -1), axis=1)
    # Quantus draws noise * randn(c, k) per percentage, then per sample, for its top-k pixels in order.
    feed = iter(noise[j][i].reshape(1, -1)[:, order[i, : int(64 * p / 100)]] / sigma
                for j, p in enumerate(pct) for i in range(N))
    monkeypatch.setattr(np.random, "randn", lambda *shape: next(feed))
    q = _q(quantus.ROAD(percentages=pct, noise=sigma, normalise=False, disable_warnings=True), model, x, y, a)
    monkeypatch.undo()
    curves, _ = road(model, x, a, target=y, percentages=pct, noise_std=sigma, seed=7)
    np.testing.assert_allclose(curves.mean(0), [q[p] for p in pct], atol=1e-6)


def test_irof_matches_quantus_on_the_same_segments(batch, quantus, monkeypatch):
    from skimage.segmentation import slic

    model, x, y, a = batch
    seg = np.stack([slic(np.moveaxis(xi, 0, -1).astype("double"), start_label=0) for xi in x])
    seg[0] = np.repeat(np.repeat(np.arange(16).reshape(4, 4), 2, 0), 2, 1)  # fewer segments in sample 0
    segments = iter(seg)
    base = np.asarray(P.baseline_tensor("mean", torch.from_numpy(x)))
    kw = {"normalise": False, "perturb_baseline": base, "return_aggregate": False, "disable_warnings": True}
    if not hasattr(np, "trapz"):  # the defect: numpy 2.4 removed np.trapz, which Quantus's IROF calls
        monkeypatch.setattr(quantus.helpers.utils, "get_superpixel_segments", lambda **k: next(iter(seg)))
        with pytest.raises(AttributeError, match="trapz"):
            _q(quantus.IROF(**kw), model, x, y, a, softmax=True)
        monkeypatch.setattr(np, "trapz", np.trapezoid, raising=False)
    monkeypatch.setattr(quantus.helpers.utils, "get_superpixel_segments", lambda **k: next(segments))
    q = np.asarray(_q(quantus.IROF(**kw), model, x, y, a, softmax=True), dtype=np.float64)
    monkeypatch.undo()
    curves, ours = irof(model, x, a, target=y, groups=seg)  # output="probability", baseline "mean"
    np.testing.assert_allclose(ours[1:], q[1:], atol=1e-6)
    # Quantus pads sample 0's 16-point curve with zeros up to 64 and integrates into the padding.
    assert q[0] == pytest.approx(ours[0] - curves[0, 15] / 2, abs=1e-6)


def test_selectivity_matches_quantus(batch, quantus):
    model, x, y, a = batch
    q = np.asarray(_q(quantus.Selectivity(patch_size=3, normalise=False, disable_warnings=True),
                      model, x, y, a, softmax=False), dtype=np.float64)
    curves, score = selectivity(model, x, a, target=y, patch_size=3)
    np.testing.assert_allclose(curves, q, atol=1e-6)
    # the area sums one float32-rounded output per step: up to 1e-6 per step
    np.testing.assert_allclose(score, [np.trapezoid(c) for c in q], atol=curves.shape[1] * 1e-6)


@pytest.mark.parametrize("order", ["morf", "lerf"])
def test_region_perturbation_matches_quantus(batch, quantus, order):
    model, x, y, a = batch
    metric = quantus.RegionPerturbation(patch_size=3, order=order, regions_evaluation=5, normalise=False,
                                        disable_warnings=True)
    q = np.asarray(_q(metric, model, x, y, a, softmax=False), dtype=np.float64)
    curves, _ = region_perturbation(model, x, a, target=y, patch_size=3, steps=5, order=order)
    np.testing.assert_allclose(curves, q, atol=1e-6)


def test_noisy_linear_imputation_matches_quantus(quantus, monkeypatch):
    from quantus.functions.perturb_func import noisy_linear_imputation

    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 7, 9))
    idx = rng.permutation(63)[:40]  # most pixels, borders and corners included
    noise = rng.normal(size=(3, 63)) * 0.1
    monkeypatch.setattr(np.random, "randn", lambda *shape: noise[:, idx] / 0.1)
    q = noisy_linear_imputation(x, idx, noise=0.1)
    monkeypatch.undo()
    removed = np.zeros(63, bool)
    removed[idx] = True
    ours = P.noisy_linear_imputation(x[None], removed.reshape(1, 7, 9), noise.reshape(1, 3, 7, 9))[0]
    assert not np.allclose(ours, x)
    np.testing.assert_allclose(ours, q, atol=1e-10)


def test_road_refuses_percentages_that_remove_nothing(batch):
    # 1.5 % of 64 pixels is floor(0.96) = 0 pixels: the untouched image, which used to be scored
    # silently (all ones for the predicted class, all zeros for another target).
    model, x, y, a = batch
    with pytest.raises(ValueError, match=r"percentages \[1.5\] remove no pixel: floor\(64 pixels \* p / 100\) = 0; "
                                         r"each percentage must be 0 \(the untouched input\) or at least 100 / 64 = "
                                         r"1.5625"):
        road(model, x, a, target=y, percentages=[1.5])
    with pytest.raises(ValueError, match="in percent .*not fractions"):  # fractions read as percent
        road(model, x, a, percentages=[0.1, 0.5, 0.9])
    groups = np.repeat(np.repeat(np.arange(16).reshape(4, 4), 2, 0), 2, 1)
    with pytest.raises(ValueError, match=r"remove no region: floor\(16 regions"):
        road(model, x, a, percentages=[5, 50], groups=groups)
    # the smallest percentage that removes a pixel is accepted and removes one, as 2 % does (floor(1.28))
    one, _ = road(model, x, a, target=y, percentages=[100 / 64], seed=4)
    two, _ = road(model, x, a, target=y, percentages=[2], seed=4)
    np.testing.assert_array_equal(one, two)
