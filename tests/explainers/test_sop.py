"""Sum-of-Parts (featurelens.explainers.sop): the model, its explainer "sop" and fit_sop.

Checked against closed forms and brute force: one all-ones group reproduces the backbone
bitwise; the logits equal sum_g w_g backbone(x * m_g) with each masked input run by itself;
sparsemax equals the simplex projection found by bisection; the attributions equal the formulas of
the explainer's docstring and the "contribution" ones add up to the target logit; on a planted task
(one 2x2 patch decides the class) the learned top group sits on the patch.
"""

from __future__ import annotations


import numpy as np
import pytest
import torch
from torch import nn

import featurelens as fl
from featurelens.explainers import explainer_class
from featurelens.explainers.sop import (
    ConfidenceSelector,
    GroupGenerator,
    SumOfParts,
    fit_sop,
    sparsemax,
)

SHAPE = (1, 8, 8)


class Ones(nn.Module):
    """A group generator returning all-ones masks of G groups."""

    def __init__(self, g: int = 1):
        super().__init__()
        self.g = g

    def forward(self, x):
        return torch.ones(x.shape[0], self.g, *x.shape[1:], dtype=x.dtype)


def cnn(outputs: int = 3) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 64, outputs)).double()


def xs(n=4, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(n, *SHAPE)))


# -- the model ------------------------------------------------------------------------------------


@pytest.mark.parametrize("outputs", [3, 1])
def test_one_all_ones_group_is_the_backbone_exactly(outputs):
    backbone = cnn(outputs)
    if outputs == 1:
        backbone = nn.Sequential(backbone, nn.Flatten(0))  # outputs of shape (m,)
    model = SumOfParts(backbone, 1, Ones(1))
    x = xs()
    out = model.explain_forward(x)
    assert torch.equal(out.weights, torch.ones(4, 1, dtype=torch.float64))
    assert torch.equal(model(x), backbone(x))
    assert model(x).shape == backbone(x).shape


def test_logits_are_the_weighted_sum_of_the_backbone_on_each_masked_input():
    backbone = cnn()
    model = SumOfParts(backbone, 4, input_shape=SHAPE, mask_activation="softmax", seed=1)
    x = xs(5)
    out = model.explain_forward(x)
    assert out.masks.shape == (5, 4, *SHAPE) and out.weights.shape == (5, 4) and out.group_outputs.shape == (5, 4, 3)
    for g in range(4):  # brute force: one masked input at a time
        torch.testing.assert_close(out.group_outputs[:, g], backbone(x * out.masks[:, g]))
    expected = sum(out.weights[:, g, None] * out.group_outputs[:, g] for g in range(4))
    torch.testing.assert_close(out.logits, expected)
    torch.testing.assert_close(model(x), out.logits)


@pytest.mark.parametrize("weight_activation", ["softmax", "sparsemax"])
@pytest.mark.parametrize("mask_activation", ["sparsemax", "softmax"])
def test_weights_sum_to_one_and_masks_lie_in_0_1_with_max_1(weight_activation, mask_activation):
    model = SumOfParts(cnn(), 3, input_shape=SHAPE, mask_activation=mask_activation,
                       weight_activation=weight_activation)
    with torch.no_grad():
        model.group_selector.bias.copy_(torch.tensor([0.0, 0.0, -10.0]))  # sparsemax gives group 2 zero weight
        out = model.explain_forward(xs(6))
    torch.testing.assert_close(out.weights.sum(1), torch.ones(6, dtype=torch.float64))
    assert (out.weights >= 0).all() and (out.masks >= 0).all() and (out.masks <= 1).all()
    torch.testing.assert_close(out.masks.amax(dim=(2, 3, 4)), torch.ones(6, 3, dtype=torch.float64))
    if weight_activation == "sparsemax":
        assert (out.weights[:, 2] == 0).all()


