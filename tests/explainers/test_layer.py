"""Layer and neuron attributions: Captum 0.9 parity (LayerIntegratedGradients,
LayerGradientXActivation, LayerConductance, NeuronGradient, NeuronIntegratedGradients) on a small
CNN and an MLP, completeness of layer IG, shapes, errors and hook hygiene."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import featurelens as fl

TOL = {"rtol": 1e-5, "atol": 1e-7}


def make_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1),
        torch.nn.BatchNorm2d(3),
        torch.nn.ReLU(),
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 3),
    ).double().eval()


def make_mlp() -> torch.nn.Module:
    torch.manual_seed(1)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 5), torch.nn.Softplus(), torch.nn.Linear(5, 3),
    ).double().eval()


def cnn_x(n=3, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, 1, 8, 8)))


def mlp_x(n=4, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, 6)))


# (model factory, inputs, layer name, neuron index) per shared model
MODELS = {
    "cnn": (make_cnn, cnn_x, "3", (1, 2, 5)),
    "mlp": (make_mlp, mlp_x, "2", (3,)),
}


@pytest.mark.parametrize("which", sorted(MODELS))
def test_layer_methods_equal_captum(which):
    captum = pytest.importorskip("captum.attr")
    make, xs, name, _ = MODELS[which]
    net, x = make(), xs()
    layer = dict(net.named_modules())[name]
    target = [0, 2, 1, 1][: x.shape[0]]
    base = 0.1 * torch.ones_like(x[:1])

    ours = fl.explainer("layer_integrated_gradients", net, layer=name, n_steps=20, batch_size=7)
    ref = captum.LayerIntegratedGradients(net, layer).attribute(x, baselines=base.expand_as(x), target=target,
                                                                n_steps=20)
    e = ours.explain(x, target=target, baseline=base[0])
    assert e.values.shape == tuple(ref.shape) and e.params["layer"] == name
    np.testing.assert_allclose(e.values, ref.detach().numpy(), **TOL)

    ref = captum.LayerGradientXActivation(net, layer).attribute(x, target=target)
    np.testing.assert_allclose(
        fl.explainer("layer_gradient_x_activation", net, layer=name, batch_size=2).explain(x, target=target).values,
        ref.detach().numpy(), **TOL)

    # one baseline per sample
    rows = torch.from_numpy(np.random.default_rng(5).normal(size=tuple(x.shape)))
    ref = captum.LayerIntegratedGradients(net, layer).attribute(x, baselines=rows, target=target, n_steps=8,
                                                                method="riemann_middle")
    got = fl.explainer("layer_integrated_gradients", net, layer=name, n_steps=8, method="riemann_middle",
                       baseline=rows.numpy()).explain(x, target=target).values
    np.testing.assert_allclose(got, ref.detach().numpy(), **TOL)

    for method in ("gausslegendre", "riemann_trapezoid"):
        ref = captum.LayerConductance(net, layer).attribute(x, baselines=base.expand_as(x), target=target,
                                                            n_steps=12, method=method)
        got = fl.explainer("layer_conductance", net, layer=name, n_steps=12, method=method, baseline=base[0],
                           batch_size=5).explain(x, target=target).values
        np.testing.assert_allclose(got, ref.detach().numpy(), **TOL)


@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require gradients")
@pytest.mark.parametrize("which", sorted(MODELS))
def test_neuron_methods_equal_captum(which):
    captum = pytest.importorskip("captum.attr")
    make, xs, name, neuron = MODELS[which]
    net, x = make(), xs()
    layer = dict(net.named_modules())[name]
    ref = captum.NeuronGradient(net, layer).attribute(x, neuron_selector=neuron)
    e = fl.explainer("neuron_gradient", net, layer=name, neuron=neuron, batch_size=2).explain(x, target=0)
    np.testing.assert_allclose(e.values, ref.detach().numpy(), **TOL)
    assert e.params["neuron"] == list(neuron)
    ref = captum.NeuronIntegratedGradients(net, layer).attribute(x, neuron_selector=neuron, n_steps=16)
    got = fl.explainer("neuron_integrated_gradients", net, layer=name, neuron=neuron, n_steps=16,
                       batch_size=5).explain(x, target=0).values
    np.testing.assert_allclose(got, ref.detach().numpy(), **TOL)


@pytest.mark.parametrize("which,name", [("cnn", "4"), ("mlp", "2")])
def test_layer_ig_completeness_and_chunking(which, name):
    # cnn "4": the ReLU after the second conv (the rest is linear, so the quadrature is exact);
    # mlp "2": a Linear followed by Softplus (smooth, Gauss-Legendre converges fast)
    make, xs, _, _ = MODELS[which]
    net, x = make(), xs()
    e = fl.explainer("layer_integrated_gradients", net, layer=name, n_steps=64).explain(x, target=1)
    with torch.no_grad():
        change = (net(x)[:, 1] - net(torch.zeros_like(x))[:, 1]).numpy()
    np.testing.assert_allclose(e.values.reshape(len(x), -1).sum(1), change, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(e.params["completeness_gap"], 0.0, atol=1e-6)
    np.testing.assert_allclose(e.base_values, net(torch.zeros_like(x[:1]))[0, 1].item(), rtol=1e-12)
    # chunked (one copy of the batch spans several chunks) equals unchunked
    small = fl.explainer("layer_integrated_gradients", net, layer=name, n_steps=64, batch_size=1).explain(x, target=1)
    np.testing.assert_allclose(small.values, e.values, rtol=1e-10, atol=1e-12)


def test_layer_conductance_sums_to_output_change_and_neuron_ig_to_unit_change():
    net, x = make_mlp(), mlp_x()
    c = fl.explainer("layer_conductance", net, layer="2", n_steps=400, method="riemann_trapezoid").explain(x, target=2)
    with torch.no_grad():
        change = (net(x)[:, 2] - net(torch.zeros_like(x))[:, 2]).numpy()
        act = net[:3]
        unit = (act(x)[:, 3] - act(torch.zeros_like(x))[:, 3]).numpy()
    # trapezoid nodes include 0 and 1: the sum telescopes to a left Riemann sum along the path, whose
    # error falls like 1/n_steps (4x fewer steps, about 4x the error)
    err = np.abs(c.values.sum(1) - change)
    assert err.max() < 1e-4
    coarse = fl.explainer("layer_conductance", net, layer="2", n_steps=100, method="riemann_trapezoid").explain(x, target=2)
    assert 2.5 < np.abs(coarse.values.sum(1) - change).max() / err.max() < 5.5
    n = fl.explainer("neuron_integrated_gradients", net, layer="2", neuron=(3,), n_steps=64).explain(x)
    np.testing.assert_allclose(n.values.sum(1), unit, rtol=1e-6, atol=1e-9)


def test_layer_gradient_x_activation_on_linear_head_is_weight_times_activation():
    net, x = make_mlp(), mlp_x()
    e = fl.explainer("layer_gradient_x_activation", net, layer="3").explain(x, target=1)
    with torch.no_grad():
        act = net[:4](x)
    np.testing.assert_allclose(e.values, (act * net[4].weight[1]).detach().numpy(), rtol=1e-12)
    g = fl.explainer("layer_gradient_x_activation", net, layer="3", multiply=False).explain(x, target=1)
    np.testing.assert_allclose(g.values, net[4].weight[1].detach().expand(len(x), -1).numpy(), rtol=1e-12)


def test_several_targets_per_sample_keep_layer_shape():
    net, x = make_cnn(), cnn_x(2)
    e = fl.explainer("layer_integrated_gradients", net, layer="3", n_steps=4).explain(x, target=np.array([[0, 1], [2, 0]]))
    assert e.values.shape == (2, 2, 4, 8, 8)
    one = fl.explainer("layer_integrated_gradients", net, layer="3", n_steps=4).explain(x, target=[1, 0])
    np.testing.assert_allclose(e.values[:, 1], one.values, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["layer_integrated_gradients", "layer_gradient_x_activation", "layer_conductance",
                                  "neuron_gradient", "neuron_integrated_gradients"])
def test_bad_layer_is_refused_listing_names(name):
    net = make_cnn()
    extra = {"neuron": (0, 0, 0)} if name.startswith("neuron") else {}
    with pytest.raises(ValueError, match=r"layer 'conv9'.*valid names: '0', '1'"):
        fl.explainer(name, net, layer="conv9", **extra)
    with pytest.raises(ValueError, match="needs layer="):
        fl.explainer(name, net, **extra)
    with pytest.raises(TypeError, match="layer must be"):
        fl.explainer(name, net, layer=3, **extra)
    # the module itself works too, and the hooks are gone afterwards
    ex = fl.explainer(name, net, layer=net[3], **extra)
    assert ex.layer_name == "3"
    ex.explain(cnn_x(1), target=0)
    assert not net[3]._forward_hooks and all(not m._forward_hooks for m in net.modules())


def test_bad_neuron_is_refused_naming_neuron():
    net = make_cnn()
    with pytest.raises(ValueError, match="needs neuron="):
        fl.explainer("neuron_gradient", net, layer="3")
    with pytest.raises(TypeError, match="neuron must be"):
        fl.explainer("neuron_gradient", net, layer="3", neuron=(0, 1.5, 2))
    with pytest.raises(ValueError, match=r"neuron \(0, 9, 0\).*\(4, 8, 8\)"):
        fl.explainer("neuron_gradient", net, layer="3", neuron=(0, 9, 0)).explain(cnn_x(1))
    assert all(not m._forward_hooks for m in net.modules())


def test_layer_applied_twice_is_refused():
    relu = torch.nn.ReLU()

    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.act, self.out = torch.nn.Linear(6, 6), relu, torch.nn.Linear(6, 2)

        def forward(self, x):
            return self.out(self.act(self.lin(self.act(x))))

    net = Twice().double()
    with pytest.raises(ValueError, match="ran 2 times"):
        fl.explainer("layer_gradient_x_activation", net, layer="act").explain(mlp_x(2), target=0)
    assert not relu._forward_hooks


def test_not_applicable_in_harness_without_a_layer():
    from featurelens._harness import applicable

    chosen, skipped = applicable(["layer_integrated_gradients", "neuron_gradient", "saliency"], make_cnn(), (1, 8, 8))
    assert chosen == ["saliency"] and "named layer" in skipped["neuron_gradient"]


def test_unique_suffix_names_a_wrapped_models_layer():
    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = make_cnn()

        def forward(self, x):
            return self.net(x)

    wrapped, x = Wrap().double().eval(), cnn_x(2)
    ex = fl.explainer("layer_gradient_x_activation", wrapped, layer="3")
    assert ex.layer_name == "net.3"
    plain = fl.explainer("layer_gradient_x_activation", wrapped.net, layer="3").explain(x, target=0).values
    np.testing.assert_array_equal(ex.explain(x, target=0).values, plain)
    with pytest.raises(ValueError, match="ambiguous"):
        fl.explainer("layer_gradient_x_activation", torch.nn.Sequential(make_cnn(), make_cnn()), layer="3")


@pytest.mark.parametrize("name", ["layer_integrated_gradients", "layer_gradient_x_activation", "layer_conductance",
                                  "neuron_gradient", "neuron_integrated_gradients"])
def test_inplace_relu_after_the_layer_changes_nothing(name):
    def net(inplace):
        torch.manual_seed(2)
        return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(inplace=inplace), torch.nn.Linear(5, 2)).double()

    extra = {"neuron": (1,)} if name.startswith("neuron") else {}
    x = mlp_x()
    a = fl.explainer(name, net(True), layer="0", **extra).explain(x, target=1).values
    b = fl.explainer(name, net(False), layer="0", **extra).explain(x, target=1).values
    np.testing.assert_array_equal(a, b)


def test_layer_with_tuple_output_is_refused():
    class Pair(torch.nn.Module):
        def forward(self, x):
            return x, x

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pair, self.out = Pair(), torch.nn.Linear(6, 2)

        def forward(self, x):
            return self.out(self.pair(x)[0])

    net = Net().double()
    with pytest.raises(TypeError, match="not one tensor"):
        fl.explainer("layer_gradient_x_activation", net, layer="pair").explain(mlp_x(2), target=0)
    assert not net.pair._forward_hooks


@pytest.mark.parametrize("name", ["neuron_gradient", "neuron_integrated_gradients"])
def test_neuron_methods_skip_the_predicted_class_pass(name):
    """A neuron attribution never reads the target: with target=None the batch is not sent through
    the model to find predicted classes (only one row checks the input), and the values equal
    those with any given target."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double().eval()
    x = torch.randn(8, 6, dtype=torch.float64)
    rows = []
    handle = net[2].register_forward_hook(lambda m, i, o: rows.append(o.shape[0]))
    try:
        ex = fl.explainer(name, net, layer="0", neuron=(2,), **({"n_steps": 4} if "integrated" in name else {}))
        e = ex.explain(x)
        without = sum(rows)
        rows.clear()
        given = ex.explain(x, target=[1] * 8)
    finally:
        handle.remove()
    np.testing.assert_array_equal(e.values, given.values)
    assert without == sum(rows)  # the same passes as with a target: one row checks, no extra pass of 8
    assert list(e.target) == [0] * 8


@pytest.mark.parametrize("name", ["neuron_gradient", "neuron_integrated_gradients"])
def test_neuron_passes_stop_at_the_layer_and_still_refuse_a_layer_run_twice(name):
    relu = torch.nn.ReLU()
    head_rows = []

    class Twice(torch.nn.Module):
        def __init__(self, twice):
            super().__init__()
            self.twice = twice
            self.lin, self.act, self.out = torch.nn.Linear(6, 6), relu, torch.nn.Linear(6, 2)

        def forward(self, x):
            h = self.act(self.lin(self.act(x) if self.twice else x))
            return self.out(h)

    kwargs = {"n_steps": 4} if "integrated" in name else {}
    with pytest.raises(ValueError, match="ran 2 times"):
        fl.explainer(name, Twice(True).double(), layer="act", neuron=(1,), **kwargs).explain(mlp_x(2))
    assert not relu._forward_hooks
    once = Twice(False).double()
    once.out.register_forward_hook(lambda m, i, o: head_rows.append(o.shape[0]))
    fl.explainer(name, once, layer="act", neuron=(1,), **kwargs).explain(mlp_x(3), target=0)
    assert sum(head_rows) == 2  # the input check and the layer-once check: one row each, no more
