"""WAM explainers (wam, wam_smoothgrad, wam_ig) against identities and direct autograd references."""

import sys

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import _wavelets as wt
from featurelens.explainers.wavelet import plot_wam_scales

CONV = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}


def conv_net(ndim, spatial, channels=2, classes=3, seed=0):
    """A small smooth CNN for (n, channels, *spatial) inputs, float64."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        CONV[ndim](channels, 3, 3, padding=1),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * int(np.prod(spatial)), classes),
    ).double()


class Fn(torch.nn.Module):
    """A torch function as a module (so that the Model adapter differentiates it)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def batch(shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape))


def autograd_coefficient_gradient(net, x, target, wavelet, levels):
    """Reference: WAM by the definition, autograd of f_t(waverec(c)) with respect to c = wavedec(x)."""
    ndim = x.ndim - 2
    coeffs = [c.detach().clone().requires_grad_(True) for c in wt.wavedec(x, wavelet, levels, ndim)]
    out = net(wt.waverec(coeffs, wavelet, tuple(x.shape[2:]), ndim))
    grads = torch.autograd.grad(out.gather(1, torch.as_tensor(target)[:, None]).sum(), coeffs)
    return wt.pack(list(grads), ndim).numpy()


@pytest.mark.parametrize("wavelet", ["haar", "db2"])
@pytest.mark.parametrize("spatial", [(32,), (16, 8), (8, 8, 8)])
def test_coefficient_gradient_is_the_dwt_of_the_pixel_gradient(wavelet, spatial):
    """Acceptance 3: for an orthogonal wavelet with periodization, grad_c = W grad_x."""
    if wavelet != "haar":
        pytest.importorskip("pywt")
    ndim = len(spatial)
    net = conv_net(ndim, spatial)
    x = batch((3, 2) + spatial)
    e = fl.explainer("wam", net, wavelet=wavelet, levels=2).explain(x, target=1)
    pixel = fl.explainer("saliency", net).explain(x, target=1).values
    dwt_of_pixel = wt.pack(wt.wavedec(torch.from_numpy(pixel), wavelet, 2, ndim), ndim).numpy()
    np.testing.assert_allclose(e.extra["coefficients"], dwt_of_pixel, atol=1e-6)
    assert e.extra["coefficients"].shape == x.shape  # the Mallat packing fills the input's shape


@pytest.mark.filterwarnings("ignore:Level value")  # pywt: db2 at level 3 on 16 pixels wraps around
@pytest.mark.parametrize("wavelet", ["haar", "db2"])
def test_coefficient_gradient_is_pywt_dwt_of_the_pixel_gradient(wavelet):
    pywt = pytest.importorskip("pywt")
    net = conv_net(2, (16, 16), channels=1)
    x = batch((2, 1, 16, 16), seed=1)
    e = fl.explainer("wam", net, wavelet=wavelet, levels=3).explain(x, target=0)
    pixel = fl.explainer("saliency", net).explain(x, target=0).values
    ref, _ = pywt.coeffs_to_array(pywt.wavedec2(pixel, wavelet, mode="periodization", level=3), axes=(-2, -1))
    np.testing.assert_allclose(e.extra["coefficients"], ref, atol=1e-6)


@pytest.mark.parametrize(
    "wavelet,spatial", [("haar", (19,)), ("haar", (9, 14)), ("db2", (12, 10)), ("bior2.2", (16, 16)), ("haar", (5, 7, 6))]
)
def test_wam_equals_autograd_through_the_inverse_transform(wavelet, spatial):
    """Odd, unequal sizes and a biorthogonal wavelet: no shortcut identity, the definition holds."""
    if wavelet != "haar":
        pytest.importorskip("pywt")
    ndim = len(spatial)
    net = conv_net(ndim, spatial)
    x = batch((2, 2) + spatial, seed=2)
    e = fl.explainer("wam", net, wavelet=wavelet, levels=2).explain(x)
    ref = autograd_coefficient_gradient(net, x, e.target, wavelet, 2)
    np.testing.assert_allclose(e.extra["coefficients"], ref, atol=1e-10)
    assert e.extra["coefficients"].shape[2:] == wt.packed_shape(spatial, 2)
    assert e.values.shape == x.shape
    assert e.extra["scales"].shape == (2, 3) + spatial
    np.testing.assert_allclose(e.values.sum(1), e.extra["scales"].sum(1), atol=1e-10)
    assert (e.values >= 0).all()


