"""Modular addition and the two-layer quadratic-activation network used by ``featurelens diagnose``
and benchmarks/bench_grokking.py.

Data: every pair (a, b) in Z_p x Z_p, input = [onehot_p(a), onehot_p(b)] (2p features), label
(a + b) mod p. Model: f(x) = V (W x)^2, no biases (Gromov 2023, arXiv 2301.02679; the neural
baseline of Mallinar et al. 2024, arXiv 2407.20199; the sigma(x) = x^2 setting in which the
update eigengap announces grokking, arXiv 2605.08119).
"""

from __future__ import annotations

import numpy as np
import torch


def modular_addition(p: int, train_fraction: float, seed: int = 0):
    """All p^2 pairs, shuffled with ``seed`` and split; returns float32 tensors
    ``(X_train, y_train, X_test, y_test)``, X rows ``[onehot(a), onehot(b)]``, y = (a + b) mod p."""
    if not isinstance(p, (int, np.integer)) or p < 2:
        raise ValueError(f"p must be an int >= 2; got {p!r}")
    if not 0.0 < float(train_fraction) < 1.0:
        raise ValueError(f"train_fraction must lie in (0, 1); got {train_fraction!r}")
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    X = np.zeros((p * p, 2 * p), dtype=np.float32)
    X[np.arange(p * p), a] = 1.0
    X[np.arange(p * p), p + b] = 1.0
    y = (a + b) % p
    order = np.random.default_rng(seed).permutation(p * p)
    n_train = max(1, min(p * p - 1, int(round(train_fraction * p * p))))
    tr, te = order[:n_train], order[n_train:]
    t = torch.from_numpy
    return t(X[tr]), t(y[tr]).long(), t(X[te]), t(y[te]).long()


class Quadratic(torch.nn.Module):
    """Elementwise x^2: the activation under which modular addition groks with a Fourier solution."""

    def forward(self, x):
        return x * x


def quadratic_network(p: int, width: int, seed: int = 0, init_scale: float = 1.0) -> torch.nn.Sequential:
    """``Sequential(Linear(2p, width, bias=False), Quadratic(), Linear(width, p, bias=False))``,
    initialised from ``seed`` (PyTorch's default uniform init times ``init_scale``)."""
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(2 * p, width, bias=False), Quadratic(), torch.nn.Linear(width, p, bias=False)
    )
    with torch.no_grad():
        for layer in (net[0], net[2]):
            bound = init_scale / np.sqrt(layer.in_features)
            layer.weight.copy_((torch.rand(layer.weight.shape, generator=gen) * 2 - 1) * bound)
    return net


def accuracy(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(X).argmax(1) == y).float().mean())
