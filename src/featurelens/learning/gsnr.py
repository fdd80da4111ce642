"""Gradient signal-to-noise ratio (GSNR) of every parameter.

Liu, Jiang, Bai, Chen & Wang, "Understanding Why Neural Networks Generalize Well Through GSNR of
Parameters", ICLR 2020, arXiv 2001.07384. For parameter theta_j with per-sample gradient
``g_j(x_i, y_i)`` of the loss,

    r_j = mean_i(g_ij)^2 / var_i(g_ij),

over the n given samples (population variance, 1/n). A large GSNR means the samples agree on the
direction in which theta_j should move, so a step that lowers the training loss also lowers the
loss on unseen data: the paper ties larger GSNR to a smaller generalisation gap.

Per-sample gradients come from ``torch.func.vmap(torch.func.grad(...))`` over the module's
parameters (``torch.func.functional_call``), in chunks of rows; the sums are shifted by the first
sample's gradient and accumulated in float64, so identical per-sample gradients give a variance of
exactly 0.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from featurelens._optional import torch

from .._batching import chunks, rows_for_bytes
from .._validation import as_numpy, check_option
from ..models import Model

__all__ = ["GSNRResult", "InfiniteGSNRWarning", "gsnr", "gsnr_monitor_metric"]

#: A GSNR above this (a gradient spread below 1e-12 of its mean: rounding noise) counts as infinite.
GSNR_INF_THRESHOLD = 1e24

LOSSES = ("cross_entropy", "mse")


class InfiniteGSNRWarning(RuntimeWarning):
    """Some parameter entries have the same gradient on every sample (variance 0): GSNR = inf."""


@dataclass
class GSNRResult:
    """What :func:`gsnr` returns.

    Attributes
    ----------
    values : dict name -> ndarray
        GSNR of every entry, the shape of the parameter tensor. ``inf`` where the per-sample
        gradients are identical (variance 0, or below 1e-24 of the squared mean) and the mean is
        not 0; 0 where every per-sample gradient is 0 (a parameter the loss does not reach).
    summary : dict name -> float
        Mean of ``values`` per tensor (``inf`` when any entry is infinite).
    mean, variance : dict name -> ndarray
        Mean and population variance (1/n) of the per-sample gradients.
    infinite : dict name -> int
        How many entries of each tensor have infinite GSNR.
    n_samples : int
    """

    values: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    mean: dict = field(default_factory=dict)
    variance: dict = field(default_factory=dict)
    infinite: dict = field(default_factory=dict)
    n_samples: int = 0

    @property
    def any_infinite(self) -> bool:
        return any(c > 0 for c in self.infinite.values())


def _loss_function(loss, n_outputs: int):
    if callable(loss):
        return loss
    loss = check_option(loss, "loss", LOSSES)
    if loss == "mse":
        return lambda out, t: torch.nn.functional.mse_loss(out.reshape(t.shape), t)
    if n_outputs == 1:
        return lambda out, t: torch.nn.functional.binary_cross_entropy_with_logits(out.reshape(t.shape), t)
    return lambda out, t: torch.nn.functional.cross_entropy(out, t)


def _targets(y, n: int, loss, n_outputs: int, dtype, device, name: str = "y") -> torch.Tensor:
    arr = as_numpy(y, name)
    if arr.ndim == 0 or arr.shape[0] != n:
        raise ValueError(f"{name} has shape {arr.shape}; expected one target per row of X ({n} rows)")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers (class labels or real targets); got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf values; expected finite numbers")
    if loss == "cross_entropy":
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D vector of class labels for loss='cross_entropy'; got shape {arr.shape}")
        if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
            raise TypeError(f"{name} must hold integer class labels for loss='cross_entropy'; got non-integer values")
        classes = 2 if n_outputs == 1 else n_outputs
        if arr.min() < 0 or arr.max() >= classes:
            raise ValueError(
                f"{name} holds labels in [{arr.min()}, {arr.max()}]; expected 0 <= label < {classes} "
                f"for a model with {n_outputs} output(s)"
            )
        if n_outputs == 1:
            return torch.as_tensor(arr.astype(np.float64), dtype=dtype, device=device)
        return torch.as_tensor(arr.astype(np.int64), device=device)
    if loss == "mse":
        return torch.as_tensor(arr.astype(np.float64), dtype=dtype, device=device)
    t = torch.as_tensor(arr)
    return t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device=device)


def _batches(X, y):
    """``[(x, y)]`` for arrays, or the (x, y) pairs of a DataLoader-like iterable when y is None."""
    if y is not None:
        return [(X, y)], True
    if isinstance(X, (np.ndarray, torch.Tensor)) or hasattr(X, "__array__") or hasattr(X, "iloc"):
        raise ValueError(
            "y is None but X is an array; pass y (one target per row), or pass an iterable of "
            "(x, y) batches (e.g. a torch DataLoader) as X with y=None"
        )
    try:
        iter(X)
    except TypeError:
        raise TypeError(
            f"X must be an array of inputs (with y) or an iterable of (x, y) batches; got {type(X).__name__}"
        ) from None
    return X, False


def gsnr(model, X, y=None, loss="cross_entropy", batch_size: int | None = None, warn: bool = True) -> GSNRResult:
    """Per-parameter gradient signal-to-noise ratio ``r_j = mean_i(g_ij)^2 / var_i(g_ij)``.

    Liu, Jiang, Bai, Chen & Wang, ICLR 2020, arXiv 2001.07384. ``g_ij`` is the gradient of the loss
    of sample i alone with respect to parameter entry j (every parameter with ``requires_grad``);
    the mean and the population variance (1/n) run over the n samples.

    Parameters
    ----------
    model
        A ``torch.nn.Module`` (or a :class:`featurelens.models.Model` around one): GSNR needs its
        parameters. It is evaluated in eval mode (dropout off, batch-norm running statistics), so
        each sample's gradient is its own; the module's flags are restored afterwards.
    X, y
        Inputs (n, ...) and one target per row; or ``X`` an iterable of ``(x, y)`` batches (a torch
        ``DataLoader``) and ``y=None``.
    loss
        ``"cross_entropy"`` (integer class labels; a single-output model: binary cross-entropy on
        its logit with 0/1 labels), ``"mse"`` (real targets shaped like the outputs, or (n,) for a
        single output), or a callable ``loss(outputs, targets) -> scalar`` that is called on one
        sample at a time (``outputs`` of shape (1, ...), ``targets`` of shape (1, ...)) and must be
        ``torch.func``-transformable (no ``.item()``, no data-dependent Python branching).
    batch_size
        Rows whose per-sample gradients are held at once (default: the Model's rule, further
        bounded so that one chunk's gradients stay within 64 MiB of float64).
    warn
        Warn (:class:`InfiniteGSNRWarning`) when some entries are infinite.

    Returns
    -------
    GSNRResult
        ``values`` (name -> array of the parameter's shape), ``summary`` (name -> mean GSNR of the
        tensor), ``mean``, ``variance``, ``infinite`` (name -> count of infinite entries),
        ``n_samples``. Identical per-sample gradients (variance 0, or below 1e-24 of the squared
        mean: rounding) give ``inf`` and are counted and warned about; all-zero gradients give 0.
    """
    m = Model.wrap(model, batch_size=batch_size)
    if m.module is None:
        raise TypeError(
            "gsnr needs the parameters of a torch.nn.Module; got "
            + (f"a scikit-learn-style estimator ({type(m.estimator).__name__})" if m.estimator is not None
               else f"a callable ({type(m.function).__name__}) without parameters")
        )
    if not callable(loss):
        check_option(loss, "loss", LOSSES)
    module = m.module
    names = [name for name, p in module.named_parameters() if p.requires_grad]
    if not names:
        raise ValueError("model has no parameters with requires_grad=True; GSNR is defined per trainable parameter")
    params = {name: p.detach() for name, p in module.named_parameters() if p.requires_grad}
    frozen = {name: p.detach() for name, p in module.named_parameters() if not p.requires_grad}
    buffers = {name: b for name, b in module.named_buffers()}
    n_params = sum(p.numel() for p in params.values())
    batches, single = _batches(X, y)

    shift = s1 = s2 = None
    n_total = 0
    loss_fn = None
    with m.evaluating():
        for item in batches:
            if not single and (not isinstance(item, (tuple, list)) or len(item) != 2):
                raise TypeError(f"each batch of X must be an (x, y) pair; got {type(item).__name__}")
            xb, yb = item
            x = m.to_tensor(xb, "X")
            if loss_fn is None:
                with torch.no_grad():
                    out0 = torch.func.functional_call(module, (params, frozen, buffers), (x[:1],))
                n_outputs = int(out0.reshape(1, -1).shape[1])
                loss_fn = _loss_function(loss, n_outputs)
            t = _targets(yb, x.shape[0], None if callable(loss) else loss, n_outputs, x.dtype, x.device)

            def sample_loss(p, xi, ti, loss_of=loss_fn):
                out = torch.func.functional_call(module, (p, frozen, buffers), (xi.unsqueeze(0),))
                return loss_of(out, ti.unsqueeze(0))

            per_sample = torch.func.vmap(torch.func.grad(sample_loss), in_dims=(None, 0, 0))
            rows = min(m.chunk_rows(x), rows_for_bytes(8 * 3 * n_params))
            for s in chunks(x.shape[0], rows):
                g = per_sample(params, x[s], t[s])
                g = {k: v.detach().to(torch.float64) for k, v in g.items()}
                if shift is None:
                    shift = {k: v[0].clone() for k, v in g.items()}
                    s1 = {k: torch.zeros_like(v) for k, v in shift.items()}
                    s2 = {k: torch.zeros_like(v) for k, v in shift.items()}
                for k, v in g.items():
                    dv = v - shift[k]
                    s1[k] += dv.sum(0)
                    s2[k] += (dv * dv).sum(0)
                n_total += int(x[s].shape[0])
    if n_total < 2:
        raise ValueError(f"X holds {n_total} sample(s); GSNR needs at least 2 (a variance over samples)")

    result = GSNRResult(n_samples=n_total)
    for k in names:
        d1 = (s1[k] / n_total).cpu().numpy()
        mean = shift[k].cpu().numpy() + d1
        var = np.maximum((s2[k] / n_total).cpu().numpy() - d1 * d1, 0.0)
        msq = mean * mean
        with np.errstate(divide="ignore", invalid="ignore"):
            r = msq / var
        r[(var <= msq / GSNR_INF_THRESHOLD) & (msq > 0)] = np.inf
        r[(var == 0) & (msq == 0)] = 0.0
        result.values[k] = r
        result.mean[k] = mean
        result.variance[k] = var
        result.infinite[k] = int(np.isinf(r).sum())
        result.summary[k] = float(r.mean())
    if warn and result.any_infinite:
        which = ", ".join(f"{k} ({c})" for k, c in result.infinite.items() if c)
        warnings.warn(
            f"gsnr: some parameter entries have the same gradient on every sample (variance 0), so "
            f"their GSNR is inf: {which}",
            InfiniteGSNRWarning,
            stacklevel=2,
        )
    return result


def gsnr_monitor_metric(model, X, y=None, loss="cross_entropy", batch_size: int | None = None) -> dict:
    """GSNR as flat numbers for a training monitor (Liu et al., ICLR 2020, arXiv 2001.07384).

    Returns ``{"gsnr_mean": ..., "gsnr_infinite": ..., "gsnr/<parameter name>": ...}``:
    ``gsnr_mean`` is the mean of ``r_j = mean_i(g_ij)^2 / var_i(g_ij)`` over every finite entry of
    every trainable parameter, ``gsnr/<name>`` the same mean within one parameter tensor (NaN when
    all its entries are infinite), ``gsnr_infinite`` the number of infinite entries (identical
    per-sample gradients), left out of the means so that a curve over training stays plottable."""
    res = gsnr(model, X, y, loss=loss, batch_size=batch_size, warn=False)
    out = {}
    finite_all = [v[np.isfinite(v)] for v in res.values.values()]
    flat = np.concatenate(finite_all) if finite_all else np.zeros(0)
    out["gsnr_mean"] = float(flat.mean()) if flat.size else float("nan")
    out["gsnr_infinite"] = int(sum(res.infinite.values()))
    for k, v in res.values.items():
        fin = v[np.isfinite(v)]
        out[f"gsnr/{k}"] = float(fin.mean()) if fin.size else float("nan")
    return out