def test_constant_weights_live_in_the_approximation_with_pixel_magnitude():
    # f(x) = w0 * sum(x): the pixel gradient is w0 everywhere, so all Haar detail coefficients get
    # zero gradient and the approximation map is |w0| per channel, summed over 2 channels.
    w0 = -0.3

    def f(x):
        return w0 * x.flatten(1).sum(1)

    x = batch((2, 2, 16, 8), seed=3)
    # (a module without parameters runs in float32, hence the 1e-6 tolerances)
    e = fl.explainer("wam", Fn(f), levels=3).explain(x, target=0)
    scales = e.extra["scales"]
    np.testing.assert_allclose(scales[:, :3], 0.0, atol=1e-6)
    np.testing.assert_allclose(scales[:, 3], 2 * abs(w0), atol=1e-6)
    np.testing.assert_allclose(e.values, abs(w0), atol=1e-6)


def test_a_detail_pattern_lands_in_its_own_level():
    # A linear model whose weights are one level-2 Haar detail atom: only level 2 is non-zero.
    atom = [torch.zeros((1, 1, 4, 4), dtype=torch.float64), torch.zeros((1, 1, 3, 4, 4), dtype=torch.float64),
            torch.zeros((1, 1, 3, 8, 8), dtype=torch.float64)]
    level2 = torch.zeros((1, 1, 3, 4, 4), dtype=torch.float64)
    level2[0, 0, 2, 1, 2] = 1.0  # diagonal band
    w = wt.waverec([atom[0], level2, atom[2]], "haar", (16, 16))

    def f(x):
        return (x * w).flatten(1).sum(1)

    e = fl.explainer("wam", Fn(f), levels=2).explain(batch((1, 1, 16, 16)), target=0)
    s = e.extra["scales"][0]
    np.testing.assert_allclose(s[[0, 2]], 0.0, atol=1e-6)
    # the coefficient's 4x4 block (rows 4..7, cols 8..11) holds 2**(-2) * |1|
    np.testing.assert_allclose(s[1, 4:8, 8:12], 0.25, atol=1e-6)
    assert s[1].sum() == pytest.approx(0.25 * 16, rel=1e-6)


def test_wam_uses_one_gradient_pass_like_saliency():
    net = conv_net(2, (8, 8))
    x = batch((4, 2, 8, 8))
    calls = fl.explainer("saliency", net).explain(x, target=2).model_calls
    assert fl.explainer("wam", net).explain(x, target=2).model_calls == calls


def test_wam_smoothgrad_mean_is_the_dwt_of_smoothgrad():
    net = conv_net(2, (8, 8))
    x = batch((3, 2, 8, 8), seed=4)
    kw = dict(n_samples=5, noise_level=0.2, seed=7)
    e = fl.explainer("wam_smoothgrad", net, **kw).explain(x, target=0)
    sg = fl.explainer("smoothgrad", net, **kw).explain(x, target=0).values
    np.testing.assert_allclose(e.extra["coefficients"], wt.pack(wt.wavedec(torch.from_numpy(sg), "haar", 3), 2).numpy(), atol=1e-10)
    again = fl.explainer("wam_smoothgrad", net, **kw).explain(x, target=0)
    np.testing.assert_array_equal(again.values, e.values)  # seeded
    assert e.params["seed"] == 7 and e.params["wavelet"] == "haar"


@pytest.mark.parametrize("variant", ["abs", "square", "var"])
def test_wam_smoothgrad_nonlinear_variants_match_a_loop_over_the_noise(variant):
    net = conv_net(1, (16,))
    x = batch((2, 2, 16), seed=5)
    ex = fl.explainer("wam_smoothgrad", net, n_samples=4, variant=variant, levels=2, batch_size=3)
    e = ex.explain(x, target=1)
    eps = ex.noise_draws(torch.as_tensor(x))
    per_copy = np.stack([
        fl.explainer("wam", net, levels=2).explain(x + eps[k], target=1).extra["coefficients"] for k in range(4)
    ])
    want = {"abs": np.abs(per_copy).mean(0), "square": (per_copy**2).mean(0), "var": per_copy.var(0)}[variant]
    np.testing.assert_allclose(e.extra["coefficients"], want, atol=1e-10)


