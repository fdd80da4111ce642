"""SIOFS selector.

PLACEHOLDER: being written; replace this module."""

class SIOFS:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('SIOFS')

