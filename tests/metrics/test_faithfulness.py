"""Faithfulness metrics against naive per-sample loops on the same perturbations, and analytic
identities of linear models."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.metrics import _perturb

M = fl.metrics


def _f(model, x, t):
    """The target output of one input, the naive way (one forward pass per perturbed input)."""
    with torch.no_grad():
        out = model(torch.as_tensor(np.asarray(x, dtype=np.float32))[None])
    return float(out[0, t])


@pytest.fixture
def images(small_cnn):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 1, 8, 8)).astype(np.float32)
    a = rng.normal(size=(4, 1, 8, 8))
    with torch.no_grad():
        t = small_cnn(torch.from_numpy(x)).argmax(1).numpy()
    return small_cnn.eval(), x, a, t


def _naive_curve(model, x, a, t, steps, base, insert=False, groups=None):
    n = x.shape[0]
    curves = np.zeros((n, steps + 1))
    for i in range(n):
        flat_a = a[i].reshape(-1)
        if groups is None:
            labels = np.arange(flat_a.size)
        else:
            labels = np.broadcast_to(groups, x.shape[1:]).reshape(-1)
        uniq = np.unique(labels)
        score = np.array([flat_a[labels == g].sum() for g in uniq])
        order = uniq[np.argsort(-score, kind="stable")]
        for k in range(steps + 1):
            r = int(round(k * len(uniq) / steps))
            chosen = np.isin(labels, order[:r])
            if insert:
                xi = np.where(chosen, x[i].reshape(-1), base[i].reshape(-1))
            else:
                xi = np.where(chosen, base[i].reshape(-1), x[i].reshape(-1))
            curves[i, k] = _f(model, xi.reshape(x.shape[1:]), t[i])
    return curves


def test_deletion_curve_equals_naive_loop(images):
    model, x, a, t = images
    curves, auc = M.deletion_curve(model, x, a, target=t, steps=7, baseline=0.0)
    ref = _naive_curve(model, x, a, t, 7, np.zeros_like(x))
    np.testing.assert_allclose(curves, ref, atol=1e-5)
    frac = np.round(np.arange(8) * 64 / 7) / 64
    np.testing.assert_allclose(auc, np.trapezoid(ref, frac, axis=1), atol=1e-5)
    assert curves.shape == (4, 8) and auc.shape == (4,)


def test_insertion_curve_with_blur_equals_naive_loop(images):
    ndimage = pytest.importorskip("scipy.ndimage")
    model, x, a, t = images
    # torch's "reflect" padding is scipy's "mirror"; radius 3 sigma on both sides.
    blurred = ndimage.gaussian_filter(x.astype(np.float64), sigma=(0, 0, 1.0, 1.0), mode="mirror", truncate=3.0)
    curves, _ = M.insertion_curve(model, x, fl.Explanation(values=a, method="x"), target=t, steps=5,
                                  baseline="blur", blur_sigma=1.0)
    ref = _naive_curve(model, x, a, t, 5, blurred, insert=True)
    np.testing.assert_allclose(curves, ref, atol=1e-5)
    # The ends: f(baseline) and f(x).
    np.testing.assert_allclose(curves[:, -1], [_f(model, x[i], t[i]) for i in range(4)], atol=1e-5)


def test_deletion_with_groups_on_tabular_rows(mlp):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 6))
    a = rng.normal(size=(5, 6))
    groups = np.array([0, 0, 1, 2, 2, 2])
    base = rng.normal(size=(6,))
    curves, _ = M.deletion_curve(mlp, x, a, target=1, steps=3, baseline=base, groups=groups)
    model32 = lambda z: mlp(z.double())  # noqa: E731 - the fixture is float64
    ref = _naive_curve(model32, x, a, np.ones(5, int), 3, np.broadcast_to(base, x.shape), groups=groups)
    np.testing.assert_allclose(curves, ref, atol=1e-10)


def test_spatial_map_removes_whole_pixels():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(2 * 16, 2))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 4, 4)).astype(np.float32)
    amap = rng.normal(size=(2, 4, 4))
    c1, a1 = M.deletion_curve(net, x, amap, steps=4)
    c2, a2 = M.deletion_curve(net, x, np.repeat(amap[:, None], 3, 1), steps=4, groups=np.arange(16).reshape(4, 4))
    np.testing.assert_allclose(c1, c2, atol=1e-6)


def test_linear_model_identities():
    # f(x) = w.x: with a = w * x (input x gradient) and baseline 0, removing a set S lowers f by
    # exactly sum_S a, so the correlation is 1 and each deletion step drops f by the removed mass.
    w = torch.tensor([[1.0, -2.0, 0.5, 3.0, -1.0, 0.25]], dtype=torch.float64)
    lin = torch.nn.Linear(6, 1, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(w)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 6))
    a = x * w.numpy()
    r = M.faithfulness_correlation(lin, x, a, target=0, n_subsets=30, subset_size=2)
    np.testing.assert_allclose(r, 1.0, atol=1e-12)
    curves, _ = M.deletion_curve(lin, x, a, target=0, steps=6)
    order = np.argsort(-a, axis=1, kind="stable")
    removed = np.cumsum(np.take_along_axis(a, order, 1), axis=1)
    np.testing.assert_allclose(curves[:, :1] - curves[:, 1:], removed, atol=1e-12)
    # Infidelity of the gradient of a linear model is 0: I.w = f(x) - f(x - I) exactly.
    inf = M.infidelity(lin, x, np.broadcast_to(w.numpy(), x.shape), target=0, n_perturbations=20)
    np.testing.assert_allclose(inf, 0.0, atol=1e-20)


def test_faithfulness_correlation_equals_naive_on_same_subsets(images):
    model, x, a, t = images
    n_sub, size = 12, 10
    r = M.faithfulness_correlation(model, x, a, target=t, n_subsets=n_sub, subset_size=size, seed=5,
                                   baseline="mean")
    masks = np.stack(list(_perturb.subset_draws(5, 4, 64, n_sub, size)))  # (runs, n, d)
    assert masks.sum(-1).min() == size == masks.sum(-1).max()
    ref = np.zeros(4)
    for i in range(4):
        f0 = _f(model, x[i], t[i])
        sums, drops = [], []
        for j in range(n_sub):
            xi = x[i].reshape(-1).copy()
            xi[masks[j, i]] = x[i].mean()
            sums.append(a[i].reshape(-1)[masks[j, i]].sum())
            drops.append(f0 - _f(model, xi.reshape(x.shape[1:]), t[i]))
        ref[i] = np.corrcoef(sums, drops)[0, 1]
    np.testing.assert_allclose(r, ref, atol=1e-5)
    # Seeded: the same seed gives the same scores, another seed other ones.
    np.testing.assert_array_equal(r, M.faithfulness_correlation(model, x, a, target=t, n_subsets=n_sub,
                                                                subset_size=size, seed=5, baseline="mean"))


def _naive_infidelity(model, x, a, t, noise, normalise):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        f0 = _f(model, x[i], t[i])
        dots = np.array([(noise[j, i] * a[i]).sum() for j in range(noise.shape[0])])
        drops = np.array([f0 - _f(model, (x[i] - noise[j, i]).astype(np.float32), t[i]) for j in range(noise.shape[0])])
        if normalise:
            dots = dots * (dots * drops).mean() / (dots * dots).mean()
        out[i] = ((dots - drops) ** 2).mean()
    return out


@pytest.mark.parametrize("normalise", [False, True])
def test_infidelity_equals_naive_on_same_noise(images, normalise):
    model, x, a, t = images
    inf = M.infidelity(model, x, a, target=t, n_perturbations=8, noise_std=0.2, seed=3, normalise=normalise)
    span = x.reshape(4, -1).max(1) - x.reshape(4, -1).min(1)
    noise = np.stack(list(_perturb.gaussian_draws(3, 8, x.shape, 0.2 * span)))
    ref = _naive_infidelity(model, x, a, t, noise, normalise)
    np.testing.assert_allclose(inf, ref, rtol=1e-4, atol=1e-7)


def test_infidelity_matches_captum_on_same_noise(images):
    captum_metrics = pytest.importorskip("captum.metrics")
    model, x, a, t = images
    noise = np.stack(list(_perturb.gaussian_draws(0, 6, x.shape, np.full(4, 0.1))))
    calls = iter(range(6))

    def perturb(inputs):
        j = next(calls)
        eps = torch.as_tensor(noise[j], dtype=inputs.dtype)
        return eps, inputs - eps

    ref = captum_metrics.infidelity(model, perturb, torch.from_numpy(x), torch.as_tensor(a, dtype=torch.float32),
                                    target=torch.as_tensor(t), n_perturb_samples=6, max_examples_per_batch=4)
    ours = M.infidelity(model, x, a, target=t, n_perturbations=6, noise_std=0.1, relative=False, seed=0)
    np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-3, atol=1e-6)


def test_errors(images):
    model, x, a, t = images
    with pytest.raises(ValueError, match="a contains NaN"):
        M.deletion_curve(model, x, np.full(x.shape, np.nan))
    with pytest.raises(ValueError, match="a must have the shape of x"):
        M.deletion_curve(model, x, a[:, :, :4])
    with pytest.raises(ValueError, match="steps must be an int >= 1; got 0"):
        M.deletion_curve(model, x, a, steps=0)
    with pytest.raises(ValueError, match="baseline must be one of 'blur', 'mean', 'min'; got 'black'"):
        M.insertion_curve(model, x, a, baseline="black")
    with pytest.raises(ValueError, match=r"baseline must be a scalar, shaped like one input \(1, 8, 8\) or like the batch"):
        M.deletion_curve(model, x, a, baseline=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="groups must have the shape of one input"):
        M.deletion_curve(model, x, a, groups=np.zeros((3, 3), int))
    with pytest.raises(TypeError, match="groups must be an int array"):
        M.deletion_curve(model, x, a, groups=np.zeros((8, 8)))
    with pytest.raises(ValueError, match=r"subset_size \(regions per subset, of 64\) must be an int >= 1 and <= 64; got 65"):
        M.faithfulness_correlation(model, x, a, subset_size=65)
    with pytest.raises(ValueError, match="n_subsets must be an int >= 2; got 1"):
        M.faithfulness_correlation(model, x, a, n_subsets=1)
    with pytest.raises(ValueError, match="x contains NaN"):
        M.infidelity(model, np.full(x.shape, np.nan, np.float32), a)
    with pytest.raises(ValueError, match="noise_std must be a finite number > 0"):
        M.infidelity(model, x, a, noise_std=-1)
    with pytest.raises(TypeError, match="seed must be None, a non-negative int or a numpy.random.Generator; got 1.5"):
        M.infidelity(model, x, a, seed=1.5)
    with pytest.raises(ValueError, match="baseline='blur' needs images"):
        M.deletion_curve(lambda z: z[:, :2], np.ones((2, 5), np.float32), np.ones((2, 5)), baseline="blur")


def test_chunking_and_model_kinds_do_not_change_values(images):
    model, x, a, t = images
    ref_c, ref_auc = M.deletion_curve(model, x, a, target=t, steps=5)
    # batch_size 3 < n = 4: one copy of the batch per block, split over two chunks.
    small = fl.models.Model(model, batch_size=3)
    c, auc = M.deletion_curve(small, x, a, target=t, steps=5)
    # float32 model: its kernels may depend on the batch size (oneDNN), so chunks differ by rounding
    np.testing.assert_allclose(c, ref_c, rtol=1e-5, atol=1e-6)
    r1 = M.faithfulness_correlation(model, x, a, n_subsets=6, subset_size=9, seed=1, target=t)
    r2 = M.faithfulness_correlation(small, x, a, n_subsets=6, subset_size=9, seed=1, target=t)
    np.testing.assert_allclose(r1, r2, rtol=1e-5, atol=1e-6)
    # A numpy callable (black box) gives the same curve as the module.
    def numpy_model(z):
        with torch.no_grad():
            return model(torch.from_numpy(z)).numpy()
    c_np, _ = M.deletion_curve(numpy_model, x, a, target=t, steps=5)
    np.testing.assert_allclose(c_np, ref_c, atol=1e-6)
    # target None = the predicted class, which is t here.
    np.testing.assert_allclose(M.deletion_curve(model, x, a, steps=5)[0], ref_c, atol=1e-6)


# -- faithfulness correlation: Pearson or Spearman ---------------------------------------------------


class _ExpLinear(torch.nn.Module):
    """f(x) = exp(w . x): removing a subset S (baseline 0) drops f by e^{w.x} (1 - e^{-s}) with
    s = sum_{e in S} w_e x_e, a strictly increasing function of the attribution sum of a = w * x."""

    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(torch.as_tensor(w, dtype=torch.float64))

    def forward(self, x):
        return torch.exp(x.double() @ self.w)[:, None]


def test_faithfulness_correlation_spearman_is_one_on_a_monotone_drop():
    rng = np.random.default_rng(3)
    w = rng.normal(size=8)
    x = rng.normal(size=(3, 8))
    a = w * x
    kw = dict(target=0, n_subsets=30, subset_size=3, seed=1, baseline=0.0)
    rho = M.faithfulness_correlation(_ExpLinear(w), x, a, similarity="spearman", **kw)
    r = M.faithfulness_correlation(_ExpLinear(w), x, a, **kw)  # Pearson: the default
    np.testing.assert_allclose(rho, 1.0, atol=1e-12)
    assert np.all(r < 1.0 - 1e-3)  # the drop is not linear in the sum
    np.testing.assert_array_equal(r, M.faithfulness_correlation(_ExpLinear(w), x, a, similarity="pearson", **kw))


def test_faithfulness_correlation_spearman_equals_scipy_on_same_subsets(images):
    from scipy.stats import spearmanr

    model, x, a, t = images
    n_sub, size = 12, 10
    rho = M.faithfulness_correlation(model, x, a, target=t, n_subsets=n_sub, subset_size=size, seed=5,
                                     baseline="mean", similarity="spearman")
    masks = np.stack(list(_perturb.subset_draws(5, 4, 64, n_sub, size)))
    ref = np.zeros(4)
    for i in range(4):
        f0 = _f(model, x[i], t[i])
        sums, drops = [], []
        for j in range(n_sub):
            xi = x[i].reshape(-1).copy()
            xi[masks[j, i]] = x[i].mean()
            sums.append(a[i].reshape(-1)[masks[j, i]].sum())
            drops.append(f0 - _f(model, xi.reshape(x.shape[1:]), t[i]))
        ref[i] = spearmanr(sums, drops).statistic
    np.testing.assert_allclose(rho, ref, atol=1e-6)


def test_faithfulness_correlation_refuses_an_unknown_similarity(images):
    model, x, a, _ = images
    with pytest.raises(ValueError, match="similarity must be one of 'pearson', 'spearman'; got 'spearmann'. "
                                         "Did you mean 'spearman'"):
        M.faithfulness_correlation(model, x, a, similarity="spearmann")
