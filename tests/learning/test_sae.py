"""Sparse autoencoders with inner / cosine / blend scores, the superposition data set and the
dictionary metrics, against planted truth and closed forms."""

import numpy as np
import pytest
import torch

from featurelens.datasets.superposition import Superposition, superposition
from featurelens.learning.sae import (
    SparseAutoencoder,
    dead_latents,
    dictionary_recovery,
    norm_detectors,
)


def _orthonormal(d, seed=0):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q  # rows orthonormal


# ------------------------------------------------------------------------------------------------
# the data set


def test_superposition_is_exactly_codes_times_dictionary():
    ds = superposition(12, 6, 0.8, norm_spread=0.5, n_samples=500, seed=3)
    assert isinstance(ds, Superposition)
    assert ds.X.shape == (500, 6) and ds.codes.shape == (500, 12) and ds.dictionary.shape == (12, 6)
    np.testing.assert_allclose(np.linalg.norm(ds.dictionary, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(ds.X, ds.codes @ ds.dictionary, atol=1e-12)
    np.testing.assert_allclose(ds.norms, np.linalg.norm(ds.X, axis=1), atol=1e-12)
    assert (ds.codes >= 0).all()
    # S = P(feature is zero): 6000 Bernoulli(0.8) draws.
    assert abs((ds.codes == 0).mean() - 0.8) < 0.03
    # the norm factors are exp(N(0, 0.5^2)): log has std ~ 0.5
    assert abs(np.log(ds.scales).std() - 0.5) < 0.06
    again = superposition(12, 6, 0.8, norm_spread=0.5, n_samples=500, seed=3)
    np.testing.assert_array_equal(ds.X, again.X)


def test_superposition_normalized_rows_have_unit_norm_and_keep_the_identity():
    ds = superposition(8, 4, 0.7, norm_spread=1.0, normalize=True, n_samples=300, seed=1)
    r = np.linalg.norm(ds.X, axis=1)
    nonzero = ds.norms > 0
    np.testing.assert_allclose(r[nonzero], 1.0, atol=1e-12)
    assert (r[~nonzero] == 0).all()  # no active feature: stays zero, no NaN
    np.testing.assert_allclose(ds.X, ds.codes @ ds.dictionary, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"n_features": 0}, ValueError),
        ({"d": 0}, ValueError),
        ({"sparsity": 1.0}, ValueError),
        ({"sparsity": -0.1}, ValueError),
        ({"sparsity": "high"}, TypeError),
        ({"norm_spread": -1.0}, ValueError),
        ({"normalize": 1}, TypeError),
        ({"n_samples": 0}, ValueError),
    ],
)
def test_superposition_errors(kwargs, err):
    base = {"n_features": 4, "d": 2, "sparsity": 0.5}
    base.update(kwargs)
    with pytest.raises(err, match=next(iter(kwargs))):
        superposition(**base)


# ------------------------------------------------------------------------------------------------
# closed forms with planted weights


def test_true_dictionary_and_codes_reconstruct_exactly():
    # Overcomplete planted dictionary: decoding the true codes gives X exactly.
    ds = superposition(12, 6, 0.9, n_samples=200, seed=0)
    sae = SparseAutoencoder.from_weights(ds.dictionary.T)
    np.testing.assert_allclose(sae.decode(ds.codes), ds.X, atol=1e-12)
    # Orthonormal dictionary with nonnegative codes: the encoder (= D) finds the codes and the
    # autoencoder reconstructs X exactly, end to end.
    D = _orthonormal(6)
    codes = np.where(np.random.default_rng(1).random((100, 6)) < 0.5, np.random.default_rng(2).random((100, 6)), 0.0)
    X = codes @ D
    sae = SparseAutoencoder.from_weights(D.T)
    np.testing.assert_allclose(sae.encode(X), codes, atol=1e-12)
    np.testing.assert_allclose(sae.reconstruct(X), X, atol=1e-12)
    np.testing.assert_allclose(sae.transform(torch.from_numpy(X)), codes, atol=1e-12)
    assert dictionary_recovery(D, sae)["mean_max_cosine"] == pytest.approx(1.0)


