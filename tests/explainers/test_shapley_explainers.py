"""Exact Shapley, KernelSHAP and permutation SHAP, checked against brute-force Shapley values."""

import math

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.explainers.shapley import KernelShap
from featurelens.games import MaskedModel


from _references import brute_shapley  # noqa: E402  (tests/_references.py)


def interacting(x):
    """A numpy model with pairwise and third-order interactions, two outputs."""
    x = np.asarray(x, dtype=np.float64)
    w = np.linspace(-1.0, 1.0, x.shape[1])
    y = x @ w + 2 * x[:, 0] * x[:, 1] + np.sin(2 * x[:, 2] * x[:, 3]) + x[:, 4] * x[:, 5] * x[:, 6]
    return np.stack([-y, y], axis=1)


@pytest.fixture
def linear():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3).double()
    return lin


@pytest.fixture
def x10():
    return np.random.default_rng(1).normal(size=(2, 10))


@pytest.fixture
def exact10(x10):
    return fl.explainer("exact_shapley", interacting, baseline=0.0).explain(x10, target=1).values


def test_registered():
    names = fl.list_explainers()
    assert {"exact_shapley", "kernel_shap", "permutation_shap"} <= set(names)
    with pytest.raises(TypeError, match="budget"):
        fl.explainer("exact_shapley", interacting, budget=10)


# -- exact ------------------------------------------------------------------------------------
def test_exact_linear_baseline_zero(linear):
    x = torch.randn(4, 5, dtype=torch.float64)
    e = fl.explainer("exact_shapley", linear, baseline=0.0).explain(x, target=2)
    expected = (linear.weight[2] * x).detach().numpy()
    np.testing.assert_allclose(e.values, expected, atol=1e-12)
    assert e.values.shape == (4, 5)
    assert e.params["n_players"] == 5
    np.testing.assert_allclose(e.params["base_values"], linear.bias[2].item(), atol=1e-12)
    np.testing.assert_allclose(e.params["full_values"], linear(x)[:, 2].detach().numpy(), atol=1e-12)


def test_exact_linear_background(linear):
    rng = np.random.default_rng(0)
    bg = rng.normal(size=(7, 5))
    x = rng.normal(size=(3, 5))
    e = fl.explainer("exact_shapley", linear, background=bg).explain(x, target=0)
    w = linear.weight[0].detach().numpy()
    np.testing.assert_allclose(e.values, w * (x - bg.mean(0)), atol=1e-12)
    # 3 samples x 2^5 coalitions x 7 background rows, + 3 target set-ups + 1 target check row.
    assert e.model_calls == 3 * 32 * 7 + 3 + 1


def test_exact_mlp_matches_brute_force_and_efficiency(mlp):
    x = torch.randn(2, 6, dtype=torch.float64)
    e = fl.explainer("exact_shapley", mlp, baseline=0.3).explain(x)
    for i in range(2):
        game = MaskedModel(mlp, x[i], baseline=0.3, target=int(e.target[i]))
        np.testing.assert_allclose(e.values[i], brute_shapley(game), atol=1e-12)
        with torch.no_grad():
            fx = mlp(x[i : i + 1])[0, e.target[i]].item()
            fb = mlp(torch.full((1, 6), 0.3, dtype=torch.float64))[0, e.target[i]].item()
        assert e.values[i].sum() == pytest.approx(fx - fb, abs=1e-12)
    # The predicted class is the target by default.
    with torch.no_grad():
        np.testing.assert_array_equal(e.target, mlp(x).argmax(1).numpy())


def test_exact_sklearn_predict_proba():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    base = X.mean(0)
    e = fl.explainer("exact_shapley", clf.predict_proba, baseline=base).explain(X[:3], target=1)
    for i in range(3):
        game = MaskedModel(clf.predict_proba, X[i], baseline=base, target=1)
        np.testing.assert_allclose(e.values[i], brute_shapley(game), atol=1e-6)
        p = clf.predict_proba(np.stack([X[i], base]))[:, 1]
        assert e.values[i].sum() == pytest.approx(p[0] - p[1], abs=1e-6)


def test_exact_image_groups():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32, 2)
    ).double()
    groups = np.zeros((1, 4, 4), dtype=int)
    groups[0, :2, 2:] = 1
    groups[0, 2:, :2] = 2
    groups[0, 2:, 2:] = 3
    x = torch.randn(2, 1, 4, 4, dtype=torch.float64)
    ex = fl.explainer("exact_shapley", net, groups=groups)
    e = ex.explain(x, target=1)
    assert e.values.shape == x.shape
    players = ex.explain_players(x, target=1)
    assert players.shape == (2, 4)
    for i in range(2):
        phi = brute_shapley(MaskedModel(net, x[i], groups=groups, target=1))
        np.testing.assert_allclose(players[i], phi, atol=1e-12)
        # Each element carries its player's full value.
        np.testing.assert_allclose(e.values[i], phi[groups], atol=1e-12)
    assert e.params["n_players"] == 4


