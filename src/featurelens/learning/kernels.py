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
from featurelens._optional import torch
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

from .._validation import check_bool, check_int, check_option

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
        if self.kind == "rbf":
            ls = np.asarray(self.length_scale, dtype=float)
            if ls.ndim != 0 or not np.isfinite(ls) or ls <= 0:
                raise ValueError(f"length_scale must be a finite number > 0; got {self.length_scale!r}")

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
                        out = fm(torch.as_tensor(X[s:s + bs], dtype=dtype, device=device))
                        parts.append(out.detach().to("cpu", torch.float64).numpy())
            finally:
                fm.train(was_training)
        else:
            for s in range(0, n, bs):
                parts.append(np.asarray(fm(X[s:s + bs]), dtype=np.float64))
        F = np.concatenate(parts) if parts else np.zeros((0, 0))
        if F.ndim == 1:
            F = F[:, None]
        if F.ndim != 2 or F.shape[0] != n:
            raise ValueError(f"feature_map must map (n, d) inputs to (n, p) features; a ({n}, {X.shape[1]}) input "
                             f"gave shape {F.shape}")
        if not np.all(np.isfinite(F)):
            raise ValueError("feature_map returned non-finite features (NaN or inf)")
        if self.normalize:
            norms = np.linalg.norm(F, axis=1, keepdims=True)
            F = np.where(norms > 0, F / np.where(norms > 0, norms, 1.0), 0.0)
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
            K = F @ G.T
            if eval_gradient:
                return K, np.empty((K.shape[0], K.shape[1], 0))
            return K
        l2 = float(self.length_scale) ** 2
        D = np.maximum((F * F).sum(1)[:, None] + (G * G).sum(1)[None, :] - 2.0 * F @ G.T, 0.0)
        if Y is None:
            np.fill_diagonal(D, 0.0)
        K = np.exp(-D / (2.0 * l2))
        if not eval_gradient:
            return K
        if self.hyperparameter_length_scale.fixed:
            return K, np.empty((K.shape[0], K.shape[1], 0))
        # dK / d log(l) = K * D / l^2
        return K, (K * D / l2)[:, :, None]

    def diag(self, X):
        """``k(x, x)`` for each row: ``||phi(x)||^2`` (linear; 1 normalised) or 1 (RBF)."""
        if self.kind == "rbf":
            self._check()
            return np.ones(np.asarray(X).shape[0])
        F = self.features(X)
        return (F * F).sum(axis=1)

    def is_stationary(self):
        """False: ``k`` depends on the features of ``x`` and ``y``, not on ``x - y``."""
        return False

    def __repr__(self):
        name = getattr(self.feature_map, "__class__", type(self.feature_map)).__name__
        extra = f", length_scale={float(self.length_scale):.3g}" if self.kind == "rbf" else ""
        return f"NeuralFeatureKernel({name}, kind={self.kind!r}, normalize={self.normalize}{extra})"