def test_scores_closed_forms_and_scale_invariance():
    rng = np.random.default_rng(0)
    D = rng.standard_normal((5, 8))
    D /= np.linalg.norm(D, axis=0)
    W = rng.standard_normal((8, 5)) * 3.0
    b = rng.standard_normal(8)
    X = rng.standard_normal((20, 5))
    inner = SparseAutoencoder.from_weights(D, encoder=W, encoder_bias=b, score="inner")
    cosine = SparseAutoencoder.from_weights(D, encoder=W, encoder_bias=b, score="cosine")
    blend = SparseAutoencoder.from_weights(D, encoder=W, encoder_bias=b, score="blend", blend=0.3)
    per = SparseAutoencoder.from_weights(D, encoder=W, encoder_bias=b, score="blend_per_feature",
                                         blend=np.linspace(0.1, 0.9, 8))
    r = np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(inner.pre_activations(X), X @ W.T + b, atol=1e-12)
    np.testing.assert_allclose(cosine.pre_activations(X), (X @ W.T) / r + b, atol=1e-12)
    np.testing.assert_allclose(blend.pre_activations(X), (X @ W.T) * r ** (0.3 - 1) + b, atol=1e-12)
    np.testing.assert_allclose(per.pre_activations(X), (X @ W.T) * r ** (np.linspace(0.1, 0.9, 8) - 1) + b, atol=1e-12)
    assert inner.blend_ == 1.0 and cosine.blend_ == 0.0 and blend.blend_ == pytest.approx(0.3)
    np.testing.assert_allclose(per.blend_, np.linspace(0.1, 0.9, 8))
    # cosine: invariant to the input's scale; inner: linear in it (so not invariant)
    for c in (0.1, 7.0):
        np.testing.assert_allclose(cosine.pre_activations(c * X), cosine.pre_activations(X), atol=1e-10)
        np.testing.assert_allclose(inner.pre_activations(c * X) - b, c * (inner.pre_activations(X) - b), atol=1e-10)
        assert not np.allclose(inner.pre_activations(c * X), inner.pre_activations(X))
        # blend: homogeneous of degree a
        np.testing.assert_allclose(blend.pre_activations(c * X) - b, c**0.3 * (blend.pre_activations(X) - b), atol=1e-10)


def test_fitted_cosine_sae_is_scale_invariant_without_pre_bias():
    ds = superposition(6, 4, 0.7, n_samples=256, seed=0)
    sae = SparseAutoencoder(8, score="cosine", epochs=2, batch_size=64, pre_bias=False, progress=False).fit(ds.X)
    X = ds.X[ds.norms > 0]
    np.testing.assert_allclose(sae.encode(3.0 * X), sae.encode(X), atol=1e-5)
    inner = SparseAutoencoder(8, score="inner", epochs=2, batch_size=64, pre_bias=False, progress=False).fit(ds.X)
    assert not np.allclose(inner.encode(3.0 * X), inner.encode(X), atol=1e-3)


# ------------------------------------------------------------------------------------------------
# dictionary_recovery


def test_dictionary_recovery_of_a_permuted_sign_flipped_copy_is_one():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((10, 5))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    perm = rng.permutation(10)
    signs = rng.choice([-1.0, 1.0], size=10)
    L = 2.5 * signs[:, None] * W[perm]  # scale does not matter either
    r = dictionary_recovery(W, L)
    assert r["mean_max_cosine"] == pytest.approx(1.0, abs=1e-12)
    assert r["matched"] == 10 and r["matched_share"] == 1.0
    np.testing.assert_allclose(r["best_cosine"], 1.0, atol=1e-12)
    np.testing.assert_array_equal(perm[r["best_match"]], np.arange(10))


def test_dictionary_recovery_brute_force_and_partial_match():
    rng = np.random.default_rng(1)
    T = rng.standard_normal((4, 3))
    L = rng.standard_normal((6, 3))
    r = dictionary_recovery(T, L, threshold=0.5)
    brute = [max(abs(t @ l) / np.linalg.norm(t) / np.linalg.norm(l) for l in L) for t in T]
    np.testing.assert_allclose(r["best_cosine"], brute, atol=1e-12)
    assert r["matched"] == sum(b > 0.5 for b in brute)
    # orthogonal learned atoms match nothing
    e = np.eye(4)
    r = dictionary_recovery(e[:2], e[2:])
    assert r["mean_max_cosine"] == 0.0 and r["matched"] == 0