@pytest.mark.parametrize("shape", [(7,), (2, 9)])
def test_default_generator_on_vectors_and_signals(shape):
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(shape)), 2))
    model = SumOfParts(backbone, 3, input_shape=shape)
    x = torch.randn(4, *shape)
    out = model.explain_forward(x)
    assert out.masks.shape == (4, 3, *shape) and out.logits.shape == (4, 2)
    if len(shape) == 2:  # a position's mask is shared by its channels
        torch.testing.assert_close(out.masks[:, :, 0], out.masks[:, :, 1])


def _projection(z: np.ndarray) -> np.ndarray:
    """The Euclidean projection of z onto the simplex, by bisection on tau in sum max(z - tau, 0) = 1."""
    lo, hi = z.min() - 1, z.max()
    for _ in range(200):
        tau = (lo + hi) / 2
        lo, hi = (tau, hi) if np.maximum(z - tau, 0).sum() > 1 else (lo, tau)
    return np.maximum(z - (lo + hi) / 2, 0)


def test_sparsemax_is_the_simplex_projection_and_differentiable():
    z = torch.as_tensor(np.random.default_rng(3).normal(scale=2, size=(5, 7)))
    p = sparsemax(z, dim=1)
    for row, zr in zip(p.numpy(), z.numpy()):
        np.testing.assert_allclose(row, _projection(zr), atol=1e-10)
    assert torch.equal(sparsemax(torch.tensor([[2.0, 1.0, 0.1]])), torch.tensor([[1.0, 0.0, 0.0]]))
    np.testing.assert_allclose(sparsemax(z.T, dim=0).T.numpy(), p.numpy())  # any axis
    zz = z.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: sparsemax(t, dim=1), (zz,))


def test_seed_fixes_the_initial_weights_and_leaves_the_global_state():
    backbone = cnn()
    before = torch.random.get_rng_state()
    a = SumOfParts(backbone, 3, input_shape=SHAPE, seed=5)
    assert torch.equal(before, torch.random.get_rng_state())  # drew nothing from the global generator
    b = SumOfParts(cnn(), 3, input_shape=SHAPE, seed=5)
    c = SumOfParts(cnn(), 3, input_shape=SHAPE, seed=np.random.default_rng(1))
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k
    assert not torch.equal(a.group_generator.net[0].weight, c.group_generator.net[0].weight)


# -- the explainer --------------------------------------------------------------------------------


def test_sop_explainer_weights_attribution_is_the_documented_sum():
    model = SumOfParts(cnn(), 3, input_shape=SHAPE, mask_activation="softmax", seed=2)
    x = xs(5)
    e = fl.explainer("sop", model).explain(x.numpy(), target=1)
    with torch.no_grad():
        out = model.explain_forward(x)
    w, m = out.weights.numpy(), out.masks.numpy()
    expected = np.einsum("ng,ng...->n...", w, m)
    np.testing.assert_allclose(e.values, expected, rtol=1e-12)
    np.testing.assert_allclose(e.values.reshape(5, -1).sum(1), (w * m.reshape(5, 3, -1).sum(-1)).sum(1), rtol=1e-12)
    np.testing.assert_allclose(e.extra["weights"].sum(1), 1.0)
    np.testing.assert_allclose(e.extra["masks"], m)
    np.testing.assert_allclose(e.extra["group_outputs"], out.group_outputs.numpy())
    assert e.method == "sop" and e.params["attribution"] == "weights"
    assert e.model_calls == 5 + 1  # + 1: the row that checks the target
    assert not model._recorders  # nothing left recording
    # The weights do not depend on the target.
    np.testing.assert_allclose(fl.explainer("sop", model).explain(x.numpy(), target=0).values, e.values)


