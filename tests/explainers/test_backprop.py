"""guided_backprop, deconvolution and gradient_shap: Captum parity, analytic identities, seeds,
errors and hook hygiene.

GradientSHAP parity: Captum's ``GradientShap`` draws its baseline indices with ``np.random.choice``,
its input noise with ``torch.normal`` and its points with ``np.random.uniform`` on the global
generators; its API takes no draws. The test records exactly those draws (wrapping the three
functions for the duration of one Captum call) and feeds them to featurelens' explainer by
replacing only its drawing step (``_draws``), so the two estimators are compared on identical
random numbers; the agreement is then to rounding (1e-9 asked, 1e-5 required by the issue).
"""

import threading
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import featurelens as fl
from featurelens.explainers.backprop import _Draws


def make_cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(inplace=True),  # in-place: the hook must keep the module's input
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 3),
    ).double().eval()


def make_mlp():
    torch.manual_seed(1)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 10), torch.nn.ReLU(), torch.nn.Linear(10, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)
    ).double().eval()


class FunctionalNet(torch.nn.Module):
    """One nn.ReLU module and one functional ReLU: only the module is modified (as in Captum)."""

    def __init__(self, module_relu: bool = True):
        super().__init__()
        torch.manual_seed(2)
        self.a, self.b, self.c = torch.nn.Linear(6, 10), torch.nn.Linear(10, 8), torch.nn.Linear(8, 3)
        self.relu = torch.nn.ReLU() if module_relu else None

    def forward(self, x):
        h = self.a(x)
        h = self.relu(h) if self.relu is not None else F.relu(h)
        return self.c(F.relu(self.b(h)))


CASES = {
    "cnn": (make_cnn, lambda n: np.random.default_rng(0).normal(size=(n, 1, 8, 8))),
    "mlp": (make_mlp, lambda n: np.random.default_rng(0).normal(size=(n, 6))),
}


def _captum(name):
    captum_attr = pytest.importorskip("captum.attr")
    return {"guided_backprop": captum_attr.GuidedBackprop, "deconvolution": captum_attr.Deconvolution}[name]


def _close(a, b, tol=1e-5):
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


# --------------------------------------------------------------------------------------------------
# guided backprop and deconvolution


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", ["guided_backprop", "deconvolution"])
def test_modified_backprop_equals_captum(name, case):
    make, data = CASES[case]
    net, x = make(), data(5)
    target = np.array([0, 1, 2, 1, 0])
    ours = fl.explainer(name, net, batch_size=2).explain(x, target=target).values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _captum(name)(net).attribute(torch.tensor(x), target=torch.tensor(target)).detach().numpy()
    _close(ours, ref)
    # and it really is not the plain gradient (the rule changed something)
    plain = fl.explainer("saliency", net).explain(x, target=target).values
    assert np.abs(ours - plain).max() > 1e-3


@pytest.mark.parametrize("name", ["guided_backprop", "deconvolution"])
def test_functional_relu_gets_the_rule_and_functional_false_keeps_its_gradient_like_captum(name):
    net, x = FunctionalNet().double(), np.random.default_rng(3).normal(size=(4, 6))
    # Default: F.relu gets the rule of a ReLU module, so the values are those of the same
    # weights with a module at every ReLU.
    modules = torch.nn.Sequential(net.a, torch.nn.ReLU(), net.b, torch.nn.ReLU(), net.c)
    ours = fl.explainer(name, net).explain(x, target=1).values
    np.testing.assert_allclose(ours, fl.explainer(name, modules).explain(x, target=1).values, rtol=0, atol=1e-14)
    bare = FunctionalNet(module_relu=False).double()
    np.testing.assert_allclose(fl.explainer(name, bare).explain(x, target=1).values, ours, rtol=0, atol=1e-14)
    # functional=False: only modules are modified, as in Captum
    old = fl.explainer(name, net, functional=False).explain(x, target=1).values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _captum(name)(net).attribute(torch.tensor(x), target=1).detach().numpy()
    _close(old, ref)
    assert np.abs(old - ours).max() > 1e-3
    # functional=False on a model with functional ReLUs only: a warning, and the plain gradient
    with pytest.warns(UserWarning, match="no torch.nn.ReLU module"):
        ex = fl.explainer(name, bare, functional=False)
    plain = fl.explainer("saliency", bare).explain(x, target=1).values
    np.testing.assert_array_equal(ex.explain(x, target=1).values, plain)


