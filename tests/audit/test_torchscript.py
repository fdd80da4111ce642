"""The audit on TorchScript models: model randomisation redraws the scripted layers as torch.nn
does (equal to the eager model under the same seed), and Grad-CAM is skipped with the true reason."""

import numpy as np
import pytest
import torch

import featurelens as fl

# torch 2.13 deprecates torch.jit.script but still runs it.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _cnn():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
        torch.nn.Conv2d(3, 2, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(2 * 6 * 6, 3),
    ).eval()
    X = np.random.default_rng(0).normal(size=(6, 1, 6, 6)).astype(np.float32)
    return net, X


_KW = dict(n_explain=4, progress=False, robustness_samples=2, n_subsets=10, steps=8, as_frame=False)


def test_torchscript_randomisation_runs_and_equals_the_eager_model():
    # It failed for every method ("no layers with parameters"): TorchScript layers have no
    # reset_parameters. The layers are redrawn as torch.nn does, so the similarities equal the eager
    # model's under the same seed (same layers, same order, same draws).
    net, X = _cnn()
    script = torch.jit.script(net)
    before = {k: v.clone() for k, v in script.state_dict().items()}
    eager = fl.audit(net, X, methods=["saliency", "input_x_gradient", "random"], **_KW)
    scripted = fl.audit(script, X, methods=["saliency", "input_x_gradient", "random"], **_KW)
    assert scripted.notes == [], scripted.notes
    for method in ("saliency", "input_x_gradient"):
        e = next(r for r in eager if r["method"] == method)
        s = next(r for r in scripted if r["method"] == method)
        assert np.isfinite(s["randomization_similarity"])
        np.testing.assert_allclose(s["randomization_similarity"], e["randomization_similarity"], rtol=1e-9)
    for k, v in script.state_dict().items():  # the user's model is never modified
        assert torch.equal(v, before[k]), k


def test_reinitialise_matches_reset_parameters_of_eager_layers():
    from featurelens._audit._script_layers import ScriptLayers

    net, _ = _cnn()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(1.0)
    script = torch.jit.script(net)
    wrapper = ScriptLayers(script)
    handles = [m for _, m in wrapper.named_modules() if hasattr(m, "reset_parameters")]
    eager_layers = [m for m in net if hasattr(m, "reset_parameters")]
    assert len(handles) == len(eager_layers) == 4
    for handle, layer in zip(handles, eager_layers):
        torch.manual_seed(7)
        handle.reset_parameters()
        torch.manual_seed(7)
        layer.reset_parameters()
    for k, v in net.state_dict().items():
        assert torch.equal(script.state_dict()[k], v), k


def test_torchscript_gradcam_is_skipped_with_the_true_reason():
    # It said "the model has no convolutional layer" although the model has two.
    net, X = _cnn()
    table = fl.audit(torch.jit.script(net), X, methods=["gradcam", "saliency", "random"], randomization=False,
                     **_KW)
    row = next(r for r in table if r["method"] == "gradcam")
    assert row["status"] == "n/a"
    assert "has none" not in row["reason"]
    assert "TorchScript" in row["reason"] and "2 convolutions" in row["reason"] and "Conv2d" in row["reason"]
    # The eager model with the same layers runs it.
    eager = fl.audit(net, X, methods=["gradcam", "random"], randomization=False, **_KW)
    assert next(r for r in eager if r["method"] == "gradcam")["status"] == "ok"
