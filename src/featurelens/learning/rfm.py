"""Recursive Feature Machines (RFM): kernel ridge regression with a learned Mahalanobis metric.

RFM alternates two steps, starting from ``M = I``:

1. kernel ridge regression with a Mahalanobis kernel, ``alpha = (K_M(X, X) + reg I)^{-1} Y`` and
   ``f(x) = K_M(x, X) alpha``, where

   - Laplace:  ``K_M(x, z) = exp(-||x - z||_M / L)``,
   - Gaussian: ``K_M(x, z) = exp(-||x - z||_M^2 / (2 L^2))``,  ``||u||_M = sqrt(u^T M u)``;

2. the AGOP update ``G = (1/n) sum_i J(x_i)^T J(x_i)`` (``J`` the outputs x d Jacobian of ``f``),
   then ``M <- normalize(G^power)``.

Radhakrishnan, Beaglehole, Pandit, Belkin, "Mechanism for feature learning in neural networks and
backpropagation-free machine learning models", Science 2024, arXiv 2212.13881. The defaults
(Laplace kernel, bandwidth 10, reg 1e-3, 5 iterations, max-normalised AGOP used as M) are those of
the reference code and of xRFM (Beaglehole, Holzmueller, Radhakrishnan, Belkin, 2025,
arXiv 2508.10053): xRFM's kernel uses ``sqrtM = (G / max G)^{1/2}`` as a feature map, i.e. the
Mahalanobis matrix ``G / max G``, which is ``power=1, normalize="max"`` here.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings

import numpy as np
from featurelens._optional import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._random import numpy_rng, parse_seed
from .._validation import check_bool, check_device, check_float, check_floating, check_int, check_option
from ._rfm_kernels import RFMKernels

__all__ = ["RFMRegressor", "RFMClassifier"]

_KERNELS = ("laplace", "gaussian")
_NORMALIZE = ("max", "trace", None)


class _BaseRFM(RFMKernels, BaseEstimator):
    """Shared machinery of :class:`RFMRegressor` and :class:`RFMClassifier`."""

    def __init__(
        self,
        kernel="laplace",
        bandwidth=10.0,
        reg=1e-3,
        iters=5,
        diag=False,
        power=1.0,
        normalize="max",
        centering=False,
        val_size=0.2,
        agop_samples=None,
        batch_size=None,
        seed=0,
        device="cpu",
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.reg = reg
        self.iters = iters
        self.diag = diag
        self.power = power
        self.normalize = normalize
        self.centering = centering
        self.val_size = val_size
        self.agop_samples = agop_samples
        self.batch_size = batch_size
        self.seed = seed
        self.device = device

    # ------------------------------------------------------------------ parameter checks
    def _check_params(self):
        check_option(self.kernel, "kernel", _KERNELS)
        check_float(self.bandwidth, "bandwidth", low=0.0, low_inclusive=False)
        check_float(self.reg, "reg", low=0.0)
        check_int(self.iters, "iters", low=0)
        check_bool(self.diag, "diag")
        check_bool(self.centering, "centering")
        check_option(self.power, "power (the AGOP itself or its matrix square root)", (1.0, 0.5))
        check_option(self.normalize, "normalize", _NORMALIZE)
        vs = self.val_size
        if vs is not None:
            # None, an int count or a fraction: each branch is checked by the shared validators.
            if isinstance(vs, numbers.Integral) and not isinstance(vs, (bool, np.bool_)):
                check_int(vs, "val_size (a number of rows)", low=1)
            else:
                check_float(vs, "val_size (a fraction)", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_int(self.agop_samples, "agop_samples", low=1, allow_none=True)
        check_int(self.batch_size, "batch_size", low=1, allow_none=True)
        parse_seed(self.seed)
        return check_device(self.device)

    # ------------------------------------------------------------------ kernel algebra
    def _encode_targets(self, y: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _val_key(self, pred: torch.Tensor, Y: torch.Tensor, y_raw) -> tuple[tuple, dict]:  # pragma: no cover
        raise NotImplementedError

    def _fit(self, X, y, X_val, y_val):
        device = self._check_params()
        X, y = validate_data(
            self, X, y, dtype=[np.float64, np.float32], multi_output=self._multi_output,
            ensure_all_finite=False, y_numeric=not isinstance(self, ClassifierMixin),
        )
        check_floating(X, "X")
        if not isinstance(self, ClassifierMixin):
            y = np.asarray(y, dtype=np.float64)
            check_floating(y, "y")
        n, d = X.shape
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together; got only "
                             + ("X_val" if y_val is None else "y_val"))
        Y = self._encode_targets(y)  # (n, outputs) float64
        rng = numpy_rng(self.seed)

        if X_val is not None:
            Xv = np.asarray(X_val) if not hasattr(X_val, "iloc") else X_val
            if getattr(Xv, "ndim", 0) != 2 or Xv.shape[1] != d:
                raise ValueError(
                    f"X_val has {Xv.shape[1] if getattr(Xv, 'ndim', 0) == 2 else 'not 2-d'} features, but "
                    f"{type(self).__name__} is expecting {d} features as input (a 2-d array like X)"
                )
            Xv = validate_data(self, X_val, reset=False, dtype=X.dtype, ensure_all_finite=False)
            check_floating(Xv, "X_val")
            yv = np.asarray(y_val)
            if yv.shape[0] != Xv.shape[0]:
                raise ValueError(f"y_val must have one entry per row of X_val ({Xv.shape[0]}); got {yv.shape[0]}")
            if not isinstance(self, ClassifierMixin):
                yv = yv.astype(np.float64)
                check_floating(yv, "y_val")
            Yv = self._encode_targets(yv, fitted=True)
            Xt, Yt = X, Y
            self.val_source_ = "given"
        elif self.val_size is not None:
            n_val = int(self.val_size) if isinstance(self.val_size, numbers.Integral) else math.ceil(self.val_size * n)
            if n_val >= n:
                raise ValueError(
                    f"val_size={self.val_size!r} leaves no training rows out of n_samples = {n} "
                    f"({n} sample{'s' if n != 1 else ''}); expected more samples, a smaller val_size or val_size=None"
                )
            perm = rng.permutation(n)
            val_idx, tr_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
            Xt, Yt, Xv, Yv, yv = X[tr_idx], Y[tr_idx], X[val_idx], Y[val_idx], y[val_idx]
            self.val_source_ = "split"
        else:
            Xt, Yt, Xv, Yv, yv = X, Y, None, None, None
            self.val_source_ = "none"

        dtype = torch.float64 if X.dtype == np.float64 else torch.float32
        # Kernels and gradients depend on differences x - z only: centring the rows on the training
        # mean keeps ||x||_M^2 + ||z||_M^2 - 2 x^T M z from cancelling catastrophically on offset data.
        self._shift = np.asarray(Xt, dtype=np.float64).mean(0)
        shift = torch.as_tensor(self._shift, dtype=dtype, device=device)
        tX = torch.as_tensor(Xt, dtype=dtype, device=device) - shift
        tY = torch.as_tensor(Yt, dtype=dtype, device=device)
        tXv = None if Xv is None else torch.as_tensor(Xv, dtype=dtype, device=device) - shift
        tYv = None if Yv is None else torch.as_tensor(Yv, dtype=dtype, device=device)
        nt = tX.shape[0]
        if self.agop_samples is not None and self.agop_samples < nt:
            agop_idx = np.sort(rng.choice(nt, size=int(self.agop_samples), replace=False))
        else:
            agop_idx = np.arange(nt)
        agop_idx_t = torch.as_tensor(agop_idx, device=device)

        M = torch.ones(d, dtype=torch.float64, device=device) if self.diag else torch.eye(d, dtype=torch.float64, device=device)
        history, best = [], None
        for t in range(int(self.iters) + 1):
            start = time.perf_counter()
            Mw = M.to(dtype)
            K = self._gram(tX, Mw)
            alpha = self._solve(K, tY)
            # Training predictions without another kernel product: K alpha = Y - reg alpha.
            train_pred = tY - float(self.reg) * alpha
            record = {"iter": t, "train_mse": float(((train_pred - tY) ** 2).mean())}
            key = None
            if tXv is not None:
                val_pred = self._predict_raw(tXv, tX, Mw, alpha)
                key, scores = self._val_key(val_pred, tYv, yv)
                record.update(scores)
            if best is None or (key is not None and key < best[0]):
                best = (key, t, M.clone(), alpha.clone())
            stop = t == int(self.iters)
            if not stop:
                G = self._agop(tX[agop_idx_t], tX, Mw, alpha, agop_idx_t, K)
                new_M = self._next_M(G)
                if new_M is None:
                    why = ""
                    if K.shape[0] > 1 and float((K - torch.diag(K.diagonal())).abs().max()) == 0.0:
                        # Every pair of rows is "infinitely" far apart at this bandwidth: K = I.
                        why = (f"; every off-diagonal kernel value is 0 (the rows are too far apart for "
                               f"bandwidth={self.bandwidth!r}, the kernel is the identity and predictions away from "
                               f"the training rows are 0): rescale X (e.g. sklearn's StandardScaler) or raise the bandwidth")
                    warnings.warn(
                        f"the AGOP is zero at iteration {t} (the predictor is constant); stopping after "
                        f"{t + 1} of {int(self.iters) + 1} fits{why}", RuntimeWarning, stacklevel=3,
                    )
                    stop = True
                else:
                    M = new_M
            del K  # before the next Gram matrix: at most two n x n matrices alive
            record["seconds"] = time.perf_counter() - start
            history.append(record)
            if stop:
                break
        if tXv is None:  # no validation data: the last iterate is the model
            best = (None, t, M.clone(), alpha)
        _, self.best_iter_, M_best, alpha_best = best
        M_best = M_best.to(torch.float64).cpu().numpy()
        self.M_ = np.diag(M_best) if self.diag else M_best
        self.feature_importances_ = np.diag(self.M_).copy()
        self.alphas_ = alpha_best.cpu().numpy()
        self.X_fit_ = np.ascontiguousarray(Xt)
        self.history_ = history
        self.n_iter_ = len(history) - 1
        return self

    # ------------------------------------------------------------------ predict / gradients
    def _tensors(self, X):
        check_is_fitted(self, "alphas_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32], ensure_all_finite=False)
        check_floating(X, "X")
        device = check_device(self.device)
        dtype = torch.as_tensor(self.X_fit_[:0]).dtype
        shift = torch.as_tensor(self._shift, dtype=dtype, device=device)
        tX = torch.as_tensor(np.asarray(X, dtype=self.X_fit_.dtype), dtype=dtype, device=device) - shift
        Z = torch.as_tensor(self.X_fit_, device=device) - shift
        M = np.diag(self.M_).copy() if self.diag else self.M_
        tM = torch.as_tensor(M, dtype=dtype, device=device)
        alpha = torch.as_tensor(self.alphas_, device=device)
        return tX, Z, tM, alpha

    def _decision(self, X) -> np.ndarray:
        tX, Z, M, alpha = self._tensors(X)
        return self._predict_raw(tX, Z, M, alpha).cpu().numpy()

    def gradients(self, X) -> np.ndarray:
        """Jacobians of the fitted predictor at the rows of X, shape (n, outputs, d).

        Laplace: ``grad f(x) = (1/L) sum_j alpha_j K_M(x, z_j) M (z_j - x) / ||x - z_j||_M`` (terms
        with ``||x - z_j||_M < 1e-10`` are dropped: the kernel has no gradient there);
        Gaussian: ``grad f(x) = (1/L^2) sum_j alpha_j K_M(x, z_j) M (z_j - x)``. For the
        classifier the outputs are the regression outputs before :meth:`predict_proba`.
        """
        tX, Z, M, alpha = self._tensors(X)
        return self._gradients(tX, Z, M, alpha).cpu().numpy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


class RFMRegressor(RegressorMixin, _BaseRFM):
    """Recursive Feature Machine regressor (scikit-learn estimator).

    Alternates kernel ridge regression ``alpha = (K_M(X, X) + reg I)^{-1} y`` with the AGOP update
    ``M <- normalize(((1/n) sum_i J(x_i)^T J(x_i))^power)``, for ``iters`` updates from ``M = I``
    (``iters + 1`` kernel fits), and keeps the iterate with the lowest validation MSE.
    Radhakrishnan et al., Science 2024, arXiv 2212.13881; xRFM: Beaglehole et al. 2025,
    arXiv 2508.10053.

    Memory: the n x n kernel matrix and its Cholesky factor (2 n^2 numbers of X's dtype) plus
    chunks of about ``batch_size`` x n; float64 inputs compute in float64, float32 inputs in
    float32 (xrfm's ``xRFM`` always converts to float32).

    Parameters
    ----------
    kernel : {"laplace", "gaussian"}
        ``exp(-||x - z||_M / L)`` or ``exp(-||x - z||_M^2 / (2 L^2))``.
    bandwidth : float > 0
        ``L`` above (default 10, as in the reference code and xRFM).
    reg : float >= 0
        Ridge added to the kernel matrix's diagonal. Never changed by ``fit``: a singular system
        raises a ValueError.
    iters : int >= 0
        Number of AGOP updates of M (``iters=0`` is plain kernel ridge regression, ``M = I``).
    diag : bool
        Learn a diagonal M only (the diagonal of the AGOP), d numbers instead of d x d.
    power : 1 or 0.5
        ``M`` is the AGOP (1, as in the original RFM and xRFM) or its matrix square root (0.5, as
        in the grokking code of Mallinar et al. 2024, arXiv 2407.20199), via an eigendecomposition.
    normalize : {"max", "trace", None}
        Applied after the power: divide by the largest entry (max entry 1), scale to trace d (the
        trace of the initial ``M = I``, so the bandwidth keeps its scale), or leave the AGOP's
        own scale (``1/n`` average of the Jacobian outer products).
    centering : bool
        Subtract each output's mean gradient over the AGOP samples before the outer products:
        ``G = (1/n) sum_i (J_i - Jbar)^T (J_i - Jbar)`` (used by the grokking code). xrfm's
        ``center_grads`` subtracts one mean over all outputs and samples of each AGOP batch; the
        two agree for one output and one batch.
    val_size : None, float in (0, 1) or int >= 1
        Size of the internal validation split (drawn with ``seed``) on which the best iterate is
        kept. Not used when ``fit`` receives ``X_val, y_val`` (then all of X trains, and
        ``val_source_`` says "given"). ``None`` without ``X_val``: no validation, the last iterate
        is kept.
    agop_samples : None or int >= 1
        Compute the AGOP on at most this many training rows, drawn with ``seed`` without
        replacement (None, or a number >= the training rows: all of them).
    batch_size : None or int >= 1
        Rows per chunk of the kernel, prediction and gradient computations (None: chunks of about
        8 million elements, ``featurelens._batching.rows_for_bytes``); bounds memory, does not
        change results.
    seed : None, int or numpy Generator
        Seeds the validation split and the AGOP subsample (a Generator built from an int gives the
        same fit as the int; a Generator is advanced by each fit).
    device : str or torch.device
        Where the torch computations run ("cpu", "cuda", ...).

    Attributes
    ----------
    M_ : (d, d) ndarray
        The Mahalanobis matrix of the kept iterate (diagonal when ``diag``).
    feature_importances_ : (d,) ndarray
        ``diag(M_)``.
    alphas_ : (n_fit, outputs) ndarray
        Kernel ridge coefficients of the kept iterate.
    X_fit_ : (n_fit, d) ndarray
        The training rows (the rows not held out for validation).
    history_ : list of dict
        Per kernel fit: ``iter``, ``train_mse``, and with validation ``val_mse`` and ``val_r2``;
        ``seconds`` (solve, validation and the AGOP update that follows).
    best_iter_ : int
        Iteration of the kept iterate (``M`` after ``best_iter_`` AGOP updates).
    val_source_ : {"split", "given", "none"}
        Where the validation data came from.
    """

    _multi_output = True

    def _encode_targets(self, y, fitted=False):
        y = np.asarray(y, dtype=np.float64)
        if not fitted:
            self._y_ndim = y.ndim
        return y[:, None] if y.ndim == 1 else y

    def _val_key(self, pred, Y, y_raw):
        err = ((pred - Y) ** 2).to(torch.float64)
        mse = float(err.mean())
        var = ((Y - Y.mean(0)) ** 2).to(torch.float64).mean(0)
        r2 = float((1.0 - err.mean(0) / var.clamp(min=1e-300)).mean()) if bool((var > 0).all()) else float("nan")
        return (mse,), {"val_mse": mse, "val_r2": r2}

    def fit(self, X, y, X_val=None, y_val=None):
        """Fit on (X, y); ``X_val, y_val`` (optional) select the best iterate instead of the
        internal ``val_size`` split."""
        return self._fit(X, y, X_val, y_val)

    def predict(self, X) -> np.ndarray:
        """``f(X) = K_M(X, X_fit_) alphas_``; shape (n,) for a 1-d y, else (n, outputs)."""
        out = self._decision(X)
        return out[:, 0] if self._y_ndim == 1 else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags


class RFMClassifier(ClassifierMixin, _BaseRFM):
    """Recursive Feature Machine classifier: :class:`RFMRegressor` on coded labels.

    Two classes: one output with targets -1/+1; C > 2 classes: one-hot 0/1 targets, C outputs.
    The AGOP sums the outer products of all outputs' gradients. The best iterate is the one with
    the highest validation accuracy (ties: lower MSE to the coded targets).
    ``predict`` returns the label of the largest output (binary: ``f > 0``).
    ``predict_proba`` clips and normalises the regression outputs (no calibration):
    binary ``p(+) = clip((1 + f) / 2, 0, 1)``; C > 2 ``p_k = max(f_k, 0) / sum_j max(f_j, 0)``,
    and ``softmax(f)`` on the rows where every output is <= 0. Both maps are increasing in each
    output, so the most probable class is the predicted one.
    Radhakrishnan et al., Science 2024, arXiv 2212.13881.

    Parameters and attributes are those of :class:`RFMRegressor`, plus ``classes_``; its
    ``history_`` records ``val_accuracy`` and ``val_mse``.
    """

    _multi_output = False

    def _encode_targets(self, y, fitted=False):
        if not fitted:
            check_classification_targets(y)
            self.classes_, idx = np.unique(y, return_inverse=True)
            if len(self.classes_) < 2:
                raise ValueError(
                    f"y must hold at least 2 classes; got 1 class ({self.classes_[0]!r})"
                )
        else:
            known = np.isin(y, self.classes_)
            if not known.all():
                raise ValueError(
                    f"y_val holds labels not seen in y: {np.unique(np.asarray(y)[~known])[:5].tolist()}; "
                    f"expected labels among {self.classes_.tolist()}"
                )
            idx = np.searchsorted(self.classes_, y)
        idx = np.asarray(idx).ravel()
        if len(self.classes_) == 2:
            return (2.0 * idx - 1.0)[:, None]
        Y = np.zeros((idx.shape[0], len(self.classes_)))
        Y[np.arange(idx.shape[0]), idx] = 1.0
        return Y

    def _labels_index(self, raw: torch.Tensor) -> torch.Tensor:
        return (raw[:, 0] > 0).long() if raw.shape[1] == 1 else raw.argmax(1)

    def _val_key(self, pred, Y, y_raw):
        acc = float((self._labels_index(pred) == self._labels_index(Y)).double().mean())
        mse = float(((pred - Y) ** 2).to(torch.float64).mean())
        return (-acc, mse), {"val_accuracy": acc, "val_mse": mse}

    def fit(self, X, y, X_val=None, y_val=None):
        """Fit on (X, y); ``X_val, y_val`` (optional) select the best iterate instead of the
        internal ``val_size`` split."""
        return self._fit(X, y, X_val, y_val)

    def decision_function(self, X) -> np.ndarray:
        """The regression outputs: shape (n,) for two classes (> 0 means ``classes_[1]``), else
        (n, C)."""
        out = self._decision(X)
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X) -> np.ndarray:
        raw = torch.as_tensor(self._decision(X))
        return self.classes_[self._labels_index(raw).numpy()]

    def predict_proba(self, X) -> np.ndarray:
        raw = self._decision(X)
        if raw.shape[1] == 1:
            p1 = np.clip((1.0 + raw[:, 0]) / 2.0, 0.0, 1.0)
            return np.stack([1.0 - p1, p1], axis=1)
        pos = np.maximum(raw, 0.0)
        total = pos.sum(1, keepdims=True)
        soft = np.exp(raw - raw.max(1, keepdims=True))
        soft /= soft.sum(1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, pos / np.where(total > 0, total, 1.0), soft)

    def predict_log_proba(self, X) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