@pytest.mark.parametrize("name", ["guided_backprop", "deconvolution"])
def test_a_forward_without_any_relu_warns_once_and_gives_the_gradient(name):
    torch.manual_seed(6)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    x = np.random.default_rng(7).normal(size=(3, 6))
    ex = fl.explainer(name, net)
    with pytest.warns(UserWarning, match="ran no ReLU"):
        values = ex.explain(x, target=0).values
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per explainer
        ex.explain(x, target=0)
    np.testing.assert_array_equal(values, fl.explainer("saliency", net).explain(x, target=0).values)


def test_rules_on_one_hidden_layer_by_hand():
    # f = v . relu(W x): grad_h = v; guided = W^T (1[Wx > 0] max(v, 0)); deconv = W^T max(v, 0).
    torch.manual_seed(4)
    net = torch.nn.Sequential(torch.nn.Linear(5, 7, bias=False), torch.nn.ReLU(),
                              torch.nn.Linear(7, 1, bias=False)).double()
    w, v = net[0].weight.detach().numpy(), net[2].weight.detach().numpy()[0]
    x = np.random.default_rng(5).normal(size=(3, 5))
    mask = (x @ w.T) > 0
    guided = (mask * np.maximum(v, 0)) @ w
    deconv = np.tile(np.maximum(v, 0) @ w, (3, 1))
    np.testing.assert_allclose(fl.explainer("guided_backprop", net).explain(x, target=0).values, guided, atol=1e-12)
    np.testing.assert_allclose(fl.explainer("deconvolution", net).explain(x, target=0).values, deconv, atol=1e-12)


@pytest.mark.parametrize("name", ["guided_backprop", "deconvolution"])
def test_hooks_removed_and_gradients_plain_afterwards(name):
    net, x = make_cnn(), CASES["cnn"][1](3)
    before = fl.explainer("saliency", net).explain(x, target=1).values
    fl.explainer(name, net).explain(x, target=1)
    for m in net.modules():
        assert not m._forward_hooks and not m._forward_pre_hooks and not m._backward_hooks
    np.testing.assert_array_equal(fl.explainer("saliency", net).explain(x, target=1).values, before)


@pytest.mark.parametrize("name", ["guided_backprop", "deconvolution"])
def test_hooks_removed_when_the_pass_fails(name):
    class Boom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.relu = torch.nn.Linear(4, 2), torch.nn.ReLU()
            self.fail = False

        def forward(self, x):
            if self.fail:
                raise RuntimeError("boom")
            return self.relu(self.lin(x))

    net = Boom().double()
    ex = fl.explainer(name, net)
    net.fail = True
    with pytest.raises(ValueError, match="boom"):
        ex._attribute(torch.zeros(2, 4, dtype=torch.float64), torch.zeros(2, dtype=torch.long), None)
    assert not net.relu._forward_hooks and not net.relu._forward_pre_hooks


def test_hooks_act_only_on_the_explaining_thread():
    net, x = make_mlp(), CASES["mlp"][1](3)
    plain = fl.explainer("saliency", net).explain(x, target=0).values
    ex = fl.explainer("guided_backprop", net)
    other = {}
    with ex._hooked():  # another thread's pass while this thread's hooks are registered
        t = threading.Thread(target=lambda: other.update(v=fl.explainer("saliency", net).explain(x, target=0).values))
        t.start()
        t.join()
    np.testing.assert_array_equal(other["v"], plain)


def test_modified_backprop_needs_a_module():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        fl.explainer("guided_backprop", lambda t: t.sum(1, keepdim=True) if isinstance(t, torch.Tensor) else t)


