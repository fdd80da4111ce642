"""groups= on the black-box image explainers: "patches", "slic" / "superpixels", a per-image callable,
and the refusal of an ungrouped image game that cannot fit (issue 34 item 4)."""

import sys

import numpy as np
import pytest

import featurelens as fl
from featurelens import _budgets
from featurelens.explainers._image_groups import default_patch_size, patch_labels, resolve_groups, slic_labels

torch = pytest.importorskip("torch")


def _model(weights):
    """A numpy model: output k is tanh of the inputs weighted by weights[k] (one input's shape)."""
    w = np.asarray(weights, dtype=np.float64).reshape(len(weights), -1)

    def f(x):
        x = np.asarray(x, dtype=np.float64).reshape(np.shape(x)[0], -1)
        return np.tanh(x @ w.T)

    return f


def _images(n=2, shape=(3, 16, 16), seed=0):
    return np.random.default_rng(seed).normal(size=(n, *shape)).astype(np.float64)


def _structured(n=2, size=32):
    """Images with flat regions (SLIC on pure noise merges everything into one segment)."""
    rng = np.random.default_rng(1)
    out = np.zeros((n, 3, size, size))
    for i in range(n):
        for _ in range(6):
            r, c, h, w = rng.integers(0, size - 8, 4)
            out[i, :, r : r + 8 + h % 8, c : c + 8 + w % 8] = rng.random((3, 1, 1))
    return out + 0.01 * rng.random(out.shape)


# -- patches -------------------------------------------------------------------------------------


def test_default_patches_give_196_patches_of_16_px_on_224():
    assert default_patch_size(224, 224) == 16
    labels = patch_labels((3, 224, 224))
    assert labels.max() + 1 == 196
    assert (labels[0] == labels[2]).all()  # the channels share a patch's label
    assert labels[0, 15, 15] == 0 and labels[0, 16, 0] == 14 and labels[0, 0, 16] == 1
    assert default_patch_size(28, 28) == 2 and default_patch_size(225, 224) is None


@pytest.mark.parametrize("name", ["kernel_shap", "permutation_shap", "feature_ablation", "lime", "occlusion"])
def test_patches_equal_the_explicit_label_array(name):
    x = _images()
    f = _model(np.random.default_rng(2).normal(size=(2, 3, 16, 16)))
    kw = {"budget": 60} if name in ("kernel_shap", "permutation_shap") else {}
    spelled = fl.explainer(name, f, groups="patches:4", **kw).explain(x, target=1)
    explicit = fl.explainer(name, f, groups=patch_labels((3, 16, 16), 4), **kw).explain(x, target=1)
    np.testing.assert_array_equal(spelled.values, explicit.values)
    np.testing.assert_array_equal(spelled.group_values, explicit.group_values)
    assert spelled.group_values.shape == (2, 16) and spelled.groups == list(range(16))
    assert spelled.params["grouping"] == "patches:4"


def test_feature_ablation_with_patches_is_nonzero_only_on_the_patch_the_model_reads():
    w = np.zeros((1, 3, 16, 16))
    w[0, :, 4:8, 8:12] = 1.0  # patch (1, 2) of the 4 px grid: label 1 * 4 + 2 = 6
    e = fl.explainer("feature_ablation", _model(w), groups="patches:4").explain(_images() + 1.0, target=0)
    nonzero = np.flatnonzero(np.abs(e.group_values).sum(0))
    assert nonzero.tolist() == [6]
    assert (e.values[:, :, 4:8, 8:12] != 0).all() and np.count_nonzero(e.values) == 2 * 3 * 16


@pytest.mark.parametrize("name", ["kernel_shap", "permutation_shap"])
def test_shapley_with_patches_is_efficient(name):
    x = _images(shape=(3, 28, 28))
    f = _model(np.random.default_rng(3).normal(size=(2, 3, 28, 28)) / 10)
    e = fl.explainer(name, f, groups="patches", budget=500).explain(x, target=0)
    assert e.params["n_players"] == 196  # 28 x 28: 196 patches of 2 px
    gap = f(x)[:, 0] - f(np.zeros_like(x))[:, 0]
    np.testing.assert_allclose(e.group_values.sum(1), gap, atol=1e-10)


