"""Attributions from the Average Gradient Outer Product (AGOP).

With ``M = (1/n) sum_i g_i g_i^T`` over training data (see :func:`featurelens.learning.agop`):

- ``agop_local``: the per-sample gradient ``grad f_t(x)`` (AGOP-Local = vanilla gradient);
- ``agop_global``: ``diag(M)`` as a map, identical for every sample (AGOP-Global);
- ``agop_weighted``: ``grad f_t(x) * sqrt(diag(M) / max diag(M))`` (AGOP-Weighted).

Katakam, "AGOP as Explanation: From Feature Learning to Per-Sample Attribution in Image
Classifiers", 2026, arXiv 2605.12816.
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import torch

from .._validation import as_numpy, check_floating
from ..learning.agop import agop as compute_agop
from ._base import Explainer, Requires, register


@register("agop_local")
class AGOPLocal(Explainer):
    """AGOP-Local: the signed per-sample input gradient ``grad f_t(x)`` (Katakam 2026, arXiv
    2605.12816; identical to ``saliency``)."""

    audit_default = "identical to saliency (the signed per-sample gradient)"
    benchmark_order = 5

    def _attribute(self, x, target, outputs):
        return self.model.gradient(x, target), {}


class _AGOPDiagonalExplainer(Explainer):
    """Holds ``diag(M)``, either given (``agop``: the (d, d) matrix, its diagonal (d,), or the
    diagonal shaped like one input) or computed once from ``data`` at construction."""

    accepts = frozenset({"data"})  # the harness options it takes (see Explainer.accepts)

    def __init__(self, model, agop=None, data=None, agop_target=None, batch_size: int | None = None):
        super().__init__(model, batch_size)
        if agop is None and data is None:
            raise ValueError(
                f"{self.name} needs the AGOP: pass agop= (a (d, d) matrix or its diagonal (d,)) "
                "or data= (inputs to compute it from, e.g. the training set)"
            )
        if agop is not None and data is not None:
            raise ValueError(f"{self.name} takes agop= or data=, not both")
        self.agop_source = "given" if agop is not None else "data"
        self.agop_model_calls = 0
        if agop is None:
            before = self.model.calls
            agop = compute_agop(self.model, data, target=agop_target, diag=True)
            self.agop_model_calls = self.model.calls - before
        self.agop_target = agop_target
        self.diag = self._diagonal(agop)

    @staticmethod
    def _diagonal(agop) -> np.ndarray:
        m = as_numpy(agop, "agop")
        if m.dtype.kind not in "iuf":
            raise TypeError(f"agop must be an array of numbers (a (d, d) matrix or its diagonal); got dtype {m.dtype}")
        m = m.astype(np.float64)
        check_floating(m, "agop")
        if m.ndim == 2 and m.shape[0] == m.shape[1] and m.shape[0] > 1:
            m = np.diagonal(m).copy()
        else:
            m = m.reshape(-1)
        if (m < -1e-12 * max(1.0, np.abs(m).max())).any():
            raise ValueError("agop diagonal has negative entries; an AGOP is positive semi-definite")
        return np.clip(m, 0.0, None)

    def _diag_like(self, x: torch.Tensor) -> torch.Tensor:
        d = int(np.prod(x.shape[1:]))
        if self.diag.size != d:
            raise ValueError(
                f"agop has dimension {self.diag.size}, but one input of x has {d} elements "
                f"(shape {tuple(x.shape[1:])}); the AGOP must come from inputs shaped like x"
            )
        return torch.as_tensor(self.diag, device=x.device, dtype=x.dtype).view(1, *x.shape[1:])

    def params(self):
        return {
            **super().params(),
            "agop_source": self.agop_source,
            "agop_target": self.agop_target if isinstance(self.agop_target, (str, int, type(None))) else "given",
            "agop_model_calls": self.agop_model_calls,
        }


@register("agop_global")
class AGOPGlobal(_AGOPDiagonalExplainer):
    """AGOP-Global: ``diag(M)`` reshaped like one input and repeated for every sample; it costs no
    model call per explanation (Katakam 2026, arXiv 2605.12816). With ``agop=`` it works for any
    model; with ``data=`` the model must be differentiable to compute M."""

    audit_order = 6
    benchmark_default = True  # needs no gradient with agop=; the benchmark computes M from data
    benchmark_order = 6
    requires = Requires(gradients=False, data=True)

    def _attribute(self, x, target, outputs):
        return self._diag_like(x).expand_as(x).clone(), {}


@register("agop_weighted")
class AGOPWeighted(_AGOPDiagonalExplainer):
    """AGOP-Weighted: ``grad f_t(x) * sqrt(diag(M) / max diag(M))`` (Katakam 2026, arXiv
    2605.12816): the local gradient filtered by the features the network learned globally."""

    audit_order = 5
    benchmark_order = 7
    requires = Requires(gradients=True, data=True)

    def _attribute(self, x, target, outputs):
        diag = self._diag_like(x)
        top = diag.max()
        weight = torch.sqrt(diag / top) if float(top) > 0 else torch.zeros_like(diag)
        return self.model.gradient(x, target) * weight, {}
