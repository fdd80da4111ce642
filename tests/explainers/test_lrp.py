"""LRP: Captum parity with its default rules, conservation, alpha-beta positivity, the rules'
analytic cases, composites, overrides and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.explainers.lrp import Add, Concat, Rule


def make_mlp(bias: bool = True, act=torch.nn.ReLU) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 8, bias=bias), act(), torch.nn.Linear(8, 5, bias=bias), torch.nn.ReLU(),
        torch.nn.Linear(5, 3, bias=bias),
    ).double()


class SmallCNN(torch.nn.Module):
    """Conv, BatchNorm, ReLU, max pooling, conv, ReLU, average pooling, dense (a view instead of
    nn.Flatten: Captum's LRP has no rule for nn.Flatten)."""

    def __init__(self, flatten: bool = False, bias: bool = True):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 3, 3, padding=1, bias=bias)
        self.bn = torch.nn.BatchNorm2d(3)
        self.r1 = torch.nn.ReLU()
        self.p1 = torch.nn.MaxPool2d(2)
        self.c2 = torch.nn.Conv2d(3, 4, 3, bias=bias)
        self.r2 = torch.nn.ReLU()
        self.p2 = torch.nn.AdaptiveAvgPool2d(1)
        self.flat = torch.nn.Flatten() if flatten else None
        self.fc = torch.nn.Linear(4, 3, bias=bias)

    def forward(self, x):
        h = self.p2(self.r2(self.c2(self.p1(self.r1(self.bn(self.c1(x)))))))
        return self.fc(self.flat(h) if self.flat is not None else h.view(h.shape[0], -1))


def make_cnn(**kwargs) -> torch.nn.Module:
    torch.manual_seed(1)
    net = SmallCNN(**kwargs).double()
    with torch.no_grad():  # non-trivial running statistics and affine parameters
        net.bn.running_mean.uniform_(-0.3, 0.3)
        net.bn.running_var.uniform_(0.5, 2.0)
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.2, 0.2)
    return net.eval()


def x_mlp(n=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 6))


def x_cnn(n=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 1, 8, 8))


def captum_lrp(net, x, target):
    captum_attr = pytest.importorskip("captum.attr")
    xt = torch.tensor(x, requires_grad=True)
    return captum_attr.LRP(net).attribute(xt, target=target).detach().numpy()


@pytest.mark.parametrize("make, make_x", [(make_mlp, x_mlp), (make_cnn, x_cnn)])
def test_equals_captum_lrp_with_its_default_epsilon_rules(make, make_x):
    net, x = make(), make_x()
    target = [0, 2, 1] + [1] * (len(x) - 3)
    expected = captum_lrp(net, x, target)
    e = fl.explainer("lrp", net).explain(x, target=target)
    np.testing.assert_allclose(e.values, expected, atol=1e-5, rtol=0)
    assert np.abs(e.values - expected).max() < 1e-12  # in fact equal to rounding
    assert e.model_calls == len(x) + 1  # the gradient pass (its outputs reused) + one row to check targets


def test_flatten_and_gelu_pass_relevance_where_captum_raises():
    captum_attr = pytest.importorskip("captum.attr")
    from captum.attr._utils.lrp_rules import IdentityRule

    x = x_cnn()
    with pytest.raises(TypeError):  # Captum: no rule for nn.Flatten
        captum_attr.LRP(make_cnn(flatten=True)).attribute(torch.tensor(x, requires_grad=True), target=1)
    # featurelens passes the relevance through Flatten: the same values as Captum with a view.
    ours = fl.explainer("lrp", make_cnn(flatten=True)).explain(x, target=1).values
    np.testing.assert_allclose(ours, captum_lrp(make_cnn(), x, 1), atol=1e-12)
    # GELU: Captum raises; featurelens passes relevance unchanged, which is Captum's IdentityRule.
    gelu_net, xm = make_mlp(act=torch.nn.GELU), x_mlp()
    with pytest.raises(TypeError):
        captum_attr.LRP(gelu_net).attribute(torch.tensor(xm, requires_grad=True), target=0)
    ours = fl.explainer("lrp", gelu_net).explain(xm, target=0).values
    gelu_net[1].rule = IdentityRule()  # Captum removes the rule attributes afterwards
    theirs = captum_attr.LRP(gelu_net).attribute(torch.tensor(xm, requires_grad=True), target=0)
    np.testing.assert_allclose(ours, theirs.detach().numpy(), atol=1e-12)