# -- slic and callables --------------------------------------------------------------------------


def test_slic_groups_equal_skimage_slic_called_directly():
    from skimage.segmentation import slic

    x = _structured()
    f = _model(np.random.default_rng(4).normal(size=(2, 3, 32, 32)) / 30)
    e = fl.explainer("kernel_shap", f, groups="slic:20", budget=200).explain(x, target=0)
    for i in range(2):
        scaled = (x[i] - x[i].min()) / (x[i].max() - x[i].min())
        direct = slic(np.moveaxis(scaled, 0, -1), n_segments=20, compactness=10.0, start_label=0, channel_axis=-1)
        direct = np.unique(direct, return_inverse=True)[1].reshape(32, 32)
        assert direct.max() >= 3  # a real segmentation, not one segment
        np.testing.assert_array_equal(e.extra["groups"][i], np.broadcast_to(direct, (3, 32, 32)))
        np.testing.assert_array_equal(slic_labels(x[i], 20)[0], direct)
        assert e.params["n_players"][i] == direct.max() + 1
    # per image: group_values has a column per label of the largest segmentation, NaN beyond a row's
    n = e.params["n_players"]
    assert e.group_values.shape == (2, max(n))
    for i in range(2):
        assert np.isfinite(e.group_values[i, : n[i]]).all() and np.isnan(e.group_values[i, n[i]:]).all()
    gap = f(x)[:, 0] - f(np.zeros_like(x))[:, 0]
    np.testing.assert_allclose(np.nansum(e.group_values, 1), gap, atol=1e-10)


def test_the_callable_is_called_once_per_image_with_that_image():
    x = _images(n=3, shape=(3, 8, 8))
    seen = []

    def halves(image):
        seen.append(np.array(image))
        return (np.arange(8)[None, :] >= 4).repeat(8, 0).astype(int) + 2  # labels 2, 3 on (H, W)

    f = _model(np.random.default_rng(5).normal(size=(2, 3, 8, 8)))
    e = fl.explainer("feature_ablation", f, groups=halves).explain(x, target=1)
    assert len(seen) == 3
    for i in range(3):
        np.testing.assert_array_equal(seen[i], x[i])
    assert e.params["n_players"] == [2, 2, 2] and e.groups == [0, 1]  # renumbered 0..n-1
    expected = fl.explainer("feature_ablation", f, groups=np.broadcast_to(halves(x[0]) - 2, (3, 8, 8)).copy())
    np.testing.assert_allclose(e.values, expected.explain(x, target=1).values)


