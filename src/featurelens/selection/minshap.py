"""MinShap selector.

PLACEHOLDER: being written; replace this module."""

class MinShapSelector:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('MinShapSelector')

