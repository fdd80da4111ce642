"""Complexity metrics.

PLACEHOLDER: being written; replace this module."""

def sparseness(*args, **kwargs):
    raise NotImplementedError('sparseness')


def complexity(*args, **kwargs):
    raise NotImplementedError('complexity')

