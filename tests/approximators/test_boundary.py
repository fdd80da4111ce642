"""The boundary between an approximator and its game (issue 33, item 4): every approximator of
``fl.approximators.APPROXIMATORS`` checks what a plain callable with ``n_players`` returns (one
finite number per coalition) and what it returns itself (an ApproximationResult with ``n`` finite
values), and undoes a float64 overflow of its own arithmetic on game values near 1e308 (or says
that the true values do not fit float64); ``GameExplainer`` checks what its approximator returns."""

import re

import numpy as np
import pytest
import torch

from featurelens import approximators as ap
from featurelens.explainers import GameExplainer

N = 5
# A budget every method accepts for 5 players (None: the method's default).
BUDGETS = {"exact_shapley": None, "kernel_shap": 64, "permutation_shap": 64, "minshap": 64, "lime": 64,
           "leave_one_out": None, "spex": None, "proxy_spex": None}
METHODS = sorted(ap.APPROXIMATORS)


class Callable:
    """A plain callable with n_players (not a featurelens Game)."""

    def __init__(self, fn, n=N):
        self.fn, self.n_players = fn, n

    def __call__(self, masks):
        return self.fn(masks)


def run(method, fn, n=N, **kwargs):
    budget = BUDGETS[method]
    kwargs.update({} if budget is None else {"budget": budget})
    return ap.get(method)(Callable(fn, n), **kwargs)


def test_every_approximator_is_covered():
    assert set(BUDGETS) == set(ap.APPROXIMATORS)


@pytest.mark.parametrize("method", METHODS)
def test_nan_values_of_a_plain_callable_are_refused(method):
    # before: NaN values came back from exact, permutation, minshap, lime, leave_one_out; a torch
    # INTERNAL ASSERT from kernel_shap and spex
    def fn(m):
        return np.where(m[:, 0], np.nan, m.sum(1) * 1.0)

    with pytest.raises(ValueError, match=r"the game returned NaN or inf for \d+ of \d+ mask rows.*expected finite"):
        run(method, fn)


@pytest.mark.parametrize("method", METHODS)
def test_too_few_values_are_refused(method):
    # before: leave_one_out turned 5 values for 6 coalitions into 4 values for 5 players silently
    def fn(m):
        return m.sum(1)[:-1] * 1.0

    with pytest.raises(ValueError, match=r"one value per mask row, shape \(\d+,\); got shape \(\d+,\)") as err:
        run(method, fn)
    want, got = map(int, re.findall(r"shape \((\d+),\)", str(err.value)))
    assert got == want - 1


@pytest.mark.parametrize("method", METHODS)
def test_two_columns_per_coalition_are_refused(method):
    # before: "only 0-dimensional arrays can be converted to Python scalars"
    def fn(m):
        return np.stack([m.sum(1), m.sum(1)], axis=1) * 1.0

    with pytest.raises(ValueError, match=r"one value per mask row, shape \(\d+,\); got shape \(\d+, 2\)"):
        run(method, fn)


@pytest.mark.parametrize("method", METHODS)
def test_a_callable_returning_none_or_text_is_refused(method):
    with pytest.raises(ValueError, match=r"one value per mask row, shape \(\d+,\); got shape \(\)"):
        run(method, lambda m: None)
    with pytest.raises(TypeError, match="must return numbers; got values of dtype <U"):
        run(method, lambda m: np.array(["a"] * len(m)))


@pytest.mark.parametrize("method", METHODS)
def test_a_valid_callable_gives_the_values_of_the_same_function_as_a_game(method):
    w = np.array([1.0, -2.0, 0.5, 3.0, 0.0])

    def fn(m):
        return 7.0 + m @ w  # additive: every method recovers w (LIME without its ridge penalty)

    res = run(method, fn, **({"alpha": 0.0} if method == "lime" else {}))
    assert res.values.shape == (N,) and "rescaled" not in res.info
    np.testing.assert_allclose(res.values, w, atol=1e-8)
    assert res.full_value == pytest.approx(7.0 + w.sum())


# v(N) = 1e308 and every other coalition -1e308: symmetric, so each Shapley value is
# (v(N) - v(empty)) / 5 = 4e307, finite, although v(N) - v(empty) = 2e308 is not.
def huge(m):
    return np.where(m.all(axis=1), 1e308, -1e308)


@pytest.mark.parametrize("method", ["exact_shapley", "kernel_shap", "spex", "proxy_spex"])
def test_values_near_1e308_give_the_finite_correct_shapley_values(method):
    # before: inf (exact), a torch INTERNAL ASSERT (kernel_shap), "term () has the non-finite value nan" (spex)
    res = run(method, huge)
    np.testing.assert_allclose(res.values, 4e307, rtol=1e-6)
    assert res.base_value == pytest.approx(-1e308, rel=1e-6) and res.full_value == pytest.approx(1e308, rel=1e-6)
    assert res.info["rescaled"] == 1024  # |v| < 2^1024: the game was divided by 2^1024


def test_a_rescaled_run_counts_the_evaluations_of_both_runs():
    res = ap.exact_shapley(Callable(huge))
    assert res.game_evaluations == 2 * 2**N


