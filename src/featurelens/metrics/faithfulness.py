"""Faithfulness metrics.

PLACEHOLDER: being written; replace this module."""

def deletion_curve(*args, **kwargs):
    raise NotImplementedError('deletion_curve')


def insertion_curve(*args, **kwargs):
    raise NotImplementedError('insertion_curve')


def faithfulness_correlation(*args, **kwargs):
    raise NotImplementedError('faithfulness_correlation')


def infidelity(*args, **kwargs):
    raise NotImplementedError('infidelity')

