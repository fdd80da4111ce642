"""AGOP selector.

PLACEHOLDER: being written; replace this module."""

class AGOPSelector:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('AGOPSelector')

