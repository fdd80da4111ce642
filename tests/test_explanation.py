"""Explanation provenance, persistence (npz + json, no pickle) and plots."""

import json

import numpy as np
import torch

import featurelens as fl


def test_save_and_load_round_trip(tmp_path, small_cnn):
    x = torch.randn(3, 1, 8, 8)
    e = fl.explainer("integrated_gradients", small_cnn, n_steps=8).explain(x, target=[0, 1, 1])
    path = e.save(tmp_path / "ig")
    assert path.endswith(".npz")
    back = fl.load_explanation(path)
    np.testing.assert_array_equal(back.values, e.values)
    np.testing.assert_array_equal(back.target, [0, 1, 1])
    assert back.method == "integrated_gradients"
    assert back.params["n_steps"] == 8
    assert back.params["completeness_gap"] == e.params["completeness_gap"]
    assert back.model_calls == e.model_calls and back.seconds == e.seconds
    # The file holds plain arrays only: it loads without pickle and its metadata is JSON.
    with np.load(path, allow_pickle=False) as data:
        assert json.loads(str(data["meta"]))["method"] == "integrated_gradients"


def test_provenance_fields(small_cnn):
    e = fl.explainer("smoothgrad", small_cnn, n_samples=4).explain(torch.randn(2, 1, 8, 8))
    assert e.method == "smoothgrad"
    assert e.params["n_samples"] == 4 and e.params["seed"] == 0
    assert e.model_calls >= 8 and e.seconds > 0
    assert e.values.shape == (2, 1, 8, 8) and isinstance(e.values, np.ndarray)


def test_plot_images_and_rows(small_cnn):
    import matplotlib

    matplotlib.use("Agg")
    x = torch.randn(3, 1, 8, 8)
    fig = fl.explainer("saliency", small_cnn).explain(x).plot(inputs=x)
    assert len(fig.axes) == 6  # inputs above maps
    torch.manual_seed(0)
    fig = fl.explainer("saliency", torch.nn.Linear(5, 2)).explain(torch.randn(2, 5)).plot()
    assert len(fig.axes[0].patches) == 5  # one bar per feature


def test_list_explainers_has_the_contract_names():
    names = set(fl.list_explainers())
    assert {
        "saliency", "input_x_gradient", "integrated_gradients", "smoothgrad", "gradcam",
        "agop_local", "agop_global", "agop_weighted", "random",
    } <= names


def test_extra_arrays_survive_save_and_load(tmp_path):
    rng = np.random.default_rng(0)
    coefficients = rng.normal(size=(2, 3, 4))
    e = fl.Explanation(rng.normal(size=(2, 3)), "demo", extra={"coefficients": coefficients, "steps": [1, 2]})
    back = fl.load_explanation(e.save(tmp_path / "e"))
    assert set(back.extra) == {"coefficients", "steps"}
    np.testing.assert_array_equal(back.extra["coefficients"], coefficients)
    np.testing.assert_array_equal(back.extra["steps"], [1, 2])


def test_plot_volumes_shows_the_middle_depth_slice():
    from featurelens.plots.maps import image_map

    values = np.zeros((2, 3, 5, 4, 4))
    values[:, :, 2, 1, 1] = 1.0  # only the middle slice (depth 2) holds mass, in 3 channels
    maps = image_map(values)
    assert maps.shape == (2, 4, 4)
    assert maps[0, 1, 1] == 3.0 and maps.sum() == 6.0
    fig = fl.Explanation(values, "demo").plot()
    assert len(fig.axes) == 2


def test_plot_checks_index_and_max_samples():
    import matplotlib
    import pytest

    matplotlib.use("Agg")
    e = fl.Explanation(np.ones((2, 3)), "demo")
    with pytest.raises(ValueError, match=r"index must be an int >= 0 and <= 1; got 5"):
        e.plot(index=5)  # was a raw IndexError
    with pytest.raises(TypeError, match="index must be an int"):
        e.plot(index=1.7)  # was silently truncated to 1
    images = fl.Explanation(np.ones((2, 1, 4, 4)), "demo")
    with pytest.raises(ValueError, match="max_samples must be an int >= 1; got 0"):
        images.plot(max_samples=0)
    assert len(images.plot(index=[1]).axes) == 1
