"""Gradient explainers against analytic identities."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.explainers.gradient import integration_rule


def linear_model(d=5, k=3, seed=0):
    torch.manual_seed(seed)
    lin = torch.nn.Linear(d, k).double()
    return lin, lin.weight.detach().numpy(), lin.bias.detach().numpy()


def test_saliency_of_linear_model_is_its_weights():
    net, w, _ = linear_model()
    x = torch.randn(4, 5, dtype=torch.float64)
    e = fl.explainer("saliency", net).explain(x, target=2)
    np.testing.assert_allclose(e.values, np.tile(w[2], (4, 1)), atol=1e-12)
    targets = np.array([0, 1, 2, 1])
    e = fl.explainer("saliency", net).explain(x, target=targets)
    np.testing.assert_allclose(e.values, w[targets], atol=1e-12)
    np.testing.assert_array_equal(e.target, targets)
    e = fl.explainer("saliency", net, abs=True).explain(-x, target=targets)
    np.testing.assert_allclose(e.values, np.abs(w[targets]), atol=1e-12)


def test_saliency_default_target_is_predicted_class():
    net, w, b = linear_model()
    x = torch.randn(6, 5, dtype=torch.float64)
    predicted = (x.numpy() @ w.T + b).argmax(1)
    e = fl.explainer("saliency", net).explain(x)
    np.testing.assert_array_equal(e.target, predicted)
    np.testing.assert_allclose(e.values, w[predicted], atol=1e-12)


def test_input_x_gradient_of_linear_model_is_w_times_x():
    net, w, b = linear_model()
    x = np.random.default_rng(1).normal(size=(4, 5))
    e = fl.explainer("input_x_gradient", net).explain(x, target=1)
    np.testing.assert_allclose(e.values, w[1] * x, atol=1e-12)
    # and it sums to f(x) - b for a linear model
    np.testing.assert_allclose(e.values.sum(1), x @ w[1], atol=1e-12)


def test_integrated_gradients_completeness_on_mlp(mlp):
    x = torch.randn(8, 6, dtype=torch.float64) * 2
    e = fl.explainer("integrated_gradients", mlp, n_steps=64).explain(x, target=1)
    with torch.no_grad():
        change = (mlp(x)[:, 1] - mlp(torch.zeros_like(x))[:, 1]).numpy()
    gap = e.values.sum(1) - change
    assert np.all(np.abs(gap) < 1e-3 * np.abs(change))
    np.testing.assert_allclose(e.params["completeness_gap"], gap, atol=1e-10)
    assert e.params["max_relative_gap"] == pytest.approx(np.max(np.abs(gap) / np.abs(change)), rel=1e-6)


def test_integrated_gradients_given_baseline_and_rules_agree(mlp):
    x = torch.randn(5, 6, dtype=torch.float64)
    base = torch.full((6,), 0.3, dtype=torch.float64)
    ex = fl.explainer("integrated_gradients", mlp, n_steps=64, baseline=base)
    gl = ex.explain(x, target=0)
    with torch.no_grad():
        change = (mlp(x)[:, 0] - mlp(base[None])[:, 0]).numpy()
    np.testing.assert_allclose(gl.values.sum(1), change, rtol=1e-4)
    # A fine trapezoid rule converges to the same attributions as Gauss-Legendre.
    tr = fl.explainer("integrated_gradients", mlp, n_steps=400, method="riemann", baseline=base).explain(x, target=0)
    np.testing.assert_allclose(tr.values, gl.values, atol=1e-4)
    # Baseline given per call overrides the constructor's.
    zero = fl.explainer("integrated_gradients", mlp, n_steps=64).explain(x, target=0, baseline=base)
    np.testing.assert_allclose(zero.values, gl.values, atol=1e-12)


@pytest.mark.parametrize("method", ["gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"])
def test_integration_rules_integrate_polynomials(method):
    alphas, weights = integration_rule(method, 40)
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    exact = 1 / 3  # int_0^1 a^2
    tol = 1e-12 if method == "gausslegendre" else 3e-2
    assert np.sum(weights * alphas**2) == pytest.approx(exact, abs=tol)


def test_ig_is_independent_of_batch_size_and_chunks_are_bounded(mlp):
    x = torch.randn(9, 6, dtype=torch.float64)
    sizes = []
    handle = mlp.register_forward_hook(lambda m, i, o: sizes.append(i[0].shape[0]))
    try:
        small = fl.explainer("integrated_gradients", mlp, n_steps=20, batch_size=7).explain(x, target=2)
    finally:
        handle.remove()
    big = fl.explainer("integrated_gradients", mlp, n_steps=20).explain(x, target=2)
    np.testing.assert_allclose(small.values, big.values, atol=1e-12)
    assert max(sizes) <= 7
    assert small.model_calls == sum(sizes)  # provenance counts every row through the model
    assert small.model_calls >= 20 * 9


def quadratic(x):
    return (x**2).flatten(1).sum(1)


def test_smoothgrad_of_quadratic_matches_noise_draws():
    model = fl.Model(quadratic, accepts="torch")
    x = torch.randn(3, 4, dtype=torch.float32)
    ex = fl.explainer("smoothgrad", model, n_samples=30, noise_level=0.2, seed=3)
    eps = ex.noise_draws(x)
    e = ex.explain(x, target=0)
    np.testing.assert_allclose(e.values, (2 * (x + eps.mean(0))).numpy(), atol=1e-5)
    sq = fl.explainer("smoothgrad", model, n_samples=30, noise_level=0.2, seed=3, variant="square").explain(x, target=0)
    np.testing.assert_allclose(sq.values, (4 * (x[None] + eps) ** 2).mean(0).numpy(), rtol=1e-5)
    var = fl.explainer("smoothgrad", model, n_samples=30, noise_level=0.2, seed=3, variant="var").explain(x, target=0)
    np.testing.assert_allclose(var.values, (2 * (x[None] + eps)).var(0, unbiased=False).numpy(), atol=1e-4)


def test_smoothgrad_noise_is_relative_to_each_input_range_and_seeded():
    model = fl.Model(quadratic, accepts="torch")
    x = torch.stack([torch.linspace(0, 1, 400), torch.linspace(-5, 5, 400)])  # ranges 1 and 10
    ex = fl.explainer("smoothgrad", model, n_samples=50, noise_level=0.1, seed=0)
    eps = ex.noise_draws(x)
    std = eps.std(dim=(0, 2))
    assert std[0].item() == pytest.approx(0.1, rel=0.03)
    assert std[1].item() == pytest.approx(1.0, rel=0.03)
    again = fl.explainer("smoothgrad", model, n_samples=50, noise_level=0.1, seed=0).explain(x, target=0)
    other = fl.explainer("smoothgrad", model, n_samples=50, noise_level=0.1, seed=1).explain(x, target=0)
    np.testing.assert_array_equal(ex.explain(x, target=0).values, again.values)
    assert not np.allclose(again.values, other.values)
    absolute = fl.explainer("smoothgrad", model, n_samples=50, noise_level=0.1, noise="absolute").noise_draws(x)
    assert absolute.std(dim=(0, 2))[1].item() == pytest.approx(0.1, rel=0.03)


class ConvGAP(torch.nn.Module):
    """conv -> global average pool -> linear: Grad-CAM equals the class activation map."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(1, 3, 3, padding=1)
        self.head = torch.nn.Linear(3, 2)

    def forward(self, x):
        a = self.conv(x)
        return self.head(a.mean(dim=(2, 3)))


