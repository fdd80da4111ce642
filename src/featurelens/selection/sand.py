"""SAND selector.

PLACEHOLDER: being written; replace this module."""

class SAND:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('SAND')


class NoiseGainLayer:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('NoiseGainLayer')