def test_sop_contribution_attributions_add_up_to_the_target_logit():
    model = SumOfParts(cnn(), 4, input_shape=SHAPE, mask_activation="softmax", seed=3)
    x = xs(4)
    with torch.no_grad():
        logits = model(x).numpy()
    ex = fl.explainer("sop", model, attribution="contribution", batch_size=3)
    e = ex.explain(x.numpy(), target=np.array([0, 2, 1, 2]))
    np.testing.assert_allclose(e.values.reshape(4, -1).sum(1), logits[np.arange(4), [0, 2, 1, 2]], rtol=1e-10)
    e2 = ex.explain(x.numpy(), target=np.array([[0, 1], [2, 0], [1, 1], [0, 2]]))  # (n, k)
    assert e2.values.shape == (4, 2, *SHAPE)
    pairs = [[0, 1], [2, 0], [1, 1], [0, 2]]
    np.testing.assert_allclose(e2.values.reshape(4, 2, -1).sum(-1), logits[np.arange(4)[:, None], pairs], rtol=1e-10)
    # With sparse masks a group may hold features the others lack; the sum still holds.
    sparse = SumOfParts(cnn(), 3, input_shape=SHAPE, seed=4)
    with torch.no_grad():
        top = sparse(x).argmax(1).numpy()
    e3 = fl.explainer("sop", sparse, attribution="contribution").explain(x.numpy())
    with torch.no_grad():
        np.testing.assert_allclose(e3.values.reshape(4, -1).sum(1), sparse(x).numpy()[np.arange(4), top], rtol=1e-10)


def test_sop_requires_refuses_other_models_and_accepts_a_sumofparts():
    requires = explainer_class("sop").requires
    reason = requires.why_not(fl.Model(cnn()), SHAPE)
    assert reason is not None and "SumOfParts" in reason and "Sequential" in reason
    assert requires.why_not(fl.Model(SumOfParts(cnn(), 2, input_shape=SHAPE)), SHAPE) is None
    assert "SumOfParts" in requires.why_not(fl.Model(lambda a: a.sum(1)), (3,))


# -- training on a planted task ---------------------------------------------------------------------


def test_trained_top_group_sits_on_the_planted_patch():
    rng = np.random.default_rng(0)
    n = 128
    y = rng.integers(0, 2, n)
    X = rng.normal(0, 0.5, size=(n, *SHAPE)).astype(np.float32)
    X[:, 0, 2:4, 4:6] = np.where(y == 1, 1.5, -1.5)[:, None, None]  # the patch alone decides the class
    patch = np.zeros((8, 8), bool)
    patch[2:4, 4:6] = True
    torch.manual_seed(0)
    model = SumOfParts(nn.Sequential(nn.Flatten(), nn.Linear(64, 2)), 3, input_shape=SHAPE, hidden=8, seed=0)
    model, history = fit_sop(model, X, y, epochs=10, lr=0.03, batch_size=32, seed=0, progress=False)
    assert history["train_accuracy"] >= 0.95
    e = fl.explainer("sop", model).explain(X[:64], target=y[:64])
    w, m = e.extra["weights"], e.extra["masks"][:, :, 0]
    top = m[np.arange(64), w.argmax(1)]  # the mask of each sample's heaviest group
    assert top[:, patch].mean() > 0.6 and top[:, ~patch].mean() < 0.05
    assert e.values[:, 0][:, patch].mean() > 5 * e.values[:, 0][:, ~patch].mean()
    assert model.training is False


# -- errors -------------------------------------------------------------------------------------------


def test_sop_explainer_refuses_a_model_that_is_not_sumofparts():
    with pytest.raises(TypeError, match="SumOfParts.*Sequential"):
        fl.explainer("sop", cnn())
    with pytest.raises(ValueError, match="attribution must be one of"):
        fl.explainer("sop", SumOfParts(cnn(), 2, input_shape=SHAPE), attribution="shap")
    with pytest.raises(ValueError, match="contribution.*probability"):
        fl.explainer("sop", SumOfParts(cnn(), 2, input_shape=SHAPE), attribution="contribution", output="probability")


