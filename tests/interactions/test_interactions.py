"""Interactions container and exact(): values checked against brute force and planted games."""

from itertools import combinations
from math import factorial

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import featurelens as fl  # noqa: E402
from featurelens.games import Game  # noqa: E402
from featurelens.interactions import Interactions, exact, load_interactions  # noqa: E402
from featurelens.interactions import _interactions  # noqa: E402
from featurelens.games import all_masks  # noqa: E402

W = np.array([1.0, -2.0, 0.5, 3.0, 0.25])


def _value(masks):
    """A non-additive game on 5 players: linear part, a pair, a triple and a max."""
    m = masks.astype(float)
    return m @ W + 2.0 * m[:, 0] * m[:, 1] - 1.5 * m[:, 1] * m[:, 2] * m[:, 4] + np.max(m[:, 2:4], axis=1) + 0.7


def _game():
    return Game.from_function(_value, 5)


def _brute_shapley(fn, n):
    """phi_i = sum_{S subset N\\i} |S|! (n-|S|-1)! / n! (v(S u i) - v(S))."""
    phi = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            w = factorial(size) * factorial(n - size - 1) / factorial(n)
            for s in combinations(others, size):
                without = np.zeros((1, n), dtype=bool)
                without[0, list(s)] = True
                with_i = without.copy()
                with_i[0, i] = True
                phi[i] += w * (fn(with_i)[0] - fn(without)[0])
    return phi


def _nonzero(terms, tol=0.0):
    return {k: v for k, v in terms.items() if abs(v) > tol}


def _assert_terms_close(a, b, atol=1e-10):
    a, b = _nonzero(a, atol), _nonzero(b, atol)
    assert set(a) == set(b)
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=atol)


# -- exact ------------------------------------------------------------------------------------
def test_exact_shapley_matches_brute_force():
    game = _game()
    inter = fl.interactions.exact(game, index="shapley")
    phi = inter.dense(order=1)
    assert phi.shape == (5,)
    np.testing.assert_allclose(phi, _brute_shapley(_value, 5), atol=1e-12)
    grand, empty = _value(np.ones((1, 5), bool))[0], _value(np.zeros((1, 5), bool))[0]
    assert phi.sum() == pytest.approx(grand - empty, abs=1e-12)  # efficiency
    assert inter.queries == 32 and game.calls == 32
    assert inter.index == "shapley" and inter.max_order == 1


def test_exact_mobius_recovers_planted_terms():
    game = fl.datasets.sparse_game(n=8, n_terms=6, max_degree=3, basis="mobius", seed=1)
    inter = exact(game, index="mobius")
    _assert_terms_close(inter.terms, _nonzero(game.terms))
    assert len(inter) == 6 and inter.queries == 256
    masks = all_masks(8)
    np.testing.assert_allclose(inter.predict(masks), game(masks), atol=1e-10)


def test_exact_fourier_recovers_planted_terms():
    game = fl.datasets.sparse_game(n=8, n_terms=6, max_degree=3, basis="fourier", seed=1)
    inter = exact(game, index="fourier")
    _assert_terms_close(inter.terms, _nonzero(game.terms))
    masks = all_masks(8)
    np.testing.assert_allclose(inter.predict(masks), game(masks), atol=1e-10)
    # Fourier -> Moebius gives the same terms as the Moebius transform of the table.
    _assert_terms_close(inter.to("mobius").terms, exact(game, index="mobius").terms)
    assert inter.to("mobius").queries == 256


def test_predict_in_blocks_and_torch_or_int_masks(monkeypatch):
    game = fl.datasets.sparse_game(n=8, n_terms=6, max_degree=3, basis="fourier", seed=2)
    inter = exact(game, index="fourier")
    masks = all_masks(8)
    full = inter.predict(masks)
    monkeypatch.setattr(_interactions, "_PREDICT_BLOCK", 20)  # 3 masks per block
    fresh = Interactions(inter.terms, "fourier", 8)
    np.testing.assert_allclose(fresh.predict(masks.astype(np.int64)), full, atol=1e-12)
    assert fresh.predict(masks[5]).shape == (1,)


