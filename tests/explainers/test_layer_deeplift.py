"""Layer DeepLift / layer DeepLiftSHAP (Captum 0.9 parity, summation-to-delta at the layer, the
analytic value before a linear head, hooks) and the neuron selectors of the neuron explainers
(tuples with slices and callables, Captum parity)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl

nn = torch.nn
TOL = {"atol": 1e-5, "rtol": 0}


def cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.Conv2d(3, 4, 3, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 3)).double().eval()


def cnn_pool():
    """Max pooling between two convolutions (Captum's max-pool rule applies as written there)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16, 3)).double().eval()


def mlp(inplace=False):
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(inplace=inplace), nn.Linear(8, 5), nn.Tanh(), nn.Linear(5, 5),
                         nn.Softplus(), nn.Linear(5, 3)).double().eval()


def data(shape, seed, scale=1.0):
    return np.random.default_rng(seed).normal(size=shape) * scale


# model, one input's shape, layers to attribute
CASES = {
    "cnn": (cnn, (1, 8, 8), ["0", "2", "3", "5"]),
    "cnn_pool": (cnn_pool, (1, 8, 8), ["1", "2", "4"]),
    "mlp": (mlp, (6,), ["0", "1", "3", "5"]),
}


def captum_layer(cls, net, layer, x, base, target, **kw):
    captum = pytest.importorskip("captum.attr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(captum, cls)(net, dict(net.named_modules())[layer], **kw).attribute(
            torch.as_tensor(x), torch.as_tensor(base), target=target)
    return out.detach().numpy()


@pytest.mark.parametrize("which", sorted(CASES))
def test_layer_deeplift_equals_captum(which):
    make, shape, layers = CASES[which]
    net = make()
    x, base = data((5, *shape), 0), data((5, *shape), 1, 0.5)
    target = [0, 2, 1, 1, 0]
    for layer in layers:
        ref = captum_layer("LayerDeepLift", net, layer, x, base, target)
        e = fl.explainer("layer_deeplift", net, layer=layer, baseline=base, batch_size=2).explain(x, target=target)
        assert e.values.shape == ref.shape and e.params["layer"] == layer
        np.testing.assert_allclose(e.values, ref, **TOL)
        # one baseline row shared by every sample (recorded once)
        ref = captum_layer("LayerDeepLift", net, layer, x, np.repeat(base[:1], 5, 0), 1)
        got = fl.explainer("layer_deeplift", net, layer=layer).explain(x, target=1, baseline=base[0]).values
        np.testing.assert_allclose(got, ref, **TOL)
    # multiply_by_inputs=False: the multipliers at the layer
    ref = captum_layer("LayerDeepLift", net, layers[1], x, base, 2, multiply_by_inputs=False)
    got = fl.explainer("layer_deeplift", net, layer=layers[1], baseline=base, multiply_by_inputs=False).explain(
        x, target=2).values
    np.testing.assert_allclose(got, ref, **TOL)


@pytest.mark.parametrize("which", sorted(CASES))
def test_layer_deeplift_shap_equals_captum_and_the_mean_over_baselines(which):
    make, shape, layers = CASES[which]
    net, layer = make(), layers[-1]
    x, bg = data((3, *shape), 2), data((4, *shape), 3)
    ref = captum_layer("LayerDeepLiftShap", net, layer, x, bg, 0)
    e = fl.explainer("layer_deeplift_shap", net, layer=layer, background=bg, batch_size=5).explain(x, target=0)
    assert e.values.shape == ref.shape and e.params["n_background"] == 4
    np.testing.assert_allclose(e.values, ref, **TOL)
    one = [fl.explainer("layer_deeplift", net, layer=layer, baseline=b).explain(x, target=0).values for b in bg]
    np.testing.assert_allclose(e.values, np.mean(one, axis=0), atol=1e-12)
    assert e.params["max_abs_gap"] < 1e-10


