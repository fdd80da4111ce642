"""Training-time monitor.

PLACEHOLDER: being written; replace this module."""

class Monitor:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('Monitor')


class EigengapDetector:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('EigengapDetector')


def train_with_monitor(*args, **kwargs):
    raise NotImplementedError('train_with_monitor')