def test_captum_gamma_and_alpha1_beta0_agree_where_inputs_are_non_negative():
    """Captum's gamma / alpha1-beta0 change the weights; ours act on the products a_j w_jk. They
    agree on bias-free layers with non-negative inputs (here every layer after the first ReLU)."""
    captum_attr = pytest.importorskip("captum.attr")
    from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, GammaRule

    x = x_mlp()
    for ours_rule, theirs_rule in (("gamma", GammaRule(gamma=0.25)), ("zplus", Alpha1_Beta0_Rule())):
        net = make_mlp(bias=False)
        for i in (2, 4):
            net[i].rule = theirs_rule  # Captum removes the rule attributes afterwards
        theirs = captum_attr.LRP(net).attribute(torch.tensor(x, requires_grad=True), target=1)
        ours = fl.explainer("lrp", net, rules={"2": ours_rule, "4": ours_rule}).explain(x, target=1).values
        np.testing.assert_allclose(ours, theirs.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("make, make_x", [(lambda: make_mlp(bias=False), x_mlp),
                                          (lambda: make_cnn(bias=False), x_cnn)])
def test_conservation_on_a_bias_free_relu_net_as_epsilon_goes_to_zero(make, make_x):
    net, x = make(), make_x()
    if isinstance(net, SmallCNN):  # BatchNorm's shift is a bias: make it none
        with torch.no_grad():
            net.bn.running_mean.zero_()
            net.bn.bias.zero_()
    e = fl.explainer("lrp", net, epsilon=1e-12).explain(x, target=2)
    f = net(torch.tensor(x)).detach().numpy()[:, 2]
    np.testing.assert_allclose(e.values.reshape(len(x), -1).sum(1), f, atol=1e-6, rtol=0)
    np.testing.assert_allclose(e.params["conservation_gap"], 0.0, atol=1e-6)
    # a large epsilon absorbs relevance
    big = fl.explainer("lrp", net, epsilon=1.0).explain(x, target=2)
    assert np.abs(big.values.reshape(len(x), -1).sum(1) - f).max() > 1e-3


def test_alpha1_beta0_gives_non_negative_relevance_for_a_positive_output():
    net, x = make_mlp(), x_mlp(20, seed=3)  # inputs of both signs
    out = net(torch.tensor(x)).detach().numpy()
    rows = np.flatnonzero(out.max(1) > 0)  # explained for the predicted class, whose output is > 0
    assert rows.size >= 3
    e = fl.explainer("lrp", net, composite="alpha_beta").explain(x[rows])
    assert (e.values >= 0).all() and (e.values.sum(1) > 0).all()
    # alpha 2 beta 1 does produce negative relevance on the same rows
    e21 = fl.explainer("lrp", net, composite="alpha_beta", alpha=2.0, beta=1.0).explain(x[rows])
    assert (e21.values < 0).any()


def test_flat_and_zbox_rules_on_one_layer():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 1, bias=False).double()
    x = np.random.default_rng(0).normal(size=(3, 5))
    f = lin(torch.tensor(x)).detach().numpy()[:, 0]
    flat = fl.explainer("lrp", lin, rules={"": "flat"}).explain(x, target=0).values
    np.testing.assert_allclose(flat, np.repeat(f[:, None] / 5, 5, axis=1), atol=1e-12)
    # z^B with bounds l, h: R_j = (x_j w_j - l w_j+ - h w_j-) / sum(...) * f, summing to f
    low, high = -3.0, 3.0
    box = fl.explainer("lrp", lin, rules={"": Rule("zbox", low=low, high=high)}).explain(x, target=0).values
    w = lin.weight.detach().numpy()[0]
    num = x * w - low * np.clip(w, 0, None) - high * np.clip(w, None, 0)
    np.testing.assert_allclose(box, num / num.sum(1, keepdims=True) * f[:, None], atol=1e-10)


def test_gamma_zero_is_epsilon_and_overrides_apply_by_name():
    net, x = make_cnn(), x_cnn()
    eps = fl.explainer("lrp", net).explain(x, target=0).values
    g0 = fl.explainer("lrp", net, rules={"c1": Rule("gamma", gamma=0.0), "c2": Rule("gamma", gamma=0.0)})
    np.testing.assert_allclose(g0.explain(x, target=0).values, eps, atol=1e-12)
    ex = fl.explainer("lrp", net, rules={"c2": "zplus"})
    assert ex.explain(x, target=0).params["rules"] == {"c2": "alpha_beta(alpha=1, beta=0)"}
    assert not np.allclose(ex.explain(x, target=0).values, eps)