@pytest.mark.parametrize("which", ["cnn", "mlp"])
def test_summation_to_delta_at_every_layer(which):
    # every module after each layer has an exact rule (linear, BatchNorm in eval, ReLU/Tanh/Softplus
    # Rescale, average pooling), so the layer's attributions sum to f(x) - f(x') exactly
    make, shape, layers = CASES[which]
    net = make()
    x, base = data((4, *shape), 4), data((4, *shape), 5)
    with torch.no_grad():
        f_b = net(torch.as_tensor(base))[:, 2].numpy()
        change = net(torch.as_tensor(x))[:, 2].numpy() - f_b
    for layer in layers:
        e = fl.explainer("layer_deeplift", net, layer=layer, baseline=base).explain(x, target=2)
        np.testing.assert_allclose(e.values.reshape(4, -1).sum(1), change, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(e.params["completeness_gap"], 0.0, atol=1e-10)
        np.testing.assert_allclose(e.base_values, f_b, rtol=1e-12)


def test_captum_max_pool_after_relu_misses_summation_to_delta_at_the_layer_and_ours_does_not():
    """Conv -> ReLU -> MaxPool twice: Captum 0.9 loses its max-pool rule after a hooked ReLU (see
    test_deeplift.py), so its layer attributions miss f(x) - f(x') by ~0.05-0.09; ours are exact.
    maxpool="gradient" reproduces Captum's values at layers that are not the ReLU feeding a pool
    (there Captum mixes the two: the rule of the first pool, the gradient of the second)."""
    captum = pytest.importorskip("captum.attr")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1),
                        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 3)).double().eval()
    x, base = data((6, 1, 8, 8), 0), data((6, 1, 8, 8), 1, 0.5)
    for layer in ("0", "2", "3"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref, gap = captum.LayerDeepLift(net, net[int(layer)]).attribute(
                torch.as_tensor(x), torch.as_tensor(base), target=1, return_convergence_delta=True)
        assert np.abs(gap.detach().numpy()).max() > 0.02
        ours = fl.explainer("layer_deeplift", net, layer=layer, baseline=base).explain(x, target=1)
        assert ours.params["max_abs_gap"] < 1e-10
        grad_rule = fl.explainer("layer_deeplift", net, layer=layer, baseline=base, maxpool="gradient")
        np.testing.assert_allclose(grad_rule.explain(x, target=1).values, ref.detach().numpy(), **TOL)


def test_before_a_linear_head_the_multiplier_is_the_weight():
    net = mlp()
    x, base = data((4, 6), 6), data((4, 6), 7)
    e = fl.explainer("layer_deeplift", net, layer="5", baseline=base).explain(x, target=1)
    with torch.no_grad():
        dz = (net[:6](torch.as_tensor(x)) - net[:6](torch.as_tensor(base))).numpy()
    np.testing.assert_allclose(e.values, dz * net[6].weight[1].detach().numpy(), rtol=1e-12, atol=1e-14)
    m = fl.explainer("layer_deeplift", net, layer="5", baseline=base, multiply_by_inputs=False).explain(x, target=1)
    np.testing.assert_allclose(m.values, np.broadcast_to(net[6].weight[1].detach().numpy(), (4, 5)), rtol=1e-12)


def test_layer_at_the_input_equals_deeplift_and_inplace_relu_changes_nothing():
    net = mlp()
    x, base = data((4, 6), 8), data((4, 6), 9)
    first = fl.explainer("layer_deeplift", net, layer="0", baseline=base).explain(x, target=0).values
    dl = fl.explainer("deeplift", net, baseline=base).explain(x, target=0).values
    # attributions of the first Linear's output, pushed through its weights, are DeepLift's multipliers
    with torch.no_grad():
        dz = (net[0](torch.as_tensor(x)) - net[0](torch.as_tensor(base))).numpy()
    mult = first / np.where(dz == 0, 1, dz)
    np.testing.assert_allclose(mult @ net[0].weight.detach().numpy() * (x - base), dl, rtol=1e-10, atol=1e-12)
    # the layer is the (in-place) ReLU the DeepLift rule is hooked on: same values, model intact
    plain = fl.explainer("layer_deeplift", net, layer="1", baseline=base).explain(x, target=0).values
    net2 = mlp(inplace=True)
    got = fl.explainer("layer_deeplift", net2, layer="1", baseline=base).explain(x, target=0).values
    np.testing.assert_allclose(got, plain, rtol=1e-12, atol=1e-14)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in net2.modules())


def test_errors_name_the_argument_and_hooks_are_removed():
    net = mlp()
    with pytest.raises(ValueError, match=r"layer 'nine'.*valid names: '0', '1'"):
        fl.explainer("layer_deeplift", net, layer="nine")
    with pytest.raises(ValueError, match="needs layer="):
        fl.explainer("layer_deeplift", net)
    with pytest.raises(ValueError, match="background="):
        fl.explainer("layer_deeplift_shap", net, layer="1")

    relu = nn.ReLU()

    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.relu, self.b = nn.Linear(6, 6), relu, nn.Linear(6, 2)

        def forward(self, x):
            return self.b(self.relu(self.relu(self.a(x))))

    twice = Twice().double()
    with pytest.raises(ValueError, match="ran 2 times"):
        fl.explainer("layer_deeplift", twice, layer="relu").explain(data((2, 6), 0), target=0)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in twice.modules())
    assert fl.explainer("layer_deeplift", net, layer="1").requires.why_not(fl.models.Model(net), (6,)) is not None


