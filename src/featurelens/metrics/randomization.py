"""Model-randomisation check.

PLACEHOLDER: being written; replace this module."""

def model_randomization(*args, **kwargs):
    raise NotImplementedError('model_randomization')

