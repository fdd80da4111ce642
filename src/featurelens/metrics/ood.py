"""Scores for OOD detection.

PLACEHOLDER: being written; replace this module."""

def auroc(*args, **kwargs):
    raise NotImplementedError('auroc')


def fpr_at_tpr(*args, **kwargs):
    raise NotImplementedError('fpr_at_tpr')

