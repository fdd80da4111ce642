"""A Gaussian-process kernel from a trained network's feature map.

:class:`NeuralFeatureKernel` turns a feature map ``phi`` (a trained torch module, e.g. a network
without its last layer, or any function of a numpy array) into a kernel for
``sklearn.gaussian_process``: the linear kernel of the features,

    k(x, y) = <phi(x), phi(y)>                       (kind="linear"),

its cosine version ``<phi(x), phi(y)> / (||phi(x)|| ||phi(y)||)`` (``normalize=True``), or an RBF on
the features,

    k(x, y) = exp(-||phi(x) - phi(y)||^2 / (2 l^2))   (kind="rbf"),

whose length scale ``l`` is a hyperparameter the GP's marginal likelihood can tune (the gradient is
analytic). The linear kind is the kernel of Bayesian linear regression on the features: a GP with
it and noise ``alpha`` predicts exactly what ridge regression on ``phi(x)`` with penalty ``alpha``
predicts, i.e. kernel ridge with the explicit feature Gram ``Phi Phi^T``. The RBF-on-features kind
is the "deep kernel" of Wilson, Hu, Salakhutdinov & Xing, "Deep kernel learning", AISTATS 2016
(arXiv 1511.02222), here with the network trained beforehand and kept fixed (the kernel does not
train ``phi``).

Compose it with the library's kernels as usual, e.g. ``ConstantKernel() * NeuralFeatureKernel(phi)
+ WhiteKernel()``, for an amplitude and a noise level the GP fits.
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import is_tensor, torch
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

from .._validation import check_bool, check_float, check_int, check_option

__all__ = ["NeuralFeatureKernel"]


class NeuralFeatureKernel(Kernel):
    """A scikit-learn GP kernel ``k(x, y)`` built from a fixed feature map ``phi`` (module docstring).

    Parameters
    ----------
    feature_map : torch.nn.Module or callable
        The feature map ``phi``. A torch module is called on a tensor of the dtype and device of its
        first parameter (float32 when it has none), under ``torch.no_grad()`` and in ``eval()`` mode
        (its training flag is restored afterwards); any other callable is called on the float64
        numpy array. It must map ``(n, d)`` inputs to ``(n, p)`` (or ``(n,)``) finite features. It
        is not trained by the kernel; cloning the kernel (as a GP's ``fit`` does, and each
        ``clone_with_theta``) deep-copies it, like any scikit-learn parameter.
    kind : {"linear", "rbf"}
        ``"linear"``: ``<phi(x), phi(y)>`` (no hyperparameter); ``"rbf"``:
        ``exp(-||phi(x) - phi(y)||^2 / (2 length_scale^2))``.
    normalize : bool
        Scale each feature vector to unit norm first (``"linear"`` then gives the cosine kernel).
        A zero feature vector stays zero.
    length_scale : float > 0
        The RBF length scale ``l`` in feature space (``kind="rbf"`` only).
    length_scale_bounds : pair of floats or "fixed"
        The bounds the GP's optimiser keeps ``length_scale`` in, or ``"fixed"`` (``kind="rbf"``
        only; the linear kind has no hyperparameter).
    batch_size : int >= 1
        Rows passed through ``feature_map`` at once.

    Notes
    -----
    ``is_stationary()`` is False: the kernel depends on ``phi(x)`` and ``phi(y)``, not on ``x - y``.
    ``diag(X)`` is ``||phi(x)||^2`` for the linear kind (1 when normalised) and 1 for the RBF kind.

    Examples
    --------
    >>> import torch
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> phi = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh())
    >>> gp = GaussianProcessRegressor(NeuralFeatureKernel(phi), alpha=1e-2, optimizer=None)
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> gp.fit(X, X[:, 0]).predict(X[:2]).shape
    (2,)
    """

    def __init__(self, feature_map, kind="linear", normalize=False, length_scale=1.0,
                 length_scale_bounds=(1e-5, 1e5), batch_size=4096):
        self.feature_map = feature_map
        self.kind = kind
        self.normalize = normalize
        self.length_scale = length_scale
        self.length_scale_bounds = length_scale_bounds
        self.batch_size = batch_size

    # -- hyperparameters ----------------------------------------------------------------------
    @property
    def hyperparameter_length_scale(self):
        fixed = self.kind != "rbf" or (isinstance(self.length_scale_bounds, str)
                                       and self.length_scale_bounds == "fixed")
        return Hyperparameter("length_scale", "numeric", "fixed" if fixed else self.length_scale_bounds)

    # -- features -----------------------------------------------------------------------------
    def _check(self):
        if not callable(self.feature_map):
            raise TypeError(f"feature_map must be a torch.nn.Module or a callable; got "
                            f"{type(self.feature_map).__name__}")
        check_option(self.kind, "kind", ("linear", "rbf"))
        check_bool(self.normalize, "normalize")
        check_int(self.batch_size, "batch_size", low=1)
        # A finite number > 0 (a string such as "1" is refused, whatever the kind).
        check_float(self.length_scale, "length_scale", low=0.0, low_inclusive=False)

    def features(self, X) -> np.ndarray:
        """``phi(X)`` as a float64 ``(n, p)`` array (normalised rows when ``normalize``)."""
        self._check()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}")
        n, bs = X.shape[0], int(self.batch_size)
        parts = []
        fm = self.feature_map
        if isinstance(fm, torch.nn.Module):
            p = next(fm.parameters(), None)
            dtype, device = (p.dtype, p.device) if p is not None else (torch.float32, torch.device("cpu"))
            was_training = fm.training
            fm.eval()
            try:
                with torch.no_grad():
                    for s in range(0, n, bs):
                        block = X[s:s + bs]
                        parts.append(_feature_block(fm(torch.as_tensor(block, dtype=dtype, device=device)), block))
            finally:
                fm.train(was_training)
        else:
            for s in range(0, n, bs):
                parts.append(_feature_block(fm(X[s:s + bs]), X[s:s + bs]))
        F = np.concatenate(parts) if parts else np.zeros((0, 0))
        if F.ndim != 2 or F.shape[0] != n:
            raise ValueError(f"feature_map must map (n, d) inputs to (n, p) features; a ({n}, {X.shape[1]}) input "
                             f"gave shape {F.shape}")
        if not np.all(np.isfinite(F)):
            raise ValueError("feature_map returned non-finite features (NaN or inf)")
        if self.normalize:
            # Each row divided by its largest |entry| first, so that the norm of features near
            # 1e200 does not overflow (the direction, all that is kept, is the same).
            top = np.abs(F).max(axis=1, keepdims=True) if F.size else np.zeros((n, 1))
            safe = np.where(top > 0, top, 1.0)
            U = F / safe
            norms = np.linalg.norm(U, axis=1, keepdims=True)
            F = np.where(top > 0, U / np.where(norms > 0, norms, 1.0), 0.0)
        return F

    # -- the kernel ---------------------------------------------------------------------------
    def __call__(self, X, Y=None, eval_gradient=False):
        """The kernel matrix ``k(X, Y)`` (``Y = X`` when None), and with ``eval_gradient`` its gradient
        with respect to the log of the non-fixed hyperparameters, shape ``(n, n, n_dims)``."""
        if eval_gradient and Y is not None:
            raise ValueError("Gradient can only be evaluated when Y is None.")
        F = self.features(X)
        G = F if Y is None else self.features(Y)
        if G.shape[1] != F.shape[1]:
            raise ValueError(f"feature_map gave {F.shape[1]} features for X but {G.shape[1]} for Y")
        if self.kind == "linear":
            with np.errstate(over="ignore", invalid="ignore"):
                K = F @ G.T
            _check_products(K, F, G)
            if eval_gradient:
                return K, np.empty((K.shape[0], K.shape[1], 0))
            return K
        # D / l^2 from features divided by their largest |entry| s (a power of two: exact), so that
        # the squares of features near 1e200 do not overflow: D / l^2 = (s / l)^2 D(F / s, G / s).
        s = _power_of_two_scale(F, G)
        ratio = s / float(self.length_scale)
        Fs, Gs = F / s, G / s
        Ds = np.maximum((Fs * Fs).sum(1)[:, None] + (Gs * Gs).sum(1)[None, :] - 2.0 * Fs @ Gs.T, 0.0)
        if Y is None:
            np.fill_diagonal(Ds, 0.0)
        with np.errstate(over="ignore"):
            Dl = Ds * ratio * ratio  # D / l^2; inf where the distance dwarfs l (K is then 0)
        K = np.exp(-Dl / 2.0)
        if not eval_gradient:
            return K
        if self.hyperparameter_length_scale.fixed:
            return K, np.empty((K.shape[0], K.shape[1], 0))
        # dK / d log(l) = K * D / l^2, whose limit is 0 where K underflows to 0
        grad = np.where(K > 0, K * np.where(np.isfinite(Dl), Dl, 0.0), 0.0)
        return K, grad[:, :, None]

    def diag(self, X):
        """``k(x, x)`` for each row: ``||phi(x)||^2`` (linear; 1 normalised) or 1 (RBF)."""
        if self.kind == "rbf":
            self._check()
            return np.ones(np.asarray(X).shape[0])
        F = self.features(X)
        with np.errstate(over="ignore"):
            d = (F * F).sum(axis=1)
        _check_products(d, F, F)
        return d

    def is_stationary(self):
        """False: ``k`` depends on the features of ``x`` and ``y``, not on ``x - y``."""
        return False

    def __repr__(self):
        name = getattr(self.feature_map, "__class__", type(self.feature_map)).__name__
        extra = f", length_scale={float(self.length_scale):.3g}" if self.kind == "rbf" else ""
        return f"NeuralFeatureKernel({name}, kind={self.kind!r}, normalize={self.normalize}{extra})"


def _feature_block(out, block: np.ndarray) -> np.ndarray:
    """What ``feature_map`` returned for ``block`` (m rows) as a float64 ``(m, p)`` array, or a
    TypeError/ValueError saying what it must return."""
    m, want = block.shape[0], f"a tensor or array of shape ({block.shape[0]}, p) (or ({block.shape[0]},))"
    if out is None:
        raise TypeError(f"feature_map returned None for a ({m}, {block.shape[1]}) input; it must return {want}")
    if isinstance(out, dict):
        raise TypeError(
            f"feature_map returned a dict (keys {list(out)[:5]}); it must return {want}: wrap it to pick the "
            "features, e.g. lambda x: module(x)['features']"
        )
    if isinstance(out, tuple):
        raise TypeError(
            f"feature_map returned a tuple of {len(out)} (an LSTM or GRU returns (output, state)); it must return "
            f"{want}: wrap it to pick the features, e.g. lambda x: lstm(x)[0]"
        )
    if is_tensor(out):
        out = out.detach().to("cpu", torch.float64).numpy()
    try:
        F = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"feature_map returned {type(out).__name__}, not numbers; it must return {want} ({err})"
        ) from None
    if F.ndim == 1:
        F = F[:, None]
    if F.ndim != 2 or F.shape[0] != m:
        raise ValueError(f"feature_map must map (n, d) inputs to (n, p) features; a ({m}, {block.shape[1]}) input "
                         f"gave shape {F.shape}")
    return F


def _power_of_two_scale(F: np.ndarray, G: np.ndarray) -> float:
    """The power of two at or above the largest |entry| of ``F`` and ``G`` (1 for all zeros)."""
    top = max(float(np.abs(F).max(initial=0.0)), float(np.abs(G).max(initial=0.0)))
    return float(np.ldexp(1.0, np.frexp(top)[1])) if top > 0 else 1.0


def _check_products(K: np.ndarray, F: np.ndarray, G: np.ndarray) -> None:
    """Refuse a linear kernel (inner products of features) that overflowed float64."""
    if not bool(np.isfinite(K).all()):
        top = max(float(np.abs(F).max(initial=0.0)), float(np.abs(G).max(initial=0.0)))
        raise ValueError(
            f"the linear kernel overflows float64: features reach |phi(x)| = {top:.3g}, whose inner products exceed "
            f"{np.finfo(np.float64).max:.3g}; expected features whose products fit float64: rescale the inputs or "
            "the feature map, or use normalize=True (the cosine kernel) or kind='rbf', which are computed stably"
        )
