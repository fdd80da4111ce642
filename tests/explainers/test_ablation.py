"""feature_ablation and feature_permutation: leave-one-player-out drops, against Captum and by hand."""

import itertools

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.approximators import leave_one_out_masks
from featurelens.explainers.ablation import FeaturePermutation

PATCHES = (np.arange(64).reshape(8, 8) // 2 % 4 + 4 * (np.arange(64).reshape(8, 8) // 16)).reshape(1, 8, 8)


def _captum():
    return pytest.importorskip("captum.attr")


# -- feature_ablation ------------------------------------------------------------------------------


def test_linear_model_drops_are_weight_times_difference_from_the_baseline():
    rng = np.random.default_rng(0)
    w = rng.normal(size=6)
    x = rng.normal(size=(3, 6))
    f = lambda X: X @ w  # noqa: E731
    e = fl.explainer("feature_ablation", f, baseline=0.5).explain(x)
    np.testing.assert_allclose(e.values, w * (x - 0.5), rtol=1e-12, atol=1e-12)
    # Per row: v(N) and one row per player, all rows in batched passes; plus the target pass (3 rows).
    assert e.model_calls == 3 * 7 + 3
    assert e.base_values is None
    np.testing.assert_allclose(e.params["full_values"], x @ w)


def test_a_group_carries_its_drop_on_every_element_as_captum_measured():
    # The reference sheet's measurement: mask [[0,0,1,1]] on f = sum (1,2,3,4) x at x = 1 gives [3,3,7,7].
    f = lambda X: X @ np.array([1.0, 2.0, 3.0, 4.0])  # noqa: E731
    ex = fl.explainer("feature_ablation", f, baseline=0.0, groups=np.array([0, 0, 1, 1]))
    e = ex.explain(np.ones((1, 4)))
    np.testing.assert_allclose(e.values, [[3.0, 3.0, 7.0, 7.0]])
    np.testing.assert_allclose(ex.explain_players(np.ones((1, 4))), [[3.0, 7.0]])
    np.testing.assert_allclose(e.group_values, [[3.0, 7.0]])


def test_background_fill_is_the_mean_drop_over_the_rows(mlp):
    rng = np.random.default_rng(1)
    x, bg = rng.normal(size=(2, 6)), rng.normal(size=(5, 6))
    e = fl.explainer("feature_ablation", mlp, background=bg).explain(x, target=2)
    f = lambda z: mlp(torch.as_tensor(z)).detach().numpy()[:, 2]  # noqa: E731
    for r in range(2):
        for i in range(6):
            filled = np.repeat(x[r:r + 1], 5, axis=0)
            filled[:, i] = bg[:, i]
            np.testing.assert_allclose(e.values[r, i], f(x[r:r + 1])[0] - f(filled).mean(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("with_mask", [False, True])
def test_feature_ablation_equals_captum_on_a_cnn(small_cnn, with_mask):
    attr = _captum()
    net = small_cnn.double()
    x = torch.as_tensor(np.random.default_rng(2).normal(size=(3, 1, 8, 8)))
    base = torch.as_tensor(np.random.default_rng(3).normal(size=(1, 8, 8)))
    groups = PATCHES if with_mask else None
    e = fl.explainer("feature_ablation", net, baseline=base.numpy(), groups=groups).explain(x.numpy(), target=1)
    mask = None if groups is None else torch.as_tensor(groups)[None]
    ref = attr.FeatureAblation(net).attribute(x, baselines=base[None], target=1, feature_mask=mask)
    np.testing.assert_allclose(e.values, ref.detach().numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("with_mask", [False, True])
def test_feature_ablation_equals_captum_on_a_tabular_mlp_in_float32(mlp, with_mask):
    attr = _captum()
    net = mlp.float()
    x = torch.as_tensor(np.random.default_rng(4).normal(size=(4, 6)), dtype=torch.float32)
    groups = np.array([0, 1, 1, 2, 0, 3]) if with_mask else None
    target = np.array([0, 2, 1, 2])
    e = fl.explainer("feature_ablation", net, baseline=0.25, groups=groups).explain(x.numpy(), target=target)
    mask = None if groups is None else torch.as_tensor(groups)[None]
    ref = attr.FeatureAblation(net).attribute(x, baselines=0.25, target=torch.as_tensor(target), feature_mask=mask)
    np.testing.assert_allclose(e.values, ref.detach().numpy(), rtol=0, atol=1e-6)


def test_tabular_inputs_need_a_fill_and_groups_must_match_one_input(mlp):
    with pytest.raises(ValueError, match="baseline"):
        fl.explainer("feature_ablation", mlp).explain(np.zeros((1, 6)))
    with pytest.raises(ValueError, match="groups"):
        fl.explainer("feature_ablation", mlp, baseline=0.0, groups=np.zeros(5, dtype=int)).explain(np.zeros((1, 6)))


def test_leave_one_out_masks():
    m = leave_one_out_masks(3)
    np.testing.assert_array_equal(m, [[1, 1, 1], [0, 1, 1], [1, 0, 1], [1, 1, 0]])


# -- feature_permutation ---------------------------------------------------------------------------


def _brute_permutation(f, x, groups, perms):
    """f(x_r) - f(x_r with group g from row perms[g][r]), by hand."""
    out = np.zeros_like(x)
    for g, p in enumerate(perms):
        permuted = x.copy()
        permuted[:, groups == g] = x[p][:, groups == g]
        out[:, groups == g] = (f(x) - f(permuted))[:, None]
    return out


def test_permutation_matches_a_brute_force_reimplementation_with_its_documented_permutations(mlp):
    x = np.random.default_rng(5).normal(size=(5, 6))
    groups = np.array([0, 0, 1, 2, 2, 1])
    ex = fl.explainer("feature_permutation", mlp, groups=groups, seed=11)
    e = ex.explain(x, target=1)
    perms = FeaturePermutation.permutations(5, 3, 11)
    assert not any(np.array_equal(p, np.arange(5)) for p in perms)
    assert sorted(perms[0].tolist()) == list(range(5))
    f = lambda z: mlp(torch.as_tensor(z)).detach().numpy()[:, 1]  # noqa: E731
    np.testing.assert_allclose(e.values, _brute_permutation(f, x, groups, perms), rtol=1e-12, atol=1e-12)
    assert e.params["seed"] == 11 and e.params["fill"] == "batch permutation"


@pytest.mark.parametrize("with_mask", [False, True])
def test_permutation_equals_captum_fed_the_same_permutations(mlp, with_mask):
    attr = _captum()
    x = torch.as_tensor(np.random.default_rng(6).normal(size=(4, 6)))
    groups = np.array([0, 0, 1, 2, 2, 1]) if with_mask else np.arange(6)
    ex = fl.explainer("feature_permutation", mlp, groups=groups if with_mask else None, seed=3)
    e = ex.explain(x.numpy(), target=0)
    perms = FeaturePermutation.permutations(4, int(groups.max()) + 1, 3)

    def perm_func(inp, feature_mask):  # Captum permutes one group at a time: apply our permutation of it
        g = int(np.unique(groups[feature_mask.reshape(-1).numpy().astype(bool)])[0])
        p = torch.as_tensor(perms[g])
        return inp[p] * feature_mask + inp * ~feature_mask

    mask = torch.as_tensor(groups)[None] if with_mask else None
    ref = attr.FeaturePermutation(mlp, perm_func=perm_func).attribute(x, target=0, feature_mask=mask)
    np.testing.assert_allclose(e.values, ref.detach().numpy(), rtol=0, atol=1e-10)


def test_permutation_agrees_with_captum_in_expectation(mlp):
    # With 3 rows each group's value depends only on its permutation, uniform over the 5 that are
    # not the identity (ours and Captum's redraw the identity): the exact expectation is their mean.
    attr = _captum()
    x = np.random.default_rng(7).normal(size=(3, 6))
    groups = np.array([0, 0, 1, 1, 2, 2])
    f = lambda z: mlp(torch.as_tensor(z)).detach().numpy()[:, 1]  # noqa: E731
    others = [np.array(p) for p in itertools.permutations(range(3)) if p != (0, 1, 2)]
    exact = np.mean([_brute_permutation(f, x, groups, [p, p, p]) for p in others], axis=0)
    # Our permutations: each non-identity one about 1/5 of the time (2000 draws per row of groups).
    perms = FeaturePermutation.permutations(3, 2000, 1)
    freq = [np.mean((perms == p).all(axis=1)) for p in others]
    np.testing.assert_allclose(freq, 0.2, atol=0.03)
    ours = np.mean([fl.explainer("feature_permutation", mlp, groups=groups, seed=s).explain(x, target=1).values
                    for s in range(150)], axis=0)
    torch.manual_seed(0)
    fp = attr.FeaturePermutation(mlp)
    xt, mask = torch.as_tensor(x), torch.as_tensor(groups)[None]
    theirs = np.mean([fp.attribute(xt, target=1, feature_mask=mask).detach().numpy() for _ in range(150)], axis=0)
    # 150 runs: the standard error of each mean is about |spread| / sqrt(150 * 4/5) ~ 0.09 |spread|.
    scale = np.abs(exact).max()
    np.testing.assert_allclose(ours, exact, atol=0.15 * scale)
    np.testing.assert_allclose(theirs, exact, atol=0.15 * scale)


def test_permutation_seeds_and_refusals(mlp):
    x = np.random.default_rng(8).normal(size=(4, 6))
    a = fl.explainer("feature_permutation", mlp, seed=1).explain(x, target=0).values
    b = fl.explainer("feature_permutation", mlp, seed=2).explain(x, target=0).values
    assert not np.allclose(a, b)
    with pytest.raises(ValueError, match="at least 2 rows"):
        fl.explainer("feature_permutation", mlp).explain(x[:1], target=0)
    with pytest.raises(ValueError, match="executor"):
        fl.explainer("feature_permutation", mlp).explain(x, executor=fl.parallel.ThreadExecutor(2))
    with pytest.raises(ValueError, match="target"):
        fl.explainer("feature_permutation", mlp).explain(x, target=np.zeros((4, 2), dtype=int))
    with pytest.raises(TypeError, match="baseline"):
        fl.explainer("feature_permutation", mlp, baseline=0.0)


def test_feature_ablation_rows_in_parts_equal_the_serial_call(mlp):
    x = np.random.default_rng(9).normal(size=(5, 6))
    ex = fl.explainer("feature_ablation", mlp, baseline=0.0, groups=np.array([0, 0, 1, 1, 2, 2]))
    a = ex.explain(x, target=1)
    b = ex.explain(x, target=1, executor=fl.parallel.ThreadExecutor(2))
    np.testing.assert_array_equal(a.values, b.values)
    assert a.params["full_values"] == b.params["full_values"] and a.model_calls == b.model_calls