def test_epsilon_plus_flat_is_flat_on_the_first_layer_and_folds_batchnorm():
    net, x = make_cnn(), x_cnn()
    e = fl.explainer("lrp", net, composite="epsilon_plus_flat").explain(x, target=1).values
    # With BatchNorm folded into c1, flat on the (folded) input layer, z+ on c2, epsilon on fc:
    # the same as an explicit model whose first conv carries the merged weights and no BatchNorm.
    merged = make_cnn()
    with torch.no_grad():
        s = merged.bn.weight / torch.sqrt(merged.bn.running_var + merged.bn.eps)
        merged.c1.weight.mul_(s.view(-1, 1, 1, 1))
        merged.c1.bias.copy_((merged.c1.bias - merged.bn.running_mean) * s + merged.bn.bias)
        merged.bn = torch.nn.Identity()
    ref = fl.explainer("lrp", merged, rules={"c1": "flat", "c2": "zplus"}).explain(x, target=1).values
    np.testing.assert_allclose(e, ref, atol=1e-12)
    # flat on the input layer: the relevance depends on the input only through the upper layers
    assert np.isfinite(e).all()


def test_zennit_composites_if_installed():
    zennit = pytest.importorskip("zennit")
    from zennit.attribution import Gradient
    from zennit.composites import EpsilonGammaBox, EpsilonPlusFlat

    net = make_cnn(flatten=True)
    x = torch.tensor(x_cnn())
    for composite, ours in ((EpsilonPlusFlat(), "epsilon_plus_flat"),
                            (EpsilonGammaBox(low=-3.0, high=3.0), "epsilon_gamma_box")):
        out = net(x).detach()
        onehot = torch.zeros_like(out)
        onehot[:, 1] = out[:, 1]
        with Gradient(model=net, composite=composite) as attributor:
            _, theirs = attributor(x, onehot)
        mine = fl.explainer("lrp", net, composite=ours, low=-3.0, high=3.0, epsilon=1e-6).explain(x.numpy(), target=1)
        np.testing.assert_allclose(mine.values, theirs.detach().numpy(), atol=1e-5)
    del zennit


def test_model_is_unchanged_and_hooks_are_removed():
    net, x = make_cnn(), x_cnn()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    fl.explainer("lrp", net, composite="epsilon_gamma_box").explain(x, target=0)
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in net.modules())
    out = net(torch.tensor(x))  # plain forward and gradient as before
    assert out.requires_grad


def test_errors_name_the_argument():
    net = make_mlp()
    with pytest.raises(ValueError, match="composite"):
        fl.explainer("lrp", net, composite="plus")
    with pytest.raises(ValueError, match="rules names layer 'nope'"):
        fl.explainer("lrp", net, rules={"nope": "epsilon"})
    with pytest.raises(ValueError, match="rule"):
        fl.explainer("lrp", net, rules={"0": "epsilonn"})
    with pytest.raises(ValueError, match="alpha - beta = 1"):
        fl.explainer("lrp", net, composite="alpha_beta", alpha=2.0, beta=0.5)
    with pytest.raises(ValueError, match="epsilon"):
        fl.explainer("lrp", net, epsilon=-1.0)
    with pytest.raises(ValueError, match="needs a dense or convolution layer"):
        fl.explainer("lrp", net, rules={"1": "gamma"})
    odd = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3)).double()
    with pytest.raises(TypeError, match="no rule for layer '1' of type LayerNorm"):
        fl.explainer("lrp", odd)
    fl.explainer("lrp", odd, rules={"1": "pass"}).explain(np.ones((2, 4)), target=0)  # an override fixes it
    with pytest.raises(TypeError, match="torch.nn.Module"):
        fl.explainer("lrp", fl.Model(lambda t: t.sum(1), accepts="torch"))
    with pytest.raises(ValueError, match="raw"):
        fl.explainer("lrp", net, output="probability")


