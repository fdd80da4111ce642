"""BatchTopK (Bussmann, Leask, Nanda 2024) and AuxK (Gao et al. 2025) in SparseAutoencoder:
the batch selection against a brute-force sort, the inference threshold against the recorded
minima, the AuxK loss against its formula, planted-dictionary recovery, dead latents revived,
and the parameter errors."""

import math

import numpy as np
import pytest
import torch
from sklearn.base import clone

from featurelens.datasets.superposition import superposition
from featurelens.learning._sae_training import aux_loss, default_dead_steps
from featurelens.learning.sae import SPARSITIES, SparseAutoencoder, batch_topk, dead_latents, dictionary_recovery


def _brute_batch_topk(S, k):
    """Keep the k * B largest entries of ReLU(S) by a full sort of the flattened matrix."""
    R = np.maximum(S, 0.0)
    flat = R.ravel()
    keep = np.argsort(-flat, kind="stable")[: k * S.shape[0]]
    out = np.zeros_like(flat)
    out[keep] = flat[keep]
    return out.reshape(S.shape)


def _kept_minimum(F):
    return float(F[F > 0].min())


# ------------------------------------------------------------------------------------------------
# the batch selection


def test_batch_topk_keeps_exactly_k_times_b_entries_as_a_brute_force_sort():
    rng = np.random.default_rng(0)
    S = rng.standard_normal((7, 9)) + 0.8  # distinct values, most positive
    for k in (1, 3, 9):
        got = batch_topk(torch.from_numpy(S), k).numpy()
        want = _brute_batch_topk(S, k)
        np.testing.assert_array_equal(got, want)
        assert np.count_nonzero(got) == min(k * 7, int((S > 0).sum()))
        nz = got != 0
        np.testing.assert_array_equal(got[nz], S[nz])  # kept entries are the scores themselves
    # rows get a variable L0 (mean k), unlike per-row TopK
    L0 = np.count_nonzero(batch_topk(torch.from_numpy(S), 3).numpy(), axis=1)
    assert L0.sum() == 21 and len(set(L0.tolist())) > 1
    # fewer than k * B positive scores: only the positive ones survive
    S2 = -np.abs(S)
    S2[0, 0], S2[3, 5] = 2.0, 1.0
    got = batch_topk(torch.from_numpy(S2), 4).numpy()
    np.testing.assert_array_equal(got, _brute_batch_topk(S2, 4))
    assert np.count_nonzero(got) == 2


