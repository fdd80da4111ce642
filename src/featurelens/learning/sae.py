"""Sparse autoencoders (dictionary learning on activations) with inner-product, cosine and blended
encoder scores, and the metrics that judge a learned dictionary against planted truth.

The autoencoder (Bricken et al., "Towards Monosemanticity", Transformer Circuits Thread, 2023;
Cunningham, Ewart, Riggs, Huben, Sharkey, ICLR 2024, arXiv 2309.08600; TopK and AuxK: Gao et al.,
"Scaling and evaluating sparse autoencoders", ICLR 2025, arXiv 2406.04093; BatchTopK: Bussmann,
Leask, Nanda, "BatchTopK Sparse Autoencoders", arXiv 2412.06410, 2024)::

    xbar = x - b_pre
    s_j(x) = score of latent j (below)
    f = ReLU(s)                               (sparsity="l1")
    f = ReLU(TopK_k(s))                       (sparsity="topk": all but the k largest scores zeroed)
    f = BatchTopK_{kB}(ReLU(S))               (sparsity="batchtopk", training: the k B largest of the
                                               B x n_latents post-ReLU scores S of the minibatch kept,
                                               so rows have a variable L0 of mean k)
    f = s * (s > theta)                       (sparsity="batchtopk", encode/transform: one threshold)
    xhat = W_dec f + b_pre,    W_dec (d, n_latents) with unit-norm columns

    loss = mean_i ||x_i - xhat_i||^2 + l1 * mean_i ||f_i||_1     (the L1 term only for "l1")
         + aux_coef * var_x * L_aux                              (AuxK, only with aux_k)

BatchTopK's inference threshold ``theta`` (``threshold_``) is, as in Bussmann et al., the average of
the smallest kept (positive) activation over training batches: here over the batches of the last
epoch, so that it belongs to the final encoder (``history_["threshold"]`` has every epoch's
average). AuxK (Gao et al. 2025): a latent that has not fired for ``dead_steps`` training steps is
dead (default: one epoch of steps or Gao et al.'s 10M rows, whichever is shorter); with ``e = x -
xhat`` (no gradient) and ``z`` the ReLU of the ``aux_k`` largest scores among the dead latents,
``L_aux = sum_i ||e_i - W_dec z_i||^2 / sum_i ||e_i - mean(e)||^2`` (normalised by the batch
variance of the error, as their code's ``normalized_mse``). They normalise the reconstruction term
by the batch variance of x too; ours is unnormalised, so L_aux is multiplied by ``var_x = mean_i
||x_i - mean(x)||^2``: the loss is theirs times ``var_x`` and ``aux_coef`` (their alpha) keeps its
meaning. AuxK needs "topk" or "batchtopk" (it is defined for TopK; with "l1" its codes would escape
the L1 penalty the others pay): with "l1" it is an error.

Magnitude (``magnitude``): the score selects the active latents, and ``magnitude`` says what value
an active latent decodes with. With ``g = ReLU(TopK_k(s))`` (or the ReLU / BatchTopK / threshold
code of the sparsity above: the selection) and ``A = {j : g_j > 0}`` the selected latents::

    magnitude="score":   f = g                                   (the default; the score is the code)
    magnitude="norm":    f = ||xbar|| g                          (the code scaled by the input's norm)
    magnitude="inner":   f_j = ReLU(w_j . xbar + b_j) for j in A, 0 elsewhere

For the inner score the three differ only by "norm" (``"inner"`` equals ``"score"``). With the cosine
score, ``"norm"`` gives ``f_j = w_j . xbar + b_j ||xbar||`` on the selected latents: the cosine picks
the latents and the input's norm comes back for the decoding, which a pure cosine code cannot carry
(it is invariant to the scale of ``xbar``, so ``W_dec f`` is too). BatchTopK's threshold stays on the
selection score ``s``. This split of selection and magnitude is this library's reading of the issue
(the paper's method section was not available); "score" keeps every earlier number.

Scores (Naihin & Stambler, "Size Doesn't Matter: Cosine-Scored Sparse Autoencoders", arXiv
2606.15054, 2026)::

    inner:               s_j = w_j . xbar + b_j
    cosine:              s_j = ||w_j|| cos(w_j, xbar) + b_j           = (w_j . xbar) / ||xbar|| + b_j
    blend:               s_j = ||w_j|| ||xbar||^a cos(w_j, xbar) + b_j = (w_j . xbar) ||xbar||^(a-1) + b_j
    blend_per_feature:   the same with one a_j per latent
    a = sigmoid(theta), theta learned (initialised at 0, a = 1/2)

Only the paper's abstract and third-party summaries could be read (no code or method section was
found). They state a learned blend "of cosine similarity and input magnitude", one global or one
per feature, "interpolated between pure cosine (a = 0) and inner product (a = 1)", free to recover
the inner product. The parametrisation above is the one that fits those statements: ``a = 1`` is
exactly the inner product, ``a = 0`` is a cosine score whose learned scale is the encoder row norm
``||w_j||`` (the brief's ``cos * s_j`` with ``s_j = ||w_j||``), and the sigmoid keeps ``a`` in
(0, 1). The exact published form is unverified. With ``pre_bias=True`` the norm is that of
``xbar = x - b_pre``; the cosine score is then invariant to rescaling ``xbar`` (exactly
scale-invariant in ``x`` when ``pre_bias=False``).

Training: minibatch Adam, seeded; after every step the decoder columns are renormalised, and each
column's gradient is first projected onto the sphere's tangent space, ``g <- g - (g . w) w``
(Bricken et al. 2023), so the L1 penalty cannot be evaded by shrinking codes and growing columns.
``b_pre`` starts at the geometric median of (a sample of) the data (Gao et al. 2025); the decoder
columns at normalised, centred random data points (Gaussian directions where there are too few
nonzero points; on sparse data many points lie near one true atom, which speeds recovery), the
encoder at the transposed decoder (Gao et al.'s tied initialisation), scaled by the least-squares
factor on the sample. Dead latents (never active during a whole epoch) are resampled at the end of
the epoch, except the last (Bricken et al. 2023; ``resample_dead=False`` turns it off, AuxK is the
alternative): inputs are drawn with probability proportional to their squared reconstruction error
squared; the decoder column becomes the normalised centred input, the encoder row that direction
times 0.2 times the mean encoder norm of the live latents, the encoder bias 0, and their Adam
moments are reset (and, with AuxK, their steps since firing).

Metrics: :func:`dictionary_recovery` (mean max cosine, MMCS; Sharkey, Braun, Millidge, "Taking
features out of superposition with sparse autoencoders", 2022), :func:`dead_latents`,
:func:`norm_detectors` (activation correlated with ``||x||`` and with no true feature).
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import is_tensor, torch
from sklearn.base import BaseEstimator, TransformerMixin

from .._random import parse_seed
from .._validation import as_numpy, check_bool, check_device, check_float, check_floating, check_int, check_option, check_optional_bool, numpy_to_tensor
from .._budgets import check_memory, format_count
from ._sae_training import NORM_EPS, SAMPLE_ROWS, batch_topk, geometric_median, train  # noqa: F401

__all__ = ["MAGNITUDES", "SCORES", "SPARSITIES", "SparseAutoencoder", "dead_latents", "dictionary_recovery", "norm_detectors"]

SCORES = ("inner", "cosine", "blend", "blend_per_feature")
SPARSITIES = ("l1", "topk", "batchtopk")
MAGNITUDES = ("score", "norm", "inner")
#: The largest sum of squares the float32 arithmetic of the autoencoder may meet (float32 overflows
#: at 3.4e38; the margin leaves room for gradients and Adam's moments).
_FLOAT32_SQUARES = 1e36


def _check_scale(X, name: str, rows: int) -> None:
    """Refuse data whose squared norms overflow the float32 training or encoding: the sum of
    squares of ``rows`` rows (a training batch; 1 for encoding) must stay below
    :data:`_FLOAT32_SQUARES`. Computed in float64 (inf when even that overflows), before any work:
    such data would otherwise give NaN weights and 100 % NaN codes without a word."""
    if is_tensor(X):
        sq = float(X.detach().double().pow(2).sum(1).max())
        big = float(X.detach().abs().max())
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            X64 = np.asarray(X, dtype=np.float64)
            sq = float(np.einsum("ij,ij->i", X64, X64).max())
            big = float(np.abs(X64).max())
    if not sq * rows <= _FLOAT32_SQUARES:
        raise ValueError(
            f"{name} has values up to {big:.3g} in magnitude (squared row norms up to {sq:.3g}): the sums of "
            f"squares of {rows} row{'s' if rows != 1 else ''} overflow the float32 arithmetic of the autoencoder "
            f"(they must stay below {_FLOAT32_SQUARES:.0e}), which would give NaN weights and codes; rescale "
            f"{name} first, e.g. {name} / {name}.std()"
        )


def _matrix(a, name: str, n_cols: int | None = None, cols_name: str = "columns") -> np.ndarray | torch.Tensor:
    """A validated 2-D floating, finite matrix (numpy array or torch tensor, returned as such)."""
    arr = a if is_tensor(a) else as_numpy(a, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix of shape (n_samples, n_{cols_name}); got shape {tuple(arr.shape)}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one column; got shape {tuple(arr.shape)}")
    check_floating(arr, name)
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"{name} must have {n_cols} {cols_name} (as fitted); got shape {tuple(arr.shape)}")
    return arr


class SparseAutoencoder(BaseEstimator, TransformerMixin):
    """A sparse autoencoder with an inner-product, cosine or learned-blend encoder score.

    Formulas, citations and the choice of the blend parametrisation: module docstring.

    Parameters
    ----------
    n_latents : int >= 1, dictionary size ``m``. ``fit`` refuses it before any work when the
        float32 weights, their gradients and Adam's moments and one batch's codes (about
        ``4 (8 m d + 4 B m + 4 n d)`` bytes for ``d`` features, ``B`` rows per batch) exceed the
        available memory (``featurelens._budgets.check_memory``).
    score : "inner" | "cosine" | "blend" | "blend_per_feature", the score that selects the latents.
    magnitude : "score" (default: the selected scores are the code) | "norm" (the selected scores
        times ``||x - b_pre||``) | "inner" (the inner products ``w_j . xbar + b_j`` on the selected
        latents, ReLU'd); module docstring.
    sparsity : "l1" (ReLU + L1 penalty), "topk" (exactly ``k`` largest scores kept, then ReLU) or
        "batchtopk" (the ``k * B`` largest post-ReLU scores of a training batch of B rows kept; one
        threshold ``threshold_`` at inference).
    k : int in [1, n_latents], required for "topk" and "batchtopk", must be None for "l1".
    l1 : float >= 0, L1 coefficient (in the units of the inputs: the penalty is ``l1 * ||f||_1``
        next to ``||x - xhat||^2``); ignored for "topk" and "batchtopk".
    lr : float > 0, Adam learning rate.
    epochs : int >= 1, passes over the data.
    batch_size : int >= 1, minibatch rows (also the chunk size of encode/decode).
    seed : None, int or numpy Generator; initialisation, shuffling and resampling draw from it.
    device : None (CPU) or a torch device.
    progress : None (a bar only on a terminal), True or False; a tqdm bar over epochs.
    resample_dead : bool, resample latents that never fired during an epoch (not after the last).
    pre_bias : bool, learn ``b_pre`` (subtracted before encoding, added after decoding); False
        fixes it at 0.
    aux_k : None (AuxK off) or int in [1, n_latents], the dead latents each row's AuxK term uses
        (Gao et al. 2025); "topk" and "batchtopk" only.
    aux_coef : float >= 0, the AuxK coefficient alpha (Gao et al.'s 1/32).
    dead_steps : None or int >= 1, training steps without firing after which AuxK counts a latent
        as dead; None: one epoch, ceil(n / batch_size) steps, or ceil(1e7 / batch_size) (Gao et
        al.'s 10M rows) if that is shorter. Only with ``aux_k``.

    Attributes (after fit or :meth:`from_weights`)
    ----------------------------------------------
    decoder_ : (d, n_latents) unit-norm columns, the dictionary atoms.
    encoder_ : (n_latents, d) encoder rows ``w_j``; encoder_bias_ : (n_latents,) ``b_j``;
    pre_bias_ : (d,) ``b_pre``.
    blend_ : the exponent ``a`` the score uses: 1.0 for "inner", 0.0 for "cosine", a float in
        (0, 1) for "blend", an (n_latents,) array in (0, 1) for "blend_per_feature".
    threshold_ : the BatchTopK inference threshold ``theta`` (a float >= 0); None otherwise.
    history_ : dict of per-epoch lists: "loss", "reconstruction" (mean ||x - xhat||^2),
        "sparsity" (mean L0, active latents per sample, in training), "l1" (mean ||f||_1), "dead"
        (latents that never fired in the epoch, counted before resampling), "resampled", "blend"
        (mean ``a``), "aux" (mean normalised AuxK loss L_aux; 0 when off or nothing is dead),
        "threshold" (BatchTopK: mean smallest kept activation over the epoch's batches; NaN else).
    n_features_in_ : d.
    """

    def __init__(
        self,
        n_latents: int,
        score: str = "inner",
        sparsity: str = "l1",
        k: int | None = None,
        l1: float = 1e-3,
        lr: float = 1e-3,
        epochs: int = 20,
        batch_size: int = 256,
        seed=0,
        device=None,
        progress: bool | None = None,
        resample_dead: bool = True,
        pre_bias: bool = True,
        aux_k: int | None = None,
        aux_coef: float = 1 / 32,
        dead_steps: int | None = None,
        magnitude: str = "score",
    ):
        self.n_latents = n_latents
        self.score = score
        self.sparsity = sparsity
        self.k = k
        self.l1 = l1
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.seed = seed
        self.device = device
        self.progress = progress
        self.resample_dead = resample_dead
        self.pre_bias = pre_bias
        self.aux_k = aux_k
        self.aux_coef = aux_coef
        self.dead_steps = dead_steps
        self.magnitude = magnitude

    # ------------------------------------------------------------------------------------------
    # parameters and state

    def _check_params(self) -> None:
        m = check_int(self.n_latents, "n_latents", low=1)
        check_option(self.score, "score", SCORES)
        check_option(self.sparsity, "sparsity", SPARSITIES)
        check_option(self.magnitude, "magnitude", MAGNITUDES)
        if self.sparsity in ("topk", "batchtopk"):
            if self.k is None:
                raise ValueError(f"k must be given for sparsity={self.sparsity!r} (the number of active latents per "
                                 "sample, the mean for 'batchtopk'); got None")
            check_int(self.k, "k", low=1, high=m)
        elif self.k is not None:
            raise ValueError(f"k is only used with sparsity='topk' or 'batchtopk'; got k={self.k!r} with sparsity={self.sparsity!r}")
        if check_int(self.aux_k, "aux_k", low=1, high=m, allow_none=True) is not None and self.sparsity == "l1":
            raise ValueError("aux_k (the AuxK loss) needs sparsity='topk' or 'batchtopk'; got aux_k="
                             f"{self.aux_k!r} with sparsity='l1' (set aux_k=None, or use resample_dead for 'l1')")
        check_float(self.aux_coef, "aux_coef", low=0.0)
        if check_int(self.dead_steps, "dead_steps", low=1, allow_none=True) is not None and self.aux_k is None:
            raise ValueError(f"dead_steps is only used with aux_k (the AuxK loss); got dead_steps={self.dead_steps!r} "
                             "with aux_k=None")
        check_float(self.l1, "l1", low=0.0)
        check_float(self.lr, "lr", low=0.0, low_inclusive=False)
        check_int(self.epochs, "epochs", low=1)
        check_int(self.batch_size, "batch_size", low=1)
        parse_seed(self.seed)
        check_optional_bool(self.progress, "progress")
        check_bool(self.resample_dead, "resample_dead")
        check_bool(self.pre_bias, "pre_bias")

    def _device(self) -> torch.device:
        return torch.device("cpu") if self.device is None else check_device(self.device)

    def _set_state(self, W_enc, b_enc, W_dec, b_pre, theta, threshold=None) -> None:
        self._W_enc, self._b_enc, self._W_dec, self._b_pre = W_enc.detach(), b_enc.detach(), W_dec.detach(), b_pre.detach()
        self._theta = None if theta is None else theta.detach()
        self.threshold_ = None if threshold is None else float(threshold)
        self.decoder_ = self._W_dec.cpu().numpy().copy()
        self.encoder_ = self._W_enc.cpu().numpy().copy()
        self.encoder_bias_ = self._b_enc.cpu().numpy().copy()
        self.pre_bias_ = self._b_pre.cpu().numpy().copy()
        a = self._alpha(self._theta)
        if a is None:
            self.blend_ = 1.0 if self.score == "inner" else 0.0
        elif a.ndim == 0:
            self.blend_ = float(a)
        else:
            self.blend_ = a.cpu().numpy().copy()
        self.n_features_in_ = self.decoder_.shape[0]

    def _check_fitted(self) -> None:
        if not hasattr(self, "_W_dec"):
            raise RuntimeError("SparseAutoencoder is not fitted; call fit(X) or SparseAutoencoder.from_weights(...) first")

    @classmethod
    def from_weights(cls, decoder, encoder=None, encoder_bias=None, pre_bias=None, blend=None, threshold=None,
                     **params):
        """A ready autoencoder with the given weights (no training), e.g. a planted dictionary.

        ``decoder`` (d, m) must have unit-norm columns; ``encoder`` (m, d) defaults to
        ``decoder.T``, ``encoder_bias`` (m,) and ``pre_bias`` (d,) to zeros; ``blend`` (the ``a``
        of the blend scores, in (0, 1); a float, or an (m,) array for "blend_per_feature")
        defaults to 1/2; ``threshold`` (float >= 0, the inference ``theta``) is required for
        sparsity="batchtopk" and refused otherwise. The dtype of ``decoder`` (float32 or float64) is kept. Other keyword
        arguments are constructor parameters (``n_latents`` is taken from ``decoder``).
        """
        D = _matrix(decoder, "decoder", cols_name="latents")
        D = D.detach().cpu() if is_tensor(D) else numpy_to_tensor(D)
        d, m = D.shape
        params.setdefault("n_latents", m)
        sae = cls(**params)
        sae._check_params()
        if sae.n_latents != m:
            raise ValueError(f"n_latents={sae.n_latents} does not match decoder's {m} columns (shape {(d, m)})")
        norms = D.norm(dim=0)
        if not torch.allclose(norms, torch.ones_like(norms), atol=1e-5):
            raise ValueError(
                f"decoder columns must have unit norm (the autoencoder keeps them so); got norms in "
                f"[{float(norms.min()):.4g}, {float(norms.max()):.4g}]; normalise the columns first"
            )
        dtype = D.dtype

        def tensor(a, name, shape):
            if a is None:
                return None
            t = a.detach().cpu() if is_tensor(a) else torch.as_tensor(np.array(as_numpy(a, name)))
            if tuple(t.shape) != shape:
                raise ValueError(f"{name} must have shape {shape}; got {tuple(t.shape)}")
            check_floating(t, name)
            return t.to(dtype)

        dev = sae._device()
        W_enc = tensor(encoder, "encoder", (m, d))
        W_enc = D.T.clone() if W_enc is None else W_enc
        b_enc = tensor(encoder_bias, "encoder_bias", (m,))
        b_enc = torch.zeros(m, dtype=dtype) if b_enc is None else b_enc
        b_pre = tensor(pre_bias, "pre_bias", (d,))
        b_pre = torch.zeros(d, dtype=dtype) if b_pre is None else b_pre
        theta = None
        if sae.score in ("blend", "blend_per_feature"):
            shape = () if sae.score == "blend" else (m,)
            a = torch.full(shape, 0.5, dtype=dtype) if blend is None else tensor(blend, "blend", shape)
            if bool(((a <= 0) | (a >= 1)).any()):
                raise ValueError(f"blend must lie strictly between 0 and 1 (a = sigmoid(theta)); got {a}")
            theta = torch.log(a) - torch.log1p(-a)
        elif blend is not None:
            raise ValueError(f"blend is only used with score='blend' or 'blend_per_feature'; got score={sae.score!r}")
        if sae.sparsity == "batchtopk":
            if threshold is None:
                raise ValueError("threshold must be given for sparsity='batchtopk' (the inference threshold theta, "
                                 "a float >= 0); got None")
            threshold = check_float(threshold, "threshold", low=0.0)
        elif threshold is not None:
            raise ValueError(f"threshold is only used with sparsity='batchtopk'; got threshold={threshold!r} with "
                             f"sparsity={sae.sparsity!r}")
        to = {"device": dev, "dtype": dtype}
        sae._set_state(W_enc.to(**to), b_enc.to(**to), D.to(**to), b_pre.to(**to), None if theta is None else theta.to(**to),
                       threshold)
        sae.history_ = {}
        return sae

    # ------------------------------------------------------------------------------------------
    # the forward pass

    def _alpha(self, theta):
        if self.score == "inner" or self.score == "cosine" or theta is None:
            return None
        return torch.sigmoid(theta)

    def _scores(self, x, W_enc, b_enc, b_pre, theta):
        xc = x - b_pre
        inner = xc @ W_enc.T
        if self.score == "inner":
            return inner + b_enc
        norm = xc.norm(dim=1, keepdim=True).clamp_min(NORM_EPS)
        if self.score == "cosine":
            return inner / norm + b_enc
        # ||w|| ||x||^a cos(w, x) = (w . x) ||x||^(a - 1)
        return inner * norm.pow(self._alpha(theta) - 1.0) + b_enc

    def _activate(self, s, training: bool = False):
        """Codes from scores; ``training`` selects BatchTopK's batch selection over its threshold."""
        if self.sparsity == "l1":
            return torch.relu(s)
        if self.sparsity == "batchtopk":
            return batch_topk(s, int(self.k)) if training else s * (s > self.threshold_)
        top = torch.topk(s, int(self.k), dim=1)
        return torch.zeros_like(s).scatter(1, top.indices, torch.relu(top.values))

    def _magnitude(self, g, x, W_enc, b_enc, b_pre):
        """Codes from the selection ``g`` (the activated scores) by ``magnitude`` (module docstring)."""
        if self.magnitude == "score":
            return g
        xc = x - b_pre
        if self.magnitude == "norm":
            return g * xc.norm(dim=1, keepdim=True)
        return torch.where(g > 0, torch.relu(xc @ W_enc.T + b_enc), torch.zeros_like(g))

    def _codes(self, x, W_enc, b_enc, b_pre, theta, training: bool = False):
        """``(g, f)``: the selection (activated scores) and the codes that are decoded."""
        g = self._activate(self._scores(x, W_enc, b_enc, b_pre, theta), training=training)
        return g, self._magnitude(g, x, W_enc, b_enc, b_pre)

    def _encode(self, x):
        return self._codes(x, self._W_enc, self._b_enc, self._b_pre, self._theta)[1]

    def _as_tensor(self, X, name: str, n_cols: int, cols_name: str) -> torch.Tensor:
        X = _matrix(X, name, n_cols=n_cols, cols_name=cols_name)
        if self._W_dec.dtype == torch.float32:
            _check_scale(X, name, 1)
        t = X if is_tensor(X) else numpy_to_tensor(X)
        return t.to(device=self._W_dec.device, dtype=self._W_dec.dtype)

    def _chunked(self, t: torch.Tensor, fn) -> np.ndarray:
        rows = check_int(self.batch_size, "batch_size", low=1)
        with torch.no_grad():
            return torch.cat([fn(t[s : s + rows]) for s in range(0, t.shape[0], rows)]).cpu().numpy()

    def pre_activations(self, X) -> np.ndarray:
        """The scores ``s_j(x)`` (n, n_latents) before the ReLU/TopK/threshold (module docstring)."""
        self._check_fitted()
        t = self._as_tensor(X, "X", self.n_features_in_, "features")
        return self._chunked(t, lambda x: self._scores(x, self._W_enc, self._b_enc, self._b_pre, self._theta))

    def encode(self, X) -> np.ndarray:
        """The sparse codes ``f`` (n, n_latents), a numpy array."""
        self._check_fitted()
        t = self._as_tensor(X, "X", self.n_features_in_, "features")
        return self._chunked(t, self._encode)

    def transform(self, X) -> np.ndarray:
        """scikit-learn name of :meth:`encode`."""
        return self.encode(X)

    def decode(self, F) -> np.ndarray:
        """``W_dec f + b_pre`` (n, d) for codes F (n, n_latents)."""
        self._check_fitted()
        t = self._as_tensor(F, "F", self._W_dec.shape[1], "latents")
        return self._chunked(t, lambda f: f @ self._W_dec.T + self._b_pre)

    def reconstruct(self, X) -> np.ndarray:
        """``decode(encode(X))``."""
        self._check_fitted()
        t = self._as_tensor(X, "X", self.n_features_in_, "features")
        return self._chunked(t, lambda x: self._encode(x) @ self._W_dec.T + self._b_pre)

    # ------------------------------------------------------------------------------------------
    # training

    def fit(self, X, y=None) -> SparseAutoencoder:
        """Train on an activation matrix X (n, d), numpy or torch; ``y`` is ignored.

        Training runs in float32: X whose squared row norms, summed over a batch, reach 1e36
        (values around 1e18 and up) is refused with a ValueError (rescale it first), and a fit
        whose weights turn NaN or inf raises instead of returning NaN codes."""
        self._check_params()
        X = _matrix(X, "X", cols_name="features")
        n, d = X.shape
        m = int(self.n_latents)
        rows = min(int(self.batch_size), n)
        # Before any work: the weights (encoder, decoder, their gradients and Adam's two moments,
        # float32) and one batch's scores, codes and their gradients must fit in memory.
        check_memory(
            4 * (8 * m * d + 4 * rows * m + 4 * n * d),
            f"SparseAutoencoder with n_latents={m} ({format_count(m)} latents) on {d} features, "
            f"batch_size={int(self.batch_size)}",
            "lower n_latents (or batch_size).",
        )
        _check_scale(X, "X", rows)
        X = (X.detach() if is_tensor(X) else numpy_to_tensor(X)).to(device=self._device(), dtype=torch.float32)
        self.history_ = train(self, X)
        if not all(bool(np.isfinite(a).all()) for a in (self.decoder_, self.encoder_, self.encoder_bias_, self.pre_bias_)):
            raise ValueError(
                "SparseAutoencoder training diverged: the weights are NaN or inf after fit (last loss "
                f"{self.history_['loss'][-1] if self.history_.get('loss') else float('nan'):.3g}); lower lr or rescale X"
            )
        return self


# ----------------------------------------------------------------------------------------------
# metrics


def _atoms(W, name: str) -> np.ndarray:
    if isinstance(W, SparseAutoencoder):
        W._check_fitted()
        return np.asarray(W.decoder_.T, dtype=np.float64)
    W = _matrix(W, name, cols_name="dimensions")
    return np.asarray(W.detach().cpu().numpy() if is_tensor(W) else W, dtype=np.float64)


def dictionary_recovery(W_true, W_learned, threshold: float = 0.9) -> dict:
    """How well a learned dictionary recovers the true one (atoms as rows, (n_atoms, d) each).

    For every true atom ``t_i``: ``best_i = max_j |cos(t_i, l_j)|`` over the learned atoms (signs
    and order do not matter). Returns ``mean_max_cosine`` = mean_i best_i (MMCS; Sharkey, Braun,
    Millidge 2022), ``matched`` = #{i : best_i > threshold}, ``matched_share`` = matched / n_true,
    ``best_cosine`` (n_true,), ``best_match`` (n_true,) the index of the best learned atom, and
    ``threshold``. ``W_learned`` may be a fitted :class:`SparseAutoencoder` (its ``decoder_.T``);
    pass a decoder array transposed, ``sae.decoder_.T``. Learned atoms of norm 0 match nothing.
    """
    T = _atoms(W_true, "W_true")
    L = _atoms(W_learned, "W_learned")
    threshold = check_float(threshold, "threshold", low=0.0, high=1.0)
    if T.shape[1] != L.shape[1]:
        raise ValueError(
            f"W_true and W_learned must hold atoms as rows of the same dimension; got shapes {T.shape} and "
            f"{L.shape} (for a decoder of shape (d, n_latents) pass decoder_.T or the SparseAutoencoder)"
        )
    tn = np.linalg.norm(T, axis=1)
    if np.any(tn == 0):
        raise ValueError(f"W_true has zero rows (atoms {np.flatnonzero(tn == 0).tolist()}); every true atom needs a direction")
    ln = np.linalg.norm(L, axis=1)
    C = np.abs((T / tn[:, None]) @ (L / np.where(ln > 0, ln, 1.0)[:, None]).T)
    best = np.minimum(C.max(axis=1), 1.0)
    matched = int(np.sum(best > threshold))
    return {
        "mean_max_cosine": float(best.mean()),
        "matched": matched,
        "matched_share": matched / T.shape[0],
        "best_cosine": best,
        "best_match": C.argmax(axis=1),
        "threshold": threshold,
    }


def dead_latents(sae: SparseAutoencoder, X) -> np.ndarray:
    """Indices of the latents that are zero on every row of X (never fire), sorted."""
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae must be a SparseAutoencoder; got {type(sae).__name__}")
    F = sae.encode(X)
    return np.flatnonzero(~(F > 0).any(axis=0))


def _column_corr(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Pearson correlations (a, b) between the columns of A (n, a) and B (n, b); 0 where a column
    is constant (a dead latent correlates with nothing)."""
    A = A - A.mean(0)
    B = B - B.mean(0)
    sa = np.sqrt((A * A).sum(0))
    sb = np.sqrt((B * B).sum(0))
    C = (A.T @ B) / np.outer(np.where(sa > 0, sa, 1.0), np.where(sb > 0, sb, 1.0))
    C[sa == 0, :] = 0.0
    C[:, sb == 0] = 0.0
    return C


def norm_detectors(sae: SparseAutoencoder, X, codes=None, norms=None, norm_threshold: float = 0.5,
                   feature_threshold: float = 0.5) -> dict:
    """Latents that detect the input's norm rather than a feature.

    A latent ``j`` is a norm detector when ``|corr(f_j(x), ||x||)| > norm_threshold`` over the
    rows of X and, if the true ``codes`` (n, n_features) are given, ``max_k |corr(f_j, c_k)| <
    feature_threshold`` (Pearson correlations; derived criterion of the issue's case study, after
    Naihin & Stambler 2026, arXiv 2606.15054). ``norms`` (n,) replaces ``||x||``, e.g. the
    magnitudes a normalising layer removed (``Superposition.norms``). Dead latents are never
    detectors. Returns ``latents`` (indices), ``norm_correlation`` (n_latents,),
    ``feature_correlation`` (n_latents,) the max |corr| with a true feature, or None without codes.
    """
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae must be a SparseAutoencoder; got {type(sae).__name__}")
    norm_threshold = check_float(norm_threshold, "norm_threshold", low=0.0, high=1.0)
    feature_threshold = check_float(feature_threshold, "feature_threshold", low=0.0, high=1.0)
    Xn = _matrix(X, "X", cols_name="features")
    Xn = Xn.detach().cpu().numpy() if is_tensor(Xn) else Xn
    n = Xn.shape[0]
    F = sae.encode(Xn).astype(np.float64)
    if norms is None:
        r = np.linalg.norm(np.asarray(Xn, dtype=np.float64), axis=1)
    else:
        r = np.asarray(as_numpy(norms, "norms"), dtype=np.float64)
        if r.shape != (n,):
            raise ValueError(f"norms must have shape ({n},), one per row of X; got {r.shape}")
        check_floating(r, "norms")
    rho = np.abs(_column_corr(F, r[:, None])[:, 0])
    is_detector = rho > norm_threshold
    feat = None
    if codes is not None:
        Cd = _matrix(codes, "codes", cols_name="features")
        Cd = np.asarray(Cd.detach().cpu().numpy() if is_tensor(Cd) else Cd, dtype=np.float64)
        if Cd.shape[0] != n:
            raise ValueError(f"codes must have shape ({n}, n_features), one row per row of X; got {Cd.shape}")
        feat = np.abs(_column_corr(F, Cd)).max(axis=1)
        is_detector &= feat < feature_threshold
    return {"latents": np.flatnonzero(is_detector), "norm_correlation": rho, "feature_correlation": feat}
