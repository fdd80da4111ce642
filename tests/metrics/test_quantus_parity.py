"""featurelens metrics against Quantus 0.6 on the same arrays (deterministic metrics) and, for the
stochastic ones, with Quantus fed the very perturbations featurelens draws (its perturbation
function, or numpy's subset sampler, replaced for the duration of the call)."""

import warnings

import numpy as np
import pytest

import featurelens as fl
from featurelens.metrics import _perturb

quantus = pytest.importorskip("quantus")

M = fl.metrics
N = 6


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def batch(cnn_batch):
    """The shared CNN batch and two planted segment masks."""
    model, x, y, a = cnn_batch
    s = np.zeros((N, 1, 8, 8), np.float32)
    s[:, :, 1:4, 1:3] = 1
    s[:, :, 4:7, 5:7] = 1
    return model, x, y, a, s


def _q(metric, model, x, y, a, s=None, **kw):
    return np.asarray(metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), s_batch=s, device="cpu", **kw),
                      dtype=np.float64)


def test_sparseness_and_complexity(batch):
    _, x, y, a, _ = batch
    # Quantus divides by the max over the whole batch; with every sample's max |a| = 1 that is
    # featurelens's per-sample division.
    a1 = a / np.abs(a).reshape(N, -1).max(1)[:, None, None, None]
    q = _q(quantus.Sparseness(disable_warnings=True), None, x, y, a1)
    np.testing.assert_allclose(M.sparseness(a1), q, atol=1e-6)
    q_raw = _q(quantus.Sparseness(normalise=False, disable_warnings=True), None, x, y, a)
    np.testing.assert_allclose(M.sparseness(a, normalise=False), q_raw, atol=1e-6)
    q = _q(quantus.Complexity(disable_warnings=True), None, x, y, a)
    np.testing.assert_allclose(M.complexity(a), q, atol=1e-6)


def test_relevance_mass_and_rank_accuracy(batch):
    _, x, y, a, s = batch
    q = _q(quantus.RelevanceMassAccuracy(disable_warnings=True), None, x, y, a, s)
    np.testing.assert_allclose(M.relevance_mass(a, s, mode="signed"), q, atol=1e-6)
    q = _q(quantus.RelevanceMassAccuracy(abs=True, disable_warnings=True), None, x, y, a, s)
    np.testing.assert_allclose(M.relevance_mass(a, s, mode="abs"), q, atol=1e-6)
    np.testing.assert_allclose(M.relevance_mass(np.abs(a), s), q, atol=1e-6)  # positive == abs here
    q = _q(quantus.RelevanceRankAccuracy(disable_warnings=True), None, x, y, a, s)
    np.testing.assert_allclose(M.relevance_rank_accuracy(a, s), q, atol=1e-6)
    q = _q(quantus.RelevanceRankAccuracy(abs=True, disable_warnings=True), None, x, y, a, s)
    np.testing.assert_allclose(M.relevance_rank_accuracy(a, s, abs=True), q, atol=1e-6)


def test_pixel_flipping_is_the_full_deletion_curve(batch):
    model, x, y, a, _ = batch
    q = _q(quantus.PixelFlipping(features_in_step=1, disable_warnings=True), model, x, y, a, softmax=False)
    curves, _ = M.deletion_curve(model, x, a, target=y, steps=64, baseline="min")
    np.testing.assert_allclose(curves[:, 1:], q, atol=1e-5)


def test_faithfulness_correlation_on_the_same_subsets(batch, monkeypatch):
    model, x, y, a, _ = batch
    runs, size = 10, 12
    masks = np.stack(list(_perturb.subset_draws(2, N, 64, runs, size)))
    # Quantus draws one subset per sample and run with np.random.choice, run-major.
    picks = iter(np.flatnonzero(masks[j, i]) for j in range(runs) for i in range(N))
    monkeypatch.setattr(np.random, "choice", lambda *args, **kw: next(picks))
    q = _q(quantus.FaithfulnessCorrelation(nr_runs=runs, subset_size=size, return_aggregate=False,
                                           disable_warnings=True), model, x, y, a)
    monkeypatch.undo()
    ours = M.faithfulness_correlation(model, x, a, target=y, n_subsets=runs, subset_size=size, seed=2, baseline="min")
    np.testing.assert_allclose(ours, q, atol=1e-5)


def test_faithfulness_correlation_spearman_on_the_same_subsets(batch, monkeypatch):
    model, x, y, a, _ = batch
    runs, size = 10, 12
    masks = np.stack(list(_perturb.subset_draws(4, N, 64, runs, size)))
    picks = iter(np.flatnonzero(masks[j, i]) for j in range(runs) for i in range(N))
    monkeypatch.setattr(np.random, "choice", lambda *args, **kw: next(picks))
    q = _q(quantus.FaithfulnessCorrelation(nr_runs=runs, subset_size=size, return_aggregate=False,
                                           similarity_func=quantus.similarity_func.correlation_spearman,
                                           disable_warnings=True), model, x, y, a)
    monkeypatch.undo()
    ours = M.faithfulness_correlation(model, x, a, target=y, n_subsets=runs, subset_size=size, seed=4, baseline="min",
                                      similarity="spearman")
    np.testing.assert_allclose(ours, q, atol=1e-5)
    pearson = M.faithfulness_correlation(model, x, a, target=y, n_subsets=runs, subset_size=size, seed=4,
                                         baseline="min")
    assert np.abs(ours - pearson).max() > 1e-3  # the option changes the score


def _saliency_func(model, inputs, targets, **kwargs):
    return fl.explainer("saliency", model).explain(np.asarray(inputs, np.float32), target=np.asarray(targets)).values


@pytest.mark.parametrize("name", ["MaxSensitivity", "AvgSensitivity"])
def test_sensitivity_on_the_same_noise(batch, name):
    model, x, y, _, _ = batch
    n_s = 4
    noise = list(_perturb.uniform_draws(9, n_s, x.shape, np.full(N, 0.2)))
    calls = iter(noise)

    def perturb(arr, indices, **kw):
        return arr + next(calls).reshape(arr.shape)

    ex = fl.explainer("saliency", model)
    a = ex.explain(x, target=y).values
    metric = getattr(quantus, name)(nr_samples=n_s, perturb_func=perturb, disable_warnings=True)
    q = _q(metric, model, x, y, a, explain_func=_saliency_func)
    ours = getattr(M, "max_sensitivity" if name == "MaxSensitivity" else "avg_sensitivity")(
        ex, x, target=y, radius=0.2, n_samples=n_s, seed=9, relative=False)
    np.testing.assert_allclose(ours, q, rtol=1e-5, atol=1e-7)


def test_mprt_layer_by_layer(batch):
    model, x, y, _, _ = batch
    q = quantus.MPRT(seed=42, disable_warnings=True)(
        model=model, x_batch=x, y_batch=y, a_batch=None, device="cpu", explain_func=_saliency_func)
    ours = M.model_randomization("saliency", x, model=model, target=y, seed=42)
    layers = [k for k in q if k != "original"]
    assert layers == ours["layers"]
    np.testing.assert_allclose(ours["similarity"], np.array([q[k] for k in layers], dtype=np.float64), atol=1e-6)
