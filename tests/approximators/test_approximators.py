"""featurelens.approximators: Shapley estimators as functions of a Game, bounded memory, refusals."""

import subprocess
import sys

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import approximators as ap
from featurelens.games import Game


from _references import brute_shapley  # noqa: E402  (tests/_references.py)


def make_game(n, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n, n))
    b = rng.normal(size=n)

    def f(m):
        z = m.astype(np.float64)
        return np.tanh(z @ W) @ b + np.sin(3.0 * z[:, 0] * z[:, 1])

    return Game.from_function(f, n)


class RowCounter:
    """A game wrapper that records the largest number of mask rows evaluated in one call."""

    def __init__(self, game):
        self.game, self.n_players, self.largest, self.total = game, game.n_players, 0, 0

    def __call__(self, masks):
        self.largest = max(self.largest, len(masks))
        self.total += len(masks)
        return self.game(masks)


def test_exact_matches_brute_force_and_info():
    g = make_game(6)
    r = ap.exact_shapley(g)
    phi = r.values
    assert isinstance(r, ap.ApproximationResult) and not isinstance(r, tuple)
    np.testing.assert_allclose(phi, brute_shapley(g), atol=1e-12)
    assert phi.dtype == np.float64 and phi.shape == (6,)
    assert r.game_evaluations == 64 and r.info["budget"] == 64 and r.info["n_players"] == r.n_players == 6
    assert r.base_value == pytest.approx(g.empty()) and r.full_value == pytest.approx(g.grand())
    assert r.model_calls is None  # a plain function game counts no model rows
    # efficiency
    assert phi.sum() == pytest.approx(r.full_value - r.base_value, abs=1e-12)
    assert r.record()["game_evaluations"] == 64 and r.record()["base_value"] == r.base_value


def test_interactions_exact_shapley_is_the_same_routine():
    g = make_game(7, seed=2)
    terms = fl.interactions.exact(g, "shapley").terms
    np.testing.assert_allclose([terms[(i,)] for i in range(7)], brute_shapley(g), atol=1e-12)