def test_wam_ig_is_ig_in_coefficient_space_and_complete():
    net = conv_net(2, (8, 8))
    x = batch((2, 2, 8, 8), seed=6)
    n_steps = 6
    e = fl.explainer("wam_ig", net, n_steps=n_steps, method="riemann_right", levels=2).explain(x, target=2)
    # Reference: the Riemann-right sum of autograd coefficient gradients along c(alpha) = alpha c.
    c = wt.pack(wt.wavedec(x, "haar", 2), 2).numpy()
    grads = [autograd_coefficient_gradient(net, x * (k / n_steps), np.array([2, 2]), "haar", 2)
             for k in range(1, n_steps + 1)]
    np.testing.assert_allclose(e.extra["coefficients"], c * np.mean(grads, 0), atol=1e-10)
    # Completeness with Gauss-Legendre: sum of coefficient attributions = f(x) - f(0).
    e = fl.explainer("wam_ig", net, n_steps=40, levels=2).explain(x, target=2)
    with torch.no_grad():
        change = (net(x)[:, 2] - net(torch.zeros_like(x))[:, 2]).numpy()
    np.testing.assert_allclose(e.extra["coefficients"].reshape(2, -1).sum(1), change, rtol=1e-8)
    assert e.params["max_relative_gap"] < 1e-8


def test_wam_ig_of_a_linear_model_is_exact_with_a_baseline():
    torch.manual_seed(1)
    w = torch.randn(1, 1, 9, 14, dtype=torch.float64)

    def f(x):
        return (x * w).flatten(1).sum(1)

    x = batch((2, 1, 9, 14), seed=7)
    base = batch((1, 9, 14), seed=8)
    e = fl.explainer("wam_ig", Fn(f), n_steps=2, levels=2, wavelet="haar").explain(x, target=0, baseline=base)
    want = ((x - base) * w).flatten(1).sum(1).numpy()
    np.testing.assert_allclose(e.extra["coefficients"].reshape(2, -1).sum(1), want, rtol=1e-5)
    assert e.params["baseline"] == "array"  # the one record (Explainer docstring)


@pytest.mark.parametrize("name", ["wam", "wam_smoothgrad", "wam_ig"])
@pytest.mark.parametrize("spatial", [(21,), (12, 10), (6, 5, 7)])
def test_all_three_run_on_1d_2d_3d_with_odd_sizes(name, spatial):
    ndim = len(spatial)
    net = conv_net(ndim, spatial, channels=1)
    x = batch((2, 1) + spatial, seed=9).float()
    kw = {"wam_smoothgrad": {"n_samples": 3}, "wam_ig": {"n_steps": 4}}.get(name, {})
    e = fl.explainer(name, net.float(), levels=2, **kw).explain(x)
    assert e.values.shape == x.shape
    assert e.extra["scales"].shape == (2, 3) + spatial
    assert e.extra["coefficients"].shape == (2, 1) + wt.packed_shape(spatial, 2)
    assert np.isfinite(e.values).all() and e.values.sum() > 0


def test_several_targets_per_sample_shape_the_extras_too():
    net = conv_net(2, (8, 8))
    x = batch((2, 2, 8, 8), seed=10)
    targets = np.array([[0, 2], [1, 0]])
    e = fl.explainer("wam", net, levels=2).explain(x, target=targets)
    assert e.values.shape == (2, 2, 2, 8, 8)
    assert e.extra["coefficients"].shape == (2, 2, 2, 8, 8)
    assert e.extra["scales"].shape == (2, 2, 3, 8, 8)
    single = fl.explainer("wam", net, levels=2).explain(x[1:], target=0)
    np.testing.assert_allclose(e.extra["coefficients"][1, 1], single.extra["coefficients"][0], atol=1e-12)


def test_extras_survive_save_and_load(tmp_path):
    net = conv_net(2, (8, 8))
    e = fl.explainer("wam", net, levels=2).explain(batch((2, 2, 8, 8)))
    back = fl.load_explanation(e.save(tmp_path / "wam"))
    np.testing.assert_array_equal(back.extra["coefficients"], e.extra["coefficients"])
    np.testing.assert_array_equal(back.extra["scales"], e.extra["scales"])
    assert back.params["wavelet"] == "haar" and back.params["levels"] == 2