def test_chunks_and_row_parallel_threads_equal_the_serial_call():
    from featurelens.parallel import ThreadExecutor

    net, x = make_cnn(), x_cnn(5)
    ex = fl.explainer("lrp", net, composite="epsilon_gamma_box")
    serial = ex.explain(x, target=1)
    chunked = fl.explainer("lrp", net, composite="epsilon_gamma_box", batch_size=2).explain(x, target=1)
    np.testing.assert_allclose(chunked.values, serial.values, atol=1e-12)
    with ThreadExecutor(2) as pool:
        threaded = ex.explain(x, target=1, executor=pool)
    np.testing.assert_allclose(threaded.values, serial.values, atol=1e-12)
    np.testing.assert_allclose(threaded.params["conservation_gap"], serial.params["conservation_gap"], atol=1e-12)


def test_a_reused_in_place_relu_module_gives_the_values_of_separate_ones():
    separate = make_mlp()
    shared = make_mlp()
    relu = torch.nn.ReLU(inplace=True)
    shared[1], shared[3] = relu, relu  # one in-place ReLU module called twice (Captum refuses reuse)
    x = x_mlp()
    a = fl.explainer("lrp", separate).explain(x, target=2).values
    b = fl.explainer("lrp", shared).explain(x, target=2).values
    np.testing.assert_allclose(b, a, atol=1e-12)


def test_zbox_bounds_of_the_wrong_shape_are_refused_naming_them():
    net = make_cnn()
    ex = fl.explainer("lrp", net, composite="epsilon_gamma_box", low=np.zeros((2, 2)), high=1.0)
    with pytest.raises(ValueError, match="low and high"):
        ex.explain(x_cnn(), target=0)
    ok = fl.explainer("lrp", net, composite="epsilon_gamma_box", low=np.full((1, 8, 8), -3.0), high=3.0)
    same = fl.explainer("lrp", net, composite="epsilon_gamma_box", low=-3.0, high=3.0)
    np.testing.assert_allclose(ok.explain(x_cnn(), target=0).values, same.explain(x_cnn(), target=0).values)


# -- residual additions and concatenations ---------------------------------------------------------


class SkipConnection(torch.nn.Module):
    """Captum's test_lrp_skip_connection: ``add(linear(x), x)`` with every weight 5, no bias; the
    addition written as a module or as torch code in the forward."""

    def __init__(self, how: str, add_module=None):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2, bias=False)
        self.linear.weight.data.fill_(5)
        self.add = add_module if add_module is not None else Add()
        self.how = how

    def forward(self, x):
        h = self.linear(x)
        if self.how == "module":
            return self.add(h, x)
        if self.how == "plus":
            return h + x
        if self.how == "torch.add":
            return torch.add(x, h)
        h += x  # "in place", as torchvision's residual blocks write it
        return h


@pytest.mark.parametrize("how", ["module", "plus", "torch.add", "in place"])
def test_a_skip_connection_splits_relevance_by_the_z_rule_as_captum(how):
    # x = (2, 3), linear(x) = (25, 25), output 1 = 25 + 3 = 28: the linear branch gets 25 of it
    # (10 and 15 on the inputs), the skip 3: [[10, 18]] (Captum's expected value). Before: lrp refused
    # the two-input module, and a plain + copied the relevance to both branches ([[11.2, 44.8]]).
    e = fl.explainer("lrp", SkipConnection(how)).explain(torch.tensor([[2.0, 3.0]]), target=1)
    np.testing.assert_allclose(e.values, [[10.0, 18.0]], rtol=1e-6)
    np.testing.assert_allclose(e.params["conservation_gap"], [0.0], atol=1e-5)


def test_captums_addition_module_gets_the_same_rule_and_value():
    captum_attr = pytest.importorskip("captum.attr")
    from captum.attr._utils.custom_modules import Addition_Module

    net = SkipConnection("module", add_module=Addition_Module())
    x = torch.tensor([[2.0, 3.0]])
    theirs = captum_attr.LRP(net).attribute(x.clone().requires_grad_(True), target=1).detach().numpy()
    np.testing.assert_allclose(theirs, [[10.0, 18.0]], rtol=1e-6)
    np.testing.assert_allclose(fl.explainer("lrp", net).explain(x, target=1).values, theirs, rtol=1e-6)