def test_gradcam_equals_cam_for_global_average_pooling():
    net = ConvGAP().double()
    x = torch.randn(4, 1, 6, 6, dtype=torch.float64)
    e = fl.explainer("gradcam", net, relu=False).explain(x, target=1)
    with torch.no_grad():
        act = net.conv(x)
        w = net.head.weight[1]
        cam = (w.view(1, 3, 1, 1) * act).sum(1, keepdim=True) / 36.0
    assert e.params["layer"] == "conv"
    np.testing.assert_allclose(e.values, cam.numpy(), atol=1e-12)
    relu = fl.explainer("gradcam", net).explain(x, target=1)
    np.testing.assert_allclose(relu.values, np.maximum(cam.numpy(), 0), atol=1e-12)


def test_gradcam_upsamples_to_input_size_and_picks_last_conv(small_cnn):
    x = torch.randn(3, 1, 8, 8)
    e = fl.explainer("gradcam", small_cnn).explain(x)
    assert e.values.shape == (3, 1, 8, 8)
    assert e.params["layer"] == "2"  # the second of two convolutions
    assert (e.values >= 0).all()
    first = fl.explainer("gradcam", small_cnn, layer="0").explain(x)
    assert not np.allclose(first.values, e.values)


def test_random_map_is_seeded_uniform(small_cnn):
    x = torch.randn(50, 1, 8, 8)
    a = fl.explainer("random", small_cnn, seed=4).explain(x).values
    b = fl.explainer("random", small_cnn, seed=4).explain(x).values
    c = fl.explainer("random", small_cnn, seed=5).explain(x).values
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert a.shape == x.shape and a.min() >= 0 and a.max() < 1
    assert a.mean() == pytest.approx(0.5, abs=0.02)