def test_dictionary_recovery_errors():
    with pytest.raises(ValueError, match="decoder_.T"):
        dictionary_recovery(np.ones((3, 4)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="W_true has zero rows"):
        dictionary_recovery(np.zeros((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        dictionary_recovery(np.full((2, 3), np.nan), np.ones((2, 3)))
    with pytest.raises(ValueError, match="threshold"):
        dictionary_recovery(np.ones((2, 3)), np.ones((2, 3)), threshold=1.5)
    with pytest.raises(ValueError, match="2-D"):
        dictionary_recovery(np.ones(3), np.ones((2, 3)))


# ------------------------------------------------------------------------------------------------
# training


def test_short_fit_recovers_small_superposition():
    # 12 features in 6 dimensions, S = 0.9 (Elhage et al.'s toy model).
    ds = superposition(12, 6, 0.9, n_samples=2048, seed=0)
    sae = SparseAutoencoder(24, sparsity="topk", k=2, lr=1e-2, epochs=20, batch_size=128, seed=0, progress=False)
    sae.fit(ds.X)
    r = dictionary_recovery(ds.dictionary, sae)
    assert r["mean_max_cosine"] > 0.9
    assert sae.history_["reconstruction"][-1] < 0.5 * sae.history_["reconstruction"][0]
    sae_l1 = SparseAutoencoder(24, sparsity="l1", l1=0.2, lr=1e-2, epochs=20, batch_size=128, seed=0, progress=False)
    assert dictionary_recovery(ds.dictionary, sae_l1.fit(ds.X))["mean_max_cosine"] > 0.9


@pytest.mark.parametrize("score", ["inner", "cosine", "blend", "blend_per_feature"])
def test_fit_invariants_every_score(score):
    ds = superposition(8, 5, 0.8, n_samples=300, seed=2)
    sae = SparseAutoencoder(10, score=score, epochs=3, batch_size=64, seed=1, progress=False).fit(ds.X)
    assert sae.decoder_.shape == (5, 10) and sae.encoder_.shape == (10, 5)
    assert sae.encoder_bias_.shape == (10,) and sae.pre_bias_.shape == (5,)
    np.testing.assert_allclose(np.linalg.norm(sae.decoder_, axis=0), 1.0, atol=1e-5)
    for key in ("loss", "reconstruction", "sparsity", "l1", "dead", "resampled", "blend"):
        assert len(sae.history_[key]) == 3
    blend = np.asarray(sae.blend_)
    assert blend.shape == ((10,) if score == "blend_per_feature" else ())
    assert np.all((blend >= 0) & (blend <= 1))
    if score.startswith("blend"):
        assert np.all((blend > 0) & (blend < 1))
    F = sae.encode(ds.X)
    assert F.shape == (300, 10) and (F >= 0).all()
    np.testing.assert_allclose(sae.reconstruct(ds.X), sae.decode(F), atol=1e-5)
    # seeded: the same fit twice
    again = SparseAutoencoder(10, score=score, epochs=3, batch_size=64, seed=1, progress=False).fit(ds.X)
    np.testing.assert_array_equal(sae.decoder_, again.decoder_)


def test_fit_accepts_torch_and_shows_progress(capsys):
    ds = superposition(6, 4, 0.7, n_samples=128, seed=0)
    a = SparseAutoencoder(6, score="blend", epochs=2, batch_size=32, progress=True).fit(torch.from_numpy(ds.X).float())
    b = SparseAutoencoder(6, score="blend", epochs=2, batch_size=32, progress=False).fit(ds.X.astype(np.float32))
    np.testing.assert_array_equal(a.decoder_, b.decoder_)
    assert "sparse autoencoder" in capsys.readouterr().err
    # the global blend is learned: it leaves its start a = 1/2
    assert a.blend_ != 0.5 and a.history_["blend"][-1] == pytest.approx(a.blend_)


@pytest.mark.parametrize("score", ["inner", "cosine", "blend"])
def test_the_tied_start_is_rescaled_to_the_least_squares_fit(score):
    # With a learning rate too small to move anything, the fit is the start: its encoder is the
    # tied one times the least-squares scale, so the reconstruction is no worse than b_pre alone
    # (FVU <= 1); the unscaled tied start overshoots by several times.
    ds = superposition(24, 8, sparsity=0.7, n_samples=512, seed=0)
    sae = SparseAutoencoder(32, score=score, sparsity="topk", k=6, lr=1e-12, epochs=1, batch_size=512, seed=0,
                            resample_dead=False, progress=False).fit(ds.X)
    centred = ds.X - sae.pre_bias_  # what the reconstruction b_pre alone leaves
    fvu = float(((ds.X - sae.reconstruct(ds.X)) ** 2).sum() / (centred**2).sum())
    assert fvu <= 1.0 + 1e-4
    unscaled = SparseAutoencoder.from_weights(sae.decoder_, encoder=sae.decoder_.T, pre_bias=sae.pre_bias_,
                                              score=score, sparsity="topk", k=6)
    fvu_unscaled = float(((ds.X - unscaled.reconstruct(ds.X)) ** 2).sum() / (centred**2).sum())
    assert fvu_unscaled > 1.5 * fvu


def test_topk_keeps_exactly_k_nonzero():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    sae = SparseAutoencoder(16, sparsity="topk", k=3, epochs=2, batch_size=50, progress=False).fit(X)
    F = sae.encode(X)
    assert (np.count_nonzero(F, axis=1) <= 3).all()
    # with every score positive (a large encoder bias) exactly k survive
    planted = SparseAutoencoder.from_weights(sae.decoder_, encoder=sae.encoder_, encoder_bias=np.full(16, 100.0),
                                             sparsity="topk", k=3)
    F = planted.encode(X)
    assert (np.count_nonzero(F, axis=1) == 3).all()
    s = planted.pre_activations(X)
    np.testing.assert_allclose(F.sum(1), np.sort(s, axis=1)[:, -3:].sum(1), rtol=1e-5)


def test_dead_latents_are_resampled_and_counted():
    rng = np.random.default_rng(0)
    X = np.abs(rng.standard_normal((256, 4)))
    # A huge L1 kills latents; resampling revives them between epochs and history records both.
    kw = {"l1": 5.0, "lr": 0.1, "epochs": 4, "batch_size": 16, "progress": False, "seed": 0}
    sae = SparseAutoencoder(12, **kw).fit(X)
    assert sum(sae.history_["dead"]) > 0
    assert sum(sae.history_["resampled"][:-1]) > 0 and sae.history_["resampled"][-1] == 0
    assert all(r <= dd for r, dd in zip(sae.history_["resampled"], sae.history_["dead"]))
    off = SparseAutoencoder(12, resample_dead=False, **kw).fit(X)
    assert sum(off.history_["resampled"]) == 0 and off.history_["dead"][-1] > 0
    # dead_latents: brute force over the codes
    F = sae.encode(X)
    np.testing.assert_array_equal(dead_latents(sae, X), [j for j in range(12) if F[:, j].max() <= 0])
    # a planted encoder with a hugely negative bias on latents 0 and 3 never fires there
    b = np.zeros(4)
    b[[0, 3]] = -1e6
    planted = SparseAutoencoder.from_weights(np.eye(4), encoder_bias=b)
    np.testing.assert_array_equal(dead_latents(planted, X), [0, 3])


def test_norm_detectors_planted():
    rng = np.random.default_rng(0)
    # Latents 0..7 are the true (orthonormal) directions; latent 8 reads the mean direction of the
    # nonnegative codes: it fires with the norm of every sample (corr ~ 0.95) and correlates with
    # no single feature above ~0.36 (1 / sqrt(8) for independent codes, a little more).
    D = _orthonormal(8, seed=5)
    codes = np.abs(rng.standard_normal((2000, 8)))
    X = codes @ D
    norm_dir = D.sum(0) / np.linalg.norm(D.sum(0))
    sae = SparseAutoencoder.from_weights(np.column_stack([D.T, norm_dir]))
    out = norm_detectors(sae, X, codes=codes)
    np.testing.assert_array_equal(out["latents"], [8])
    assert out["norm_correlation"][8] > 0.9 and out["feature_correlation"][8] < 0.5
    np.testing.assert_allclose(out["feature_correlation"][:8], 1.0, atol=1e-12)  # latent j = code j
    # brute force: Pearson correlation of each latent with ||x||
    F, r = sae.encode(X), np.linalg.norm(X, axis=1)
    np.testing.assert_allclose(out["norm_correlation"], [abs(np.corrcoef(F[:, j], r)[0, 1]) for j in range(9)], atol=1e-10)
    # without codes only the norm criterion applies (the same latent here: features corr ~ 0.33)
    np.testing.assert_array_equal(norm_detectors(sae, X)["latents"], [8])
    # explicit norms that are pure noise: nothing is a norm detector
    assert norm_detectors(sae, X, norms=rng.random(2000), norm_threshold=0.3)["latents"].size == 0
    # a dead latent (constant 0) correlates with nothing and is never a detector
    dead = SparseAutoencoder.from_weights(np.column_stack([D.T, norm_dir]), encoder_bias=np.r_[np.zeros(8), -1e6])
    out = norm_detectors(dead, X, codes=codes)
    assert out["latents"].size == 0 and out["norm_correlation"][8] == 0.0


# ------------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"n_latents": 0}, ValueError, "n_latents"),
        ({"n_latents": 2.5}, TypeError, "n_latents"),
        ({"score": "cosin"}, ValueError, "Did you mean 'cosine'"),
        ({"sparsity": "l0"}, ValueError, "sparsity"),
        ({"sparsity": "topk"}, ValueError, "k must be given"),
        ({"sparsity": "topk", "k": 9}, ValueError, "k must be"),
        ({"k": 2}, ValueError, "only used with sparsity='topk'"),
        ({"l1": -1.0}, ValueError, "l1"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"epochs": 0}, ValueError, "epochs"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"progress": "yes"}, TypeError, "progress"),
        ({"resample_dead": 1}, TypeError, "resample_dead"),
        ({"seed": -1}, ValueError, "seed"),
    ],
)
def test_constructor_errors_at_fit(kwargs, err, match):
    params = {"n_latents": 8, "epochs": 1}
    params.update(kwargs)
    with pytest.raises(err, match=match):
        SparseAutoencoder(**params).fit(np.ones((4, 3)))


