"""DeepLift, DeepLiftSHAP, LRP, guided backprop and deconvolution on networks written the way
torchvision writes them (issue 34, item 2): one ``nn.ReLU(inplace=True)`` module called two or
three times per block, functional activations (``F.relu``, ``torch.relu``, ``x.relu_()``) and
pooling (``F.max_pool2d``, ``F.adaptive_avg_pool2d``) in ``forward``, residual additions
(``out += identity``) and concatenations. Each explainer's values on such a network must equal
its values on the distinct-module copy: the same weights, traced with ``torch.fx`` and every
activation and pooling call site given a module of its own, not in place (the path the module
hooks have always taken, checked against Captum elsewhere). DeepLift's summation-to-delta is a
second, independent reference.

The blocks are built here (no download); ``torchvision.models.resnet18`` and ``densenet121`` as
shipped are compared too. `make setup` installs torchvision beside the venv; its only build for torch 2.13 (0.28.0)
is the CUDA one, whose compiled ops do not load beside the pinned CPU torch, so it is imported
through ``benchmarks/_torchvision.py`` (the model definitions are plain Python).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch
import torch.fx
import torch.nn.functional as F

import featurelens as fl

nn = torch.nn

METHODS = ("deeplift", "deeplift_shap", "lrp", "guided_backprop", "deconvolution")
TOL = 1e-12  # float64; relative to the largest value of the reference map


# --------------------------------------------------------------------------------------------------
# torchvision-style networks


class BasicBlock(nn.Module):
    """torchvision's ``BasicBlock``: one in-place ReLU module called twice, ``out += identity``."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class TinyResNet(nn.Module):
    """torchvision's ResNet layout (stem conv, BN, the shared in-place ReLU, 3x3/2 max pool, four
    stages of two BasicBlocks, adaptive average pool, ``torch.flatten``, fc) at small widths."""

    def __init__(self, widths=(4, 6, 6, 8), classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], widths[0]
        for i, w in enumerate(widths):
            stages.append(nn.Sequential(BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w)))
            cin = w
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class FunctionalNet(nn.Module):
    """Functional activations and pooling in ``forward``: ``F.relu(inplace=True)``,
    ``torch.relu``, ``x.relu_()``, ``F.max_pool2d``, residual ``a + b``, ``torch.sigmoid``."""

    def __init__(self, classes=3):
        super().__init__()
        self.stem = nn.Conv2d(3, 5, 3, padding=1)
        self.bn = nn.BatchNorm2d(5)
        self.c1 = nn.Conv2d(5, 5, 3, padding=1)
        self.c2 = nn.Conv2d(5, 5, 3, padding=1)
        self.gate = nn.Conv2d(5, 5, 1)
        self.fc = nn.Linear(5 * 4 * 4, classes)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)), inplace=True)
        x = F.max_pool2d(x, 2)
        h = torch.relu(self.c1(x))
        h = self.c2(h)
        out = (h + x).relu_()
        out = out + torch.sigmoid(self.gate(out))
        return self.fc(torch.flatten(out, 1))


class DenseLayer(nn.Module):
    """torchvision's ``_DenseLayer``: BN, in-place ReLU module, 1x1 conv, BN, ReLU, 3x3 conv, on
    the concatenation of every earlier feature map."""

    def __init__(self, cin, growth):
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(cin), nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, 2 * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(2 * growth), nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(2 * growth, growth, 3, padding=1, bias=False)

    def forward(self, features):
        h = self.conv1(self.relu1(self.norm1(torch.cat(features, 1))))
        return self.conv2(self.relu2(self.norm2(h)))