def test_train_mode_is_restored_and_dropout_is_off_during_explain():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(32, 2))
    net.train()
    x = torch.randn(4, 5)
    a = fl.explainer("saliency", net).explain(x, target=0).values
    b = fl.explainer("saliency", net).explain(x, target=0).values
    np.testing.assert_array_equal(a, b)  # dropout would make these differ
    assert net.training and all(m.training for m in net.modules())


def test_numpy_callable_gets_predicted_targets():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    e = fl.explainer("random", clf.predict_proba).explain(X[:10])
    np.testing.assert_array_equal(e.target, clf.predict(X[:10]))
    assert e.model_calls == 10


def test_torch_callable_is_differentiable():
    model = fl.Model(lambda x: (x**2).sum(1), accepts="torch")
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    e = fl.explainer("saliency", model).explain(x)
    np.testing.assert_allclose(e.values, 2 * x, atol=1e-6)


@pytest.mark.parametrize("name", ["saliency", "integrated_gradients", "gradcam", "smoothgrad"])
def test_several_targets_per_sample_in_one_call(name, small_cnn):
    x = torch.randn(4, 1, 8, 8)
    targets = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    params = {"n_steps": 16} if name == "integrated_gradients" else {}
    if name == "smoothgrad":
        params = {"n_samples": 3, "noise_level": 0.0}  # no noise: each pair equals saliency
    both = fl.explainer(name, small_cnn, **params).explain(x, target=targets)
    assert both.values.shape == (4, 2, 1, 8, 8)
    np.testing.assert_array_equal(both.target, targets)
    for j in range(2):
        one = fl.explainer(name, small_cnn, **params).explain(x, target=targets[:, j])
        np.testing.assert_allclose(both.values[:, j], one.values, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"shape \(n, k\) = \(4, k >= 1\); got shape \(3, 2\)"):
        fl.explainer(name, small_cnn, **params).explain(x, target=targets[:3])


def test_several_targets_with_a_per_sample_baseline(small_cnn):
    x = torch.randn(3, 1, 8, 8)
    base = np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype(np.float32)
    targets = np.array([[0, 1]] * 3)
    ex = fl.explainer("integrated_gradients", small_cnn, n_steps=16)
    both = ex.explain(x, target=targets, baseline=base)
    one = ex.explain(x, target=1, baseline=base)
    np.testing.assert_allclose(both.values[:, 1], one.values, rtol=1e-5, atol=1e-7)


# -- fail safe: bad inputs and outputs refused ------------------------------------------------

GRADIENT_METHODS = {
    "saliency": {},
    "input_x_gradient": {},
    "integrated_gradients": {"n_steps": 4},
    "smoothgrad": {"n_samples": 3},
    "gradcam": {},
    "agop_local": {},
    "agop_weighted": {"agop": np.ones(64)},
    "wam": {"levels": 2},
    "wam_smoothgrad": {"levels": 2, "n_samples": 3},
    "wam_ig": {"levels": 2, "n_steps": 4},
}


