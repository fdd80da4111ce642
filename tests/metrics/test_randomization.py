"""Model-parameter randomisation: planted cases where the answer is known."""

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import featurelens as fl

M = fl.metrics


def test_saliency_of_a_linear_model_follows_the_new_weights():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 3).double()
    before = {k: v.clone() for k, v in lin.state_dict().items()}
    x = np.random.default_rng(0).normal(size=(4, 8))
    r = M.model_randomization("saliency", x, model=lin, target=1, seed=3)
    # The user's model is untouched.
    for k, v in lin.state_dict().items():
        assert torch.equal(v, before[k])
    # Reference: the re-initialised layer under seed + 1; saliency of output 1 is its weight row.
    ref = torch.nn.Linear(8, 3).double()
    ref.load_state_dict(before)
    torch.manual_seed(4)
    ref.reset_parameters()
    rho = spearmanr(np.abs(before["weight"][1].numpy()), np.abs(ref.weight[1].detach().numpy()))[0]
    assert r["layers"] == [""]
    np.testing.assert_allclose(r["similarity"], np.full((1, 4), rho), atol=1e-12)
    np.testing.assert_allclose(r["last"], rho, atol=1e-12)


def test_model_independent_explainer_scores_one(small_cnn):
    # The seeded random map does not depend on the weights: every layer's similarity is 1.
    x = np.random.default_rng(1).normal(size=(3, 1, 8, 8)).astype(np.float32)
    r = M.model_randomization("random", x, model=small_cnn, explainer_params={"seed": 0})
    assert r["layers"] == ["6", "2", "0"]  # top down: the Linear, then the convolutions
    np.testing.assert_allclose(r["similarity"], 1.0)
    assert r["similarity"].shape == (3, 3) and r["mean"].shape == (3,) and r["average"].shape == (3,)


def test_global_random_state_is_kept(small_cnn):
    x = np.random.default_rng(1).normal(size=(2, 1, 8, 8)).astype(np.float32)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    M.model_randomization("saliency", x, model=small_cnn)
    assert torch.equal(torch.rand(3), expected)


def test_independent_order_equals_one_layer_at_a_time(small_cnn):
    x = np.random.default_rng(2).normal(size=(2, 1, 8, 8)).astype(np.float32)
    r = M.model_randomization("saliency", x, model=small_cnn, layer_order="independent", seed=5)
    top = M.model_randomization("saliency", x, model=small_cnn, seed=5)
    # The first step of both orders randomises only the top layer.
    np.testing.assert_allclose(r["similarity"][0], top["similarity"][0])


def test_errors(small_cnn):
    x = np.zeros((2, 1, 8, 8), np.float32)
    with pytest.raises(ValueError, match="unknown explainer name"):
        M.model_randomization("salincy", x, model=small_cnn)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        M.model_randomization("saliency", x, model=lambda z: z)
    with pytest.raises(ValueError, match="layer_order must be one of"):
        M.model_randomization("saliency", x, model=small_cnn, layer_order="bottom_up")
    with pytest.raises(TypeError, match="seed must be None, a non-negative int or a numpy.random.Generator; got '0'"):
        M.model_randomization("saliency", x, model=small_cnn, seed="0")


def test_a_featurelens_model_keeps_its_batch_size_for_every_copy():
    # The explainers used to be built on the bare module, so Model(net, batch_size=2) sent all
    # rows at once; the forward hook (deep-copied with the module) sees every pass's rows.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    rows = []
    net.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    res = M.model_randomization("saliency", x, model=fl.models.Model(net, batch_size=2), target=1)
    assert rows and max(rows) <= 2
    ref = M.model_randomization("saliency", x, model=net, target=1)
    np.testing.assert_allclose(res["similarity"], ref["similarity"])
