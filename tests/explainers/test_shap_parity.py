"""featurelens' exact Shapley values and interactions against shap's and shapiq's exact computations.

Same model, same input, same background rows, same (interventional) value function on both sides:
``v(S) = (1/B) sum_j f(x_S, b_{j, not S})[target]``. The model is a small float64 torch MLP, so
both libraries see the same numbers and agreement is to 1e-6 (in practice ~1e-15).

- shap: ``KernelExplainer`` with ``nsamples >= 2^n``: it then enumerates every coalition and solves
  the Shapley-kernel regression on all of them, which gives the exact Shapley values
  (``l1_reg=False``, so no feature selection runs). ``shap.explainers.Exact`` gives the same
  values but its first call JIT-compiles numba code for ~5 s, too slow for the test suite.
- shapiq: ``ExactComputer`` fed a game function built from the same ``fl.games.MaskedModel``, for
  the Shapley value and the pairwise indices k-SII, STII and FSII (order 2), against
  ``fl.interactions.exact``.
"""

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl

shap = pytest.importorskip("shap")

N_FEATURES = 7
TARGET = 1


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(N_FEATURES, 12), torch.nn.Tanh(), torch.nn.Linear(12, 8), torch.nn.Softplus(),
        torch.nn.Linear(8, 3), torch.nn.Softmax(dim=1),
    ).double()
    rng = np.random.default_rng(0)
    background = rng.standard_normal((4, N_FEATURES))
    x = rng.standard_normal((3, N_FEATURES))

    def f(z):  # the numpy function shap calls: the target probability
        with torch.no_grad():
            return model(torch.as_tensor(np.asarray(z, dtype=np.float64)))[:, TARGET].numpy()

    return model, background, x, f


def _fl_exact(model, background, x):
    ex = fl.explainer("exact_shapley", model, background=background)
    return ex.explain_players(x, target=TARGET)


def test_exact_shapley_matches_enumerating_kernel_explainer(setup):
    model, background, x, f = setup
    ours = _fl_exact(model, background, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explainer = shap.KernelExplainer(f, background)
        theirs = explainer.shap_values(x, nsamples=2**N_FEATURES, l1_reg=False, silent=True)
    theirs = np.asarray(theirs)
    assert theirs.shape == ours.shape
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    # Both sides agree on the base value v(empty) too (shap's expected_value).
    base = fl.games.MaskedModel(model, x[0], background=background, target=TARGET).empty()
    assert abs(float(np.ravel(explainer.expected_value)[0]) - base) < 1e-12


def _shapiq_terms(iv) -> dict:
    return {tuple(sorted(k)): float(v) for k, v in iv.dict_values.items() if len(k) > 0}


@pytest.mark.parametrize("fl_index, shapiq_index, order", [
    ("shapley", "SV", 1),
    ("k-sii", "k-SII", 2),
    ("stii", "STII", 2),
    ("fsii", "FSII", 2),
])
def test_interactions_match_shapiq_exact_computer(setup, fl_index, shapiq_index, order):
    shapiq = pytest.importorskip("shapiq")
    model, background, x, _ = setup
    game = fl.games.MaskedModel(model, x[0], background=background, target=TARGET)
    computer = shapiq.ExactComputer(lambda c: game(np.asarray(c, dtype=bool)), n_players=game.n_players)
    iv = computer(shapiq_index, order=order)
    theirs = _shapiq_terms(iv)
    ours = fl.interactions.exact(game, index=fl_index, max_order=order)
    assert ours.index == fl_index
    keys = set(theirs) | {k for k in ours.terms if len(k) > 0}
    assert all(1 <= len(k) <= order for k in keys)
    if order == 2:  # every pair is present (nonzero for this dense model) on the shapiq side
        assert sum(len(k) == 2 for k in theirs) == N_FEATURES * (N_FEATURES - 1) // 2
    diff = max(abs(ours[k] - theirs.get(k, 0.0)) for k in keys)
    assert max(abs(v) for v in theirs.values()) > 1e-3
    assert diff < 1e-6, f"{fl_index}: max |featurelens - shapiq| = {diff:.2e}"
    if () in ours.terms:  # the pairwise indices carry the constant term v(empty) on both sides
        assert abs(ours[()] - float(iv.dict_values[()])) < 1e-6
    if fl_index == "shapley":  # and the explainer gives the same values as the transform
        np.testing.assert_allclose(_fl_exact(model, background, x[:1])[0],
                                   [ours[(i,)] for i in range(N_FEATURES)], rtol=0, atol=1e-12)