class NaNCNN(torch.nn.Module):
    """A small CNN whose second output is NaN for sample rows with a negative first pixel."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
        self.head = torch.nn.Linear(2 * 8 * 8, 2)

    def forward(self, x):
        out = self.head(torch.relu(self.conv(x)).flatten(1))
        bad = (x[:, 0, 0, 0] < 0)[:, None] & torch.tensor([False, True])
        return torch.where(bad, torch.full_like(out, float("nan")), out)


@pytest.mark.parametrize("name", list(GRADIENT_METHODS) + ["agop_global", "occlusion"])
def test_nan_model_outputs_raise_instead_of_a_nan_map(name):
    x = torch.rand(3, 1, 8, 8)
    x[1, 0, 0, 0] = -1.0  # row 1 has a NaN output
    params = GRADIENT_METHODS.get(name, {"data": x} if name == "agop_global" else {})  # AGOP from the data
    with pytest.raises(ValueError, match=r"the model returned NaN or inf for \d+ of \d+ rows"):
        fl.explainer(name, NaNCNN(), **params).explain(x, target=0)


def _frozen_cnn():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 2),
    ).double()
    return net


@pytest.mark.parametrize("name", list(GRADIENT_METHODS))
def test_frozen_weights_work_and_leave_the_model_as_it_was(name):
    net = _frozen_cnn()
    x = torch.randn(2, 1, 8, 8, dtype=torch.float64)
    reference = fl.explainer(name, net, **GRADIENT_METHODS[name]).explain(x, target=1).values
    net.train()
    net[1].eval()  # a mixed train/eval state must come back as it was
    for p in net.parameters():
        p.requires_grad_(False)
    before = [p.detach().clone() for p in net.parameters()]
    values = fl.explainer(name, net, **GRADIENT_METHODS[name]).explain(x, target=1).values  # gradcam raised
    np.testing.assert_allclose(values, reference, rtol=1e-10, atol=1e-12)
    assert [m.training for m in net.modules()] == [True, True, False, True, True, True, True]
    assert all(not p.requires_grad and p.grad is None for p in net.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))


def test_gradcam_on_frozen_weights_matches_the_cam_identity():
    net = ConvGAP()
    for p in net.parameters():
        p.requires_grad_(False)
    x = torch.randn(2, 1, 6, 6)
    e = fl.explainer("gradcam", net, relu=False).explain(x, target=1)
    # conv -> global average pool -> linear: Grad-CAM = sum_k w_k A_k / (h w)
    a = net.conv(x)
    cam = torch.einsum("k,nkhw->nhw", net.head.weight[1], a) / 36
    np.testing.assert_allclose(e.values[:, 0], cam.numpy(), rtol=1e-5, atol=1e-6)


def test_gradcam_interpolate_is_validated_for_the_map():
    net = ConvGAP()
    with pytest.raises(ValueError, match=r"interpolate must be one of .*got 'cubic\?'"):
        fl.explainer("gradcam", net, interpolate="cubic?")

    class Conv1d(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(1, 2, 3, stride=2)
            self.head = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.head(self.conv(x).mean(2))

    x = torch.randn(2, 1, 9)
    net1d = Conv1d()
    with pytest.raises(ValueError, match=r"interpolate='bicubic' cannot upsample a 1-D map; expected one of"):
        fl.explainer("gradcam", net1d, interpolate="bicubic").explain(x, target=0)
    # the default (bilinear) is matched to a 1-D map: linear upsampling, as torch's "linear" mode
    e = fl.explainer("gradcam", net1d, relu=False).explain(x, target=0)
    lin = fl.explainer("gradcam", net1d, relu=False, interpolate="linear").explain(x, target=0)
    assert e.values.shape == (2, 1, 9)
    np.testing.assert_array_equal(e.values, lin.values)


def test_ig_constructor_baseline_with_several_targets_equals_separate_calls(small_cnn):
    x = torch.randn(3, 1, 8, 8)
    base = np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype(np.float32)
    targets = np.array([[0, 1], [1, 1], [1, 0]])
    ex = fl.explainer("integrated_gradients", small_cnn, n_steps=16, baseline=base)
    both = ex.explain(x, target=targets)  # failed: the (3, ...) baseline met the (6, ...) batch
    for j in range(2):
        one = ex.explain(x, target=targets[:, j])
        np.testing.assert_allclose(both.values[:, j], one.values, rtol=1e-5, atol=1e-7)
    assert both.params["baseline"] == "array"  # the one record (Explainer docstring)


@pytest.mark.parametrize("variant", ["mean", "square", "var"])
def test_smoothgrad_gives_the_same_map_for_every_batch_size(variant, small_cnn):
    x = torch.randn(3, 1, 8, 8)
    maps = [
        fl.explainer("smoothgrad", small_cnn, n_samples=7, variant=variant, seed=5, batch_size=bs)
        .explain(x, target=1).values
        for bs in (1, 2, 4, 21, None)
    ]
    for m in maps[1:]:
        np.testing.assert_allclose(m, maps[0], rtol=1e-5, atol=1e-7)


def test_smoothgrad_noise_is_drawn_per_chunk_not_for_the_whole_expansion(small_cnn, monkeypatch):
    """At most one copy's rows of noise are drawn at a time (was one (40, 2, 1, 8, 8) tensor)."""
    sizes = []
    real = np.random.default_rng

    class Spy:
        def __init__(self, *args):
            self.rng = real(*args)

        def standard_normal(self, size):
            sizes.append(int(np.prod(size)))
            return self.rng.standard_normal(size)

    monkeypatch.setattr(np.random, "default_rng", Spy)
    x = torch.rand(2, 1, 8, 8)
    fl.explainer("smoothgrad", small_cnn, n_samples=40, batch_size=4).explain(x, target=0)
    assert len(sizes) >= 40 and max(sizes) <= x.numel()


def test_smoothgrad_relative_noise_on_a_constant_input_uses_scale_one():
    model = fl.Model(quadratic, accepts="torch")
    x = torch.full((1, 400), 3.0)
    ex = fl.explainer("smoothgrad", model, n_samples=20, noise_level=0.1, seed=0)
    assert ex.noise_draws(x).std().item() == pytest.approx(0.1, rel=0.05)  # was exactly 0


