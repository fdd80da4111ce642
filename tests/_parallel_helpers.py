"""Module-level functions for tests/test_parallel.py: importable by name in worker processes
(tests/ is on their path), so they pickle by reference like a user's own module."""

import os

import numpy as np
import torch

#: How many times build_mlp ran in this process (each worker process has its own counter).
BUILDS = {"mlp": 0}


def weighted_sum(masks):
    """A FunctionGame value: v(S) = sum_{i in S} (i + 1) / 7 + 0.1 |S|^2 (nonlinear, exact in float64)."""
    m = masks.astype(np.float64)
    return m @ (np.arange(1, masks.shape[1] + 1) / 7.0) + 0.1 * m.sum(axis=1) ** 2


def failing(masks):
    if masks.shape[0] and masks[:, 0].all():
        raise ZeroDivisionError("planted failure in the game")
    return masks.sum(axis=1).astype(float)


def build_mlp(d=8, hidden=310, seed=0):
    """An MLP with 100,133 parameters (d=8, hidden=310: h^2 + 13 h + 3)."""
    BUILDS["mlp"] += 1
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, hidden), torch.nn.Tanh(),
        torch.nn.Linear(hidden, 3),
    ).double()


def report_builds(game, item):
    """A map task: which process ran it, how often it built the MLP, and the game's value on item."""
    return os.getpid(), BUILDS["mlp"], game._evaluate_chunk(item)


def square(shared, item):
    return shared * item * item


#: How many Counted objects this process has unpickled.
LOADS = {"n": 0}


class Counted:
    """A shared object that counts its unpickling in the receiving process."""

    def __init__(self, value):
        self.value = value

    def __setstate__(self, state):
        LOADS["n"] += 1
        self.__dict__.update(state)


def read_counted(shared, item):
    return os.getpid(), LOADS["n"], shared.value * item