def test_per_image_occlusion_equals_each_row_with_its_labels():
    x = _structured(n=2, size=16)
    f = _model(np.random.default_rng(6).normal(size=(2, 3, 16, 16)))
    e = fl.explainer("occlusion", f, groups="slic:6").explain(x, target=0)
    for i in range(2):
        one = fl.explainer("occlusion", f, groups=slic_labels(x[i], 6)).explain(x[i : i + 1], target=0)
        np.testing.assert_allclose(e.values[i], one.values[0])
        assert e.params["n_windows"][i] == one.params["n_windows"]


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("groups, x_shape, error, match", [
    ("tiles", (3, 16, 16), ValueError, r"groups must be None, an int array.*\"patches\".*got the string 'tiles'"),
    ("patches:abc", (3, 16, 16), ValueError, r"groups='patches:abc': expected an int after the colon"),
    ("patches:0", (3, 16, 16), ValueError, r"groups='patches:0': expected a positive int"),
    ("patches:5", (3, 16, 16), ValueError, r"the patch side 5 does not divide the 16 x 16 image; expected a side "
                                           r"dividing both \(1, 2, 4, 8, 16\)"),
    ("patches:32", (3, 16, 16), ValueError, r"the patch side 32 is bigger than the 16 x 16 image"),
    ("patches", (3, 225, 224), ValueError, r"no square patch side divides both sides of the 225 x 224 image"),
    ("patches", (12,), ValueError, r"groups='patches' needs image inputs.*got inputs of shape \(12,\)"),
    ("slic", (2, 3, 8, 8), ValueError, r"groups='slic' needs image inputs.*got inputs of shape \(2, 3, 8, 8\)"),
    (np.zeros((4, 4), int), (3, 4, 4), ValueError, r"groups must be shaped like one input \(3, 4, 4\).*got shape \(4, 4\)"),
    (np.zeros((3, 4, 4)), (3, 4, 4), TypeError, r"got an array of dtype float64"),
    (True, (3, 4, 4), TypeError, r"got the bool True"),
    (lambda im: np.zeros((5, 5), int), (3, 4, 4), ValueError,
     r"must return labels shaped like the image, \(3, 4, 4\) or \(4, 4\); got shape \(5, 5\)"),
    (lambda im: np.zeros((4, 4)), (3, 4, 4), TypeError, r"must return int labels; got dtype float64"),
])
def test_bad_groups_are_named(groups, x_shape, error, match):
    f = _model(np.ones((1, *x_shape)))
    with pytest.raises(error, match=match):
        fl.explainer("feature_ablation", f, groups=groups, baseline=0.0).explain(np.ones((1, *x_shape)))


def test_slic_refuses_a_nan_image():
    image = np.ones((3, 8, 8))
    image[0, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r'groups="slic" cannot segment an image holding NaN or inf'):
        slic_labels(image)


def test_slic_without_scikit_image_names_the_pip_line_and_patches(monkeypatch):
    monkeypatch.setitem(sys.modules, "skimage.segmentation", None)
    with pytest.raises(ImportError, match=r'pip install scikit-image; or use groups="patches"'):
        resolve_groups("slic")


def test_group_names_are_refused_for_per_image_groups():
    f = _model(np.ones((1, 3, 16, 16)))
    ex = fl.explainer("feature_ablation", f, groups="slic:4")
    with pytest.raises(ValueError, match="group_names cannot name per-image groups"):
        ex.explain(_structured(1, 16), target=0, group_names=["a", "b"])


# -- the refusal of an ungrouped image game, before any model call --------------------------------


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 2, 8, stride=8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.conv(x).mean((2, 3))


@pytest.fixture
def small_memory(monkeypatch):
    monkeypatch.setattr(_budgets, "available_memory", lambda: 16 * 10**9)


def test_kernel_shap_on_an_ungrouped_224_image_refuses_before_any_model_call(small_memory):
    net = Counting()
    x = torch.zeros(1, 3, 224, 224)
    with pytest.raises(ValueError, match=r'n_players = 150,528\).*363 GB.*groups="patches" \(196 players: square '
                                         r'patches of 16 x 16 px.*groups="slic" \(about 196 superpixels'):
        fl.explainer("kernel_shap", net).explain(x)
    assert net.calls == 0
    e = fl.explainer("kernel_shap", net, groups="patches", budget=400).explain(x)  # the way out works
    assert e.params["n_players"] == 196 and e.group_values.shape == (1, 196)


def test_other_ungrouped_refusals_name_the_grouping_before_any_model_call(small_memory):
    net = Counting()
    x = torch.zeros(1, 3, 224, 224)
    with pytest.raises(ValueError, match=r'n_players = 150528 > max_players = 20.*groups="patches:56" \(16 players'):
        fl.explainer("exact_shapley", net).explain(x)
    with pytest.raises(ValueError, match=r'budget = 1000 .*too small for permutation_shap with n_players = 150528.*'
                                         r'groups="patches" \(196 players'):
        fl.explainer("permutation_shap", net, budget=1000).explain(x)
    with pytest.raises(ValueError, match=r'occlusion of inputs of shape \(3, 224, 224\).*groups="patches"'):
        fl.explainer("occlusion", net).explain(x)
    assert net.calls == 0
