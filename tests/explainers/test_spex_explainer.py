"""The ``spex`` explainer: Shapley/Banzhaf values from SPEX's Fourier interactions per sample."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.explainers.spex import Spex
from featurelens.interactions import Interactions


@pytest.fixture
def linear12():
    torch.manual_seed(0)
    return torch.nn.Linear(12, 2).double()


@pytest.fixture
def x12():
    return np.random.default_rng(0).normal(size=(2, 12))


@pytest.fixture
def image_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(36, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
    ).double()


def blocks():
    """6 players on a (1, 6, 6) image: 3 x 2 blocks."""
    g = (np.arange(6)[:, None] // 3) * 3 + np.arange(6)[None, :] // 2
    return g[None].astype(np.int64)


def test_registered():
    assert "spex" in fl.list_explainers()
    assert isinstance(fl.explainer("spex", lambda x: x), Spex)


def test_linear_shapley_is_w_times_x(linear12, x12):
    # A linear model with baseline 0 is Fourier-sparse of degree 1: phi_i = w_i x_i exactly.
    ex = fl.explainer("spex", linear12, baseline=0.0, budget=2000, max_order=2)
    e = ex.explain(x12, target=1)
    w = linear12.weight.detach().numpy()[1]
    assert e.values.shape == x12.shape
    np.testing.assert_allclose(e.values, w * x12, atol=1e-8)
    # Banzhaf values of a linear game are the same.
    eb = fl.explainer("spex", linear12, baseline=0.0, budget=2000, max_order=2, index="banzhaf").explain(x12, target=1)
    np.testing.assert_allclose(eb.values, w * x12, atol=1e-8)
    p = e.params
    assert p["spex_queries"] == [1056, 1056] and p["game_evaluations"] == [1058, 1058]
    assert p["b"] == [5, 5] and p["t"] == [2, 2] and p["decoder"] == ["soft", "soft"]
    assert p["n_terms"] == [13, 13]  # constant + 12 first-order terms
    assert p["budget"] == 2000 and p["index"] == "shapley" and p["seed"] == 0
    assert e.model_calls >= 2 * 1058


def test_explain_interactions(linear12, x12):
    ex = fl.explainer("spex", linear12, baseline=0.0, budget=2000, max_order=2)
    inters = ex.explain_interactions(x12, target=1)
    assert len(inters) == 2 and all(isinstance(i, Interactions) for i in inters)
    assert all(i.index == "fourier" and i.queries == 1056 for i in inters)
    w = linear12.weight.detach().numpy()[1]
    # f = b + sum_i w_i x_i m_i; in the Fourier basis F({i}) = -w_i x_i / 2.
    for inter, x in zip(inters, x12):
        np.testing.assert_allclose([inter[(i,)] for i in range(12)], -w * x / 2, atol=1e-8)


def test_groups_image_efficiency(image_model):
    x = np.random.default_rng(1).normal(size=(1, 1, 6, 6))
    groups = blocks()
    ex = fl.explainer("spex", image_model, groups=groups, max_order=6, budget=5000)
    e = ex.explain(x, target=0)
    assert e.values.shape == x.shape
    phi = ex.explain_players(x, target=0)
    assert phi.shape == (1, 6)
    delta = e.params["full_values"][0] - e.params["base_values"][0]
    assert phi.sum() == pytest.approx(delta, abs=1e-6)
    # Each element carries its player's value.
    np.testing.assert_allclose(e.values[0, 0], phi[0][groups[0]], atol=0)
    # Against exact Shapley values (6 players: 64 coalitions).
    exact = fl.explainer("exact_shapley", image_model, groups=groups).explain_players(x, target=0)
    np.testing.assert_allclose(phi, exact, atol=1e-6)


def test_seed_reproducible(linear12, x12):
    a = fl.explainer("spex", linear12, baseline=0.0, budget=2000, max_order=2, seed=3).explain(x12, target=0).values
    b = fl.explainer("spex", linear12, baseline=0.0, budget=2000, max_order=2, seed=3).explain(x12, target=0).values
    np.testing.assert_array_equal(a, b)


def test_errors(linear12, x12):
    with pytest.raises(ValueError, match="too small"):
        fl.explainer("spex", linear12, baseline=0.0, budget=50).explain(x12, target=0)
    with pytest.raises(ValueError, match="index"):
        fl.explainer("spex", linear12, index="sii")
    with pytest.raises(ValueError, match="decoder"):
        fl.explainer("spex", linear12, decoder="exact")
    with pytest.raises(ValueError, match="max_order"):
        fl.explainer("spex", linear12, max_order=0)
    with pytest.raises(ValueError, match="baseline"):
        fl.explainer("spex", linear12, baseline=0.0, background=np.zeros((2, 12)))
