"""Output units of the Model adapter: what a model returns (logits, margins, probabilities) and
its conversion to the units an explanation is asked in ("probability", "log_odds"); torch
operations throughout, so gradients flow through."""

from __future__ import annotations

import math

import torch

from ._estimators import estimator_type, is_classifier_model

#: The units a Model's outputs may be turned into (featurelens.explanation.OUTPUTS).
_OUTPUTS = ("raw", "probability", "log_odds")


def _returns(estimator, method) -> str:
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


def _log_odds_from_logits(z: torch.Tensor) -> torch.Tensor:
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


def _to_units(out: torch.Tensor, returns: str, output: str) -> torch.Tensor:
    """Turn a model's outputs (what it ``returns``) into ``output`` units ("probability" or
    "log_odds"); torch operations throughout, so gradients flow through."""
    if returns in ("logits", "margin"):
        if output == "log_odds":
            return _log_odds_from_logits(out)
        return torch.sigmoid(out) if out.shape[1] == 1 else torch.softmax(out, dim=1)
    p = torch.exp(out) if returns == "log_probability" else out
    if output == "probability":
        return p
    eps = torch.finfo(p.dtype).eps
    p = p.clamp(eps, 1.0 - eps)
    return torch.log(p) - torch.log1p(-p)
