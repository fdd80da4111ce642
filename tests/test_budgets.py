"""Every budget-like argument is estimated and refused before any work (featurelens._validation.
check_budget): a ValueError naming the argument and the bound, in well under a second, for values
of 10^9, 10^10 and 10^12; legitimate values below the bound still run."""

from __future__ import annotations

import contextlib
import io
import os
import time

import numpy as np
import pytest
import torch

import featurelens as fl
import featurelens._validation as V
from featurelens import approximators as ap
from featurelens.games import Game
from featurelens.learning._grokking import run_grokking

HUGE = (10**9, 10**10, 10**12)


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)).eval()
    x = torch.randn(3, 6)
    a = torch.randn(3, 6)
    game = Game.from_function(lambda m: m.sum(1).astype(float), 8)
    X = np.random.default_rng(0).standard_normal((40, 6))
    return model, x, a, game, X


def _cases(model, x, a, game, X):
    """(argument name, call(value)) for every budget-like argument of the public functions."""
    saliency = fl.explainer("saliency", model)
    exact = fl.interactions.exact(Game.from_function(lambda m: m.sum(1).astype(float), 4), "fourier")
    imgs = np.random.default_rng(0).random((4, 1, 4, 4))
    return [
        ("n_steps", lambda v: fl.explainer("integrated_gradients", model, n_steps=v)),
        ("n_steps", lambda v: fl.explainer("integrated_gradients", model, n_steps=v, method="riemann_trapezoid")),
        ("n_samples", lambda v: fl.explainer("smoothgrad", model, n_samples=v)),
        ("n_subsets", lambda v: fl.metrics.sensitivity_n(model, x, a, n_subsets=v)),
        ("n_samples", lambda v: fl.metrics.monotonicity_correlation(model, x, a, n_samples=v)),
        ("n_subsets", lambda v: fl.metrics.faithfulness_correlation(model, x, a, n_subsets=v)),
        ("n_perturbations", lambda v: fl.metrics.infidelity(model, x, a, n_perturbations=v)),
        ("n_samples", lambda v: fl.metrics.max_sensitivity(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.avg_sensitivity(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.local_lipschitz(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.relative_input_stability(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.relative_output_stability(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.smooth_mprt(saliency, x=x, n_samples=v)),
        ("n_mosaics", lambda v: fl.metrics.focus_mosaics(imgs, np.array([0, 1, 0, 1]), n_mosaics=v)),
        ("budget", lambda v: fl.explainer("kernel_shap", model, baseline=0.0, budget=v)),
        ("budget", lambda v: fl.explainer("permutation_shap", model, baseline=0.0, budget=v)),
        ("budget", lambda v: fl.explainer("minshap", model, baseline=0.0, budget=v)),
        ("budget", lambda v: fl.explainer("spex", model, baseline=0.0, budget=v)),
        ("n_samples", lambda v: fl.explainer("lime", model, baseline=0.0, n_samples=v)),
        ("n_samples", lambda v: fl.explainer("gradient_shap", model, n_samples=v)),
        ("n_permutations", lambda v: fl.selection.MinShapSelector(n_permutations=v).fit(X, X[:, 0] > 0)),
        ("budget", lambda v: ap.kernel_shap(game, budget=v)),
        ("budget", lambda v: ap.permutation_shap(game, budget=v)),
        ("budget", lambda v: ap.minshap(game, budget=v)),
        ("budget", lambda v: fl.interactions.spex(game, budget=v)),
        ("budget", lambda v: fl.interactions.proxy_spex(game, budget=v)),
        ("n_masks", lambda v: exact.r2(Game.from_function(lambda m: m.sum(1).astype(float), 4), n_masks=v)),
        ("n_latents", lambda v: fl.learning.SparseAutoencoder(n_latents=v, progress=False).fit(X)),
        ("n_features", lambda v: fl.learning.RandomFeatureRidge(n_features=v).fit(X, X[:, 0])),
        ("ensemble", lambda v: fl.learning.RandomFeatureRidge(ensemble=v).fit(X, X[:, 0])),
        ("n_features", lambda v: fl.learning.RFRBoostRegressor(n_features=v).fit(X, X[:, 0])),
        ("n_features", lambda v: fl.learning.RFRBoostClassifier(n_features=v).fit(X, X[:, 0] > 0)),
        ("steps", lambda v: fl.learning.train_with_monitor(model, x, torch.tensor([0, 1, 2]), steps=v)),
        ("n_projections", lambda v: fl.learning.GrokAlign(0.1, n_projections=v)),
        ("n_dichotomies", lambda v: fl.learning.manifold_capacity(X, np.arange(40) % 2, n_dichotomies=v)),
        ("p", lambda v: run_grokking(p=v)),
        ("width", lambda v: run_grokking(width=v)),
        ("steps", lambda v: run_grokking(steps=v)),
    ]


N_CASES = 38


def test_the_case_list_is_complete(setup):
    assert len(_cases(*setup)) == N_CASES


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("case", range(N_CASES))
def test_huge_budgets_are_refused_before_work(setup, case, value):
    model, x, a, game, X = setup
    name, call = _cases(*setup)[case]
    calls = game.calls
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        call(value)
    elapsed = time.perf_counter() - start
    message = str(err.value)
    assert f"{name}={value}" in message  # names the argument and what was given
    # ... and the bound: the evaluation limit or the available memory, with the way out.
    assert ("the limit is" in message) or ("available" in message), message
    assert "lower" in message, message
    assert elapsed < 1.0, f"{name}={value} took {elapsed:.2f} s to refuse"
    assert game.calls == calls  # nothing was evaluated


def test_the_message_states_the_estimate_and_the_bound():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match=r"n_steps=1000000000 needs about 1e\+09 model evaluations per input; "
                                         r"the limit is 1e\+08 .*MAX_EVALUATIONS.*lower n_steps"):
        fl.explainer("integrated_gradients", model, n_steps=10**9)


def test_batch_totals_are_refused_before_the_copies_are_evaluated(setup):
    # Within the bound per input, beyond it for the batch (3 inputs x 2 sizes).
    model, x, a, _, _ = setup
    with pytest.raises(ValueError, match=r"n_subsets=40000000 needs about 2\.4e\+08 model evaluations for 3 inputs "
                                         r"and 2 subset sizes"):
        fl.metrics.sensitivity_n(model, x, a, ns=[1, 2], n_subsets=4 * 10**7)


def test_gauss_legendre_nodes_are_bounded_separately():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match=r"n_steps=5000 needs about 5,000 Gauss-Legendre nodes; the limit is 2,048"):
        fl.explainer("integrated_gradients", model, n_steps=5000)
    # A Riemann rule takes that many steps, and its weights still integrate 1 exactly.
    alphas, weights = fl.explainers.gradient.integration_rule("riemann_trapezoid", 5000)
    assert alphas.shape == (5000,) and weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_bound_is_raised_by_the_environment(monkeypatch):
    assert V.check_budget(10**8, "budget") == 10**8  # the bound itself is allowed
    with pytest.raises(ValueError, match="budget="):
        V.check_budget(10**8 + 1, "budget")
    monkeypatch.setenv("FEATURELENS_MAX_EVALUATIONS", "1e9")
    assert V.check_budget(10**9, "budget") == 10**9
    monkeypatch.setenv("FEATURELENS_MAX_EVALUATIONS", "many")
    with pytest.raises(ValueError, match="FEATURELENS_MAX_EVALUATIONS must be a positive number"):
        V.check_budget(10, "budget")


def test_check_budget_keeps_the_int_checks():
    with pytest.raises(TypeError, match="n_steps must be an int"):
        V.check_budget(1.5, "n_steps")
    with pytest.raises(ValueError, match="n_subsets must be an int >= 2"):
        V.check_budget(1, "n_subsets", low=2)
    assert V.check_budget(None, "budget", allow_none=True) is None
    assert V.check_budget(np.int64(7), "budget") == 7


def test_memory_estimates_refuse_above_what_is_available(monkeypatch):
    monkeypatch.setattr(V, "available_memory", lambda: 10**6)
    with pytest.raises(ValueError, match=r"n_masks=1000 .*would need about 16 MB of memory, more than the 1 MB available"):
        V.check_budget(1000, "n_masks", nbytes=lambda v: 16 * v * 1000)


def test_counts_and_bytes_are_formatted_without_overflow():
    assert V.format_count(123456) == "123,456"
    assert V.format_count(10**9) == "1e+09"
    assert V.format_count(2**3000) == "1.23e+903"  # 2^3000 = 1.2302...e903
    assert V.format_bytes(1.5e9) == "1.5 GB"
    assert V.format_bytes(32 * 2**3000).endswith("PB")


def test_diagnose_cli_refuses_a_huge_modulus_in_process(tmp_path):
    from featurelens import cli
    import featurelens.learning._diagnose_cli  # noqa: F401  (imports outside the timing)

    out = tmp_path / "report"
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err):
        rc = cli.main(["diagnose", "--out", str(out), "--p", "100000"])
    elapsed = time.perf_counter() - start
    assert rc == 2
    text = err.getvalue()
    assert "p=100000" in text and "of memory" in text and "lower p (--p" in text, text
    assert elapsed < 1.0
    assert not out.exists() or not os.listdir(out)  # no report folder was written
