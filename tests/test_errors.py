"""Bad input gets a clear error naming the argument, what was given and what was expected."""

import numpy as np
import pytest
import torch

import featurelens as fl


def mlp64():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_x(bad):
    x = np.zeros((2, 1, 8, 8), np.float32)
    x[1, 0, 3, 3] = bad
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        fl.explainer("saliency", mlp64()).explain(x)


def test_target_out_of_range_and_wrong_length():
    x = torch.randn(3, 1, 8, 8)
    ex = fl.explainer("integrated_gradients", mlp64())
    with pytest.raises(ValueError, match=r"target 2 is out of range.*2 output\(s\).*\[0, 1\]"):
        ex.explain(x, target=2)
    with pytest.raises(ValueError, match="target -1 is out of range"):
        ex.explain(x, target=[0, -1, 1])
    with pytest.raises(ValueError, match=r"one int per sample \(3\); got shape \(2,\)"):
        ex.explain(x, target=[0, 1])
    with pytest.raises(TypeError, match="target must be"):
        ex.explain(x, target=1.0)


def test_wrong_input_shape():
    with pytest.raises(ValueError, match=r"x has shape \(2, 1, 9, 9\).*model failed"):
        fl.explainer("saliency", mlp64()).explain(torch.randn(2, 1, 9, 9))
    with pytest.raises(ValueError, match=r"samples along the first axis.*x\[None\]"):
        fl.explainer("saliency", torch.nn.Linear(4, 2)).explain(torch.randn(4))


def test_wrong_dtype():
    with pytest.raises(TypeError, match="x must be a floating-point array; got dtype int64"):
        fl.explainer("saliency", mlp64()).explain(np.zeros((2, 1, 8, 8), np.int64))


def test_unknown_explainer_name_and_parameter():
    with pytest.raises(ValueError, match=r"unknown explainer name 'integrated_gradient'.*Did you mean 'integrated_gradients'"):
        fl.explainer("integrated_gradient", mlp64())
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) steps; it accepts: n_steps"):
        fl.explainer("integrated_gradients", mlp64(), steps=10)


def test_gradcam_on_model_without_conv():
    with pytest.raises(ValueError, match="gradcam needs a convolutional layer"):
        fl.explainer("gradcam", mlp64())


def test_gradient_explainer_on_numpy_callable():
    with pytest.raises(TypeError, match="saliency.*needs gradients"):
        fl.explainer("saliency", lambda a: a.sum(1))


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("integrated_gradients", {"n_steps": 0}, "n_steps must be an int >= 1"),
        ("integrated_gradients", {"method": "simpson"}, "method must be one of"),
        ("smoothgrad", {"n_samples": 0}, "n_samples must be an int >= 1"),
        ("smoothgrad", {"noise_level": -1.0}, "noise_level must be"),
        ("smoothgrad", {"variant": "max"}, "variant must be one of"),
        ("saliency", {"batch_size": 0}, "batch_size must be an int >= 1"),
        ("gradcam", {"layer": "nope"}, "layer 'nope' is not a submodule"),
    ],
)
def test_bad_parameters(name, params, message, small_cnn):
    with pytest.raises((ValueError, TypeError), match=message):
        fl.explainer(name, small_cnn, **params)


def test_bad_baseline_shape(small_cnn):
    with pytest.raises(ValueError, match=r"baseline must be a scalar, shaped like one input \(1, 8, 8\)"):
        fl.explainer("integrated_gradients", small_cnn, baseline=np.zeros((3, 3), np.float32)).explain(torch.randn(2, 1, 8, 8))


def test_nan_baseline(small_cnn):
    base = np.zeros((1, 8, 8), np.float32)
    base[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="baseline contains NaN or inf"):
        fl.explainer("integrated_gradients", small_cnn).explain(torch.randn(2, 1, 8, 8), baseline=base)
