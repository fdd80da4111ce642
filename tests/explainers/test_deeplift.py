"""DeepLift and DeepLiftSHAP: Captum parity, summation-to-delta, fallbacks, hooks removed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl

nn = torch.nn


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)).double().eval()


def relu_mlp():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3)).double().eval()


def cnn_pool_between_convs():
    """Max pooling between two convolutions: Captum's max-pool rule is applied as written."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16, 3)).double().eval()


def cnn_relu_pool():
    """The usual Conv -> ReLU -> MaxPool: in Captum the max-pool rule is lost (see below)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(3, 4, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 3)).double().eval()


def rng_data(shape, seed, scale=1.0):
    return np.random.default_rng(seed).normal(size=shape) * scale


def captum_dl(net, x, base, target):
    captum = pytest.importorskip("captum.attr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, d = captum.DeepLift(net).attribute(torch.as_tensor(x), torch.as_tensor(base), target=target,
                                              return_convergence_delta=True)
    return a.detach().numpy(), d.detach().numpy()


@pytest.mark.parametrize("make, shape", [(mlp, (5,)), (cnn_pool_between_convs, (1, 8, 8))])
def test_deeplift_equals_captum(make, shape):
    net = make()
    x, base = rng_data((6, *shape), 0), rng_data((6, *shape), 1, 0.5)
    ref, _ = captum_dl(net, x, base, 1)
    e = fl.explainer("deeplift", net, baseline=base, batch_size=4).explain(x, target=1)
    np.testing.assert_allclose(e.values, ref, atol=1e-5, rtol=0)
    assert e.params["max_abs_gap"] < 1e-10
    ref0, _ = captum_dl(net, x, np.zeros_like(x), 2)  # default baseline: zeros, one reference row
    np.testing.assert_allclose(fl.explainer("deeplift", net).explain(x, target=2).values, ref0, atol=1e-5, rtol=0)


def test_deeplift_shap_equals_captum():
    captum = pytest.importorskip("captum.attr")
    for net, shape in [(mlp(), (5,)), (cnn_pool_between_convs(), (1, 8, 8))]:
        x, bg = rng_data((4, *shape), 2), rng_data((5, *shape), 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = captum.DeepLiftShap(net).attribute(torch.as_tensor(x), torch.as_tensor(bg), target=0)
        e = fl.explainer("deeplift_shap", net, background=bg, batch_size=3).explain(x, target=0)
        np.testing.assert_allclose(e.values, ref.detach().numpy(), atol=1e-5, rtol=0)
        assert e.params["max_abs_gap"] < 1e-10 and e.params["n_background"] == 5
        # values = mean over background rows of DeepLift with that row as baseline
        one = [fl.explainer("deeplift", net, baseline=b).explain(x, target=0).values for b in bg]
        np.testing.assert_allclose(e.values, np.mean(one, axis=0), atol=1e-12)


def test_summation_to_delta_on_a_relu_mlp():
    net = relu_mlp()
    x, base = rng_data((7, 5), 4), rng_data((7, 5), 5)
    e = fl.explainer("deeplift", net, baseline=base).explain(x, target=1)
    with torch.no_grad():
        change = (net(torch.as_tensor(x)) - net(torch.as_tensor(base)))[:, 1].numpy()
    np.testing.assert_allclose(e.values.sum(1), change, atol=1e-6)
    np.testing.assert_allclose(e.base_values, net(torch.as_tensor(base))[:, 1].detach().numpy(), atol=1e-12)
    assert max(abs(g) for g in e.params["completeness_gap"]) < 1e-6


def test_captum_max_pool_after_relu_misses_summation_to_delta_and_ours_does_not():
    """In Captum 0.9 a hooked module whose input is the output of another hooked module loses its
    rule: each module's tensor hooks record the gradient at its output *before* the next module's
    input hook rewrites it, so after Conv -> ReLU -> MaxPool the ReLU multiplies the plain max-pool
    gradient (everything to x's arg-max) and summation-to-delta fails. Ours applies the max-pool rule
    (exact); maxpool="gradient" reproduces Captum's values on that model."""
    net = cnn_relu_pool()
    x, base = rng_data((6, 1, 8, 8), 0), rng_data((6, 1, 8, 8), 1, 0.5)
    ref, captum_gap = captum_dl(net, x, base, 1)
    with torch.no_grad():
        change = (net(torch.as_tensor(x)) - net(torch.as_tensor(base)))[:, 1].numpy()
    assert np.abs(captum_gap).max() > 0.02
    assert (np.abs(captum_gap) > np.abs(change)).any()  # the docstring: Captum's delta exceeds the change
    ours = fl.explainer("deeplift", net, baseline=base).explain(x, target=1)
    assert ours.params["max_abs_gap"] < 1e-10
    np.testing.assert_allclose(ours.values.reshape(6, -1).sum(1), change, atol=1e-10)
    assert np.abs(ours.values - ref).max() > 0.01  # the default is not Captum's value here
    grad_rule = fl.explainer("deeplift", net, baseline=base, maxpool="gradient").explain(x, target=1)
    np.testing.assert_allclose(grad_rule.values, ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(grad_rule.params["completeness_gap"], captum_gap, atol=1e-5)


def test_deeplift_shap_on_conv_relu_maxpool_exact_by_default_and_captum_with_gradient_pooling():
    """DeepLiftShap inherits both facts: on Conv -> ReLU -> MaxPool the default sums to
    f(x) - mean f(b), Captum's DeepLiftShap does not, and maxpool="gradient" is Captum's value."""
    captum = pytest.importorskip("captum.attr")
    net = cnn_relu_pool()
    x, bg = rng_data((4, 1, 8, 8), 2), rng_data((5, 1, 8, 8), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref, delta = captum.DeepLiftShap(net).attribute(torch.as_tensor(x), torch.as_tensor(bg), target=0,
                                                        return_convergence_delta=True)
    ref, delta = ref.detach().numpy(), delta.detach().numpy()  # delta: one per (row, background row)
    assert np.abs(delta).max() > 0.02
    ours = fl.explainer("deeplift_shap", net, background=bg).explain(x, target=0)
    with torch.no_grad():
        change = net(torch.as_tensor(x))[:, 0].numpy() - net(torch.as_tensor(bg))[:, 0].numpy().mean()
    np.testing.assert_allclose(ours.values.reshape(4, -1).sum(1), change, atol=1e-10)
    assert ours.params["max_abs_gap"] < 1e-10
    assert np.abs(ours.values - ref).max() > 0.01
    grad_rule = fl.explainer("deeplift_shap", net, background=bg, maxpool="gradient").explain(x, target=0)
    np.testing.assert_allclose(grad_rule.values, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("first, second", [(nn.ReLU, nn.Tanh), (nn.Tanh, nn.ReLU)])
def test_two_activations_in_a_row_differ_from_captum_and_ours_are_exact(first, second):
    """The docstring's other case: two modules with rules in a row (no Linear between them); Captum
    loses one rule (its gap is far from 0), ours sum to f(x) - f(x'), and maxpool= changes nothing."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), first(), second(), nn.Linear(8, 3)).double().eval()
    x, base = rng_data((6, 5), 0), rng_data((6, 5), 1, 0.5)
    ref, captum_gap = captum_dl(net, x, base, 1)
    assert np.abs(captum_gap).max() > 0.02
    ours = fl.explainer("deeplift", net, baseline=base).explain(x, target=1)
    assert ours.params["max_abs_gap"] < 1e-10
    assert np.abs(ours.values - ref).max() > 0.01
    grad_rule = fl.explainer("deeplift", net, baseline=base, maxpool="gradient").explain(x, target=1)
    np.testing.assert_array_equal(grad_rule.values, ours.values)


class _Functional(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Linear(4, 6), nn.Linear(6, 2)

    def forward(self, x):
        return self.b(torch.nn.functional.relu(self.a(x)))


@pytest.mark.parametrize("act", [nn.GELU, nn.SiLU])
def test_unsupported_activation_falls_back_to_gradient_with_one_warning(act):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), act(), nn.Linear(6, 2)).double().eval()
    x = rng_data((5, 4), 0)
    with pytest.warns(UserWarning, match=r"no DeepLift rule for 1 \(" + act.__name__) as rec:
        ex = fl.explainer("deeplift", net)
    assert len([w for w in rec if "DeepLift" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no further warning per call
        e = ex.explain(x, target=0)
    assert e.params["gradient_fallback"] == [f"1 ({act.__name__})"]
    ref, captum_gap = captum_dl(net, x, np.zeros_like(x), 0)  # Captum: the same gradient, silently
    np.testing.assert_allclose(e.values, ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(e.params["completeness_gap"], captum_gap, atol=1e-5)
    assert e.params["max_abs_gap"] > 1e-3  # the gap is reported, not hidden


def test_functional_relu_gets_the_rescale_rule_and_functional_false_is_captum():
    net = _Functional().double().eval()
    x = rng_data((5, 4), 1)
    # Default: F.relu gets the Rescale rule, as a ReLU module would (same weights, module ReLU).
    e = fl.explainer("deeplift", net).explain(x, target=1)
    modules = nn.Sequential(net.a, nn.ReLU(), net.b)
    np.testing.assert_allclose(e.values, fl.explainer("deeplift", modules).explain(x, target=1).values,
                               rtol=0, atol=1e-14)
    assert e.params["max_abs_gap"] < 1e-12 and e.params["functional"] is True
    # functional=False: invisible to the hooks, the gradient passes, as in Captum (the gap shows it)
    old = fl.explainer("deeplift", net, functional=False).explain(x, target=1)
    ref, captum_gap = captum_dl(net, x, np.zeros_like(x), 1)
    np.testing.assert_allclose(old.values, ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(old.params["completeness_gap"], captum_gap, atol=1e-5)
    assert old.params["max_abs_gap"] > 1e-3


def test_reused_and_inplace_modules():
    """One in-place ReLU used twice: matched call by call (Captum raises on reuse)."""
    torch.manual_seed(0)

    class Reuse(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 2)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.c(self.act(self.b(self.act(self.a(x)))))

    net = Reuse().double().eval()
    x, base = rng_data((5, 4), 0), rng_data((5, 4), 1)
    e = fl.explainer("deeplift", net, baseline=base, batch_size=2).explain(x, target=1)
    assert e.params["max_abs_gap"] < 1e-10
    with torch.no_grad():
        change = (net(torch.as_tensor(x)) - net(torch.as_tensor(base)))[:, 1].numpy()
    np.testing.assert_allclose(e.values.sum(1), change, atol=1e-10)


def test_hooks_removed_and_model_unchanged_even_on_error():
    net = cnn_relu_pool()
    before = [(len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks)) for m in net.modules()]
    state = {k: v.clone() for k, v in net.state_dict().items()}
    ex = fl.explainer("deeplift", net)
    ex.explain(rng_data((2, 1, 8, 8), 0), target=0)
    with pytest.raises(ValueError, match="baseline"):
        ex.explain(rng_data((2, 1, 8, 8), 0), target=0, baseline=np.zeros((3, 8)))
    after = [(len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks)) for m in net.modules()]
    assert after == before
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())


def test_multiply_by_inputs_false_gives_multipliers_and_bad_arguments_are_named():
    net = relu_mlp()
    x, base = rng_data((3, 5), 0), rng_data((3, 5), 1)
    m = fl.explainer("deeplift", net, baseline=base, multiply_by_inputs=False).explain(x, target=0).values
    a = fl.explainer("deeplift", net, baseline=base).explain(x, target=0).values
    np.testing.assert_allclose(a, (x - base) * m, atol=1e-12)
    with pytest.raises(ValueError, match="maxpool"):
        fl.explainer("deeplift", net, maxpool="avg")
    with pytest.raises(ValueError, match="eps"):
        fl.explainer("deeplift", net, eps=-1.0)
    with pytest.raises(ValueError, match="background"):
        fl.explainer("deeplift_shap", net)
    with pytest.raises(ValueError, match="background"):
        fl.explainer("deeplift_shap", net, background=np.zeros((3, 4))).explain(x, target=0)


def test_deeplift_shap_rows_per_call_and_weighted_background():
    net = relu_mlp()
    x, bg = rng_data((3, 5), 0), rng_data((4, 5), 1)
    rows = []
    h = net.register_forward_pre_hook(lambda m, a: rows.append(a[0].shape[0]))
    try:
        fl.explainer("deeplift_shap", net, background=bg, batch_size=5).explain(x, target=2)
    finally:
        h.remove()
    assert max(rows) <= 5 and sum(rows) == 1 + 2 * 12  # a target check row; reference + hooked pass per pair
    w = np.array([0.1, 0.2, 0.3, 0.4])
    ew = fl.explainer("deeplift_shap", net, background=(bg, w)).explain(x, target=2)
    one = [fl.explainer("deeplift", net, baseline=b).explain(x, target=2).values for b in bg]
    np.testing.assert_allclose(ew.values, np.tensordot(w, np.array(one), axes=1), atol=1e-12)
    assert ew.params["max_abs_gap"] < 1e-10