# --------------------------------------------------------------------------------------------------
# GradientSHAP


def _captum_gradient_shap(net, x, bg, target, n_samples, stdevs, monkeypatch):
    """Captum's GradientShap on the global generators, and the draws it made (as _Draws)."""
    captum_attr = pytest.importorskip("captum.attr")
    rec = {}
    choice, uniform, normal = np.random.choice, np.random.uniform, torch.normal

    def rec_choice(*a, **k):
        rec["index"] = np.asarray(choice(*a, **k))
        return rec["index"]

    def rec_uniform(*a, **k):
        rec["alpha"] = np.asarray(uniform(*a, **k))
        return rec["alpha"]

    def rec_normal(*a, **k):
        rec["noise"] = normal(*a, **k)
        return rec["noise"]

    np.random.seed(11)
    torch.manual_seed(11)
    with monkeypatch.context() as m:
        m.setattr(np.random, "choice", rec_choice)
        m.setattr(np.random, "uniform", rec_uniform)
        m.setattr(torch, "normal", rec_normal)
        ref = captum_attr.GradientShap(net).attribute(
            torch.tensor(x), baselines=torch.tensor(bg), target=torch.tensor(target),
            n_samples=n_samples, stdevs=stdevs,
        ).detach().numpy()
    n = x.shape[0]
    # Captum's expanded rows are sample-major: row i * S + k is sample i's k-th draw.
    index = torch.as_tensor(rec["index"]).view(n, n_samples)
    alpha = torch.as_tensor(rec["alpha"], dtype=torch.float64).view(n, n_samples)
    noise = rec["noise"].double().view(n, n_samples, *x.shape[1:]) / stdevs if stdevs > 0 else None

    class Noise:
        def rows(self, copy, sample):
            return noise[sample, copy]

    return ref, _Draws(index, alpha, None if noise is None else Noise())


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("stdevs", [0.0, 0.25])
def test_gradient_shap_equals_captum_on_the_same_draws(case, stdevs, monkeypatch):
    make, data = CASES[case]
    net, x = make(), data(4)
    bg = np.random.default_rng(9).normal(size=(6, *x.shape[1:]))
    target = np.array([2, 0, 1, 1])
    ref, draws = _captum_gradient_shap(net, x, bg, target, 7, stdevs, monkeypatch)
    ex = fl.explainer("gradient_shap", net, background=bg, n_samples=7, stdevs=stdevs, batch_size=5)
    ex._draws = lambda xt, n_background: draws
    ours = ex.explain(x, target=target).values
    _close(ours, ref, tol=1e-9)


def _linear(d=5, k=2):
    torch.manual_seed(6)
    return torch.nn.Linear(d, k).double()


def test_gradient_shap_linear_is_w_times_x_minus_baseline_exactly():
    net = _linear()
    w = net.weight.detach().numpy()
    x = np.random.default_rng(1).normal(size=(4, 5))
    b = np.random.default_rng(2).normal(size=(1, 5))
    e = fl.explainer("gradient_shap", net, background=b, n_samples=3).explain(x, target=1)
    np.testing.assert_allclose(e.values, w[1] * (x - b), atol=1e-12)
    # no background: one zero baseline, w * x
    e0 = fl.explainer("gradient_shap", net, n_samples=2).explain(x, target=0)
    np.testing.assert_allclose(e0.values, w[0] * x, atol=1e-12)


def test_gradient_shap_linear_with_a_background_is_w_times_x_minus_drawn_mean():
    net = _linear()
    w = net.weight.detach().numpy()
    x = np.random.default_rng(1).normal(size=(3, 5))
    bg = np.random.default_rng(2).normal(size=(8, 5))
    ex = fl.explainer("gradient_shap", net, background=bg, n_samples=6, seed=4)
    e = ex.explain(x, target=1)
    # the draws the call made (same seed, same rows): exact given the drawn baselines
    ex._stream_root, ex._row_start = 4, 0
    index = ex._draws(torch.tensor(x), 8).index.numpy()
    np.testing.assert_allclose(e.values, w[1] * (x - bg[index].mean(1)), atol=1e-12)