@pytest.mark.parametrize("method", ["permutation_shap", "minshap", "lime"])
def test_values_near_1e308_give_finite_values_of_the_right_size(method):
    res = run(method, huge)
    assert np.isfinite(res.values).all() and np.isfinite(res.base_value)
    if method == "minshap":  # a player's smallest marginal contribution is 0 (not last in the order)
        np.testing.assert_array_equal(res.values, 0.0)
    else:  # sampled: around 4e307 each, all of one sign
        assert (res.values > 1e306).all() and (res.values < 1.5e308).all()


def test_leave_one_out_whose_true_values_exceed_float64_says_so():
    # before: values inf and base_value -inf, silently. Each drop is 1e308 - (-1e308) = 2e308.
    with pytest.raises(ValueError, match=r"leave_one_out: the game's values reach \|v\| = 1e\+308.*exceed the largest "
                                         r"float64 \(1.8e\+308\).*divide the game's values by a constant"):
        run("leave_one_out", huge)


def test_leave_one_out_near_1e308_with_representable_drops_is_exact():
    # v(N) = 1.5e308, v(N - i) = 1.5e308 - (i + 1) 1e307: drops (i + 1) 1e307, base 1.5e308 - 1.5e308 = 0
    def fn(m):
        return 1.5e308 - ((~m) * np.arange(1, N + 1) * 1e307).sum(axis=1)

    res = run("leave_one_out", fn)
    np.testing.assert_allclose(res.values, np.arange(1, N + 1) * 1e307, rtol=1e-12)
    assert abs(res.base_value) < 1e293


def test_a_small_game_whose_method_fails_is_not_retried():
    class Counting(Callable):
        calls = 0

        def __call__(self, masks):
            Counting.calls += 1
            return super().__call__(masks)

    with pytest.raises(ValueError, match="budget"):
        ap.kernel_shap(Counting(lambda m: m.sum(1) * 1.0), budget=2)
    assert Counting.calls == 0  # refused before any evaluation, once


def test_no_n_players_is_a_type_error():
    with pytest.raises(TypeError, match="game must be a featurelens Game .*with n_players.*got function"):
        ap.kernel_shap(lambda m: m.sum(1))


# -- GameExplainer: what the approximator returns ---------------------------------------------------

@pytest.fixture
def model_and_x():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 2).double(), torch.randn(2, 4, dtype=torch.float64)


def _explainer(approximator):
    class Custom(GameExplainer):  # not registered: a test class
        pass

    Custom.approximator = approximator
    return Custom


def test_game_explainer_without_an_approximator_says_what_to_set(model_and_x):
    # before: "'NoneType' object is not callable"
    model, x = model_and_x
    with pytest.raises(TypeError, match=r"Custom.approximator must be a function \(game, \*\*options\) -> "
                                        r"ApproximationResult.*got NoneType"):
        _explainer(None)(model, baseline=0.0).explain(x, target=0)


def test_game_explainer_refuses_n_plus_one_values(model_and_x):
    # before: numpy's reshape error
    model, x = model_and_x

    def extra(game):
        return ap.ApproximationResult(np.zeros(game.n_players + 1), 0.0, 0.0, 1)

    with pytest.raises(ValueError, match=r"Custom's approximator returned values of shape \(5,\); expected one value "
                                         r"per player, shape \(4,\)"):
        _explainer(staticmethod(extra))(model, baseline=0.0).explain(x, target=0)


def test_game_explainer_refuses_a_plain_array(model_and_x):
    # before: AttributeError: 'numpy.ndarray' object has no attribute 'values'
    model, x = model_and_x
    with pytest.raises(TypeError, match="Custom's approximator must return a featurelens.approximators."
                                        "ApproximationResult .*got ndarray"):
        _explainer(staticmethod(lambda game: np.zeros(game.n_players)))(model, baseline=0.0).explain(x, target=0)


def test_game_explainer_refuses_nan_values_and_base_values(model_and_x):
    # before: the NaN values were kept in the Explanation
    model, x = model_and_x

    def nan(game):
        return ap.ApproximationResult(np.array([0.0, np.nan, 1.0, 2.0]), 0.0, 1.0, 1)

    with pytest.raises(ValueError, match=r"returned NaN or inf values for 1 of 4 players \(first players \[1\]\)"):
        _explainer(staticmethod(nan))(model, baseline=0.0).explain(x, target=0)

    def inf_base(game):
        return ap.ApproximationResult(np.zeros(4), float("inf"), 1.0, 1)

    with pytest.raises(ValueError, match="returned base_value = inf; expected a finite number"):
        _explainer(staticmethod(inf_base))(model, baseline=0.0).explain(x, target=0)


def test_game_explainer_with_a_valid_approximator_is_unchanged(model_and_x):
    model, x = model_and_x
    e = _explainer(staticmethod(ap.exact_shapley))(model, baseline=0.0).explain(x, target=1)
    w = model.weight[1].detach().numpy()
    np.testing.assert_allclose(e.values, x.numpy() * w, atol=1e-12)  # linear model, zero baseline
