"""What a Model's function returns, checked and put in units: :func:`checked_outputs` (one tensor
of real numbers per row, finite, carrying the input's gradient where one is needed),
:func:`model_returns` (logits, margins, probabilities, a regression) and :func:`to_units` (the units
an explanation is asked in, "probability" or "log_odds"; torch operations throughout, so gradients
flow through)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from featurelens._optional import is_tensor, torch

from ._estimators import estimator_type, is_classifier_model

#: The units a Model's outputs may be turned into (featurelens.explanation.OUTPUTS).
OUTPUTS = ("raw", "probability", "log_odds")
#: Every unit name featurelens uses for a model's output, and how labels (plots, reports) write it:
#: the one vocabulary of a Model, an Explanation and the text games.
UNIT_LABELS = {"raw": "raw output", "probability": "probability", "log_probability": "log-probability",
               "log_odds": "log-odds", "margin": "margin"}
#: The units of a classifier's class score on a text (featurelens.text.ClassifierGame and
#: embedding_attributions): the output as it is, the softmax probability of the class, its log.
CLASS_SCORE_UNITS = ("raw", "probability", "log_probability")
#: Other spellings taken for those units (the softmax over classes and its logarithm).
UNIT_SPELLINGS = {"softmax": "probability", "log_softmax": "log_probability"}


def class_score_units(output, name: str = "output") -> str:
    """``output`` as a name of :data:`CLASS_SCORE_UNITS` (``"softmax"`` / ``"log_softmax"`` are
    read as ``"probability"`` / ``"log_probability"``); anything else is a ValueError naming
    ``name`` and the units."""
    if isinstance(output, str) and UNIT_SPELLINGS.get(output, output) in CLASS_SCORE_UNITS:
        return UNIT_SPELLINGS.get(output, output)
    listed = ", ".join(repr(u) for u in CLASS_SCORE_UNITS + tuple(UNIT_SPELLINGS))
    raise ValueError(f"{name} must be one of {listed}; got {output!r}")


def class_score(logits: np.ndarray, target: int, output: str) -> np.ndarray:
    """The class score of ``target`` in ``output`` units (:data:`CLASS_SCORE_UNITS`) from a
    ``(m, classes)`` float64 array: the column itself, ``softmax(z)_target`` or its log
    (a stable log-softmax: the row maximum subtracted first)."""
    if output == "raw":
        return logits[:, target]
    logp = logits - logits.max(axis=1, keepdims=True)
    logp = logp[:, target] - np.log(np.exp(logp).sum(axis=1))
    return logp if output == "log_probability" else np.exp(logp)


def model_returns(estimator, method) -> str:
    """What the model's function returns (see :attr:`Model.returns`)."""
    if estimator is None:
        return "logits"
    name = getattr(method, "__name__", "predict")
    if name == "predict_proba":
        return "probability"
    if name == "predict_log_proba":
        return "log_probability"
    if name == "decision_function":
        # an outlier detector's anomaly score is no classifier margin: no probabilities of it
        return "regression" if estimator_type(estimator) == "outlier_detector" else "margin"
    return "logits" if is_classifier_model(estimator) else "regression"


def log_odds_from_logits(z: torch.Tensor) -> torch.Tensor:
    """``log(p_k / (1 - p_k))`` with ``p = softmax(z)``, exactly: ``z_k - logsumexp_{j != k} z_j``.

    For each non-maximal k the sum over ``j != k`` contains the largest term, so subtracting
    ``exp(z_k - max)`` from the full sum loses nothing; for the maximal k the sum is taken over the
    other outputs directly. Differentiable everywhere (no inf in either branch of ``where``).
    """
    if z.shape[1] == 1:
        return z  # sigmoid: the logit is the log-odds
    if z.shape[1] == 2:
        diff = z[:, 1] - z[:, 0]
        return torch.stack([-diff, diff], dim=1)
    top, arg = z.max(dim=1, keepdim=True)
    is_top = torch.zeros_like(z, dtype=torch.bool).scatter_(1, arg, True)
    e = torch.exp(z - top)
    rest = e.sum(dim=1, keepdim=True) - e  # sum over j != k of exp(z_j - top): >= 1 unless k is top
    rest = torch.where(is_top, torch.ones_like(rest), rest)
    lo_other = z - top - torch.log(rest)
    lo_top = top - torch.logsumexp(z.masked_fill(is_top, -math.inf), dim=1, keepdim=True)
    return torch.where(is_top, lo_top.expand_as(z), lo_other)


