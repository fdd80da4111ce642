"""Explainers on TorchScript models: those that work through module hooks (rule-based backward
passes, layer reads) refuse a scripted or traced model with the reason, declared once in
``Requires.hooks`` and read by the audit's applicability; the plain gradient methods run on it and
equal their values on the eager module."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import _harness
from featurelens.explainers import explainer_class, list_explainers

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit")  # script and trace: deprecated in torch 2.13


def eager_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(2 * 8 * 8, 3)).eval()


X = np.random.default_rng(0).normal(size=(2, 1, 8, 8)).astype(np.float32)
# The rule-based methods of the issue: deeplift's values on a scripted model equalled input x
# gradient (no rule hook ran) while the audit listed it "ok".
RULE_BASED = ["deeplift", "deeplift_shap", "lrp", "guided_backprop", "deconvolution", "layer_deeplift",
              "layer_deeplift_shap"]
HOOKED = sorted(n for n in list_explainers() if explainer_class(n).requires.hooks is not None)
KWARGS = {"deeplift_shap": {"background": np.zeros((2, 1, 8, 8), np.float32)},
          "layer_deeplift_shap": {"background": np.zeros((2, 1, 8, 8), np.float32)}}


def _kwargs(name):
    kw = dict(KWARGS.get(name, {}))
    if name.startswith(("layer_", "neuron_")):
        kw["layer"] = "1"
    if name.startswith("neuron_"):
        kw["neuron"] = (0,)
    return kw


def test_every_rule_based_method_declares_its_hooks():
    assert set(RULE_BASED) <= set(HOOKED)
    assert {"gradcam", "layer_integrated_gradients", "neuron_gradient"} <= set(HOOKED)
    assert explainer_class("saliency").requires.hooks is None


@pytest.mark.parametrize("compile_", ["script", "trace"])
@pytest.mark.parametrize("name", HOOKED)
def test_hooked_methods_refuse_torchscript_naming_the_method_and_the_reason(name, compile_):
    net = eager_cnn()
    scripted = torch.jit.script(net) if compile_ == "script" else torch.jit.trace(net, torch.zeros(1, 1, 8, 8))
    with pytest.raises(TypeError, match=rf"^explainer {name!r} needs module hooks .*TorchScript modules do not "
                                        r"run.*explain the eager torch module instead"):
        fl.explainer(name, scripted, **_kwargs(name))
    reason = explainer_class(name).requires.why_not(fl.Model(scripted), (1, 8, 8))
    assert reason is not None and "TorchScript" in reason
    chosen, skipped = _harness.applicable([name], scripted, (1, 8, 8))
    assert name not in chosen and name in skipped
    # the eager module is explained as before
    assert explainer_class(name).requires.why_not(fl.Model(net), (1, 8, 8)) in (
        None, "needs a named layer (layer=...), which the audit and benchmark do not choose")


def test_an_eager_model_holding_a_scripted_part_is_refused_naming_it():
    inner = torch.jit.script(eager_cnn())
    outer = torch.nn.Sequential(torch.nn.Identity(), inner)
    with pytest.raises(TypeError, match=r"explainer 'deeplift' .*holds a TorchScript module \(1\)"):
        fl.explainer("deeplift", outer)


@pytest.mark.parametrize("name", ["saliency", "input_x_gradient", "integrated_gradients"])
def test_plain_gradient_methods_run_on_torchscript_with_the_eager_values(name):
    net = eager_cnn()
    scripted = torch.jit.script(net)
    eager = fl.explainer(name, net).explain(X, target=1).values
    compiled = fl.explainer(name, scripted).explain(X, target=1).values
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-7)
