"""NBSE selector.

PLACEHOLDER: being written; replace this module."""

class NBSE:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('NBSE')