def test_gradient_shap_linear_in_expectation_with_noise_and_weights():
    net = _linear()
    w = net.weight.detach().numpy()
    x = np.random.default_rng(1).normal(size=(2, 5))
    bg = np.random.default_rng(2).normal(size=(4, 5))
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    s, sd = 4000, 0.5
    e = fl.explainer("gradient_shap", net, background=(bg, weights), n_samples=s, stdevs=sd, seed=0).explain(x, target=0)
    expected = w[0] * (x - weights @ bg)
    # a / w = x + mean(noise) - mean(drawn b): standard error sqrt(sd^2 + var_w(b)) / sqrt(s)
    var_b = weights @ (bg - weights @ bg) ** 2
    se = np.abs(w[0]) * np.sqrt(sd**2 + var_b) / np.sqrt(s)
    assert np.all(np.abs(e.values - expected) < 5 * se + 1e-12)


def test_gradient_shap_rows_independent_of_batching_and_split():
    net, x = make_cnn(), CASES["cnn"][1](5)
    bg = np.random.default_rng(3).normal(size=(4, 1, 8, 8))
    kw = {"background": bg, "n_samples": 4, "stdevs": 0.2, "seed": 8}
    whole = fl.explainer("gradient_shap", net, **kw).explain(x, target=1).values
    small = fl.explainer("gradient_shap", net, batch_size=3, **kw).explain(x, target=1).values
    np.testing.assert_allclose(small, whole, atol=1e-12)
    tail = fl.explainer("gradient_shap", net, **kw).explain(x[2:], target=1, first_row=2).values
    np.testing.assert_allclose(tail, whole[2:], atol=1e-12)
    other = fl.explainer("gradient_shap", net, **{**kw, "seed": 9}).explain(x, target=1).values
    assert np.abs(other - whole).max() > 1e-6


def test_gradient_shap_relative_noise_scales_with_the_input_range():
    net = _linear()
    x = np.random.default_rng(1).normal(size=(2, 5))
    a = fl.explainer("gradient_shap", net, stdevs=0.1, noise="relative", seed=1).explain(x, target=0).values
    b = fl.explainer("gradient_shap", net, stdevs=0.1, noise="relative", seed=1).explain(10 * x, target=0).values
    np.testing.assert_allclose(b, 10 * a, rtol=1e-10)  # relative noise: scale-equivariant on a linear model


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"stdevs": -0.1}, "stdevs"),
        ({"noise": "loud"}, "noise"),
        ({"background": np.array([[np.nan] * 5])}, "background"),
        ({"background": "zeros"}, "background"),
    ],
)
def test_gradient_shap_bad_arguments_are_named(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        fl.explainer("gradient_shap", _linear(), **kwargs)


def test_gradient_shap_background_of_the_wrong_shape_is_named():
    ex = fl.explainer("gradient_shap", _linear(), background=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="background"):
        ex.explain(np.zeros((2, 5)), target=0)


@pytest.mark.parametrize("name, kwargs", [
    ("guided_backprop", {}), ("deconvolution", {}),
    ("gradient_shap", {"n_samples": 3, "stdevs": 0.2, "seed": 5}),
])
def test_row_parallel_threads_equal_serial(name, kwargs):
    from featurelens.parallel import ThreadExecutor

    net, x = make_cnn(), CASES["cnn"][1](6)
    if name == "gradient_shap":
        kwargs = {**kwargs, "background": np.random.default_rng(3).normal(size=(4, 1, 8, 8))}
    ex = fl.explainer(name, net, batch_size=4, **kwargs)
    serial = ex.explain(x, target=2).values
    with ThreadExecutor(2) as pool:
        par = ex.explain(x, target=2, executor=pool).values
    np.testing.assert_allclose(par, serial, atol=1e-12)
    for m in net.modules():
        assert not m._forward_hooks and not m._forward_pre_hooks