class TinyDenseNet(nn.Module):
    """torchvision's DenseNet layout: a dense block of concatenations, then ``F.relu(...,
    inplace=True)``, ``F.adaptive_avg_pool2d`` and ``torch.flatten`` in ``forward``."""

    def __init__(self, c0=4, growth=3, n_layers=3, classes=3):
        super().__init__()
        self.conv0, self.norm0 = nn.Conv2d(3, c0, 3, padding=1, bias=False), nn.BatchNorm2d(c0)
        self.relu0 = nn.ReLU(inplace=True)
        self.layers = nn.ModuleList(DenseLayer(c0 + i * growth, growth) for i in range(n_layers))
        self.norm5 = nn.BatchNorm2d(c0 + n_layers * growth)
        self.classifier = nn.Linear(c0 + n_layers * growth, classes)

    def forward(self, x):
        features = [self.relu0(self.norm0(self.conv0(x)))]
        for layer in self.layers:
            features.append(layer(features))
        out = F.relu(self.norm5(torch.cat(features, 1)), inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(torch.flatten(out, 1))


def _randomise(net: nn.Module, seed: int) -> nn.Module:
    """Float64, eval mode, BatchNorms with non-trivial statistics and affine parameters."""
    torch.manual_seed(seed)
    net = net.double().eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.6, 1.4)
                m.bias.uniform_(-0.2, 0.4)
    return net


# --------------------------------------------------------------------------------------------------
# the distinct-module copy


_FUNCTIONAL_RELU = {F.relu, torch.relu, torch.relu_}


def distinct_copy(net: nn.Module) -> nn.Module:
    """The same network (deep-copied weights) traced with ``torch.fx``, with every ReLU call site
    (a module call, ``F.relu``/``torch.relu``/``.relu()``/``.relu_()``), ``torch.sigmoid``, and
    every ``F.max_pool2d`` / ``F.adaptive_avg_pool2d`` call given a new module of its own, not in
    place. Returns the traced module and the number of call sites rewritten."""
    gm = torch.fx.symbolic_trace(copy.deepcopy(net))
    count = 0

    def new_module(node, module):
        nonlocal count
        name = f"distinct_{count}"
        count += 1
        gm.add_submodule(name, module)
        with gm.graph.inserting_after(node):
            new = gm.graph.call_module(name, (node.args[0],))
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)

    for node in list(gm.graph.nodes):
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.ReLU):
            new_module(node, nn.ReLU())
        elif (node.op == "call_function" and node.target in _FUNCTIONAL_RELU) or (
                node.op == "call_method" and node.target in ("relu", "relu_")):
            new_module(node, nn.ReLU())
        elif node.op == "call_function" and node.target is torch.sigmoid:
            new_module(node, nn.Sigmoid())
        elif node.op == "call_function" and node.target is F.max_pool2d:
            kernel = node.args[1] if len(node.args) > 1 else node.kwargs["kernel_size"]
            new_module(node, nn.MaxPool2d(kernel))
        elif node.op == "call_function" and node.target is F.adaptive_avg_pool2d:
            size = node.args[1] if len(node.args) > 1 else node.kwargs["output_size"]
            new_module(node, nn.AdaptiveAvgPool2d(size))
    gm.graph.lint()
    gm.recompile()
    for node in gm.graph.nodes:  # nothing shared, nothing in place, nothing functional left
        assert node.target not in _FUNCTIONAL_RELU | {torch.sigmoid, F.max_pool2d, F.adaptive_avg_pool2d}
        assert not (node.op == "call_method" and node.target in ("relu", "relu_"))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    relus = [t for t in targets if isinstance(gm.get_submodule(t), nn.ReLU)]
    assert len(relus) == len(set(relus)) and not any(gm.get_submodule(t).inplace for t in relus)
    return gm.eval(), count


def _explain(name, net, x, target, background):
    kwargs = {"background": background} if name == "deeplift_shap" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no rule silently missing: no fallback warning at all
        return fl.explainer(name, net, **kwargs).explain(x, target=target)


def _assert_same(a, ref, tol=TOL):
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(a, ref, rtol=0, atol=tol * scale)