def test_training_keeps_k_per_row_on_average():
    # Nonnegative data, inner score, tied start: every batch has more than k * B positive scores,
    # so the training L0 (history "sparsity") is exactly k.
    X = np.abs(np.random.default_rng(1).standard_normal((256, 6)))
    sae = SparseAutoencoder(16, sparsity="batchtopk", k=3, epochs=2, batch_size=64, seed=0, progress=False).fit(X)
    np.testing.assert_allclose(sae.history_["sparsity"], 3.0, rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# the inference threshold


def test_threshold_is_the_mean_of_the_batch_minima_of_the_last_epoch():
    # Frozen weights (lr 1e-30 moves nothing in float32) and batches of one row: each batch's
    # minimum is its row's smallest kept activation, and theta is their mean over the epoch,
    # whatever the order of the rows.
    ds = superposition(10, 5, 0.5, n_samples=12, seed=0)
    X = ds.X.astype(np.float32)
    sae = SparseAutoencoder(8, sparsity="batchtopk", k=2, lr=1e-30, epochs=2, batch_size=1, seed=0,
                            resample_dead=False, progress=False).fit(X)
    S = sae.pre_activations(X).astype(np.float64)
    minima = [_kept_minimum(_brute_batch_topk(S[i : i + 1], 2)) for i in range(12) if (S[i] > 0).any()]
    assert sae.threshold_ == pytest.approx(np.mean(minima), rel=1e-5)
    np.testing.assert_allclose(sae.history_["threshold"], np.mean(minima), rtol=1e-5)


def test_threshold_follows_the_training_one_batch_per_epoch():
    # One batch per epoch (the whole data): epoch e's minimum is that of the model after e steps,
    # which is the fit with epochs=e (the same seeded run stopped early; epoch 0 is the start).
    ds = superposition(10, 5, 0.6, n_samples=64, seed=2)
    X = ds.X.astype(np.float32)
    kw = {"n_latents": 8, "sparsity": "batchtopk", "k": 2, "batch_size": 64, "seed": 0, "resample_dead": False,
          "progress": False}
    full = SparseAutoencoder(epochs=3, lr=1e-2, **kw).fit(X)
    models = [SparseAutoencoder(epochs=1, lr=1e-30, **kw).fit(X)] + [SparseAutoencoder(epochs=e, lr=1e-2, **kw).fit(X)
                                                                      for e in (1, 2)]
    want = [_kept_minimum(_brute_batch_topk(m.pre_activations(X).astype(np.float64), 2)) for m in models]
    np.testing.assert_allclose(full.history_["threshold"], want, rtol=1e-5)
    assert full.threshold_ == full.history_["threshold"][-1]
    assert len(set(np.round(want, 6))) == 3  # the weights did move


def test_encode_applies_the_threshold_and_from_weights_takes_it():
    rng = np.random.default_rng(3)
    D = rng.standard_normal((5, 7))
    D /= np.linalg.norm(D, axis=0)
    W, b = rng.standard_normal((7, 5)), rng.standard_normal(7)
    X = rng.standard_normal((30, 5))
    sae = SparseAutoencoder.from_weights(D, encoder=W, encoder_bias=b, sparsity="batchtopk", k=2, threshold=0.7)
    S = X @ W.T + b
    np.testing.assert_allclose(sae.encode(X), S * (S > 0.7), atol=1e-12)
    np.testing.assert_allclose(sae.reconstruct(X), (S * (S > 0.7)) @ D.T, atol=1e-12)
    assert sae.threshold_ == 0.7
    zero = SparseAutoencoder.from_weights(D, encoder=W, encoder_bias=b, sparsity="batchtopk", k=2, threshold=0.0)
    np.testing.assert_allclose(zero.encode(X), np.maximum(S, 0.0), atol=1e-12)  # theta = 0: a plain ReLU
    assert SparseAutoencoder.from_weights(D, sparsity="topk", k=2).threshold_ is None


def test_batchtopk_recovers_the_planted_dictionary():
    ds = superposition(12, 6, 0.9, n_samples=2048, seed=0)
    sae = SparseAutoencoder(24, sparsity="batchtopk", k=2, lr=3e-3, epochs=10, batch_size=128, seed=0, progress=False)
    sae.fit(ds.X)
    r = dictionary_recovery(ds.dictionary, sae)
    assert r["mean_max_cosine"] > 0.93 and r["matched"] >= 10
    assert sae.history_["reconstruction"][-1] < 0.5 * sae.history_["reconstruction"][0]
    # the threshold is calibrated: at inference the rows keep about k latents on average
    L0 = np.count_nonzero(sae.encode(ds.X), axis=1).mean()
    assert abs(L0 - 2.0) < 0.4
    assert sae.threshold_ > 0 and math.isnan(SparseAutoencoder(24, sparsity="topk", k=2, epochs=1, progress=False)
                                              .fit(ds.X[:64]).history_["threshold"][0])


# ------------------------------------------------------------------------------------------------
# AuxK


def test_aux_loss_equals_its_formula():
    rng = np.random.default_rng(4)
    B, m, d = 6, 5, 3
    s = rng.standard_normal((B, m))
    x = rng.standard_normal((B, d))
    xhat = rng.standard_normal((B, d))
    W = rng.standard_normal((d, m))
    dead = np.array([True, False, True, True, False])
    got, var_x = aux_loss(*(torch.from_numpy(a) for a in (s, x, xhat, W)), torch.from_numpy(dead), 2)
    # brute force: per row, the 2 largest scores among latents {0, 2, 3}, ReLU'd
    z = np.zeros((B, m))
    for i in range(B):
        top = sorted([0, 2, 3], key=lambda j: -s[i, j])[:2]
        z[i, top] = np.maximum(s[i, top], 0.0)
    e = x - xhat
    want = ((e - z @ W.T) ** 2).sum() / ((e - e.mean(0)) ** 2).sum()
    assert float(got) == pytest.approx(want, rel=1e-12)
    assert float(var_x) == pytest.approx(((x - x.mean(0)) ** 2).sum(1).mean(), rel=1e-12)
    # aux_k above the number of dead latents: all of them are used
    got_all, _ = aux_loss(*(torch.from_numpy(a) for a in (s, x, xhat, W)), torch.from_numpy(dead), 5)
    z3 = np.where(dead, np.maximum(s, 0.0), 0.0)
    assert float(got_all) == pytest.approx(((e - z3 @ W.T) ** 2).sum() / ((e - e.mean(0)) ** 2).sum(), rel=1e-12)
    # one row: no variance to normalise by, the term is 0
    one = aux_loss(*(torch.from_numpy(a[:1]) for a in (s, x, xhat)), torch.from_numpy(W), torch.from_numpy(dead), 2)
    assert float(one[0]) == 0.0 and float(one[1]) == 0.0


def test_default_dead_steps_is_one_epoch_or_ten_million_rows():
    assert default_dead_steps(1000, 128) == 8  # ceil(1000 / 128)
    assert default_dead_steps(10**9, 4096) == math.ceil(1e7 / 4096)
    assert default_dead_steps(5, 64) == 1


@pytest.mark.parametrize("sparsity", ["topk", "batchtopk"])
def test_auxk_leaves_fewer_dead_latents(sparsity):
    # 64 latents for 48 features in 16 dims, a high learning rate and no resampling: without AuxK
    # latents die; the AuxK term (a strong alpha = 1/4 for so short a run) revives them.
    ds = superposition(48, 16, 0.9, n_samples=1024, seed=1)
    kw = {"n_latents": 64, "sparsity": sparsity, "k": 4, "lr": 3e-2, "epochs": 6, "batch_size": 128, "seed": 0,
          "resample_dead": False, "progress": False}
    off = SparseAutoencoder(**kw).fit(ds.X)
    on = SparseAutoencoder(aux_k=8, aux_coef=0.25, dead_steps=4, **kw).fit(ds.X)
    dead_off, dead_on = len(dead_latents(off, ds.X)), len(dead_latents(on, ds.X))
    assert dead_off >= 4 and dead_on <= dead_off / 2
    assert on.history_["dead"][-1] < off.history_["dead"][-1]
    assert sum(off.history_["aux"]) == 0.0 and max(on.history_["aux"]) > 0.0
    again = SparseAutoencoder(aux_k=8, aux_coef=0.25, dead_steps=4, **kw).fit(ds.X)
    np.testing.assert_array_equal(on.decoder_, again.decoder_)  # seeded


def test_auxk_with_nothing_dead_changes_nothing():
    # dead_steps longer than the training: no latent is ever dead, AuxK never enters the loss
    X = np.abs(np.random.default_rng(5).standard_normal((128, 5)))
    kw = {"n_latents": 8, "sparsity": "topk", "k": 2, "epochs": 2, "batch_size": 32, "seed": 0, "progress": False}
    plain = SparseAutoencoder(**kw).fit(X)
    aux = SparseAutoencoder(aux_k=4, dead_steps=1000, **kw).fit(X)
    np.testing.assert_array_equal(plain.decoder_, aux.decoder_)
    assert aux.history_["aux"] == [0.0, 0.0]


# ------------------------------------------------------------------------------------------------
# parameters and errors


def test_params_roundtrip_and_clone():
    assert "batchtopk" in SPARSITIES
    sae = SparseAutoencoder(8, sparsity="batchtopk", k=2, aux_k=4, aux_coef=0.1, dead_steps=7)
    p = clone(sae).get_params()
    assert (p["sparsity"], p["k"], p["aux_k"], p["aux_coef"], p["dead_steps"]) == ("batchtopk", 2, 4, 0.1, 7)
    assert SparseAutoencoder(8).get_params()["aux_coef"] == 1 / 32 and SparseAutoencoder(8).aux_k is None


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"sparsity": "batchtopk"}, ValueError, "k must be given for sparsity='batchtopk'"),
        ({"sparsity": "batchtopk", "k": 9}, ValueError, "k must be an int >= 1 and <= 8"),
        ({"sparsity": "batchtopk", "k": 0}, ValueError, "k must be"),
        ({"sparsity": "topk", "k": 2, "aux_k": 0}, ValueError, "aux_k must be an int >= 1"),
        ({"sparsity": "topk", "k": 2, "aux_k": 9}, ValueError, "aux_k must be an int >= 1 and <= 8"),
        ({"sparsity": "topk", "k": 2, "aux_k": 2.5}, TypeError, "aux_k"),
        ({"aux_k": 2}, ValueError, "aux_k .* needs sparsity='topk' or 'batchtopk'"),
        ({"sparsity": "topk", "k": 2, "aux_k": 2, "aux_coef": -0.1}, ValueError, "aux_coef must be a finite number >= 0"),
        ({"sparsity": "topk", "k": 2, "aux_k": 2, "aux_coef": "1/32"}, TypeError, "aux_coef"),
        ({"sparsity": "topk", "k": 2, "aux_k": 2, "dead_steps": 0}, ValueError, "dead_steps must be an int >= 1"),
        ({"sparsity": "topk", "k": 2, "dead_steps": 5}, ValueError, "dead_steps is only used with aux_k"),
        ({"sparsity": "batchtopk", "k": 2, "resample_dead": "no"}, TypeError, "resample_dead"),
    ],
)
def test_errors_at_fit(kwargs, err, match):
    params = {"n_latents": 8, "epochs": 1, "progress": False}
    params.update(kwargs)
    with pytest.raises(err, match=match):
        SparseAutoencoder(**params).fit(np.ones((4, 3)))


def test_from_weights_threshold_errors():
    with pytest.raises(ValueError, match="threshold must be given for sparsity='batchtopk'"):
        SparseAutoencoder.from_weights(np.eye(3), sparsity="batchtopk", k=1)
    with pytest.raises(ValueError, match="threshold must be a finite number >= 0"):
        SparseAutoencoder.from_weights(np.eye(3), sparsity="batchtopk", k=1, threshold=-1.0)
    with pytest.raises(ValueError, match="threshold is only used with sparsity='batchtopk'"):
        SparseAutoencoder.from_weights(np.eye(3), sparsity="topk", k=1, threshold=0.5)
