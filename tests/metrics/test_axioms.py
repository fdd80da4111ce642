"""Completeness, non-sensitivity and input invariance: analytic checks (IG's gap is its quadrature
error; a map zero exactly on the features a model ignores; saliency is input invariant and input x
gradient is not), brute force, errors, and Quantus 0.6 parity with its defects shown."""

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.metrics import axiomatic as A
from featurelens.models import Model

N = 5


def _conv_tanh(zero_first_weight=False):
    """Conv (no padding) -> tanh -> linear: the first layer can absorb a constant shift exactly."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(3 * 16, 2)
    ).eval()
    if zero_first_weight:  # the first pixel (0, 0) then reaches nothing
        with torch.no_grad():
            net[0].weight[:, :, 0, 0] = 0
    return net


@pytest.fixture
def images():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 1, 6, 6)).astype(np.float32)
    a = rng.normal(size=(N, 1, 6, 6))
    return x, a


# -- completeness ----------------------------------------------------------------------------------


def test_completeness_of_integrated_gradients_is_its_quadrature_error(images):
    x, _ = images
    net = _conv_tanh()
    gaps = {}
    for steps in (2, 8, 64):
        e = fl.explainer("integrated_gradients", net, n_steps=steps, method="riemann_trapezoid").explain(x, target=1)
        gaps[steps] = A.completeness(net, x, e, target=1)  # an Explanation is accepted too
        # The same gap as the one IG records about itself.
        np.testing.assert_allclose(gaps[steps], e.params["completeness_gap"], atol=1e-5)
    # The trapezoid rule's error falls like 1 / steps^2: 16x from 2 to 8 steps, 64x from 8 to 64.
    assert np.abs(gaps[64]).max() < np.abs(gaps[8]).max() / 20 < np.abs(gaps[2]).max() / 100
    e = fl.explainer("integrated_gradients", net, n_steps=32).explain(x, target=1)  # Gauss-Legendre
    assert np.abs(A.completeness(net, x, e, target=1)).max() < 1e-5


def test_completeness_brute_force_baselines(images):
    x, a = images
    net = _conv_tanh()
    xt = torch.from_numpy(x)
    with torch.no_grad():
        f = net(xt)[:, 0].double().numpy()
        f_min = net(xt.amin((1, 2, 3), keepdim=True).expand_as(xt))[:, 0].double().numpy()
        f_half = net(torch.full_like(xt, 0.5))[:, 0].double().numpy()
    total = a.reshape(N, -1).sum(1)
    np.testing.assert_allclose(A.completeness(net, x, a, target=0, baseline="min"), total - (f - f_min), atol=1e-6)
    np.testing.assert_allclose(A.completeness(net, x, a, target=0, baseline=0.5), total - (f - f_half), atol=1e-6)
    # A spatial map of a 3-channel image is summed once, not once per channel.
    x3 = np.repeat(x, 3, axis=1)
    lin = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(108, 2))
    got = A.completeness(lin, x3, a, target=0)
    with torch.no_grad():
        change = (lin(torch.from_numpy(x3)) - lin(torch.zeros(1, 3, 6, 6)))[:, 0].double().numpy()
    np.testing.assert_allclose(got, total - change, atol=1e-5)


def test_completeness_errors(images):
    x, a = images
    net = _conv_tanh()
    bad = a.copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        A.completeness(net, x, bad)
    with pytest.raises(ValueError, match="shape"):
        A.completeness(net, x, a[:, :, :3])
    with pytest.raises(ValueError, match="baseline"):
        A.completeness(net, x, a, baseline="black")


# -- non-sensitivity -------------------------------------------------------------------------------


@pytest.fixture
def sparse_linear():
    """f(x) = w . x with w zero on features 3..7: the model ignores them."""
    w = np.array([1.5, -2.0, 0.7, 0, 0, 0, 0, 0], np.float32)
    net = torch.nn.Linear(8, 1, bias=False)
    with torch.no_grad():
        net.weight[0] = torch.from_numpy(w)
    x = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)
    return net, x, w


def test_non_sensitivity_is_zero_for_a_map_zero_exactly_on_ignored_features(sparse_linear):
    net, x, w = sparse_linear
    a = x * w  # input x gradient: zero exactly where w is
    for count in ("zero_attribution", "symmetric"):
        np.testing.assert_array_equal(A.non_sensitivity(net, x, a, target=0, count=count), 0.0)
    e = fl.explainer("input_x_gradient", net).explain(x, target=0)
    np.testing.assert_array_equal(A.non_sensitivity(net, x, e, target=0, count="symmetric"), 0.0)
    # A map that calls a relevant feature irrelevant: counted by both.
    a1 = a.copy()
    a1[:, 1] = 0
    np.testing.assert_array_equal(A.non_sensitivity(net, x, a1, target=0), 1.0)
    np.testing.assert_array_equal(A.non_sensitivity(net, x, a1, target=0, count="symmetric"), 1.0)
    # Attribution on two ignored features: only the symmetric count sees it.
    a2 = a.copy()
    a2[:, 5:7] = 0.3
    np.testing.assert_array_equal(A.non_sensitivity(net, x, a2, target=0), 0.0)
    np.testing.assert_array_equal(A.non_sensitivity(net, x, a2, target=0, count="symmetric"), 2.0)


def test_non_sensitivity_groups_and_batching(sparse_linear):
    net, x, w = sparse_linear
    a = x * w
    a[:, 2] = 0  # feature 2 (relevant) gets nothing, so group {2, 3} has zero attribution
    groups = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(A.non_sensitivity(net, x, a, target=0, groups=groups), 1.0)
    np.testing.assert_array_equal(A.non_sensitivity(net, x, a, target=0, groups=groups, count="symmetric"), 1.0)
    # The Model's batch size splits the perturbed copies into chunks; the counts do not move.
    small = Model(net, batch_size=3)
    np.testing.assert_array_equal(A.non_sensitivity(small, x, a, target=0), A.non_sensitivity(net, x, a, target=0))


def test_non_sensitivity_brute_force_on_images(images):
    x, a = images
    net = _conv_tanh()
    a = a.copy()
    a[np.abs(a) < 0.5] = 0
    got = A.non_sensitivity(net, x, a, target=1, baseline=0.0, atol=1e-3, count="symmetric")
    xt = torch.from_numpy(x)
    with torch.no_grad():
        f = net(xt)[:, 1].numpy()
        for i in range(N):
            copies = xt[i].repeat(36, 1, 1, 1).reshape(36, -1)
            copies[torch.arange(36), torch.arange(36)] = 0.0
            insensitive = np.abs(net(copies.reshape(36, 1, 6, 6))[:, 1].numpy() - f[i]) < 1e-3
            zero = np.abs(a[i].ravel()) < 1e-5 * np.abs(a[i]).max()
            assert got[i] == (zero ^ insensitive).sum()


def test_non_sensitivity_errors(sparse_linear):
    net, x, w = sparse_linear
    with pytest.raises(ValueError, match="count"):
        A.non_sensitivity(net, x, x * w, count="both")
    with pytest.raises(ValueError, match="eps"):
        A.non_sensitivity(net, x, x * w, eps=-1.0)
    with pytest.raises(ValueError, match="NaN"):
        A.non_sensitivity(net, x, np.full_like(x, np.nan))
    with pytest.raises(ValueError, match="shape"):
        A.non_sensitivity(net, x, (x * w)[:, :4])
    with pytest.raises(ValueError, match="groups"):
        A.non_sensitivity(net, x, x * w, groups=np.zeros(5, int))


# -- input invariance ------------------------------------------------------------------------------


def test_saliency_is_input_invariant_and_input_x_gradient_is_not():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Softplus(), torch.nn.Linear(8, 3))
    x = np.random.default_rng(2).normal(size=(N, 6)).astype(np.float32)
    np.testing.assert_array_equal(A.input_invariance(fl.explainer("saliency", mlp), x, shift=2.0), 1.0)
    np.testing.assert_array_equal(A.input_invariance("input_x_gradient", x, model=mlp, shift=2.0), 0.0)
    np.testing.assert_array_equal(A.input_invariance("integrated_gradients", x, model=mlp,
                                                     explainer_params={"n_steps": 8}), 0.0)
    # IxG moves by shift * gradient exactly: a(f2, x + m) - a(f1, x) = m * grad f1(x).
    grad = fl.explainer("saliency", mlp).explain(x).values
    diff = A.input_invariance("input_x_gradient", x, model=mlp, shift=2.0, score="max_abs_diff")
    np.testing.assert_allclose(diff, np.abs(2.0 * grad).max(1), rtol=1e-4)
    # The user's model is left as it was.
    before = mlp[0].bias.detach().clone()
    A.input_invariance("saliency", x, model=mlp)
    assert torch.equal(mlp[0].bias, before)


def test_a_first_layer_without_bias_gets_one():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 5, bias=False), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    x = np.random.default_rng(3).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(A.input_invariance("saliency", x, model=mlp), 1.0)
    assert mlp[0].bias is None


def test_input_invariance_errors(small_cnn, images):
    x, _ = images
    with pytest.raises(ValueError, match="zero padding"):  # padded conv: borders see part of the shift
        A.input_invariance("saliency", np.zeros((2, 1, 8, 8), np.float32), model=small_cnn)
    squashed = torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Linear(4, 2))  # a non-linearity before the layer
    with pytest.raises(ValueError, match="does not respond to a constant shift"):
        A.input_invariance("saliency", np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32),
                           model=squashed)
    with pytest.raises(ValueError, match="pass model="):
        A.input_invariance("saliency", x)
    net = _conv_tanh()
    with pytest.raises(ValueError, match="model must be None or the explainer's own model"):
        A.input_invariance(fl.explainer("saliency", net), x, model=_conv_tanh())  # equal weights, another module
    with pytest.raises(TypeError, match="explainer must be"):
        A.input_invariance(3, x)
    with pytest.raises(ValueError, match="score"):
        A.input_invariance("saliency", x, model=net, score="close")
    with pytest.raises(ValueError, match="one map per sample"):
        A.input_invariance("saliency", x, model=net, attributions=np.zeros((2, 36)))

    def numpy_model(arr):
        return np.asarray(arr).reshape(len(arr), -1)[:, :2]

    with pytest.raises(TypeError, match="needs gradients"):  # gradients of a numpy callable
        A.input_invariance("saliency", x, model=numpy_model)
    with pytest.raises(TypeError, match="torch.nn.Module"):  # a black box has no bias to change
        A.input_invariance("occlusion", x, model=numpy_model)


# -- Quantus 0.6 ----------------------------------------------------------------------------------


@pytest.fixture
def quantus():
    q = pytest.importorskip("quantus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield q


def test_quantus_completeness_gap_and_exact_equality(quantus, images):
    x, a = images
    net = _conv_tanh()
    y = net(torch.from_numpy(x)).argmax(1).numpy()
    seen = []

    def capture(change):  # Quantus's f(x) - f(black), recorded on its way to the == test
        seen.append(np.asarray(change, np.float64))
        return change

    quantus.Completeness(normalise=False, output_func=capture, disable_warnings=True)(
        model=net, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu")
    np.testing.assert_allclose(A.completeness(net, x, a, target=y, baseline="min"),
                               a.reshape(N, -1).sum(1) - seen[0], rtol=1e-6, atol=1e-6)
    # The defect: an explanation complete up to float32 rounding fails Quantus's exact equality.
    lin = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 2)).eval()
    e = fl.explainer("input_x_gradient", lin).explain(x, target=y)
    q = quantus.Completeness(normalise=False, perturb_baseline=0.0, disable_warnings=True)(
        model=lin, x_batch=x, y_batch=y, a_batch=e.values.copy(), device="cpu")
    gap = A.completeness(lin, x, e, target=y)
    assert np.abs(gap).max() < 1e-5
    assert not all(q)


def test_quantus_non_sensitivity_parity(quantus, images):
    x, a = images
    net = _conv_tanh()
    y = net(torch.from_numpy(x)).argmax(1).numpy()
    a = a / np.abs(a).reshape(N, -1).max(1)[:, None, None, None]  # Quantus divides by the batch max
    a[np.abs(a) < 0.3] = 0
    q = quantus.NonSensitivity(disable_warnings=True)(model=net, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu")
    ours = A.non_sensitivity(net, x, a, target=y, baseline="min", count="symmetric")
    np.testing.assert_array_equal(ours, np.asarray(q, np.float64))


def _explain_func(name):
    def explain(model, inputs, targets, **kwargs):
        return fl.explainer(name, model).explain(np.asarray(inputs, np.float32), target=np.asarray(targets)).values

    return explain


@pytest.mark.parametrize("zero_first_weight", [True, False])
def test_quantus_input_invariance_and_the_unshifted_first_pixel(quantus, images, zero_first_weight):
    x, _ = images
    net = _conv_tanh(zero_first_weight)
    y = net(torch.from_numpy(x)).argmax(1).numpy()
    q = {}
    for name in ("saliency", "input_x_gradient"):
        ef = _explain_func(name)
        q[name] = np.asarray(quantus.InputInvariance(disable_warnings=True)(
            model=net, x_batch=x, y_batch=y, a_batch=ef(net, x, y), device="cpu", explain_func=ef), np.float64)
    ours = {name: A.input_invariance(name, x, target=y, model=net) for name in q}
    np.testing.assert_array_equal(ours["saliency"], 1.0)
    np.testing.assert_array_equal(ours["input_x_gradient"], 0.0)
    if zero_first_weight:
        # The first pixel reaches nothing, so Quantus's skipped pixel is harmless: the same verdicts.
        for name, verdict in q.items():
            np.testing.assert_array_equal(ours[name], verdict)
    else:
        # Quantus leaves pixel 0 unshifted, so its f2 sees a different input from f1 there and
        # (tanh) a different gradient: it calls saliency not invariant.
        np.testing.assert_array_equal(q["saliency"], 0.0)
    from quantus.functions.perturb_func import (
        baseline_replacement_by_shift,
        perturb_batch,
    )

    shifted = perturb_batch(perturb_func=baseline_replacement_by_shift, arr=x,
                            indices=np.tile(np.arange(x[0].size), (N, 1)),
                            indexed_axes=np.arange(x[0].ndim), input_shift=-1)
    np.testing.assert_array_equal(shifted[:, 0, 0, 0], x[:, 0, 0, 0])  # never shifted
    np.testing.assert_allclose(shifted.reshape(N, -1)[:, 1:], x.reshape(N, -1)[:, 1:] - 1)