def test_input_errors():
    X = np.random.default_rng(0).standard_normal((10, 3))
    sae = SparseAutoencoder(4, epochs=1, progress=False)
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        sae.fit(bad)
    with pytest.raises(ValueError, match="X contains NaN"):
        sae.fit(torch.tensor(bad))
    with pytest.raises(ValueError, match="2-D"):
        sae.fit(X[0])
    with pytest.raises(ValueError, match="2-D"):
        sae.fit(X[None])
    with pytest.raises(TypeError, match="floating"):
        sae.fit(np.ones((4, 3), dtype=int))
    with pytest.raises(RuntimeError, match="not fitted"):
        sae.encode(X)
    sae.fit(X)
    with pytest.raises(ValueError, match="3 features"):
        sae.encode(np.ones((2, 5)))
    with pytest.raises(ValueError, match="4 latents"):
        sae.decode(np.ones((2, 3)))
    with pytest.raises(ValueError, match="unit norm"):
        SparseAutoencoder.from_weights(2.0 * np.eye(3))
    with pytest.raises(ValueError, match="encoder must have shape"):
        SparseAutoencoder.from_weights(np.eye(3), encoder=np.eye(2))
    with pytest.raises(ValueError, match="blend must lie strictly"):
        SparseAutoencoder.from_weights(np.eye(3), score="blend", blend=1.0)
    with pytest.raises(ValueError, match="blend is only used"):
        SparseAutoencoder.from_weights(np.eye(3), score="inner", blend=0.5)
    with pytest.raises(TypeError, match="SparseAutoencoder"):
        dead_latents("sae", X)
    with pytest.raises(ValueError, match="norms must have shape"):
        norm_detectors(sae, X, norms=np.ones(3))
    with pytest.raises(ValueError, match="codes must have"):
        norm_detectors(sae, X, codes=np.ones((4, 2)))
    with pytest.raises(ValueError, match="codes contains NaN"):
        norm_detectors(sae, X, codes=np.full((10, 2), np.nan))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
