"""FS-MWK++ selector.

PLACEHOLDER: being written; replace this module."""

class MinkowskiWeightedSelector:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('MinkowskiWeightedSelector')