def test_indices_from_exact_and_to_agree_and_are_efficient():
    game = _game()
    mob = exact(game, "mobius")
    grand = _value(np.ones((1, 5), bool))[0]
    fsii = exact(game, index="fsii", max_order=2)
    _assert_terms_close(fsii.terms, mob.to("fsii", max_order=2).terms, atol=1e-12)
    assert fsii.max_order == 2 and max(len(k) for k in fsii.terms) <= 2
    for index in ("fsii", "stii"):
        # Efficient indices: the terms (constant included) sum to v(N).
        assert sum(mob.to(index, max_order=2).terms.values()) == pytest.approx(grand, abs=1e-12)
    # FBII of order 2 is the least-squares fit, uniform over all 2^n coalitions, of a Moebius
    # surrogate with terms of order <= 2 (Tsai, Yeh & Ravikumar, 2023).
    keys = [k for size in range(3) for k in combinations(range(5), size)]
    masks = all_masks(5)
    design = np.stack([masks[:, list(k)].all(axis=1) for k in keys], axis=1).astype(float)
    coef = np.linalg.lstsq(design, _value(masks), rcond=None)[0]
    fbii = mob.to("fbii", max_order=2)
    np.testing.assert_allclose([fbii[k] for k in keys], coef, atol=1e-10)
    surrogate = Interactions(fbii.terms, "mobius", 5)  # the same terms read as a basis
    np.testing.assert_allclose(surrogate.predict(masks), design @ coef, atol=1e-10)
    # The pair (0, 1) appears only in the Moebius term 2*x0*x1: every pairwise index gives 2.0.
    assert mob.to("sii", max_order=2)[(1, 0)] == pytest.approx(2.0)
    assert mob.to("stii", max_order=2)[(0, 1)] == pytest.approx(2.0)
    np.testing.assert_allclose(mob.to("shapley").dense(1), exact(game, "shapley").dense(1), atol=1e-12)


# -- r2, top, dense ---------------------------------------------------------------------------
def test_r2_exact_is_one_and_truncated_is_lower():
    game = fl.datasets.sparse_game(n=8, n_terms=6, max_degree=3, basis="mobius", seed=1)
    inter = exact(game, "mobius")
    assert inter.r2(game, n_masks=500, seed=0) == pytest.approx(1.0, abs=1e-12)
    truncated = Interactions(dict(inter.top(2)), "mobius", 8)
    r2 = truncated.r2(game, n_masks=500, seed=0)
    assert r2 < 0.99
    # Same seed, same masks: same score.
    assert truncated.r2(game, n_masks=500, seed=0) == r2
    with pytest.raises(ValueError, match="n_players"):
        inter.r2(_game())


def test_dense_orders():
    terms = {(): 0.5, (0,): 1.0, (2,): -3.0, (0, 1): 2.0, (1, 3): -1.5, (0, 2, 3): 4.0}
    inter = Interactions(terms, "mobius", 4)
    assert inter.dense(0) == 0.5
    np.testing.assert_array_equal(inter.dense(1), [1.0, 0.0, -3.0, 0.0])
    d2 = inter.dense(2)
    assert d2.shape == (4, 4)
    np.testing.assert_array_equal(d2, d2.T)
    np.testing.assert_array_equal(np.diag(d2), 0.0)
    assert d2[0, 1] == d2[1, 0] == 2.0 and d2[3, 1] == -1.5 and d2.sum() == 2 * (2.0 - 1.5)
    d3 = inter.dense(3)
    assert d3.shape == (4, 4, 4) and d3[3, 0, 2] == d3[0, 2, 3] == d3[2, 3, 0] == 4.0
    assert d3.sum() == 6 * 4.0
    with pytest.raises(ValueError, match="limit"):
        Interactions({}, "mobius", 100).dense(4)


def test_top_ordering_and_order_filter():
    terms = {(): 10.0, (0,): 1.0, (1,): -5.0, (0, 1): 3.0, (2, 3): -3.0, (1, 2, 3): 0.5}
    inter = Interactions(terms, "mobius", 4)
    assert inter.top(3) == [((1,), -5.0), ((0, 1), 3.0), ((2, 3), -3.0)]
    assert inter.top(10, order=2) == [((0, 1), 3.0), ((2, 3), -3.0)]
    assert len(inter.top(100)) == 5  # the constant is excluded


