"""Layer AGOPs and the Neural Feature Ansatz.

PLACEHOLDER: being written; replace this module."""

def nfa(*args, **kwargs):
    raise NotImplementedError('nfa')


def layer_agops(*args, **kwargs):
    raise NotImplementedError('layer_agops')

