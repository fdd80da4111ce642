"""Sensitivity-n, Monotonicity, Monotonicity correlation and Sufficiency: closed forms on linear
models, a naive recomputation on the same subsets, and Quantus 0.6 fed the same subsets / noise
(its defects shown on Quantus itself)."""

import copy
import warnings

import numpy as np
import pytest
import torch

from featurelens.metrics import _perturb
from featurelens.metrics.faithfulness._subsets import (
    monotonicity,
    monotonicity_correlation,
    sensitivity_n,
    sufficiency,
    uniform_region_draws,
)

N = 6


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _linear(d=10, seed=0):
    """f(x) = W x (2 outputs, no bias), float64, and a batch with its input x gradient map."""
    g = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(d, 2, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(torch.randn(2, d, generator=g, dtype=torch.float64))
    x = torch.randn(4, d, generator=g, dtype=torch.float64).numpy()
    w0 = lin.weight[0].detach().numpy()
    return lin.eval(), x, w0 * x  # attributions for target 0


def _quantus():
    return pytest.importorskip("quantus")


def _q(metric, model, x, y, a, **kw):
    return np.asarray(metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu", **kw), dtype=np.float64)


# --------------------------------------------------------------------------------------------------
# sensitivity_n


def test_sensitivity_n_is_one_for_input_x_gradient_on_a_linear_model():
    model, x, a = _linear()
    s = sensitivity_n(model, x, a, target=0, ns=[1, 3, 8], n_subsets=12, seed=1)
    assert s.shape == (4, 3)
    np.testing.assert_allclose(s, 1.0, atol=1e-12)
    # A shuffled map breaks it.
    shuffled = sensitivity_n(model, x, a[:, ::-1].copy(), target=0, ns=3, n_subsets=12, seed=1)
    assert shuffled.shape == (4,) and np.all(shuffled < 0.99)


def test_sensitivity_n_equals_a_naive_loop_on_the_same_subsets(batch):
    model, x, y, a = batch
    model, x = copy.deepcopy(model).double(), x.astype(np.float64)  # float64: no batch-dependent rounding
    ns, runs = [2, 10], 5
    ours = sensitivity_n(model, x, a, target=y, ns=ns, n_subsets=runs, seed=3, baseline="min")
    rng = np.random.default_rng(3)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        f0 = model(xt)[np.arange(N), y].double().numpy()
    flat_a = a.reshape(N, -1)
    for k, size in enumerate(ns):
        masks = list(_perturb.subset_draws(rng, N, 64, runs, size))
        for i in range(N):
            sums, drops = [], []
            for mk in masks:
                xi = x[i].reshape(-1).copy()
                xi[mk[i]] = x[i].min()
                with torch.no_grad():
                    out = model(torch.from_numpy(xi.reshape(1, 1, 8, 8)))[0, y[i]].item()
                sums.append(flat_a[i, mk[i]].sum())
                drops.append(f0[i] - out)
            np.testing.assert_allclose(ours[i, k], np.corrcoef(sums, drops)[0, 1], atol=1e-10)


def test_sensitivity_n_default_sizes_and_groups(batch):
    model, x, y, a = batch
    s = sensitivity_n(model, x, a, target=y, n_subsets=3, seed=0)
    assert s.shape == (N, len(sorted({int(v) for v in np.round(np.geomspace(1, 51, 10))})))
    groups = np.arange(64).reshape(8, 8) // 16  # 4 regions
    s = sensitivity_n(model, x, a, target=y, ns=[1, 2], n_subsets=4, groups=groups)
    assert s.shape == (N, 2) and np.all(np.abs(s[np.isfinite(s)]) <= 1 + 1e-12)
    with pytest.raises(ValueError, match=r"ns\[1\] \(regions per subset, of 4\)"):
        sensitivity_n(model, x, a, ns=[1, 5], groups=groups)


def test_sensitivity_n_matches_quantus_on_the_same_subsets(batch):
    """Quantus's SensitivityN correlates across its batch at each step. Fed one sample's subsets as
    a batch of copies (the subset raised above every other attribution, so it is what Quantus
    removes first, a shift that Pearson ignores), its step-0 value is our per-sample score."""
    quantus = _quantus()
    model, x, y, a = batch
    runs, seed = 10, 4
    for size in (4, 16):
        ours = sensitivity_n(model, x, a, target=y, ns=size, n_subsets=runs, seed=seed, baseline="min")
        masks = np.stack(list(_perturb.subset_draws(np.random.default_rng(seed), N, 64, runs, size)))
        lift = 2 * (a.max() - a.min()) + 1
        for i in range(N):
            xb = np.repeat(x[i : i + 1], runs, axis=0)
            ab = a[i].reshape(1, -1) + lift * masks[:, i, :]
            metric = quantus.SensitivityN(features_in_step=size, normalise=False, abs=False, return_aggregate=False,
                                          disable_warnings=True)
            q = _q(metric, model, xb, np.full(runs, y[i]), ab.reshape(runs, 1, 8, 8), softmax=False)
            np.testing.assert_allclose(ours[i], q[0], atol=1e-6)


def test_quantus_sensitivity_n_returns_one_value_per_step_not_per_sample(batch):
    """The defect: Quantus removes features cumulatively in decreasing order and correlates, per
    step k, the cumulative output drop with the attribution of step k alone, across samples."""
    quantus = _quantus()
    from featurelens.metrics import deletion_curve

    model, x, y, a = batch
    q = _q(quantus.SensitivityN(features_in_step=1, normalise=False, abs=False, return_aggregate=False,
                                disable_warnings=True),
           model, x, y, a, softmax=False)
    assert q.shape == (int(0.8 * 64),)  # one value per step, none per sample
    curves, _ = deletion_curve(model, x, a, target=y, steps=64, baseline="min")
    drops = curves[:, :1] - curves[:, 1:]  # cumulative
    step_sums = -np.sort(-a.reshape(N, -1), axis=1)  # the attribution of step k alone
    expect = [np.corrcoef(drops[:, k], step_sums[:, k])[0, 1] for k in range(q.shape[0])]
    np.testing.assert_allclose(q, expect, atol=1e-5)


# --------------------------------------------------------------------------------------------------
# monotonicity


def test_monotonicity_curve_is_the_cumulative_sum_on_a_linear_model():
    model, x, a = _linear()
    ok, curves = monotonicity(model, x, a, target=0, return_curves=True)
    c = a  # contributions w_e x_e, inserted from the smallest |a| up
    order = np.argsort(np.abs(a), axis=1, kind="stable")
    expect = np.concatenate([np.zeros((4, 1)), np.cumsum(np.take_along_axis(c, order, 1), 1)], 1)
    np.testing.assert_allclose(curves, expect, atol=1e-12)
    np.testing.assert_array_equal(ok, np.all(np.take_along_axis(c, order, 1)[:, 1:] >= 0, axis=1))
    # Planted truth: all contributions positive -> monotonic for any map; one negative
    # contribution inserted after the first step -> not.
    xp = np.abs(x) * np.sign(model.weight[0].detach().numpy())
    assert np.all(monotonicity(model, xp, np.random.default_rng(0).normal(size=xp.shape), target=0) == 1.0)
    xn = xp.copy()
    xn[:, 0] *= -1
    an = np.abs(model.weight[0].detach().numpy() * xn)
    an[:, 0] = an.max() + 1  # inserted last
    assert np.all(monotonicity(model, xn, an, target=0) == 0.0)


def test_monotonicity_steps_and_groups(batch):
    model, x, y, a = batch
    _, full = monotonicity(model, x, a, target=y, baseline="min", return_curves=True)
    _, coarse = monotonicity(model, x, a, target=y, baseline="min", steps=8, return_curves=True)
    np.testing.assert_allclose(coarse, full[:, ::8], atol=1e-6)  # every 8th point of the full curve
    groups = np.arange(64).reshape(8, 8) // 16
    ok, c = monotonicity(model, x, a, target=y, groups=groups, return_curves=True)
    assert c.shape == (N, 5) and ok.dtype == np.float64
    with pytest.raises(ValueError, match=r"steps \(of 4 regions\)"):
        monotonicity(model, x, a, steps=5, groups=groups)


def test_monotonicity_matches_quantus_when_quantus_inserts(batch):
    """Given a perturb function that inserts x's features (what the paper asks), Quantus computes
    our curve; the model's outputs on its calls are recorded and compared."""
    quantus = _quantus()
    model, x, y, a = batch
    seen = []

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, z):
            out = self.net(z)
            seen.append(out.detach().double().numpy().copy())
            return out

    flat_x = x.reshape(N, -1)

    def insert(arr, indices, **kw):
        arr = arr.copy()
        arr[np.arange(N)[:, None], indices] = flat_x[np.arange(N)[:, None], indices]
        return arr

    q = _q(quantus.Monotonicity(perturb_func=insert, disable_warnings=True), Recorder().eval(), x, y, a, softmax=False)
    q_curves = np.stack([s[np.arange(N), y] for s in seen[-64:]], axis=1)
    ok, curves = monotonicity(model, x, a, target=y, baseline="min", return_curves=True)
    np.testing.assert_allclose(curves[:, 1:], q_curves, atol=1e-6)
    np.testing.assert_array_equal(ok, q.astype(np.float64))


def test_quantus_monotonicity_never_inserts(batch):
    """The defect: Quantus's default Monotonicity re-fills its baseline with the baseline, so its
    curve is flat and every map passes, also where inserting the features does not raise f."""
    quantus = _quantus()
    model, x, y, a = batch
    q = _q(quantus.Monotonicity(disable_warnings=True), model, x, y, a, softmax=False)
    assert np.all(q == 1.0)
    assert np.any(monotonicity(model, x, a, target=y, baseline="min") == 0.0)


# --------------------------------------------------------------------------------------------------
# monotonicity_correlation


def test_monotonicity_correlation_is_one_for_input_x_gradient_on_a_linear_model():
    model, x, a = _linear()
    # Zero baseline: v_e = (w_e x_e)^2, a monotone function of |a_e| = |w_e x_e|.
    np.testing.assert_allclose(monotonicity_correlation(model, x, a, target=0, baseline=0.0), 1.0, atol=1e-12)
    rev = monotonicity_correlation(model, x, 1.0 / (np.abs(a) + 1e-3), target=0, baseline=0.0)
    np.testing.assert_allclose(rev, -1.0, atol=1e-12)


def test_monotonicity_correlation_equals_a_naive_loop(batch):
    model, x, y, a = batch
    groups = np.arange(64).reshape(8, 8) // 8  # 8 row regions
    ours = monotonicity_correlation(model, x, a, target=y, n_samples=3, seed=5, groups=groups, low=-1, high=2)
    draws = np.stack(list(uniform_region_draws(5, N, 8, 3, -1, 2))).reshape(8, 3, N)
    from scipy.stats import spearmanr

    with torch.no_grad():
        f0 = model(torch.from_numpy(x))[np.arange(N), y].double().numpy()
        for i in range(N):
            v = []
            for g in range(8):
                outs = []
                for r in range(3):
                    xi = x[i].copy()
                    xi[0, g, :] = np.float32(draws[g, r, i])
                    outs.append(model(torch.from_numpy(xi[None]))[0, y[i]].item())
                v.append(np.mean((np.array(outs) - f0[i]) ** 2))
            s = np.abs(a[i, 0]).sum(1)
            np.testing.assert_allclose(ours[i], spearmanr(s, v)[0], atol=1e-6)


def test_monotonicity_correlation_matches_quantus_on_the_same_noise(batch, monkeypatch):
    quantus = _quantus()
    model, x, y, a = batch
    n_s, seed = 3, 7
    ours = monotonicity_correlation(model, x, a, target=y, n_samples=n_s, seed=seed)
    u = np.stack(list(uniform_region_draws(seed, N, 64, n_s, 0.0, 1.0))).reshape(64, n_s, N)
    order = np.argsort(np.abs(a).reshape(N, -1), axis=1)  # Quantus's step k perturbs element order[i, k]
    calls = iter(u[order[:, k], r, np.arange(N)] for k in range(64) for r in range(n_s))
    monkeypatch.setattr(np.random, "uniform", lambda *args, **kw: next(calls))
    q = _q(quantus.MonotonicityCorrelation(nr_samples=n_s, disable_warnings=True), model, x, y, a, softmax=False)
    monkeypatch.undo()
    np.testing.assert_allclose(ours, q, atol=1e-6)


# --------------------------------------------------------------------------------------------------
# sufficiency


class _Fixed(torch.nn.Module):
    """A 'classifier' whose predicted class is the first input value (0 or 1)."""

    def forward(self, z):
        c = z.reshape(z.shape[0], -1)[:, :1]
        return torch.cat([1 - c, c], 1)


def test_sufficiency_planted_clusters():
    # Two tight clusters of maps (samples 0-2 and 3-5); classes 0,0,1 | 1,1,1.
    rng = np.random.default_rng(0)
    centres = np.array([[5.0, 0, 0, 0], [0, 0, 0, 5.0]])
    a = np.repeat(centres, 3, axis=0) + 0.01 * rng.normal(size=(6, 4))
    x = np.zeros((6, 4), np.float32)
    x[[2, 3, 4, 5], 0] = 1
    s = sufficiency(_Fixed(), x, a, threshold=0.3, distance="euclidean")
    np.testing.assert_allclose(s, [0.5, 0.5, 0.0, 1.0, 1.0, 1.0])
    # threshold 0: no close neighbour -> NaN (undefined), not 0
    assert np.all(np.isnan(sufficiency(_Fixed(), x, a, threshold=0.0, distance="euclidean")))
    # identical maps: everyone is everyone's neighbour
    s = sufficiency(_Fixed(), x, np.ones((6, 4)))
    np.testing.assert_allclose(s, [1 / 5, 1 / 5, 3 / 5, 3 / 5, 3 / 5, 3 / 5])


def test_sufficiency_matches_quantus(batch):
    """Quantus passes V=None to every cdist metric, so only its default "seuclidean" runs."""
    quantus = _quantus()
    model, x, y, a = batch
    rng = np.random.default_rng(1)
    a = np.repeat(rng.normal(size=(3, 1, 8, 8)), 2, axis=0) + 0.3 * rng.normal(size=(N, 1, 8, 8))  # pairs
    for thr in (0.5, 0.8):
        q = _q(quantus.Sufficiency(threshold=thr, distance_func="seuclidean", disable_warnings=True), model, x, y, a)
        ours = sufficiency(model, x, a, threshold=thr)
        finite = np.isfinite(ours)
        np.testing.assert_allclose(ours[finite], q[finite], atol=1e-6)
        assert np.all(q[~finite] == 0.0)  # Quantus scores "no neighbour" as 0


# --------------------------------------------------------------------------------------------------
# bad input


def test_bad_input(batch):
    model, x, _, a = batch
    with pytest.raises(ValueError, match="shape of x"):
        sensitivity_n(model, x, a[:, :, :4], ns=2)
    bad = a.copy()
    bad[0, 0, 0, 0] = np.nan
    for fn in (sensitivity_n, monotonicity, monotonicity_correlation, sufficiency):
        with pytest.raises(ValueError, match="NaN"):
            fn(model, x, bad)
        with pytest.raises(ValueError, match="shape of x"):
            fn(model, x, a[:, :, :4])
    with pytest.raises(ValueError, match="n_subsets"):
        sensitivity_n(model, x, a, ns=2, n_subsets=1)
    with pytest.raises(ValueError, match=r"ns\[0\]"):
        sensitivity_n(model, x, a, ns=[0])
    with pytest.raises(ValueError, match=r"ns \(regions per subset, of 64\)"):
        sensitivity_n(model, x, a, ns=65)
    with pytest.raises(ValueError, match="at least one"):
        sensitivity_n(model, x, a, ns=[])
    with pytest.raises(TypeError, match="ns must be"):
        sensitivity_n(model, x, a, ns=2.5)
    with pytest.raises(TypeError, match="abs"):
        monotonicity(model, x, a, abs="yes")
    with pytest.raises(ValueError, match="steps"):
        monotonicity(model, x, a, steps=0)
    with pytest.raises(ValueError, match="high must be > low"):
        monotonicity_correlation(model, x, a, low=1.0, high=1.0)
    with pytest.raises(ValueError, match="n_samples"):
        monotonicity_correlation(model, x, a, n_samples=0)
    with pytest.raises(ValueError, match="baseline"):
        monotonicity_correlation(model, x, a, baseline="uniformm")
    with pytest.raises(ValueError, match="threshold"):
        sufficiency(model, x, a, threshold=1.5)
    with pytest.raises(ValueError, match="distance must be one of"):
        sufficiency(model, x, a, distance="manhattan")
    with pytest.raises(ValueError, match=">= 2 samples"):
        sufficiency(model, x[:1], a[:1])
    with pytest.raises(ValueError, match=">= 2 outputs"):
        sufficiency(lambda z: z.reshape(z.shape[0], -1).sum(1), x, a)
    with pytest.raises(ValueError, match="non-zero maps"):
        sufficiency(model, x, np.zeros_like(a), distance="cosine")
