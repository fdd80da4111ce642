"""Shared fixtures: small seeded models used across the test suite."""

import os
import sys

import pytest
import torch

# Let the tests run from a plain checkout too (make test installs the package in editable mode).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
# Shared brute-force references (tests/_references.py) are imported by name.
sys.path.insert(0, os.path.dirname(__file__))

# The test models are tiny: one thread is faster than two and leaves a core to the OS.
torch.set_num_threads(1)


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Softplus(), torch.nn.Linear(16, 3)
    ).double()


@pytest.fixture
def small_cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 4 * 4, 2),
    )
