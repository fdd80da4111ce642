"""Audit of explainers.

PLACEHOLDER: being written; replace this module."""

def audit(*args, **kwargs):
    raise NotImplementedError('audit')

