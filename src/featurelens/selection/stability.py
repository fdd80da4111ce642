"""Selection stability.

PLACEHOLDER: being written; replace this module."""

def stability(*args, **kwargs):
    raise NotImplementedError('stability')

