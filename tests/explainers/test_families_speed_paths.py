"""The fast paths of gradient_shap, guided_backprop and feature_ablation give the values of the
plain paths they replace.

- GradientSHAP's per-row draws (:func:`featurelens._random.row_draws`, pinned bitwise to numpy's
  own per-row Generators in tests/test_random.py) give the estimator on the documented draws.
- GradientSHAP builds whole copies of the batch by broadcasting: equal to the per-part path.
- Guided backprop clamps the ReLU output's gradient and lets the ReLU's own backward mask it:
  bitwise equal to the explicit rule ``g * 1[x > 0] * 1[g > 0]`` (``_GuidedReLU``), also with
  in-place ReLUs and a ReLU module used twice.
- Feature ablation builds whole copies with one broadcast ``where``: equal to the row-gather path.
"""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._random import row_draws
from featurelens.explainers.backprop import ReLUBackprop


def _cnn(inplace=False):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(inplace=inplace),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(64, 3),
    ).double().eval()


def test_gradient_shap_whole_copies_equal_the_per_part_path():
    net = _cnn()
    x = np.random.default_rng(2).normal(size=(6, 1, 8, 8))
    bg = np.random.default_rng(3).normal(size=(4, 1, 8, 8))
    target = np.array([0, 1, 2, 0, 1, 2])
    whole = fl.explainer("gradient_shap", net, background=bg, n_samples=7, seed=9).explain(x, target=target)
    parts = fl.explainer("gradient_shap", net, background=bg, n_samples=7, seed=9, batch_size=4).explain(
        x, target=target)
    np.testing.assert_allclose(whole.values, parts.values, rtol=0, atol=1e-13)
    # and both are the estimator on the documented draws
    index, alpha = row_draws(9, 0, 6, 7, 4, None)
    xt, bt = torch.tensor(x), torch.tensor(bg)
    ref = np.zeros_like(x)
    for i in range(6):
        for k in range(7):
            b = bt[index[i, k]]
            pt = (b + alpha[i, k] * (xt[i] - b))[None].requires_grad_(True)
            (g,) = torch.autograd.grad(net(pt)[0, target[i]], pt)
            ref[i] += (g[0] * (xt[i] - b)).numpy() / 7
    np.testing.assert_allclose(whole.values, ref, rtol=0, atol=1e-12)


class _Twice(torch.nn.Module):
    """One ReLU module used twice, its output read by two later operations. (A ReLU output changed
    in place afterwards breaks the plain gradient of the model itself, as in Captum.)"""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.a, self.b, self.c = torch.nn.Linear(6, 9), torch.nn.Linear(9, 9), torch.nn.Linear(9, 3)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        h = self.relu(self.a(x))
        h = self.relu(self.b(h) - 0.1)
        return self.c(h * 2.0) + h[:, :3]


@pytest.mark.parametrize("make", [_cnn, lambda: _cnn(inplace=True), lambda: _Twice().double()])
def test_guided_backprop_gradient_hook_equals_the_explicit_rule(make):
    net = make()
    shape = (1, 8, 8) if isinstance(net, torch.nn.Sequential) else (6,)
    x = torch.tensor(np.random.default_rng(4).normal(size=(5,) + shape))
    target = torch.tensor([0, 1, 2, 1, 0])
    ex = fl.explainer("guided_backprop", net)
    fast = ex.explain(x, target=target).values
    with ReLUBackprop._hooked(ex):  # the explicit autograd rule, _GuidedReLU
        explicit = ex.model.gradient(x, target).numpy()
    np.testing.assert_array_equal(fast, explicit)
    assert np.abs(fast - fl.explainer("saliency", net).explain(x, target=target).values).max() > 1e-3
    for m in net.modules():
        assert not m._forward_hooks and not m._forward_pre_hooks and not m._backward_hooks


@pytest.mark.parametrize("groups", [None, np.repeat(np.arange(4), 16).reshape(1, 8, 8)])
def test_feature_ablation_whole_copies_equal_the_gather_path(groups):
    net = _cnn()
    x = np.random.default_rng(6).normal(size=(5, 1, 8, 8))
    target = np.array([2, 1, 0, 1, 2])
    whole = fl.explainer("feature_ablation", net, groups=groups).explain(x, target=target).values
    gathered = fl.explainer("feature_ablation", net, groups=groups, batch_size=7).explain(x, target=target).values
    np.testing.assert_allclose(whole, gathered, rtol=0, atol=1e-13)
    # planted truth: player 0 ablated by hand
    player = np.zeros((1, 8, 8), bool)
    player.flat[0 if groups is None else slice(0, 16)] = True
    xt = torch.tensor(x)
    with torch.no_grad():
        drop = (net(xt) - net(xt * torch.tensor(~player))).gather(1, torch.tensor(target)[:, None])[:, 0]
    np.testing.assert_allclose(whole[:, 0, 0, 0], drop.numpy(), rtol=0, atol=1e-13)
