"""Training losses for the objective-versus-explanation studies: supervised contrastive (SupCon)
and binary cross-entropy for multi-class classification.

- SupCon: Khosla, Teterwak, Wang, Sarna, Tian, Isola, Maschinot, Liu & Krishnan, "Supervised
  Contrastive Learning", NeurIPS 2020, arXiv 2004.11362 (eq. 2, ``L_out``).
- Multi-class BCE: Li, Xiao & Shen, "BCE vs. CE in Deep Feature Learning", ICML 2025, arXiv
  2505.05813 (BCE also reaches neural collapse).
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import is_tensor, torch
import torch.nn.functional as F

from .._validation import as_numpy, check_float, check_option

__all__ = ["SupConLoss", "multiclass_bce"]


def _check_features(features, name: str = "features") -> torch.Tensor:
    if not is_tensor(features):
        raise TypeError(f"{name} must be a torch.Tensor (n, d) so that gradients reach the network; got {type(features).__name__}")
    if features.ndim != 2:
        raise ValueError(f"{name} must have shape (n, d); got shape {tuple(features.shape)}")
    if not features.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor; got dtype {features.dtype}")
    if not bool(torch.isfinite(features.detach()).all()):
        raise ValueError(f"{name} contains NaN or inf values; expected finite numbers")
    return features


def _check_labels(labels, n: int, device, name: str = "labels") -> torch.Tensor:
    if is_tensor(labels):
        t = labels.detach()
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer class labels; got dtype {t.dtype}")
    else:
        arr = as_numpy(labels, name)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integer class labels; got dtype {arr.dtype}")
        t = torch.as_tensor(arr.astype(np.int64))
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), one label per row; got shape {tuple(t.shape)}")
    return t.to(device=device, dtype=torch.long)


class SupConLoss(torch.nn.Module):
    """Supervised contrastive loss ``L_out`` (Khosla et al. 2020, arXiv 2004.11362, eq. 2):

        L = sum_i (-1 / |P(i)|) sum_{p in P(i)} log [ exp(z_i . z_p / tau) / sum_{a != i} exp(z_i . z_a / tau) ],

    with ``z_i = features_i / ||features_i||`` (normalised here), ``P(i)`` the other rows with the
    label of row i, and the denominator over every row but i. Anchors with no positive (a label
    seen once in the batch) are skipped, as the paper requires (else 0/0). For the paper's two
    augmented views per image, stack both views as rows and repeat the labels.

    Parameters
    ----------
    temperature
        ``tau > 0`` (the paper's ImageNet runs use 0.1).
    reduction
        ``"mean"`` (default): the sum above divided by the number of anchors with a positive;
        ``"sum"``: eq. 2 as written; ``"none"``: the per-anchor terms, shape (n,), 0 for anchors
        without a positive.

    ``forward(features, labels)``: ``features`` a float tensor (n, d), ``labels`` (n,) integers.
    A batch in which no label repeats has no positive pair: the loss is 0 (still attached to the
    graph, so ``backward`` works and gives zero gradients).
    """

    def __init__(self, temperature: float = 0.1, reduction: str = "mean"):
        super().__init__()
        self.temperature = check_float(temperature, "temperature", low=0.0, low_inclusive=False)
        self.reduction = check_option(reduction, "reduction", ("mean", "sum", "none"))

    def forward(self, features: torch.Tensor, labels) -> torch.Tensor:
        features = _check_features(features)
        n = features.shape[0]
        labels = _check_labels(labels, n, features.device)
        norms = features.detach().norm(dim=1)
        if bool((norms == 0).any()):
            raise ValueError(
                f"features has {int((norms == 0).sum())} all-zero row(s), which cannot be normalised; "
                "expected non-zero feature vectors"
            )
        z = F.normalize(features, dim=1)
        logits = z @ z.T / self.temperature
        eye = torch.eye(n, dtype=torch.bool, device=features.device)
        # Log-softmax over a != i: the anchor itself is out of the denominator.
        log_prob = logits - torch.logsumexp(logits.masked_fill(eye, float("-inf")), dim=1, keepdim=True)
        positive = (labels[:, None] == labels[None, :]) & ~eye
        n_pos = positive.sum(dim=1)
        per_anchor = -log_prob.masked_fill(~positive, 0.0).sum(dim=1) / n_pos.clamp(min=1)
        has_pos = n_pos > 0
        per_anchor = per_anchor.masked_fill(~has_pos, 0.0)
        if self.reduction == "none":
            return per_anchor
        total = per_anchor.sum()
        if self.reduction == "sum":
            return total
        return total / has_pos.sum().clamp(min=1)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, reduction={self.reduction!r}"


def multiclass_bce(logits: torch.Tensor, y, reduction: str = "mean") -> torch.Tensor:
    """Binary cross-entropy for C-class classification on one-hot targets (Li, Xiao & Shen, ICML
    2025, arXiv 2505.05813): every class is its own binary task,

        L = (1/n) sum_i sum_k [ -1[k = y_i] log sigma(z_ik) - (1 - 1[k = y_i]) log(1 - sigma(z_ik)) ],

    i.e. ``BCEWithLogits(reduction="sum")(logits, one_hot(y)) / n``: summed over classes and
    averaged over samples (``reduction="mean"``); ``"sum"`` sums over samples too, ``"none"`` gives
    the per-sample sums, shape (n,). ``logits`` (n, C) with C >= 2; ``y`` (n,) integer labels in
    ``[0, C)``. Computed stably from the logits (no sigmoid then log)."""
    reduction = check_option(reduction, "reduction", ("mean", "sum", "none"))
    logits = _check_features(logits, "logits")
    n, C = logits.shape
    if C < 2:
        raise ValueError(f"logits must have C >= 2 class columns; got shape {tuple(logits.shape)}")
    t = _check_labels(y, n, logits.device, "y")
    if n and (int(t.min()) < 0 or int(t.max()) >= C):
        raise ValueError(f"y holds labels in [{int(t.min())}, {int(t.max())}]; expected 0 <= label < {C} (the columns of logits)")
    target = F.one_hot(t, C).to(logits.dtype)
    per_sample = F.binary_cross_entropy_with_logits(logits, target, reduction="none").sum(dim=1)
    if reduction == "none":
        return per_sample
    return per_sample.sum() if reduction == "sum" else per_sample.mean()
