"""Shared by the metric tests: a batch for the small CNN (tests/conftest.py)."""

import numpy as np
import pytest
import torch

#: Samples in the shared batch.
N = 6


@pytest.fixture
def cnn_batch(small_cnn):
    """``(model, x, y, a)``: the small CNN in eval mode, N seeded 1x8x8 float32 inputs, the CNN's
    predicted classes and seeded float64 maps (float64: ratios of map masses are ill-conditioned
    in float32)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 1, 8, 8)).astype(np.float32)
    a = rng.normal(size=(N, 1, 8, 8))
    with torch.no_grad():
        y = small_cnn(torch.from_numpy(x)).argmax(1).numpy()
    return small_cnn.eval(), x, y, a


@pytest.fixture
def batch(cnn_batch):
    return cnn_batch
