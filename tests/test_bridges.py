"""Bridges to shap and shapiq: Explanation.to_shap/from_shap and
Interactions.to_shapiq/from_shapiq keep values, base values, data, names, every term and the index;
shap's plots accept the converted object; shap's and shapiq's own exact computations, brought over
by the bridges, equal featurelens's exact values (an independent reference for the layouts)."""

import sys

import numpy as np
import pandas as pd
import pytest
import torch

import featurelens as fl
from featurelens.games import FunctionGame
from featurelens.interactions import Interactions, exact

NAMES = ["age", "income", "height", "weight"]
X = np.random.default_rng(1).normal(size=(5, 4))
BACKGROUND = np.random.default_rng(2).normal(size=(6, 4))


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()


def _explanation(**kw):
    return fl.explainer("exact_shapley", _net(), background=BACKGROUND, **kw)


# -- shap ------------------------------------------------------------------------------------------


def test_to_shap_and_back_keeps_values_base_values_data_and_names():
    shap = pytest.importorskip("shap")
    e = _explanation().explain(pd.DataFrame(X, columns=NAMES))
    s = e.to_shap()
    assert isinstance(s, shap.Explanation)
    np.testing.assert_array_equal(s.values, e.values)
    np.testing.assert_array_equal(s.base_values, e.base_values)
    np.testing.assert_array_equal(s.data, X)
    assert list(s.feature_names) == NAMES
    back = fl.Explanation.from_shap(s, method="exact_shapley")
    for name in ("values", "base_values", "data"):
        np.testing.assert_array_equal(getattr(back, name), getattr(e, name))
    assert back.feature_names == NAMES and back.method == "exact_shapley" and back.output == "raw"


def test_several_targets_use_shaps_output_axis_and_round_trip():
    pytest.importorskip("shap")
    e = _explanation().explain(X, target=np.array([[0, 2]] * 5), feature_names=NAMES)
    s = e.to_shap()
    assert s.values.shape == (5, 4, 2) and np.shape(s.base_values) == (5, 2)
    np.testing.assert_array_equal(s.values[:, :, 1], e.values[:, 1, :])
    back = fl.Explanation.from_shap(s)
    np.testing.assert_array_equal(back.values, e.values)
    np.testing.assert_array_equal(back.base_values, e.base_values)


def test_grouped_explanations_go_to_shap_one_column_per_group():
    pytest.importorskip("shap")
    e = _explanation(groups=np.array([0, 0, 1, 2])).explain(X, group_names=["age+income", "height", "weight"])
    s = e.to_shap()
    assert list(s.feature_names) == ["age+income", "height", "weight"] and s.data is None
    np.testing.assert_array_equal(s.values, e.group_values)


def test_shap_bar_plot_accepts_the_converted_explanation():
    pytest.importorskip("shap")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import shap

    e = _explanation().explain(pd.DataFrame(X, columns=NAMES))
    shap.plots.bar(e.to_shap(), show=False)
    labels = [t.get_text() for t in plt.gca().get_yticklabels()]
    assert any(name in " ".join(labels) for name in NAMES)
    plt.close("all")


@pytest.mark.slow  # shap's Exact explainer compiles with numba on first use (several seconds)
def test_shaps_exact_explainer_brought_over_equals_exact_shapley():
    # An independent reference: shap's own Exact explainer with the same background, through
    # from_shap, equals featurelens's exact_shapley (values and base values).
    shap = pytest.importorskip("shap")
    net = _net()

    def f(rows):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(rows, dtype=np.float64))).numpy()[:, 1]

    theirs = fl.Explanation.from_shap(shap.explainers.Exact(f, BACKGROUND)(X))
    ours = fl.explainer("exact_shapley", net, background=BACKGROUND).explain(X, target=1)
    np.testing.assert_allclose(theirs.values, ours.values, atol=1e-10)
    np.testing.assert_allclose(theirs.base_values, ours.base_values, atol=1e-10)
    np.testing.assert_array_equal(theirs.data, X)


def test_from_shap_refuses_what_is_not_an_explanation():
    with pytest.raises(TypeError, match="from_shap needs a shap.Explanation"):
        fl.Explanation.from_shap(object())


def test_missing_shap_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "shap", None)
    e = fl.Explanation(np.zeros((2, 3)), "m")
    with pytest.raises(ImportError, match="Explanation.to_shap\\(\\) needs the optional package 'shap'"):
        e.to_shap()


# -- shapiq ----------------------------------------------------------------------------------------


def _game(n=5, seed=3):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=n)
    pair = rng.normal(size=(n, n))

    def v(masks):
        m = masks.astype(np.float64)
        return m @ w + np.einsum("qi,ij,qj->q", m, np.triu(pair, 1), m) + 0.5 * m[:, 0] * m[:, 1] * m[:, 2] + 1.0

    return v, n


@pytest.mark.parametrize("index, order", [
    ("mobius", None), ("shapley", None), ("banzhaf", None), ("sii", 2), ("bii", 2), ("k-sii", 2),
    ("stii", 2), ("fsii", 2), ("fbii", 2), ("k-sii", 3),
])
def test_shapiq_round_trip_keeps_every_term_and_the_index(index, order):
    shapiq = pytest.importorskip("shapiq")
    v, n = _game()
    inter = exact(FunctionGame(v, n), index="mobius")
    inter = inter if index == "mobius" else inter.to(index, max_order=order)
    iv = inter.to_shapiq()
    assert isinstance(iv, shapiq.InteractionValues) and iv.n_players == n
    for term, value in inter.terms.items():
        assert iv[term] == value
    back = Interactions.from_shapiq(iv)
    assert back.index == index and back.terms == inter.terms and back.n_players == n
    assert back.queries == inter.queries


def test_shapiqs_exact_computer_brought_over_equals_exact_k_sii():
    # shapiq's own exact k-SII of the same game, through from_shapiq, equals featurelens's.
    shapiq = pytest.importorskip("shapiq")
    v, n = _game()
    computer = shapiq.ExactComputer(n_players=n, game=lambda coalitions: v(np.asarray(coalitions, dtype=bool)))
    theirs = Interactions.from_shapiq(computer("k-SII", 2))
    ours = exact(FunctionGame(v, n), index="k-sii", max_order=2)
    assert theirs.index == "k-sii"
    for term in set(theirs.terms) | set(ours.terms):
        if term:  # the constant: shapiq stores v(empty), featurelens's k-SII its own empty term
            assert theirs[term] == pytest.approx(ours[term], abs=1e-10), term


def test_fourier_terms_are_refused_with_a_hint():
    pytest.importorskip("shapiq")
    inter = Interactions({(): 1.0, (0, 1): 0.5}, "fourier", 3)
    with pytest.raises(ValueError, match=r"to\('mobius'\)"):
        inter.to_shapiq()


def test_missing_shapiq_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "shapiq", None)
    with pytest.raises(ImportError, match="needs the optional package 'shapiq'"):
        Interactions({(0,): 1.0}, "shapley", 2).to_shapiq()


def test_from_shapiq_refuses_what_is_not_interaction_values():
    with pytest.raises(TypeError, match="from_shapiq needs a shapiq.InteractionValues"):
        Interactions.from_shapiq({(0,): 1.0})
