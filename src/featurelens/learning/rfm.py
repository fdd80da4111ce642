"""Recursive Feature Machines.

PLACEHOLDER: being written; replace this module."""

class RFMRegressor:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('RFMRegressor')


class RFMClassifier:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('RFMClassifier')