@pytest.mark.parametrize("n", [8, 12])
def test_sampling_estimators_close_to_exact(n):
    g = make_game(n, seed=n)
    exact = ap.exact_shapley(g).values
    scale = np.abs(exact).max()
    kres, pres = ap.kernel_shap(g, budget=2**n // 2, seed=0), ap.permutation_shap(g, budget=2**n // 2, seed=0)
    kernel, perm = kres.values, pres.values
    assert kres.game_evaluations <= 2**n // 2 and pres.game_evaluations <= 2**n // 2
    assert np.abs(kernel - exact).max() < 0.1 * scale
    assert np.abs(perm - exact).max() < 0.2 * scale
    # A budget of every coalition is exact.
    full = ap.kernel_shap(g, budget=2**n, seed=0).values
    np.testing.assert_allclose(full, exact, atol=1e-9)
    # Efficiency holds exactly for both.
    delta = kres.full_value - kres.base_value
    assert kernel.sum() == pytest.approx(delta, abs=1e-9) and perm.sum() == pytest.approx(delta, abs=1e-9)


def test_minshap_min_mean_max_and_statistic():
    g = make_game(7, seed=4)
    res = ap.minshap(g, budget=400, seed=1)
    low, info = res.values, res.info
    perm = ap.permutation_shap(g, budget=400, seed=1).values
    np.testing.assert_allclose(info["mean"], perm, atol=1e-12)  # the same permutations
    assert np.all(low <= info["mean"] + 1e-12) and np.all(info["mean"] <= info["max"] + 1e-12)
    low_abs = ap.minshap(g, budget=400, seed=1, statistic="min_abs").values
    assert np.all(low_abs >= 0)
    with pytest.raises(ValueError, match="statistic must be one of"):
        ap.minshap(g, statistic="median")


def test_chunking_does_not_change_the_values(monkeypatch):
    """Coalitions are generated and evaluated in chunks of CHUNK_ELEMENTS: a tiny chunk gives the
    same draws and, up to rounding, the same values, and no call exceeds the chunk."""
    g = make_game(20, seed=5)
    big = {name: getattr(ap, name)(g, budget=6000, seed=3).values for name in ("kernel_shap", "permutation_shap", "minshap")}
    monkeypatch.setattr("featurelens._coalitions.CHUNK_ELEMENTS", 2**9)
    for name, ref in big.items():
        counter = RowCounter(g)
        res = getattr(ap, name)(counter, budget=6000, seed=3)
        np.testing.assert_allclose(res.values, ref, atol=1e-10)
        assert counter.total == res.game_evaluations
        # at most one chunk of masks per call (the permutation chains: one antithetic pair)
        assert counter.largest <= max(2**9 // 20, 2 * 19), (name, counter.largest)


def test_permutation_sampler_chunk_independent():
    whole = ap.antithetic_permutations(11, 6, np.random.default_rng(0))
    parts = np.concatenate(list(ap.iter_antithetic_permutations(11, 6, np.random.default_rng(0), chunk=4)))
    np.testing.assert_array_equal(whole, parts)
    assert whole.shape == (11, 6)
    np.testing.assert_array_equal(whole[1], whole[0][::-1])
    from featurelens.selection import minshap as selector_module

    assert selector_module.antithetic_permutations is ap.antithetic_permutations


def test_seeds_int_generator_none_and_bad():
    g = make_game(6)
    a = ap.kernel_shap(g, budget=40, seed=7).values
    b = ap.kernel_shap(g, budget=40, seed=np.random.default_rng(7)).values
    np.testing.assert_array_equal(a, b)
    ap.permutation_shap(g, budget=40, seed=None)
    with pytest.raises(TypeError, match="seed must be None, a non-negative int or a numpy.random.Generator"):
        ap.kernel_shap(g, budget=40, seed="7")
    with pytest.raises(TypeError, match="budget must be an int"):
        ap.permutation_shap(g, budget=40.0)
    with pytest.raises(ValueError, match=r"budget = 5 .*at least 8"):
        ap.kernel_shap(g, budget=5)
    with pytest.raises(TypeError, match="game must be a featurelens Game"):
        ap.exact_shapley(np.zeros(3))


def test_executor_hook_still_used():
    calls = []

    def executor(evaluate_chunk, masks, chunk_size):
        calls.append(masks.shape[0])
        return np.concatenate([evaluate_chunk(masks[s:s + chunk_size]) for s in range(0, len(masks), chunk_size)])

    base = make_game(8, seed=1)
    g = Game.from_function(base.fn, 8, batch_size=16, executor=executor)
    res = ap.kernel_shap(g, budget=100, seed=0)
    assert sum(calls) == res.game_evaluations == g.calls
    np.testing.assert_allclose(res.values, ap.kernel_shap(base, budget=100, seed=0).values, atol=1e-12)


# -- refusals before allocating ---------------------------------------------------------------------
def test_exact_refuses_with_memory_estimate():
    g = Game.from_function(lambda m: m.sum(1).astype(float), 30)
    with pytest.raises(ValueError, match=r"n_players = 30 > max_players = 20.*about 34.4 GB.*kernel_shap"):
        ap.exact_shapley(g)
    with pytest.raises(ValueError, match=r"n_players = 30 .*about \d.* (GB|TB).*SPEX"):
        fl.interactions.exact(g)
    assert g.calls == 0


def test_huge_budgets_refuse_at_once():
    g = fl.datasets.sparse_game(n=1000, n_terms=10, max_degree=2, seed=0)
    for fn in (fl.interactions.spex, ap.kernel_shap, fl.interactions.proxy_spex):
        with pytest.raises(ValueError, match=r"budget=1000000000000 needs about 1e\+12 game evaluations.*limit is 1e\+08"):
            fn(g, budget=10**12)
    assert g.calls == 0


def test_budgets_within_the_bound_refuse_by_memory(monkeypatch):
    # Under the evaluation bound, what grows with the budget is still sized against the memory.
    import featurelens._budgets as V

    monkeypatch.setattr(V, "available_memory", lambda: 10**9)
    g = fl.datasets.sparse_game(n=1000, n_terms=10, max_degree=2, seed=0)
    with pytest.raises(ValueError, match=r"spex with budget = 100000000 .*would need about [\d.]+ GB.*1 GB available.*lower the budget"):
        fl.interactions.spex(g, budget=10**8)
    with pytest.raises(ValueError, match=r"kernel_shap with budget = 100000000 .*would need about [\d.]+ GB.*permutation_shap"):
        ap.kernel_shap(g, budget=10**8)
    with pytest.raises(ValueError, match=r"proxy_spex with budget = 100000000 .*would need about"):
        fl.interactions.proxy_spex(g, budget=10**8)
    assert g.calls == 0


def test_check_memory_and_format():
    assert ap.format_bytes(1.5e9) == "1.5 GB" and ap.format_bytes(2e13) == "20 TB"
    ap.check_memory(10, "a thing", "do less", limit=100)
    with pytest.raises(ValueError, match=r"a thing would need about 1 KB of memory, more than the 100 B available; do less"):
        ap.check_memory(1000, "a thing", "do less", limit=100)


def test_spex_streams_its_queries(monkeypatch):
    g = fl.datasets.sparse_game(n=60, n_terms=8, max_degree=2, basis="fourier", seed=1)
    ref = fl.interactions.spex(g, budget=6000, seed=0)
    monkeypatch.setattr("featurelens._coalitions.CHUNK_ELEMENTS", 60 * 16)
    counter = RowCounter(fl.datasets.sparse_game(n=60, n_terms=8, max_degree=2, basis="fourier", seed=1))
    got = fl.interactions.spex(counter, budget=6000, seed=0)
    assert counter.largest <= 16 and counter.total == ref.queries
    assert set(got.terms) == set(ref.terms)
    for k in ref.terms:
        assert got.terms[k] == pytest.approx(ref.terms[k], abs=1e-9)


# -- defects -----------------------------------------------------------------------------------
class TinyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
        self.head = torch.nn.Linear(2 * 8 * 8, 3)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))


