"""Metrics for explanations: localization against planted ground truth."""

from featurelens.metrics.localization import emd_score, iou_at_k, precision_at_k

__all__ = ["precision_at_k", "iou_at_k", "emd_score"]
