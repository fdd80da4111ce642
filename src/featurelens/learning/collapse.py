"""Neural collapse statistics.

PLACEHOLDER: being written; replace this module."""

def neural_collapse(*args, **kwargs):
    raise NotImplementedError('neural_collapse')