def _check_network(net, x, target, background, methods=METHODS, tol=TOL):
    twin, rewritten = distinct_copy(net)
    assert rewritten > 0
    with torch.no_grad():  # the copy is the same function
        xt = torch.as_tensor(x)
        np.testing.assert_allclose(twin(xt).numpy(), net(xt).numpy(), rtol=0, atol=1e-13)
    results = {}
    for name in methods:
        shipped = _explain(name, net, x, target, background)
        ref = _explain(name, twin, x, target, background)
        assert np.abs(ref.values).max() > 1e-6, name  # the reference is not a zero map
        _assert_same(shipped.values, ref.values, tol)
        results[name] = (shipped, ref)
    if "deeplift" in results:
        # summation-to-delta against the model itself: sum(a) = f(x) - f(0)
        e = results["deeplift"][0]
        with torch.no_grad():
            xt = torch.as_tensor(x)
            change = (net(xt) - net(torch.zeros_like(xt)))[np.arange(len(target)), target].numpy()
        np.testing.assert_allclose(e.values.reshape(len(x), -1).sum(1), change, rtol=0, atol=1e-10)
        assert e.params["max_abs_gap"] < 1e-10
    if "deeplift_shap" in results:
        e = results["deeplift_shap"][0]
        with torch.no_grad():
            xt, bt = torch.as_tensor(x), torch.as_tensor(background)
            change = net(xt)[np.arange(len(target)), target] - net(bt)[:, target].mean(0)
        np.testing.assert_allclose(e.values.reshape(len(x), -1).sum(1), change.numpy(), rtol=0, atol=1e-10)
    return results


def _data(shape, n, seed):
    return np.random.default_rng(seed).normal(size=(n,) + shape)


# --------------------------------------------------------------------------------------------------
# tests


def test_tiny_resnet_with_a_shared_in_place_relu_equals_its_distinct_copy():
    net = _randomise(TinyResNet(), 0)
    # the shared module really runs several times per forward (twice per block, once in the stem)
    calls = []
    handle = net.layer1[0].relu.register_forward_hook(lambda *a: calls.append(1))
    with torch.no_grad():
        net(torch.zeros(1, 3, 16, 16, dtype=torch.float64))
    handle.remove()
    assert len(calls) == 2
    x, bg = _data((3, 16, 16), 2, 1), _data((3, 16, 16), 2, 2)
    _check_network(net, x, np.array([0, 2]), bg)


def test_functional_activations_and_pooling_equal_their_module_versions():
    net = _randomise(FunctionalNet(), 3)
    x, bg = _data((3, 8, 8), 3, 4), _data((3, 8, 8), 2, 5)
    target = np.array([1, 0, 2])
    results = _check_network(net, x, target, bg)
    # Without the functional rules (Captum's behaviour) the values differ and DeepLift misses
    # summation-to-delta: the test above could fail.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = fl.explainer("deeplift", net, functional=False).explain(x, target=target)
    assert np.abs(old.values - results["deeplift"][1].values).max() > 1e-4
    assert old.params["max_abs_gap"] > 1e-4
    for name in ("guided_backprop", "lrp"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = fl.explainer(name, net, functional=False).explain(x, target=target).values
        assert np.abs(old - results[name][1].values).max() > 1e-6, name


def test_densenet_like_concatenations_and_functional_head_equal_the_distinct_copy():
    net = _randomise(TinyDenseNet(), 6)
    x, bg = _data((3, 6, 6), 2, 7), _data((3, 6, 6), 3, 8)
    _check_network(net, x, np.array([2, 1]), bg)


def test_deeplift_layer_variant_and_chunking_on_the_shared_relu():
    net = _randomise(TinyResNet(), 9)
    twin, _ = distinct_copy(net)
    x = _data((3, 16, 16), 3, 10)
    for layer in ("maxpool", "layer2.0.conv1"):  # every path passes the first, not the second
        ours = fl.explainer("layer_deeplift", net, layer=layer, batch_size=2).explain(x, target=1)
        ref = fl.explainer("layer_deeplift", twin, layer=layer).explain(x, target=1)
        _assert_same(ours.values, ref.values)
    assert ours.params["max_abs_gap"] > 1e-3  # the skip connection bypasses layer2.0.conv1
    at_pool = fl.explainer("layer_deeplift", net, layer="maxpool").explain(x, target=1)
    assert at_pool.params["max_abs_gap"] < 1e-10


def test_the_model_is_left_as_it_was():
    net = _randomise(FunctionalNet(), 11)
    before = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in net.modules()]
    x = torch.as_tensor(_data((3, 8, 8), 2, 12))
    with torch.no_grad():
        out = net(x)
    for name in ("deeplift", "lrp", "guided_backprop", "deconvolution"):
        fl.explainer(name, net).explain(x.numpy(), target=0)
    assert [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in net.modules()] == before
    assert not torch._C._is_torch_function_mode_enabled()  # no function mode left on the stack
    with torch.no_grad():
        torch.testing.assert_close(net(x), out, rtol=0, atol=0)