def test_several_targets_keep_the_layer_shape():
    net = cnn()
    x = data((2, 1, 8, 8), 10)
    ex = fl.explainer("layer_deeplift", net, layer="3")
    e = ex.explain(x, target=np.array([[0, 1], [2, 0]]))
    assert e.values.shape == (2, 2, 4, 8, 8)
    np.testing.assert_allclose(e.values[:, 1], ex.explain(x, target=[1, 0]).values, rtol=1e-12, atol=1e-14)


# ---- neuron selectors: tuples with slices and callables, as Captum's neuron_selector ----

def _mean_of_channel_one(z):
    return z[:, 1].mean(dim=(1, 2))


SELECTORS = {
    "cnn": ("3", [(1, slice(2, 5), 3), (2, slice(None), slice(0, 8, 3)), (slice(1, 3),),
                  _mean_of_channel_one]),
    "mlp": ("2", [(slice(1, 4),), (slice(None, None, 2),), lambda z: z[:, 0] * z[:, 3]]),
}


@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require gradients")
@pytest.mark.parametrize("which", sorted(SELECTORS))
def test_neuron_selectors_equal_captum(which):
    captum = pytest.importorskip("captum.attr")
    make, shape, _ = CASES[which]
    net = make()
    layer, selectors = SELECTORS[which]
    x = torch.from_numpy(data((3, *shape), 11))
    module = dict(net.named_modules())[layer]
    for sel in selectors:
        ref = captum.NeuronGradient(net, module).attribute(x, neuron_selector=sel).detach().numpy()
        got = fl.explainer("neuron_gradient", net, layer=layer, neuron=sel, batch_size=2).explain(x).values
        np.testing.assert_allclose(got, ref, **TOL)
        ref = captum.NeuronIntegratedGradients(net, module).attribute(x, neuron_selector=sel, n_steps=10)
        got = fl.explainer("neuron_integrated_gradients", net, layer=layer, neuron=sel, n_steps=10,
                           batch_size=7).explain(x).values
        np.testing.assert_allclose(got, ref.detach().numpy(), **TOL)


def test_a_slice_sums_its_units_and_params_describe_the_selector():
    net = mlp()
    x = data((3, 6), 12)

    def grad(neuron):
        return fl.explainer("neuron_gradient", net, layer="2", neuron=neuron).explain(x)

    e = grad((slice(1, 4),))
    np.testing.assert_allclose(e.values, sum(grad((j,)).values for j in (1, 2, 3)), rtol=1e-12, atol=1e-14)
    assert e.params["neuron"] == ["1:4"]
    assert grad((slice(None, None, 2),)).params["neuron"] == ["::2"]
    f = grad(lambda z: z[:, 2])
    np.testing.assert_allclose(f.values, grad(2).values, rtol=1e-12)
    assert f.params["neuron"].startswith("<callable")
    # neuron IG of a slice of the first (linear) layer is exact: it sums to the change of the
    # selected units' sum (completeness) with one node
    ig = fl.explainer("neuron_integrated_gradients", net, layer="0", neuron=(slice(0, 7, 3),), n_steps=1).explain(x)
    with torch.no_grad():
        z = net[0](torch.as_tensor(x))[:, 0:7:3].sum(1) - net[0](torch.zeros(1, 6, dtype=torch.float64))[:, 0:7:3].sum(1)
    np.testing.assert_allclose(ig.values.sum(1), z.numpy(), rtol=1e-12, atol=1e-14)


def test_bad_selectors_are_refused_naming_neuron():
    net = cnn()
    x = data((2, 1, 8, 8), 13)
    with pytest.raises(TypeError, match="neuron must be"):
        fl.explainer("neuron_gradient", net, layer="3", neuron=(0, slice(0.5, 2)))
    with pytest.raises(TypeError, match="neuron must be"):
        fl.explainer("neuron_gradient", net, layer="3", neuron=())
    cases = [((0, slice(None), 1, 1), "at most 3 entries"), ((9, slice(None)), r"\(4, 8, 8\)"),
             ((0, slice(5, 5)), "selects no unit"), ((0, 1), "3 indices"),
             (lambda z: z[:, 0], r"shape \(2,\), one value per sample")]
    for neuron, message in cases:
        with pytest.raises(ValueError, match=message):
            fl.explainer("neuron_gradient", net, layer="3", neuron=neuron).explain(x)
    assert all(not m._forward_hooks for m in net.modules())
