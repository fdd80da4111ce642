"""The XAI-TRIS reference models and their training."""

import numpy as np
import pytest
import torch

from featurelens._training import evaluate, train_model
from featurelens.groundtruth.models import CNN, LLR, MLP, build_model, count_parameters

# -- architectures -------------------------------------------------------------------------------

# Parameter counts worked out by hand from the architectures (weights + biases).
EXPECTED_PARAMETERS = {
    ("llr", 8): 64 * 2,
    ("llr", 64): 4096 * 2,
    # 64->32->16->8->2 with biases
    ("mlp", 8): (64 * 32 + 32) + (32 * 16 + 16) + (16 * 8 + 8) + (8 * 2 + 2),
    # 4096->256->256->64->2 without biases
    ("mlp", 64): 4096 * 256 + 256 * 256 + 256 * 64 + 64 * 2,
    # conv 2x2: 1->4, then three 4->4, each with biases; Linear(4, 2) with bias
    ("cnn", 8): (1 * 4 * 4 + 4) + 3 * (4 * 4 * 4 + 4) + (4 * 2 + 2),
    # conv 4x4: 1->4->8->16->32 with biases; Linear(288, 2) without bias
    ("cnn", 64): (1 * 4 * 16 + 4) + (4 * 8 * 16 + 8) + (8 * 16 * 16 + 16) + (16 * 32 * 16 + 32) + 288 * 2,
}


@pytest.mark.parametrize("name,size", sorted(EXPECTED_PARAMETERS))
def test_output_shape_and_parameter_count(name, size):
    model = build_model(name, size, seed=0)
    out = model(torch.randn(3, 1, size, size))
    assert out.shape == (3, 2)
    assert count_parameters(model) == EXPECTED_PARAMETERS[(name, size)]


def test_parameter_counts_by_hand():
    assert EXPECTED_PARAMETERS[("cnn", 8)] == 234
    assert EXPECTED_PARAMETERS[("cnn", 64)] == 11452
    assert EXPECTED_PARAMETERS[("mlp", 8)] == 2762


def test_cnn_feature_map_sizes():
    # 8x8: 8 -> 9 -> 4 -> 5 -> 2 -> 3 -> 1 -> 2 -> 1; 64x64: ... -> 3x3 with 32 channels (288).
    assert CNN(8).features(torch.zeros(1, 1, 8, 8)).shape == (1, 4, 1, 1)
    assert CNN(64).features(torch.zeros(1, 1, 64, 64)).shape == (1, 32, 3, 3)


def test_models_output_logits_not_probabilities():
    torch.manual_seed(0)
    x = torch.randn(16, 1, 8, 8) * 3
    for name in ("llr", "mlp", "cnn"):
        out = build_model(name, 8, seed=1)(x)
        assert not torch.allclose(out.sum(1), torch.ones(16), atol=1e-3), name


def test_mlp64_has_dropout_and_no_biases_mlp8_has_biases():
    m64, m8 = MLP(64), MLP(8)
    drops = [m for m in m64.modules() if isinstance(m, torch.nn.Dropout)]
    assert len(drops) == 3 and all(d.p == 0.3 for d in drops)
    assert all(m.bias is None for m in m64.modules() if isinstance(m, torch.nn.Linear))
    assert all(m.bias is not None for m in m8.modules() if isinstance(m, torch.nn.Linear))
    assert not any(isinstance(m, torch.nn.Dropout) for m in m8.modules())
    assert LLR(8).linear.bias is None


def test_he_normal_initialisation_is_seeded():
    a, b, c = build_model("mlp", 64, seed=3), build_model("mlp", 64, seed=3), build_model("mlp", 64, seed=4)
    wa = a.layers[0].weight.detach()
    assert torch.equal(wa, b.layers[0].weight)
    assert not torch.equal(wa, c.layers[0].weight)
    # He normal: std = sqrt(2 / fan_in) = sqrt(2 / 4096)
    assert float(wa.std()) == pytest.approx(np.sqrt(2 / 4096), rel=0.02)
    cnn = build_model("cnn", 8, seed=0)
    assert all(float(m.bias.detach().abs().max()) == 0.0 for m in cnn.modules() if isinstance(m, torch.nn.Conv2d))


