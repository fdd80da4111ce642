"""Representation similarity and geometry.

PLACEHOLDER: being written; replace this module."""

def cka(*args, **kwargs):
    raise NotImplementedError('cka')


class CKAAccumulator:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('CKAAccumulator')


def effective_rank(*args, **kwargs):
    raise NotImplementedError('effective_rank')


def linear_probe(*args, **kwargs):
    raise NotImplementedError('linear_probe')


def compression_discrimination(*args, **kwargs):
    raise NotImplementedError('compression_discrimination')