def to_units(out: torch.Tensor, returns: str, output: str) -> torch.Tensor:
    """Turn a model's outputs (what it ``returns``) into ``output`` units ("probability" or
    "log_odds"); torch operations throughout, so gradients flow through."""
    if returns in ("logits", "margin"):
        if output == "log_odds":
            return log_odds_from_logits(out)
        return torch.sigmoid(out) if out.shape[1] == 1 else torch.softmax(out, dim=1)
    p = torch.exp(out) if returns == "log_probability" else out
    if output == "probability":
        return p
    eps = torch.finfo(p.dtype).eps
    p = p.clamp(eps, 1.0 - eps)
    return torch.log(p) - torch.log1p(-p)


def checked_outputs(out, x: torch.Tensor, needs_grad: bool, dtype: torch.dtype, name: Callable[[], str]):
    """``out``, what the model's function returned for the rows ``x``, as a ``(rows, outputs)``
    floating tensor in ``dtype``, or a clear error: a tuple, list or dict of tensors, complex
    numbers, non-numbers, a shape other than ``(rows,)`` or ``(rows, outputs)`` with at least one
    output, outputs that carry no gradient of ``x`` when ``needs_grad`` (integers, detached or
    computed under ``torch.no_grad``), and NaN/inf outputs (one cheap sum per chunk; the
    elementwise check runs only when that sum is not finite) are refused. ``name()`` names the
    model in the messages (called only when one is raised)."""
    if isinstance(out, (tuple, list, dict)) and not (isinstance(out, (tuple, list)) and out
                                                    and not is_tensor(out[0])):
        kind = "a dict (e.g. a transformers ModelOutput)" if isinstance(out, dict) else (
            f"a {type(out).__name__} of {len(out)} item(s)")
        raise TypeError(
            f"model {name()} returned {kind}; every consumer needs one tensor of outputs, shape "
            "(batch,) or (batch, classes): make the forward return only those (e.g. a wrapper module "
            "whose forward returns model(x)[0] or model(x).logits, or "
            "fl.Model(lambda x: model(x)[0], accepts='torch'))"
        )
    if is_tensor(out):
        if out.is_complex():
            raise TypeError(f"model {name()} must return real numbers; got a tensor of dtype {out.dtype}")
        if not torch.is_floating_point(out):
            if needs_grad:
                raise TypeError(
                    f"model {name()} returned outputs of dtype {out.dtype}, which carry no "
                    "gradient; gradient explainers need floating-point outputs (logits, scores or "
                    "probabilities), e.g. return the logits rather than the predicted labels, or "
                    "use a black-box explainer (occlusion, kernel_shap)"
                )
            out = out.to(dtype)
    else:
        try:
            arr = np.asarray(out)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"dtype {arr.dtype}")
            out = torch.as_tensor(arr.astype(np.float64), device=x.device).to(dtype)
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"model {name()} must return a tensor or an array of numbers; got "
                f"{type(out).__name__} ({err})"
            ) from err
    out = _as_rows_by_outputs(out, x, name)
    if needs_grad and not out.requires_grad:
        raise ValueError(
            f"model {name()} returned outputs that do not depend on the input through "
            "autograd (detached with .detach(), computed under torch.no_grad(), converted through "
            "numpy, or constant), so there is no input gradient; gradient explainers need a "
            "differentiable forward: remove the detach/no_grad from the model's forward, or use a "
            "black-box explainer (occlusion, kernel_shap)"
        )
    values = out.detach()
    # One sum and one read per chunk (NaN and inf propagate); the elementwise test runs only
    # when that sum is not finite (it may have overflowed on finite values).
    if not math.isfinite(float(values.sum())) and not bool(torch.isfinite(values).all()):
        bad = int((~torch.isfinite(values)).any(1).sum())
        raise ValueError(
            f"the model returned NaN or inf for {bad} of {x.shape[0]} rows (inputs of shape "
            f"{tuple(x.shape)}, all finite); attributions of non-finite outputs would be NaN. "
            "Check the model on these inputs (e.g. a log of 0, a division by zero, overflow)"
        )
    return out