def test_unavailable_device_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA is not available"):
        SparseAutoencoder(4, epochs=1, device="cuda:0").fit(np.ones((4, 3)))


def test_sklearn_params_roundtrip():
    sae = SparseAutoencoder(5, score="blend", k=None)
    assert sae.get_params()["score"] == "blend"
    sae.set_params(score="cosine", n_latents=7)
    assert sae.score == "cosine" and sae.n_latents == 7


# -- data the float32 arithmetic cannot hold --------------------------------------------------------
def test_fit_on_huge_scale_data_is_refused_not_nan():
    # On 1e30-scale data the float32 squared norms overflow (3.4e38): the fit used to return
    # 100 % NaN codes without a word.
    X = np.random.default_rng(0).standard_normal((64, 8))
    for kw in ({}, {"resample_dead": False}, {"sparsity": "topk", "k": 2}):
        with pytest.raises(ValueError, match=r"X has values up to [\d.]+e\+30 .*overflow the float32 .*rescale X"):
            SparseAutoencoder(n_latents=16, epochs=2, batch_size=32, progress=False, **kw).fit(X * 1e30)
    # A large but representable scale trains to finite codes; the same scale at encode is refused.
    sae = SparseAutoencoder(n_latents=16, epochs=2, batch_size=32, progress=False).fit(X * 1e12)
    codes = sae.encode(X * 1e12)
    assert np.isfinite(codes).all() and np.isfinite(sae.decoder_).all()
    with pytest.raises(ValueError, match=r"X has values up to .*e\+30"):
        sae.encode(X * 1e30)


def test_n_latents_beyond_memory_is_refused_before_training():
    X = np.random.default_rng(0).standard_normal((64, 8))
    with pytest.raises(ValueError, match=r"n_latents=1000000000 .*would need about [\d.]+ TB of memory.*lower n_latents"):
        SparseAutoencoder(n_latents=10**9, progress=False).fit(X)