# -- persistence ------------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    inter = exact(_game(), index="stii", max_order=2)
    path = inter.save(tmp_path / "inter")
    assert path.endswith(".npz")
    with np.load(path, allow_pickle=False) as data:  # plain arrays and a JSON string only
        assert data["players"].dtype == np.int64 and data["values"].dtype == np.float64
    back = load_interactions(path)
    assert back.terms == inter.terms
    assert (back.index, back.queries, back.max_order, back.n_players) == ("stii", 32, 2, 5)
    assert back.params["method"] == "exact"
    # Only a constant: zero-width player matrix.
    const = load_interactions(Interactions({(): 1.5}, "fourier", 3).save(tmp_path / "c.npz"))
    assert const.terms == {(): 1.5}
    np.savez(tmp_path / "other.npz", values=np.zeros(2))
    with pytest.raises(ValueError, match="not saved featurelens interactions"):
        load_interactions(tmp_path / "other.npz")


# -- errors -----------------------------------------------------------------------------------
def test_errors():
    game = _game()
    with pytest.raises(ValueError, match="index must be one of.*fsii"):
        exact(game, index="shap")
    assert game.calls == 0  # the index is checked before evaluating anything
    with pytest.raises(ValueError, match="index must be one of"):
        Interactions({}, "nope", 3)
    shap = exact(game, index="shapley")
    with pytest.raises(ValueError, match="predict needs terms in a basis"):
        shap.predict(np.ones((2, 5), bool))
    with pytest.raises(ValueError, match="r2 needs terms in a basis"):
        shap.r2(game)
    with pytest.raises(ValueError, match="not invertible"):
        shap.to("mobius")
    with pytest.raises(ValueError, match="not invertible"):
        exact(game, "fsii", max_order=2).to("fsii", max_order=3)
    assert shap.to("shapley").terms == shap.terms
    mob = exact(game, "mobius")
    with pytest.raises(ValueError, match="masks has shape"):
        mob.predict(np.ones((2, 4), bool))
    with pytest.raises(TypeError, match="masks has dtype"):
        mob.predict(np.ones((2, 5)))
    with pytest.raises(ValueError, match="terms keys must be sorted"):
        Interactions({(1, 0): 1.0}, "mobius", 3)
    with pytest.raises(ValueError, match="terms keys must be sorted"):
        Interactions({(0, 3): 1.0}, "mobius", 3)
    with pytest.raises(ValueError, match="terms keys"):
        Interactions({(1, 1): 1.0}, "mobius", 3)
    with pytest.raises(ValueError, match="finite"):
        Interactions({(1,): np.nan}, "mobius", 3)
    with pytest.raises(TypeError, match="terms must be a dict"):
        Interactions([((0,), 1.0)], "mobius", 3)
    with pytest.raises(ValueError, match="k must be"):
        mob.top(0)


def test_immutable_repr_and_namespace():
    inter = Interactions({(0,): 1.0}, "banzhaf", 2, queries=4, params={"a": 1})
    inter.terms[(1,)] = 5.0
    inter.params["a"] = 2
    assert inter.terms == {(0,): 1.0} and inter.params == {"a": 1}
    assert repr(inter) == "Interactions(index='banzhaf', n_players=2, n_terms=1, max_order=None, queries=4)"
    assert fl.Interactions is Interactions
    assert callable(fl.interactions.transforms.game_table)  # the lazy submodule loads


# -- plots ------------------------------------------------------------------------------------
def test_plots_draw_the_top_terms():
    inter = exact(_game(), "mobius")
    n_nonconst = sum(1 for k in inter.terms if k)
    fig = inter.plot_top(k=5)
    ax = fig.axes[0]
    assert len(ax.patches) == 5
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "×".join(map(str, inter.top(1)[0][0]))
    plt.close(fig)
    fig = inter.plot_top(k=100)
    assert len(fig.axes[0].patches) == n_nonconst
    plt.close(fig)
    n_pairs = sum(1 for k in inter.terms if len(k) == 2)
    assert n_pairs >= 2
    fig, ax = plt.subplots()
    assert inter.plot_network(ax=ax, k=2) is fig
    assert len(ax.lines) == 2
    widths = sorted(line.get_linewidth() for line in ax.lines)
    assert widths[-1] == pytest.approx(5.5)
    plt.close(fig)
    fig = inter.plot_network()
    assert len(fig.axes[0].lines) == n_pairs
    plt.close(fig)