def test_sop_explainer_refuses_nan_input():
    x = xs(2).numpy()
    x[1, 0, 3, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fl.explainer("sop", SumOfParts(cnn(), 2, input_shape=SHAPE)).explain(x, target=0)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_groups": 0}, ValueError, "n_groups"),
    ({"n_groups": 1.5}, TypeError, "n_groups"),
    ({"input_shape": None}, ValueError, "input_shape is needed"),
    ({"input_shape": (1, 2, 3, 4)}, ValueError, r"input_shape must be .*got \(1, 2, 3, 4\)"),
    ({"input_shape": (0, 8)}, ValueError, "input_shape"),
    ({"mask_activation": "sigmoid"}, ValueError, "mask_activation must be one of"),
    ({"weight_activation": "argmax"}, ValueError, "weight_activation must be one of"),
    ({"hidden": 0}, ValueError, "hidden"),
    ({"seed": -1}, ValueError, "seed"),
    ({"group_generator": "conv"}, TypeError, "group_generator must be"),
    ({"group_selector": 3}, TypeError, "group_selector must be"),
])
def test_bad_constructor_arguments(kwargs, error, match):
    args = {"n_groups": 2, "input_shape": SHAPE, **kwargs}
    with pytest.raises(error, match=match):
        SumOfParts(cnn(), **args)


def test_bad_backbone_generator_selector_and_inputs():
    with pytest.raises(TypeError, match="backbone must be a torch.nn.Module"):
        SumOfParts(lambda x: x, 2, input_shape=SHAPE)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 1, 8, 8\).*got \(2, 1, 8, 7\)"):
        SumOfParts(cnn(), 2, input_shape=SHAPE)(torch.zeros(2, 1, 8, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"generator must return masks of shape \(2, 3, 1, 8, 8\).*\(2, 1, 1, 8, 8\)"):
        SumOfParts(cnn(), 3, Ones(1))(xs(2))
    bad_selector = lambda outputs, masks: outputs.sum(-1)[:, :1]
    with pytest.raises(ValueError, match=r"group_selector must return scores of shape \(2, 3\); got \(2, 1\)"):
        SumOfParts(cnn(), 3, Ones(3), group_selector=bad_selector)(xs(2))
    with pytest.raises(ValueError, match="backbone must map 6 masked rows"):
        SumOfParts(nn.Flatten(0), 3, Ones(3))(xs(2))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        SumOfParts(cnn(), 2, input_shape=SHAPE).explain_forward(np.zeros((2, *SHAPE)))


def test_fit_sop_errors():
    X = np.zeros((4, *SHAPE), np.float32)
    y = np.array([0, 1, 0, 1])
    with pytest.raises(TypeError, match="model must be a featurelens SumOfParts; got Sequential"):
        fit_sop(cnn(), X, y)
    with pytest.raises(TypeError, match="float32.*torch.float64"):
        fit_sop(SumOfParts(cnn(), 2, input_shape=SHAPE), X, y)
    model = SumOfParts(cnn().float(), 2, input_shape=SHAPE)
    with pytest.raises(ValueError, match="epochs"):
        fit_sop(model, X, y, epochs=0)
    with pytest.raises(ValueError, match="lr"):
        fit_sop(model, X, y, lr=-1.0)
    with pytest.raises(ValueError, match="as many labels as samples"):
        fit_sop(model, X, y[:3])


@pytest.mark.parametrize("bad, shown", [(5, "5"), (3, "3"), (-1, "-1"), (-100, "-100"), (1.5, "1.5")])
def test_fit_sop_refuses_labels_outside_the_classes_before_training(bad, shown):
    """3 outputs: labels 0, 1, 2. Before the check a label of 3 or 5 (or -1) failed inside torch's
    cross-entropy on the first batch (IndexError), -100 was silently skipped (its ignore_index)
    and 1.5 truncated to 1."""
    X = np.random.default_rng(0).normal(size=(6, *SHAPE)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], dtype=np.float64 if isinstance(bad, float) else np.int64)
    y[4] = bad
    model = SumOfParts(cnn(3).float(), 2, input_shape=SHAPE)
    model.group_generator.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    message = (r"y must hold integer class labels in 0\.\.2; got 1\.5" if isinstance(bad, float) else
               rf"y must hold class labels in 0\.\.2 \(the model has 3 outputs\); got {shown} at index 4")
    with pytest.raises(ValueError, match=message):
        fit_sop(model, X, y, epochs=1, progress=False)
    # Refused before any step: the weights and the train/eval flags are as they were.
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert model.group_generator.training and model.training
    # The same data with the label in range trains (one epoch).
    y[4] = 1
    _, history = fit_sop(model, X, y, epochs=1, progress=False)
    assert history["epochs"] == 1