class ResidualNet(torch.nn.Module):
    """dense -> ReLU -> two residual blocks (dense, ReLU, dense, + skip, ReLU) -> the two branches'
    concatenation -> dense; additions and the concatenation as modules or as torch code."""

    def __init__(self, modules: bool, bias: bool = True):
        super().__init__()
        torch.manual_seed(3)
        self.modules_, d = modules, 6
        self.inp = torch.nn.Linear(5, d, bias=bias)
        self.r0 = torch.nn.ReLU()
        self.a1, self.a2 = torch.nn.Linear(d, d, bias=bias), torch.nn.Linear(d, d, bias=bias)
        self.ra, self.ra_out = torch.nn.ReLU(), torch.nn.ReLU()
        self.b1, self.b2 = torch.nn.Linear(d, d, bias=bias), torch.nn.Linear(d, d, bias=bias)
        self.rb, self.rb_out = torch.nn.ReLU(), torch.nn.ReLU()
        self.add_a, self.add_b, self.cat = Add(), Add(), Concat(dim=1)
        self.head = torch.nn.Linear(2 * d, 3, bias=bias)
        self.double()

    def forward(self, x):
        h = self.r0(self.inp(x))
        fa, fb = self.a2(self.ra(self.a1(h))), self.b2(self.rb(self.b1(h)))
        if self.modules_:
            ya, yb = self.ra_out(self.add_a(fa, h)), self.rb_out(self.add_b(h, fb))
            return self.head(self.cat(ya, yb))
        ya, yb = self.ra_out(fa + h), self.rb_out(torch.add(h, fb))
        return self.head(torch.cat([ya, yb], dim=1))


def test_residual_net_conserves_relevance_at_epsilon_zero_with_modules_or_torch_code():
    x = np.random.default_rng(0).normal(size=(6, 5))
    net = ResidualNet(modules=True, bias=False)
    f = net(torch.tensor(x)).detach().numpy()
    target = f.argmax(1)
    # epsilon 1e-300: zero in float64 next to any z that is not 0, and 0 / 1e-300 = 0 where a dead
    # unit gives z = 0 exactly (LRP-0's 0 / 0)
    by_modules = fl.explainer("lrp", net, epsilon=1e-300).explain(x, target=target)
    np.testing.assert_allclose(by_modules.values.sum(1), f[np.arange(6), target], rtol=1e-10, atol=1e-12)
    plain = ResidualNet(modules=False, bias=False)
    by_code = fl.explainer("lrp", plain, epsilon=1e-300).explain(x, target=target)
    np.testing.assert_allclose(by_code.values, by_modules.values, rtol=1e-12, atol=1e-14)
    # a concatenation splits by slices: relevance of the head's two halves is the two branches'
    assert np.abs(by_modules.values).sum() > 0


def test_residual_net_equals_captum_lrp_with_its_addition_module():
    captum_attr = pytest.importorskip("captum.attr")
    from captum.attr._utils.custom_modules import Addition_Module

    net = ResidualNet(modules=True)
    net.add_a, net.add_b = Addition_Module(), Addition_Module()
    net.cat = None  # Captum has no concatenation module: torch.cat in the forward (its gradient)
    net.modules_ = False
    net.forward = lambda x: net.head(torch.cat(
        [net.ra_out(net.add_a(net.a2(net.ra(net.a1(h := net.r0(net.inp(x))))), h)),
         net.rb_out(net.add_b(h, net.b2(net.rb(net.b1(h)))))], dim=1))
    x = torch.tensor(np.random.default_rng(1).normal(size=(4, 5)))
    theirs = captum_attr.LRP(net).attribute(x.clone().requires_grad_(True), target=2).detach().numpy()
    ours = fl.explainer("lrp", net).explain(x, target=2).values
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    plain = fl.explainer("lrp", ResidualNet(modules=False)).explain(x, target=2).values  # + and torch.cat
    np.testing.assert_allclose(plain, theirs, rtol=1e-10, atol=1e-12)


def test_an_unknown_two_input_module_is_refused_naming_the_ways_out():
    class Gate(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.gate = torch.nn.Linear(3, 3).double(), Gate()

        def forward(self, x):
            return self.gate(self.lin(x), x)

    x = np.random.default_rng(0).normal(size=(2, 3))
    with pytest.raises(TypeError, match="no rule for layer 'gate' of type Gate"):
        fl.explainer("lrp", Net())
    with pytest.raises(ValueError, match=r"layer 'gate' \(Gate\) takes 2 inputs .*Add / Concat"):
        fl.explainer("lrp", Net(), rules={"gate": "epsilon"}).explain(x, target=0)
    # 'pass': its own additions get the z-rule, as Add would
    net = Net()
    gated = fl.explainer("lrp", net, rules={"gate": "pass"}).explain(x, target=0).values
    net.gate = Add()
    np.testing.assert_allclose(gated, fl.explainer("lrp", net).explain(x, target=0).values, rtol=1e-12)