def test_several_targets_per_sample(x10):
    x = x10[:, :7]
    ex = fl.explainer("exact_shapley", interacting, baseline=0.0)
    e = ex.explain(x, target=np.array([[0, 1], [1, 0]]))
    assert e.values.shape == (2, 2, 7)
    np.testing.assert_allclose(e.values[:, 0], -e.values[:, 1], atol=1e-12)  # outputs are -y, y
    np.testing.assert_allclose(e.values[0, 1], ex.explain(x[:1], target=1).values[0], atol=1e-12)
    assert ex.explain_players(x, target=np.array([[0, 1], [1, 0]])).shape == (2, 2, 7)


# -- kernel_shap ------------------------------------------------------------------------------
@pytest.mark.parametrize("budget", [64, 5000])
def test_kernel_full_budget_equals_exact(mlp, budget):
    x = torch.randn(3, 6, dtype=torch.float64)
    bg = torch.randn(5, 6, dtype=torch.float64)
    exact = fl.explainer("exact_shapley", mlp, background=bg).explain(x, target=0)
    kern = fl.explainer("kernel_shap", mlp, background=bg, budget=budget).explain(x, target=0)
    np.testing.assert_allclose(kern.values, exact.values, atol=1e-8, rtol=0)
    assert kern.params["game_evaluations"] == [64, 64, 64]


def test_kernel_sampled_accuracy_efficiency_seed(x10, exact10):
    ex = fl.explainer("kernel_shap", interacting, baseline=0.0, budget=600, seed=3)
    e = ex.explain(x10, target=1)
    # Efficiency against the game's own v(N) - v(empty) (a numpy callable runs in float32).
    gain = np.subtract(e.params["full_values"], e.params["base_values"])
    np.testing.assert_allclose(e.values.sum(1), gain, atol=1e-10, rtol=0)
    full = interacting(x10)[:, 1]
    base = interacting(np.zeros((1, 10)))[0, 1]
    np.testing.assert_allclose(gain, full - base, atol=1e-5)
    err = np.abs(e.values - exact10).max(1)
    assert (err < 0.05 * np.abs(exact10).max(1)).all()
    again = fl.explainer("kernel_shap", interacting, baseline=0.0, budget=600, seed=3).explain(x10, target=1)
    np.testing.assert_array_equal(e.values, again.values)
    np.testing.assert_array_equal(ex.explain(x10, target=1).values, e.values)  # same on a second call
    other = fl.explainer("kernel_shap", interacting, baseline=0.0, budget=600, seed=4).explain(x10, target=1)
    assert not np.array_equal(other.values, e.values)
    # The budget bounds the game evaluations; model rows = evaluations + 1 set-up per sample + 1 check.
    assert e.params["game_evaluations"] == [600, 600]
    assert e.model_calls == sum(e.params["game_evaluations"]) + 2 + 1
    assert e.params["budget"] == 600 and e.params["seed"] == 3


def test_kernel_coalitions_paired_and_weighted():
    n = 10
    masks, w = KernelShap(interacting, budget=600)._coalitions(n, 600, np.random.default_rng(0))
    # Distinct coalitions fill the budget (600 minus empty and full).
    assert masks.shape[0] == 598 and len({m.tobytes() for m in masks}) == masks.shape[0]
    sizes = masks.sum(1)
    # Sizes 1, 9, 2, 8 are enumerated completely, with their exact kernel weights.
    for s in (1, 2, 8, 9):
        assert (sizes == s).sum() == math.comb(n, s)
        np.testing.assert_allclose(w[sizes == s], 1.0 / (s * (n - s) * math.comb(n, s)))
    # The sampled coalitions come in complementary pairs and carry the remaining kernel mass.
    keys = {m.tobytes() for m in masks}
    sampled = masks[(sizes >= 3) & (sizes <= 7)]
    assert sampled.shape[0] > 0 and all((~m).tobytes() in keys for m in sampled)
    rest = sum(1.0 / (s * (n - s)) for s in range(3, 8))
    assert w[(sizes >= 3) & (sizes <= 7)].sum() == pytest.approx(rest)


def test_kernel_default_budget_and_small_n():
    x = np.random.default_rng(0).normal(size=(1, 7))
    e = fl.explainer("kernel_shap", interacting, baseline=0.0).explain(x, target=1)
    exact = fl.explainer("exact_shapley", interacting, baseline=0.0).explain(x, target=1)
    np.testing.assert_allclose(e.values, exact.values, atol=1e-8)  # 2*7 + 2048 >= 2^7
    one = fl.explainer("kernel_shap", lambda z: z.sum(1), baseline=0.0, budget=2).explain(np.ones((1, 1)) * 3.0, target=0)
    np.testing.assert_allclose(one.values, [[3.0]])