@pytest.mark.parametrize("name", ["exact_shapley", "kernel_shap"])
def test_image_groups_of_the_wrong_shape_are_named(name):
    # Regression: groups (8, 8) for x (n, 1, 8, 8) said "the model failed on 3-D input".
    x = torch.rand(2, 1, 8, 8)
    groups = (np.arange(64).reshape(8, 8) // 16).astype(int)
    with pytest.raises(ValueError, match=r"groups must be shaped like one input \(1, 8, 8\).*got shape \(8, 8\)"):
        fl.explainer(name, TinyCNN(), groups=groups).explain(x)
    e = fl.explainer(name, TinyCNN(), groups=groups[None]).explain(x)  # the right shape works
    assert e.values.shape == x.shape


@pytest.mark.slow
def test_interactions_transforms_loaded_lazily():
    # Regression: interactions/__init__'s lazy __getattr__ was dead (explainers/shapley.py imported
    # interactions.transforms eagerly).
    code = (
        "import sys, featurelens as fl\n"
        "fl.list_explainers(); fl.approximators; fl.interactions.spex\n"
        "assert 'featurelens.interactions.transforms' not in sys.modules, 'transforms loaded eagerly'\n"
        "assert callable(fl.interactions.transforms.game_table)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# -- many players ------------------------------------------------------------------------------------
def test_permutation_estimators_run_beyond_1024_players():
    # An additive game: every marginal contribution of player i is w_i, so permutation sampling
    # and MinShap are exact with any permutations. Above 1,024 players the permutation chunk used
    # to be computed as 0 (CHUNK_ELEMENTS // n^2) and the estimators failed.
    n = 1100
    w = np.random.default_rng(0).standard_normal(n)
    g = Game.from_function(lambda m: m.astype(np.float64) @ w, n)
    res = ap.permutation_shap(g, seed=0)
    np.testing.assert_allclose(res.values, w, atol=1e-10)
    assert res.info["n_permutations"] == 2 and res.game_evaluations == g.calls == 2 + 2 * (n - 1)
    np.testing.assert_allclose(ap.minshap(g, seed=0).values, w, atol=1e-10)
    chunks = list(ap.iter_antithetic_permutations(5, 3072, np.random.default_rng(0)))
    assert [c.shape for c in chunks] == [(2, 3072), (2, 3072), (1, 3072)]
    np.testing.assert_array_equal(chunks[1][1], chunks[1][0][::-1])


def test_a_budget_too_small_for_many_players_is_refused_with_the_minimum():
    g = Game.from_function(lambda m: m.sum(1).astype(float), 3072)
    for fn in (ap.permutation_shap, ap.minshap):
        with pytest.raises(ValueError, match=r"budget = 1000 .*n_players = 3072; it needs at least 6144"):
            fn(g, budget=1000)
    assert g.calls == 0


def test_exact_refusals_do_not_overflow_for_thousands_of_players():
    g = Game.from_function(lambda m: m.sum(1).astype(float), 3072)
    with pytest.raises(ValueError, match=r"n_players = 3072 > max_players = 20 \(2\^3072 = 5\.8\d*e\+924 evaluations"):
        ap.exact_shapley(g)
    with pytest.raises(ValueError, match=r"2\^3072 = .*PB of memory"):
        fl.interactions.exact(g)
    # A raised max_players still meets the evaluation bound (2^40 > 10^8), before any evaluation.
    g40 = Game.from_function(lambda m: m.sum(1).astype(float), 40)
    with pytest.raises(ValueError, match=r"n_players = 40 needs 2\^40 = 1\.1e\+12 game evaluations.*limit of 1e\+08"):
        ap.exact_shapley(g40, max_players=64)
    assert g.calls == g40.calls == 0