def _torchvision():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        from _torchvision import import_torchvision

        return import_torchvision()
    except ImportError as err:  # absent (a plain `pip install -e .`), or a build that cannot load
        pytest.skip(f"torchvision is not importable here: {err}")
    finally:
        sys.path.pop(0)


def test_torchvision_resnet18_as_shipped_equals_its_distinct_copy():
    torchvision = _torchvision()
    torch.manual_seed(0)
    net = _randomise(torchvision.models.resnet18(weights=None, num_classes=5), 0)
    x, bg = _data((3, 64, 64), 1, 13), _data((3, 64, 64), 2, 14)
    _check_network(net, x, np.array([3]), bg, tol=1e-10)


class _IgnoresReturn(nn.Module):
    """``F.relu(h, inplace=True)`` and ``h.relu_()`` as statements: the forward reads ``h``
    afterwards, so the in-place write itself must carry the rule."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(15)
        self.a, self.b, self.c = nn.Linear(5, 7), nn.Linear(7, 6), nn.Linear(6, 3)

    def forward(self, x):
        h = self.a(x)
        F.relu(h, inplace=True)
        g = self.b(h)
        g.relu_()
        return self.c(g)


def test_in_place_functional_calls_whose_result_is_ignored():
    net = _IgnoresReturn().double().eval()
    modules = nn.Sequential(net.a, nn.ReLU(), net.b, nn.ReLU(), net.c)
    x, bg = _data((5,), 4, 16), _data((5,), 3, 17)
    target = np.array([0, 2, 1, 0])
    for name in METHODS:
        ours = _explain(name, net, x, target, bg).values
        ref = _explain(name, modules, x, target, bg).values
        _assert_same(ours, ref)


def test_deeplift_refuses_a_forward_whose_functional_calls_differ_from_the_baseline():
    class Branching(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 3)

        def forward(self, x):  # a data-dependent path: tanh on the baseline, relu on x
            h = self.a(x)
            return torch.relu(h) if bool(x.sum() > 0) else torch.tanh(h)

    net = Branching().double().eval()
    x = np.ones((2, 4))
    with pytest.raises((RuntimeError, ValueError), match="different path on x than on the baseline"):
        fl.explainer("deeplift", net).explain(x, target=0)


def test_torchvision_densenet121_as_shipped_equals_its_distinct_copy():
    """DenseNet as shipped: in-place ReLU modules in every dense layer, concatenations, and the
    final ``F.relu(features, inplace=True)`` + ``F.adaptive_avg_pool2d`` in ``forward``."""
    torchvision = _torchvision()
    torch.manual_seed(0)
    net = _randomise(torchvision.models.densenet121(weights=None, num_classes=4), 0)
    x, bg = _data((3, 32, 32), 1, 18), _data((3, 32, 32), 2, 19)
    _check_network(net, x, np.array([1]), bg, tol=1e-10)