def _as_rows_by_outputs(out, x, name: Callable[[], str]):
    """``out`` (a tensor or array) as ``(rows, outputs)``: a 1-D output becomes one column; any
    other shape than ``(x rows, >= 1)`` is the one ValueError both output checks raise."""
    if out.ndim == 1:
        out = out[:, None]
    if out.ndim != 2 or out.shape[0] != x.shape[0]:
        raise ValueError(
            f"model must map a batch of {x.shape[0]} rows to outputs of shape (batch,) or "
            f"(batch, classes); got output shape {tuple(out.shape)}"
        )
    if out.shape[1] == 0:
        raise ValueError(
            f"model {name()} returned 0 outputs per row (output shape {tuple(out.shape)}); "
            "expected at least one output (a score, a logit per class) to explain"
        )
    return out


def array_to_units(out: np.ndarray, returns: str, output: str) -> np.ndarray:
    """:func:`to_units` on numpy outputs (a numpy model in numpy mode), the same formulas in the
    outputs' dtype: the sigmoid or softmax of logits and margins, ``log(p) - log1p(-p)`` of
    probabilities clipped to ``[eps, 1 - eps]``, and the exact log-odds of logits."""
    with np.errstate(over="ignore", under="ignore"):
        if returns in ("logits", "margin"):
            if output == "log_odds":
                return _array_log_odds_from_logits(out)
            if out.shape[1] == 1:
                return (1.0 / (1.0 + np.exp(-out))).astype(out.dtype, copy=False)
            e = np.exp(out - out.max(axis=1, keepdims=True))
            return (e / e.sum(axis=1, keepdims=True)).astype(out.dtype, copy=False)
        p = np.exp(out) if returns == "log_probability" else out
        if output == "probability":
            return p
        eps = np.finfo(p.dtype).eps
        p = np.clip(p, eps, 1.0 - eps)
        return (np.log(p) - np.log1p(-p)).astype(out.dtype, copy=False)


def _array_log_odds_from_logits(z: np.ndarray) -> np.ndarray:
    """``z_k - logsumexp_{j != k} z_j`` per output, stably (:func:`log_odds_from_logits` in numpy)."""
    if z.shape[1] == 1:
        return z
    if z.shape[1] == 2:
        diff = z[:, 1:2] - z[:, 0:1]
        return np.concatenate([-diff, diff], axis=1)
    arg = z.argmax(axis=1)[:, None]
    top = np.take_along_axis(z, arg, axis=1)
    is_top = np.zeros(z.shape, dtype=bool)
    np.put_along_axis(is_top, arg, True, axis=1)
    e = np.exp(z - top)
    rest = e.sum(axis=1, keepdims=True) - e  # sum over j != k of exp(z_j - top)
    rest = np.where(is_top, 1.0, rest)
    lo_other = z - top - np.log(rest)
    others = np.where(is_top, -np.inf, z)
    m = others.max(axis=1, keepdims=True)
    lo_top = top - (m + np.log(np.exp(others - m).sum(axis=1, keepdims=True)))
    return np.where(is_top, lo_top, lo_other).astype(z.dtype, copy=False)


def checked_array_outputs(out, x: np.ndarray, name: Callable[[], str]) -> np.ndarray:
    """:func:`checked_outputs` for a numpy model in numpy mode: what the function returned for
    the rows ``x`` as a ``(rows, outputs)`` array in ``x``'s float dtype, or the same errors
    (non-numbers, a wrong shape, no output, NaN/inf)."""
    if isinstance(out, (tuple, list, dict)) and not (isinstance(out, (tuple, list)) and out
                                                    and not is_tensor(out[0])):
        kind = "a dict" if isinstance(out, dict) else f"a {type(out).__name__} of {len(out)} item(s)"
        raise TypeError(
            f"model {name()} returned {kind}; every consumer needs one array of outputs, shape "
            "(batch,) or (batch, classes)"
        )
    try:
        arr = np.asarray(out.detach().cpu().numpy() if is_tensor(out) else out)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"dtype {arr.dtype}")
        arr = arr.astype(np.float64).astype(x.dtype, copy=False)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"model {name()} must return a tensor or an array of numbers; got {type(out).__name__} ({err})"
        ) from err
    arr = _as_rows_by_outputs(arr, x, name)
    if not math.isfinite(float(arr.sum())) and not bool(np.isfinite(arr).all()):
        bad = int((~np.isfinite(arr)).any(1).sum())
        raise ValueError(
            f"the model returned NaN or inf for {bad} of {x.shape[0]} rows (inputs of shape "
            f"{tuple(x.shape)}, all finite); attributions of non-finite outputs would be NaN. "
            "Check the model on these inputs (e.g. a log of 0, a division by zero, overflow)"
        )
    return arr