@pytest.mark.parametrize("name", ["smoothgrad", "random", "wam_smoothgrad"])
def test_seed_takes_an_int_or_a_generator(name, small_cnn):
    params = {"n_samples": 3} if name != "random" else {}
    if name == "wam_smoothgrad":
        params["levels"] = 2
    x = torch.rand(2, 1, 8, 8)
    a = fl.explainer(name, small_cnn, seed=np.random.default_rng(4), **params).explain(x, target=0)
    b = fl.explainer(name, small_cnn, seed=np.random.default_rng(4), **params).explain(x, target=0)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.params["seed"] == "generator"
    assert fl.explainer(name, small_cnn, seed=np.int64(3), **params).explain(x, target=0).params["seed"] == 3
    with pytest.raises(TypeError, match=r"seed must be None, a non-negative int or a numpy.random.Generator"):
        fl.explainer(name, small_cnn, seed=1.5, **params)


# Rows through the model for 5 inputs: the explainer's own passes and nothing else.
_ROWS_OF_PASSES = {"saliency": 5, "input_x_gradient": 5, "integrated_gradients": 5 * 4 + 5 + 1,
                   "smoothgrad": 5 * 3, "gradcam": 5}


@pytest.mark.parametrize("name", list(_ROWS_OF_PASSES))
def test_a_given_target_is_checked_in_the_explainers_own_passes(name):
    # Before: a one-row forward pass checked every given target first (a tenth of a 32-row CNN pass).
    net = _frozen_cnn()
    x = torch.randn(5, 1, 8, 8, dtype=torch.float64)
    e = fl.explainer(name, net, **GRADIENT_METHODS[name]).explain(x, target=[0, 1, 1, 0, 1])
    assert e.model_calls == _ROWS_OF_PASSES[name]
    parallel = fl.explainer(name, net, **GRADIENT_METHODS[name]).explain(x, target=[0, 1, 1, 0, 1],
                                                                         executor=fl.parallel.ThreadExecutor(2))
    np.testing.assert_allclose(parallel.values, e.values, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"^target 2 is out of range"):  # checked here, not by a worker
        fl.explainer(name, net, **GRADIENT_METHODS[name]).explain(x, target=[0, 1, 1, 0, 2],
                                                                  executor=fl.parallel.ThreadExecutor(2))
    # Out of range, in the last chunk too: the resolver's message, not torch's index error.
    for batch_size in (None, 2):
        with pytest.raises(ValueError, match=r"^target 2 is out of range; the model has 2 output\(s\), "
                                             r"so targets must lie in \[0, 1\]$"):
            fl.explainer(name, net, batch_size=batch_size, **GRADIENT_METHODS[name]).explain(
                x, target=[0, 1, 1, 0, 2])
    with pytest.raises(ValueError, match=r"target -1 is out of range"):
        fl.explainer(name, net, **GRADIENT_METHODS[name]).explain(x, target=-1)


@pytest.mark.parametrize("name, params, n", [
    ("saliency", {}, 12), ("input_x_gradient", {}, 12), ("gradcam", {}, 12), ("deeplift", {}, 12),
    ("layer_gradient_x_activation", {"layer": "2"}, 12), ("integrated_gradients", {"n_steps": 4}, 4),
    ("smoothgrad", {"n_samples": 4, "seed": 0}, 4),
])
def test_gradient_passes_take_at_least_eight_rows_unless_a_batch_size_is_given(name, params, n, small_cnn,
                                                                               monkeypatch):
    """Automatic chunks of 3 rows (2**19 input elements hold 3 rows of 3x224x224) are raised to 8
    rows for the gradient passes (GRADIENT_MIN_ROWS); a given batch_size still bounds them, and the
    values do not depend on the chunks."""
    monkeypatch.setattr("featurelens._batching.DEFAULT_CHUNK_ELEMENTS", 3 * 64)  # 3 rows of 1x8x8
    x = torch.randn(n, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    target = torch.arange(n) % 2
    sizes = []
    handle = small_cnn[0].register_forward_hook(lambda m, i, o: sizes.append(i[0].shape[0]))
    try:
        auto = fl.explainer(name, small_cnn, **params).explain(x, target=target)
        auto_sizes, sizes[:] = list(sizes), []
        given = fl.explainer(name, small_cnn, batch_size=2, **params).explain(x, target=target)
    finally:
        handle.remove()
    assert max(auto_sizes) == 8, auto_sizes   # not 3: the gradient passes hold 8 rows
    assert max(sizes) <= 2
    np.testing.assert_allclose(auto.values, given.values, rtol=1e-5, atol=1e-6)
