"""SparseAutoencoder(magnitude=...): the score selects the latents, the magnitude is decoded.

Closed forms on planted weights (the "norm" and "inner" codes against the pre-activations computed
here), the cosine code's scale invariance and its loss under "norm", a planted superposition fit
where the cosine SAE with the magnitude restored reconstructs and recovers clearly better, and the
refusals."""

import numpy as np
import pytest

from featurelens.datasets.superposition import superposition
from featurelens.learning.sae import MAGNITUDES, SparseAutoencoder, dictionary_recovery


def _planted(score, magnitude, sparsity="topk", k=3, pre_bias=None, seed=0, bias=0.05, **extra):
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((8, 20))
    D /= np.linalg.norm(D, axis=0)
    enc = D.T + 0.1 * rng.standard_normal((20, 8))
    kw = {} if sparsity != "topk" else {"k": k}
    return SparseAutoencoder.from_weights(
        D, encoder=enc, encoder_bias=bias * rng.standard_normal(20), pre_bias=pre_bias, score=score,
        sparsity=sparsity, magnitude=magnitude, **kw, **extra)


def _fvu(X, R):
    return float(((X - R) ** 2).sum() / ((X - X.mean(0)) ** 2).sum())


@pytest.mark.parametrize("score", ["inner", "cosine", "blend"])
def test_norm_and_inner_codes_match_their_closed_forms(score):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 8)) * rng.uniform(0.2, 5.0, (50, 1))
    b_pre = 0.3 * rng.standard_normal(8)
    base = _planted(score, "score", pre_bias=b_pre)
    G = base.encode(X).astype(np.float64)  # the selection: ReLU(TopK(s))
    S = base.pre_activations(X).astype(np.float64)
    # the selection is ReLU(TopK_3(s)), computed here from the scores
    top = np.argsort(-S, axis=1)[:, :3]
    ref = np.zeros_like(S)
    np.put_along_axis(ref, top, np.maximum(np.take_along_axis(S, top, 1), 0.0), 1)
    np.testing.assert_allclose(G, ref, atol=1e-5)
    xc = X - b_pre
    norm = np.linalg.norm(xc, axis=1, keepdims=True)
    sae_n = _planted(score, "norm", pre_bias=b_pre)
    np.testing.assert_allclose(sae_n.encode(X), G * norm, rtol=1e-5, atol=1e-5)
    sae_i = _planted(score, "inner", pre_bias=b_pre)
    inner = xc @ sae_i.encoder_.T.astype(np.float64) + sae_i.encoder_bias_
    np.testing.assert_allclose(sae_i.encode(X), np.where(G > 0, np.maximum(inner, 0.0), 0.0), rtol=1e-5, atol=1e-5)
    # decoding is W_dec f + b_pre whatever the magnitude
    np.testing.assert_allclose(sae_i.reconstruct(X), sae_i.encode(X) @ sae_i.decoder_.T + b_pre, rtol=1e-4, atol=1e-4)
    # the pre-activations are the selection scores, unchanged by the magnitude
    np.testing.assert_allclose(sae_n.pre_activations(X), S, atol=1e-6)


def test_inner_magnitude_of_the_inner_score_is_the_score():
    X = np.random.default_rng(2).standard_normal((40, 8))
    np.testing.assert_allclose(_planted("inner", "inner").encode(X), _planted("inner", "score").encode(X), atol=1e-6)


def test_cosine_code_is_scale_invariant_and_the_norm_magnitude_restores_the_scale():
    X = np.random.default_rng(3).standard_normal((30, 8))
    cos = _planted("cosine", "score")  # pre_bias 0: exactly scale invariant in x
    np.testing.assert_allclose(cos.reconstruct(4.0 * X), cos.reconstruct(X), rtol=1e-5, atol=1e-5)
    # "norm": ||x|| (w.x / ||x|| + b) = w.x + b ||x||, homogeneous; "inner": w.x + b, so with b = 0
    for magnitude, bias in (("norm", 0.05), ("inner", 0.0)):
        sae = _planted("cosine", magnitude, bias=bias)
        np.testing.assert_allclose(sae.reconstruct(4.0 * X), 4.0 * sae.reconstruct(X), rtol=1e-4, atol=1e-4)


def test_default_is_score_and_fit_is_unchanged_by_naming_it():
    ds = superposition(16, 8, 0.8, norm_spread=0.5, n_samples=600, seed=0)
    kw = dict(score="cosine", sparsity="topk", k=3, epochs=3, lr=3e-3, seed=0, progress=False)
    assert SparseAutoencoder(24).magnitude == "score"
    a = SparseAutoencoder(24, **kw).fit(ds.X)
    b = SparseAutoencoder(24, magnitude="score", **kw).fit(ds.X)
    np.testing.assert_array_equal(a.decoder_, b.decoder_)
    np.testing.assert_array_equal(a.encode(ds.X), b.encode(ds.X))


def test_planted_cosine_sae_with_magnitude_reconstructs_and_recovers_better():
    # 32 features in 16 dims, ~3 active per sample, per-sample norm factor exp(N(0, 0.7^2)):
    # a cosine code cannot follow the norm, the magnitude paths can.
    ds = superposition(32, 16, 0.92, norm_spread=0.7, n_samples=4096, seed=0)
    X = ds.X.astype(np.float32)
    out = {}
    for magnitude in MAGNITUDES:
        sae = SparseAutoencoder(64, score="cosine", sparsity="topk", k=4, lr=3e-3, epochs=15, seed=0,
                                progress=False, magnitude=magnitude).fit(X)
        F = sae.encode(X)
        assert (F > 0).sum(1).max() <= 4  # matched L0: at most k active
        out[magnitude] = (_fvu(X, sae.reconstruct(X)), dictionary_recovery(ds.dictionary, sae)["matched_share"])
    for magnitude in ("norm", "inner"):
        assert out[magnitude][0] < 0.7 * out["score"][0], out
        assert out[magnitude][1] > out["score"][1], out


@pytest.mark.parametrize("magnitude", ["norm", "inner"])
def test_magnitude_trains_with_batchtopk_and_auxk(magnitude):
    ds = superposition(16, 8, 0.8, norm_spread=0.5, n_samples=800, seed=1)
    sae = SparseAutoencoder(32, score="cosine", sparsity="batchtopk", k=3, epochs=3, lr=3e-3, seed=0, aux_k=4,
                            resample_dead=False, progress=False, magnitude=magnitude).fit(ds.X)
    # the inference threshold is on the selection score (cosine scores are O(||w||), not O(||x||))
    S = sae.pre_activations(ds.X)
    assert np.isfinite(sae.threshold_) and 0 < sae.threshold_ < S.max()
    F = sae.encode(ds.X)
    assert np.isfinite(F).all()
    assert not ((F > 0) & (S <= sae.threshold_)).any()  # nothing below the threshold is active


def test_magnitude_refusals_name_the_argument():
    with pytest.raises(ValueError, match="magnitude"):
        SparseAutoencoder(8, magnitude="scale").fit(np.ones((4, 3)))
    with pytest.raises(ValueError, match="magnitude"):
        _planted("cosine", "inners")