# -- permutation_shap -------------------------------------------------------------------------
def test_permutation_efficiency_convergence_seed(x10, exact10):
    n = 10
    small = fl.explainer("permutation_shap", interacting, baseline=0.0, budget=2 * (n + 1), seed=0).explain(x10, target=1)
    large = fl.explainer("permutation_shap", interacting, baseline=0.0, budget=200 * (n + 1), seed=0).explain(x10, target=1)
    for e in (small, large):
        gain = np.subtract(e.params["full_values"], e.params["base_values"])
        np.testing.assert_allclose(e.values.sum(1), gain, atol=1e-10, rtol=0)
    err_small = np.abs(small.values - exact10).max()
    err_large = np.abs(large.values - exact10).max()
    assert err_large < err_small
    assert err_large < 0.05 * np.abs(exact10).max()
    again = fl.explainer("permutation_shap", interacting, baseline=0.0, budget=200 * (n + 1), seed=0).explain(x10, target=1)
    np.testing.assert_array_equal(again.values, large.values)
    # (2200 - 2) // 9 = 244 permutations (even), 9 interior coalitions each, plus empty and full.
    assert large.params["game_evaluations"] == [2 + 244 * 9] * 2
    assert large.model_calls == 2 * (2 + 244 * 9) + 2 + 1


def test_permutation_exact_for_additive_game(linear):
    # For an additive game every permutation gives the exact values.
    x = torch.randn(2, 5, dtype=torch.float64)
    e = fl.explainer("permutation_shap", linear, baseline=0.0, budget=10, seed=1).explain(x, target=1)
    np.testing.assert_allclose(e.values, (linear.weight[1] * x).detach().numpy(), atol=1e-12)


# -- errors -----------------------------------------------------------------------------------
def test_exact_refuses_many_players():
    x = np.zeros((1, 25))
    with pytest.raises(ValueError, match=r"n_players = 25.*kernel_shap.*permutation_shap.*spex"):
        fl.explainer("exact_shapley", lambda z: z.sum(1), baseline=0.0).explain(x, target=0)


def test_budget_too_small():
    x = np.zeros((1, 10))
    with pytest.raises(ValueError, match=r"budget = 5 .*at least 12"):
        fl.explainer("kernel_shap", interacting, baseline=0.0, budget=5).explain(x, target=1)
    with pytest.raises(ValueError, match=r"budget = 19 .*at least 20"):
        fl.explainer("permutation_shap", interacting, baseline=0.0, budget=19).explain(x, target=1)
    with pytest.raises(ValueError, match="budget"):
        fl.explainer("kernel_shap", interacting, budget=0)


def test_bad_inputs():
    x = np.zeros((1, 10))
    with pytest.raises(ValueError, match=r"groups must be shaped like one input \(10,\).*got shape \(9,\)"):
        fl.explainer("kernel_shap", interacting, baseline=0.0, groups=np.zeros(9, dtype=int)).explain(x, target=1)
    bad = x.copy()
    bad[0, 3] = np.nan
    with pytest.raises(ValueError, match="x"):
        fl.explainer("permutation_shap", interacting, baseline=0.0).explain(bad, target=1)
    with pytest.raises(ValueError, match="baseline.*background"):
        fl.explainer("exact_shapley", interacting, baseline=0.0, background=np.zeros((2, 10)))
    with pytest.raises(ValueError, match="seed"):
        fl.explainer("kernel_shap", interacting, seed=-1)


def test_kernel_saturated_budget_and_generator_seed():
    # Nearly all coalitions: sampling stops once the distinct pairs fill the budget.
    x = np.random.default_rng(2).normal(size=(1, 8))
    exact = fl.explainer("exact_shapley", interacting, baseline=0.0).explain(x, target=1).values
    e = fl.explainer("kernel_shap", interacting, baseline=0.0, budget=250, seed=np.random.default_rng(0)).explain(x, target=1)
    assert e.params["game_evaluations"] == [250] and e.params["seed"] == "generator"
    assert np.abs(e.values - exact).max() < 0.02 * np.abs(exact).max()


def test_explanation_round_trip(tmp_path):
    e = fl.explainer("permutation_shap", interacting, baseline=0.0, budget=40).explain(np.ones((2, 10)), target=1)
    back = fl.load_explanation(e.save(tmp_path / "perm"))
    np.testing.assert_array_equal(back.values, e.values)
    assert back.params["base_values"] == e.params["base_values"] and back.method == "permutation_shap"


def test_progress_bar_option(capsys):
    e = fl.explainer("kernel_shap", interacting, baseline=0.0, budget=40, progress=True).explain(np.ones((3, 10)), target=1)
    assert e.values.shape == (3, 10)
    with pytest.raises(TypeError, match="progress"):
        fl.explainer("kernel_shap", interacting, progress="yes")