def test_build_model_does_not_touch_global_rng():
    state = torch.random.get_rng_state()
    build_model("cnn", 8, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize("bad", ["resnet", "", None, 3])
def test_build_model_unknown_name(bad):
    with pytest.raises(ValueError, match=r"llr.*mlp.*cnn"):
        build_model(bad, 8)


@pytest.mark.parametrize("size", [16, 0, True, "8"])
def test_build_model_bad_image_size(size):
    with pytest.raises(ValueError, match="image_size"):
        build_model("cnn", size)


# -- training ------------------------------------------------------------------------------------


def _separable(n, seed):
    """8x8 images whose class is the sign of the mean of the top-left 2x2 block (plus noise)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(0, 1, (n, 1, 8, 8)).astype(np.float32)
    X[:, 0, :2, :2] += np.where(y == 1, 2.0, -2.0)[:, None, None]
    return X, y


@pytest.mark.slow
def test_training_reaches_high_accuracy_on_a_separable_problem():
    train, val, test = _separable(800, 0), _separable(200, 1), _separable(200, 2)
    model, history = train_model(
        build_model("llr", 8, seed=0), train, val, test, epochs=40, lr=1e-2, patience=40, progress=False
    )
    assert history["test_accuracy"] >= 0.95
    assert history["val_accuracy"] >= 0.95
    assert history["epochs"] == len(history["val_loss"]) == len(history["train_loss"])
    assert not model.training
    # The weight mass sits on the informative 2x2 block.
    w = (model.linear.weight[1] - model.linear.weight[0]).detach().abs().reshape(8, 8)
    assert float(w[:2, :2].mean()) > 3 * float(w.mean())


def test_early_stopping_restores_the_best_validation_weights():
    rng = np.random.default_rng(0)
    # Random labels: the MLP overfits, the validation loss rises and training stops early.
    X = rng.normal(size=(256, 1, 8, 8)).astype(np.float32)
    train = (X[:192], rng.integers(0, 2, 192))
    val = (X[192:], rng.integers(0, 2, 64))
    model, history = train_model(
        build_model("mlp", 8, seed=0), train, val, epochs=200, lr=1e-2, batch_size=32, patience=5,
        progress=False,
    )
    assert history["stopped_early"]
    assert history["epochs"] == history["best_epoch"] + 5
    assert history["best_val_loss"] == pytest.approx(min(history["val_loss"]))
    assert history["val_loss"][-1] > history["best_val_loss"] + 1e-3
    loss, _ = evaluate(model, torch.as_tensor(val[0]), torch.as_tensor(val[1]))
    assert loss == pytest.approx(history["best_val_loss"], rel=1e-6)
    assert history["test_accuracy"] is None


def test_training_is_deterministic_and_leaves_global_rng_alone():
    train, val = _separable(300, 0), _separable(100, 1)
    state = torch.random.get_rng_state()
    a, ha = train_model(build_model("mlp", 8, seed=0), train, val, epochs=5, seed=7, progress=False)
    assert torch.equal(state, torch.random.get_rng_state())
    b, hb = train_model(build_model("mlp", 8, seed=0), train, val, epochs=5, seed=7, progress=False)
    c, _ = train_model(build_model("mlp", 8, seed=0), train, val, epochs=5, seed=8, progress=False)
    assert ha["val_loss"] == hb["val_loss"]
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))


def test_training_argument_errors():
    train = _separable(40, 0)
    with pytest.raises(ValueError, match="patience"):
        train_model(build_model("llr", 8), train, train, patience=0, progress=False)
    with pytest.raises(ValueError, match="lr"):
        train_model(build_model("llr", 8), train, train, lr=-1.0, progress=False)
    with pytest.raises(TypeError, match="train"):
        train_model(build_model("llr", 8), train[0], train, progress=False)
    with pytest.raises(ValueError, match="labels"):
        train_model(build_model("llr", 8), (train[0], train[1][:5]), train, progress=False)