def test_generator_and_selector_errors():
    with pytest.raises(ValueError, match="n_groups"):
        GroupGenerator(SHAPE, 0)
    with pytest.raises(ValueError, match="n_groups"):
        ConfidenceSelector(0)


def test_rows_explained_on_threads_equal_the_serial_call():
    from featurelens.parallel import ThreadExecutor

    model = SumOfParts(cnn(), 3, input_shape=SHAPE, seed=7)
    x = xs(6).numpy()
    ex = fl.explainer("sop", model, attribution="contribution", batch_size=2)
    serial = ex.explain(x, target=1)
    parallel = ex.explain(x, target=1, executor=ThreadExecutor(2))
    np.testing.assert_allclose(parallel.values, serial.values, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(parallel.extra["weights"], serial.extra["weights"], rtol=1e-12)
    assert not model._recorders


def test_the_audit_picks_and_scores_sop_for_a_sumofparts_only():
    from featurelens._audit.core import choose_methods

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 2))
    model = SumOfParts(net, 3, input_shape=SHAPE)
    assert "sop" in choose_methods(fl.Model(model), SHAPE)[0]
    chosen, skipped = choose_methods(fl.Model(net), SHAPE)
    assert "sop" not in chosen and "SumOfParts" in skipped["sop"]
    X = np.random.default_rng(0).normal(size=(6, *SHAPE)).astype(np.float32)
    table = fl.audit(model, X, methods=["sop"], n_explain=3, steps=3, n_subsets=4, robustness_samples=2,
                     randomization=False, progress=False, as_frame=False)
    row = table[0]
    assert row["method"] == "sop" and row["status"] == "ok" and np.isfinite(row["insertion_minus_deletion"])


def test_patch_size_chooses_the_patch_generator():
    from featurelens.explainers.sop import PatchGroupGenerator

    backbone = nn.Sequential(nn.Flatten(), nn.Linear(64, 2))
    model = SumOfParts(backbone, 3, input_shape=(1, 8, 8), patch_size=4, seed=0)
    assert isinstance(model.group_generator, PatchGroupGenerator)
    out = model.explain_forward(torch.randn(2, 1, 8, 8))
    blocks = out.masks[:, :, 0].reshape(2, 3, 2, 4, 2, 4)
    assert torch.equal(blocks.amax((3, 5)), blocks.amin((3, 5)))  # constant on each 4x4 patch
    again = SumOfParts(nn.Sequential(nn.Flatten(), nn.Linear(64, 2)), 3, input_shape=(1, 8, 8), patch_size=4, seed=0)
    assert torch.equal(model.group_generator.embed.weight, again.group_generator.embed.weight)  # seeded
    with pytest.raises(ValueError, match="patch must divide"):
        SumOfParts(backbone, 3, input_shape=(1, 8, 8), patch_size=3)
    with pytest.raises(ValueError, match="images"):
        SumOfParts(backbone, 3, input_shape=(64,), patch_size=4)
    with pytest.raises(ValueError, match="group_generator"):
        SumOfParts(backbone, 3, PatchGroupGenerator((1, 8, 8), 3, 4), input_shape=(1, 8, 8), patch_size=4)