def test_plots(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x2 = batch((2, 1, 8, 8))
    e = fl.explainer("wam", conv_net(2, (8, 8), channels=1), levels=2).explain(x2)
    fig = e.plot(inputs=x2)
    assert len(fig.axes) == 4  # two inputs, two maps
    fig = plot_wam_scales(e, index=1, inputs=x2)
    assert [a.get_title() for a in fig.axes] == ["input", "level 1 (finest)", "level 2", "approx. 2"]
    plt.close("all")
    x1 = batch((1, 1, 16))
    e1 = fl.explainer("wam", conv_net(1, (16,), channels=1), levels=3).explain(x1)
    assert len(plot_wam_scales(e1).axes) == 4
    x3 = batch((1, 1, 4, 8, 8))
    e3 = fl.explainer("wam", conv_net(3, (4, 8, 8), channels=1), levels=2).explain(x3)
    assert len(plot_wam_scales(e3).axes) == 3
    plt.close("all")
    with pytest.raises(ValueError, match=r"no extra\['scales'\]"):
        plot_wam_scales(fl.explainer("saliency", conv_net(2, (8, 8), channels=1)).explain(x2))
    with pytest.raises(ValueError, match=r"index must be in \[0, 2\)"):
        plot_wam_scales(e, index=5)


def test_registered_names():
    assert {"wam", "wam_smoothgrad", "wam_ig"} <= set(fl.list_explainers())


def test_errors_name_the_argument():
    net = conv_net(2, (8, 8))
    x = batch((2, 2, 8, 8))
    with pytest.raises(ValueError, match=r"levels=4 is too large for input spatial shape \(8, 8\).*maximum is 3"):
        fl.explainer("wam", net, levels=4).explain(x)
    with pytest.raises(ValueError, match=r"levels must be an int >= 1; got 0"):
        fl.explainer("wam", net, levels=0)
    with pytest.raises(ValueError, match=r"x contains NaN"):
        bad = x.clone()
        bad[0, 0, 1, 1] = float("nan")
        fl.explainer("wam", net).explain(bad)
    with pytest.raises(ValueError, match=r"x must have shape \(n, c, L\).*got shape \(2, 128\)"):
        fl.explainer("wam", torch.nn.Linear(128, 2).double()).explain(batch((2, 128)))
    with pytest.raises(ValueError, match=r"variant must be one of 'mean', 'abs', 'square', 'var'; got 'max'"):
        fl.explainer("wam_smoothgrad", net, variant="max")


def test_wavelet_errors():
    pytest.importorskip("pywt")
    net = conv_net(2, (8, 8))
    with pytest.raises(ValueError, match=r"discrete wavelet.*got 'db99'"):
        fl.explainer("wam", net, wavelet="db99")
    with pytest.raises(ValueError, match=r"levels=4 is too large for input spatial shape \(8, 7\): the maximum is 3"):
        fl.explainer("wam", net, wavelet="db2", levels=4).explain(batch((1, 2, 8, 7)))


def test_missing_pywavelets_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pywt", None)
    net = conv_net(2, (8, 8))
    with pytest.raises(ImportError, match=r"pip install featurelens\[wavelets\]"):
        fl.explainer("wam", net, wavelet="db2")
    # Haar is built in: it still works.
    assert fl.explainer("wam", net).explain(batch((1, 2, 8, 8))).values.shape == (1, 2, 8, 8)


def test_wam_ig_completeness_with_per_sample_baselines_and_predicted_targets():
    net = conv_net(1, (16,))
    x = batch((3, 2, 16), seed=11)
    base = batch((3, 2, 16), seed=12) * 0.1
    e = fl.explainer("wam_ig", net, n_steps=40, levels=2).explain(x, baseline=base)
    with torch.no_grad():
        t = torch.as_tensor(e.target)[:, None]
        change = (net(x).gather(1, t) - net(base).gather(1, t)).squeeze(1).numpy()
    np.testing.assert_allclose(e.extra["coefficients"].reshape(3, -1).sum(1), change, rtol=1e-8)
    np.testing.assert_allclose(e.params["completeness_gap"], 0.0, atol=1e-8)
