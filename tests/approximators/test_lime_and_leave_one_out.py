"""fl.approximators.lime, leave_one_out, spex / proxy_spex and the registry: values checked against
closed forms, scikit-learn's weighted Ridge, direct game evaluations and the explainers that run
them (GameExplainer subclasses, which must give the same numbers)."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import approximators as ap
from featurelens._random import row_rng
from featurelens.approximators.lime import exponential_kernel, lime_masks
from featurelens.games import Game, MaskedModel


def additive(n=7, seed=0, constant=0.3):
    w = np.random.default_rng(seed).normal(size=n)
    return Game.from_function(lambda m: m.astype(np.float64) @ w + constant, n), w


def pair_game():
    """v(S) = 1.5 [0 in S] + 2 [1 in S and 2 in S] - 0.5 [3 in S], 5 players."""
    def v(m):
        return 1.5 * m[:, 0] + 2.0 * (m[:, 1] & m[:, 2]) - 0.5 * m[:, 3]
    return Game.from_function(lambda m: v(m).astype(np.float64), 5)


# -- LIME --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sampler", ["bernoulli", "lime_text"])
def test_lime_recovers_an_additive_game_exactly_without_penalty(sampler):
    g, w = additive()
    r = ap.lime(g, budget=200, seed=3, alpha=0.0, sampler=sampler)
    np.testing.assert_allclose(r.values, w, atol=1e-10)
    assert r.base_value == pytest.approx(0.3, abs=1e-10) and r.full_value == pytest.approx(w.sum() + 0.3)
    assert r.info["surrogate_r2"] == pytest.approx(1.0, abs=1e-12)
    assert r.game_evaluations == 200 and g.calls == 200 and r.info["n_samples"] == 199
    assert r.info["sampler"] == sampler and r.info["kernel_width"] == 0.25 and r.model_calls is None


def test_lime_ridge_equals_scikit_learns_weighted_ridge_on_the_same_coalitions():
    sklearn = pytest.importorskip("sklearn.linear_model")
    g = pair_game()
    for distance, alpha in (("cosine", 1.0), ("euclidean", 0.3)):
        r = ap.lime(g, budget=150, seed=np.random.default_rng(11), distance=distance, alpha=alpha)
        masks = lime_masks(149, 5, "bernoulli", np.random.default_rng(11))  # the same draws
        z = masks.astype(np.float64)
        kept = z.sum(1)
        d = 1 - np.sqrt(kept / 5) if distance == "cosine" else np.sqrt(5 - kept)
        width = 0.25 if distance == "cosine" else 0.75 * np.sqrt(5)
        weights = np.exp(-d**2 / (2 * width**2))
        ref = sklearn.Ridge(alpha=alpha).fit(z, g(masks), sample_weight=weights)
        np.testing.assert_allclose(r.values, ref.coef_, atol=1e-9)
        assert r.base_value == pytest.approx(float(ref.intercept_), abs=1e-9)
    np.testing.assert_allclose(exponential_kernel([0.0, 2.0], 1.0), [1.0, np.exp(-2.0)])


def test_lime_refusals_name_the_argument():
    g = pair_game()
    with pytest.raises(ValueError, match="budget"):
        ap.lime(g, budget=2)
    with pytest.raises(ValueError, match="sampler must be one of"):
        ap.lime(g, sampler="uniform")
    with pytest.raises(ValueError, match="alpha"):
        ap.lime(g, surrogate="lasso", alpha=0.0)
    with pytest.raises(ValueError, match=r"kernel_width=1e-06 gives every sample zero weight.*kernel_width=<float>"):
        ap.lime(g, sampler="lime_text", kernel_width=1e-6)  # every drawn coalition removes a player
    with pytest.raises(ValueError, match=r"distance_space='input'.*MaskedModel with a baseline fill"):
        ap.lime(g, distance_space="input")
    assert g.calls == 0  # all refused before any evaluation


def test_lime_is_the_lime_explainer_on_each_rows_game():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    x = torch.randn(3, 5, dtype=torch.float64)
    bg = torch.randn(4, 5, dtype=torch.float64)
    for fill in ({"background": bg}, {"baseline": 0.2}):  # one game per row / the batched rows
        space = {"distance_space": "input"} if "baseline" in fill else {}
        e = fl.explainer("lime", net, n_samples=40, seed=5, **fill, **space).explain(x, target=1)
        for i in range(3):
            game = MaskedModel(net, x[i], target=1, **fill)
            r = ap.lime(game, budget=41, seed=row_rng(5, i), **space)
            np.testing.assert_allclose(e.values[i], r.values, atol=1e-12)
            assert e.base_values[i] == pytest.approx(r.base_value, abs=1e-12)
            assert e.params["surrogate_r2"][i] == pytest.approx(r.info["surrogate_r2"], abs=1e-12)
            assert e.params["full_values"][i] == pytest.approx(r.full_value, abs=1e-12)


# -- leave-one-out -----------------------------------------------------------------------------------


def test_leave_one_out_is_the_drop_of_each_player():
    g = pair_game()
    r = ap.leave_one_out(g)
    # v(N) = 1.5 + 2 - 0.5 = 3; removing 0: 1.5 less, 1 or 2: 2 less, 3: 0.5 more, 4: nothing
    np.testing.assert_allclose(r.values, [1.5, 2.0, 2.0, -0.5, 0.0], atol=1e-12)
    assert r.full_value == 3.0 and r.base_value == pytest.approx(3.0 - 5.0)
    assert r.game_evaluations == g.calls == 6 and r.info["budget"] == 6
    masks = ap.leave_one_out_masks(5)
    assert masks[0].all() and (masks[1:].sum(1) == 4).all() and not masks[1:][np.eye(5, dtype=bool)].any()
    with pytest.raises(ValueError, match=r"leave_one_out evaluates n_players \+ 1 = 6 coalitions; got budget=5"):
        ap.leave_one_out(g, budget=5)
    assert ap.leave_one_out(g, budget=6).values.tolist() == r.values.tolist()


def test_leave_one_out_is_the_feature_ablation_explainer_on_each_rows_game():
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3)).double()
    x = torch.randn(3, 4, dtype=torch.float64)
    bg = torch.randn(5, 4, dtype=torch.float64)
    for fill in ({"background": bg}, {"baseline": -0.4}):
        e = fl.explainer("feature_ablation", net, **fill).explain(x, target=2)
        for i in range(3):
            r = ap.leave_one_out(MaskedModel(net, x[i], target=2, **fill))
            np.testing.assert_allclose(e.values[i], r.values, atol=1e-12)
            assert e.params["full_values"][i] == pytest.approx(r.full_value, abs=1e-12)
        assert e.base_values is None  # the drops do not add up to the output


# -- SPEX / ProxySPEX as approximators ---------------------------------------------------------------


def test_spex_values_are_the_shapley_values_of_the_recovered_interactions():
    g = pair_game()
    r = ap.spex(g, budget=2000, max_order=2, seed=0)
    exact = ap.exact_shapley(pair_game()).values  # the game is 2-sparse in degree: recovered exactly
    np.testing.assert_allclose(r.values, exact, atol=1e-8)
    terms = r.interactions.to("shapley").terms
    np.testing.assert_array_equal(r.values, [terms.get((i,), 0.0) for i in range(5)])
    # base and full values: the surrogate's at empty and N (exact here), no evaluation beyond the queries
    assert r.base_value == pytest.approx(0.0, abs=1e-8) and r.full_value == pytest.approx(3.0, abs=1e-8)
    assert r.base_value + r.values.sum() == pytest.approx(r.full_value, abs=1e-10)  # efficiency, surrogate
    assert r.game_evaluations == r.interactions.queries == r.info["spex_queries"] == g.calls
    banzhaf = ap.spex(pair_game(), budget=2000, max_order=2, seed=0, index="banzhaf")
    assert banzhaf.values[1] == pytest.approx(1.0, abs=1e-8)  # BV of a pair term of 2: 2 / 2^(2-1)
    with pytest.raises(ValueError, match="index must be one of"):
        ap.spex(g, index="sii")


def test_proxy_spex_values_come_from_its_interactions():
    pytest.importorskip("sklearn")
    r = ap.proxy_spex(pair_game(), budget=300, max_order=2, seed=0, n_estimators=20)
    terms = r.interactions.to("shapley").terms
    np.testing.assert_array_equal(r.values, [terms.get((i,), 0.0) for i in range(5)])
    assert r.game_evaluations == r.interactions.queries


# -- the registry and the result ---------------------------------------------------------------------


def test_every_registered_approximator_returns_a_result_object():
    for name, fn in ap.APPROXIMATORS.items():
        assert ap.get(name) is fn
        kw = {"budget": 2000} if name in ("spex", "proxy_spex") else {}
        if name == "proxy_spex":
            pytest.importorskip("sklearn")
        r = fn(pair_game(), **kw)
        assert isinstance(r, ap.ApproximationResult) and not isinstance(r, tuple), name
        assert r.values.shape == (5,) and r.values.dtype == np.float64 and r.n_players == 5
        assert r.full_value == pytest.approx(3.0, abs=1e-6) and r.info["n_players"] == 5 and "budget" in r.info
        record = r.record()
        assert record["base_value"] == r.base_value and record["game_evaluations"] == r.game_evaluations
    for alias, name in ap.ALIASES.items():
        assert ap.get(alias) is ap.APPROXIMATORS[name]
    with pytest.raises(ValueError, match=r"method must be one of exact_shapley, .*lime.*; got 'shapley'"):
        ap.get("shapley")


def test_model_calls_are_counted_on_a_masked_model():
    net = torch.nn.Linear(3, 2).double()
    bg = torch.zeros(4, 3, dtype=torch.float64)
    game = MaskedModel(net, torch.ones(3, dtype=torch.float64), background=bg, target=0)
    r = ap.leave_one_out(game)
    assert r.model_calls == 4 * r.game_evaluations == 16  # 4 background rows per coalition
