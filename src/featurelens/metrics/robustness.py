"""Robustness metrics.

PLACEHOLDER: being written; replace this module."""

def max_sensitivity(*args, **kwargs):
    raise NotImplementedError('max_sensitivity')


def avg_sensitivity(*args, **kwargs):
    raise NotImplementedError('avg_sensitivity')


def local_lipschitz(*args, **kwargs):
    raise NotImplementedError('local_lipschitz')

