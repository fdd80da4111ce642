"""Module-level functions for tests/test_parallel.py: importable by name in worker processes
(tests/ is on their path), so they pickle by reference like a user's own module."""

import os

import numpy as np

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
    import torch  # here: workers that only run the other helpers need not import torch (seconds)

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


# -- worker deaths (tests/test_parallel_worker_death.py) -------------------------------------------
def claim_marker(path: str) -> bool:
    """True for the one process (of any machine sharing ``path``) that creates the marker file
    first: created atomically (O_EXCL), so a planted death happens once and its retry succeeds."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


class DieOnce:
    """A FunctionGame value, ``weighted_sum``, whose worker process exits (``os._exit(1)``, no
    exception, no cleanup: as a crash in native code or the OOM killer) the first time it meets a
    chunk whose first coalition is the full one; pickles by reference to this module."""

    def __init__(self, marker: str):
        self.marker = marker

    def __call__(self, masks):
        if masks.shape[0] and masks[0].all() and claim_marker(self.marker):
            os._exit(1)
        return weighted_sum(masks)


def exit_on_three(marker, item):
    """A map task: ``item ** 2 / 7``, except that its process exits on item 3; once with a
    ``marker`` path (the retry succeeds), every time with ``marker=None``."""
    if item == 3 and (marker is None or claim_marker(marker)):
        os._exit(1)
    return item * item / 7.0
