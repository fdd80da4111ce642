"""The reference models of the XAI-TRIS benchmark, for 8x8 and 64x64 single-channel images.

Clark, Wilming, Haufe, "XAI-TRIS: Non-linear image benchmarks to quantify false positive post-hoc
attribution of feature importance", Machine Learning 2024, arXiv 2306.12816 (section 3.2 of
``shared/reference/attribution.md``):

- ``LLR``: ``Linear(D, 2, bias=False)`` on the flattened image (a linear logistic regression).
- ``MLP``: 8x8: ``64 -> 32 -> 16 -> 8 -> 2`` with ReLU and biases; 64x64:
  ``4096 -> 256 -> 256 -> 64 -> 2`` with ReLU, Dropout(0.3) after each hidden ReLU, no biases.
- ``CNN``: 8x8: 4 x [Conv2d(k=2, s=1, p=1) -> ReLU -> MaxPool2d(2, 2)], channels 1->4->4->4->4, then
  ``Linear(4, 2)``; 64x64: 4 x [Conv2d(k=4, s=1, p=1) -> ReLU -> MaxPool2d(2)], channels
  1->4->8->16->32, then ``Linear(288, 2, bias=False)``.

Every model takes a batch ``(n, 1, H, W)`` and returns **logits** ``(n, 2)``. Deviation from
XAI-TRIS: the reference models apply a softmax inside ``forward`` and train CrossEntropyLoss on
those probabilities (a softmax applied twice); here the softmax lives only in the loss, because
explaining logits is the convention of the attribution literature and keeps gradients from
saturating. Weights are He-normal (``kaiming_normal_``, fan-in, gain sqrt(2)) drawn from a seeded
generator; biases start at zero (XAI-TRIS keeps torch's default uniform biases, which would draw
from the global random state).
"""

from __future__ import annotations

import numbers

import numpy as np
from featurelens._optional import torch
from torch import nn

from .._random import parse_seed, torch_generator
from .settings import MODEL_NAMES

__all__ = ["LLR", "MLP", "CNN", "MODELS", "IMAGE_SIZES", "build_model", "count_parameters"]

IMAGE_SIZES = (8, 64)


def _check_image_size(image_size) -> int:
    if (
        isinstance(image_size, bool)
        or not isinstance(image_size, numbers.Integral)
        or int(image_size) not in IMAGE_SIZES
    ):
        raise ValueError(f"image_size must be one of {IMAGE_SIZES}; got {image_size!r}")
    return int(image_size)


class LLR(nn.Module):
    """Linear logistic regression: ``logits = W vec(x)``, ``W`` of shape (2, D), no bias."""

    def __init__(self, image_size: int = 8):
        super().__init__()
        self.image_size = _check_image_size(image_size)
        self.linear = nn.Linear(self.image_size**2, 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


class MLP(nn.Module):
    """XAI-TRIS multilayer perceptron (``MLP8by8`` for 8x8, ``MLP`` for 64x64); see the module
    docstring for the layers."""

    def __init__(self, image_size: int = 8):
        super().__init__()
        self.image_size = _check_image_size(image_size)
        d = self.image_size**2
        if self.image_size == 8:
            widths = [d, d // 2, d // 4, d // 8]  # 64, 32, 16, 8
            layers: list[nn.Module] = []
            for a, b in zip(widths[:-1], widths[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            layers.append(nn.Linear(widths[-1], 2))
        else:
            widths = [d, 256, 256, 64]
            layers = []
            for a, b in zip(widths[:-1], widths[1:]):
                layers += [nn.Linear(a, b, bias=False), nn.ReLU(), nn.Dropout(p=0.3)]
            layers.append(nn.Linear(widths[-1], 2, bias=False))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x.flatten(1))


class CNN(nn.Module):
    """XAI-TRIS convolutional network (``CNN8by8`` for 8x8, ``CNN`` for 64x64); see the module
    docstring for the layers. Spatial sizes: 8 -> 9 -> 4 -> 5 -> 2 -> 3 -> 1 -> 2 -> 1 (8x8) and
    64 -> 63 -> 31 -> 30 -> 15 -> 14 -> 7 -> 6 -> 3 (64x64), hence the 4 and 288 = 32 * 3 * 3
    inputs of the final linear layer."""

    def __init__(self, image_size: int = 8):
        super().__init__()
        self.image_size = _check_image_size(image_size)
        if self.image_size == 8:
            channels, kernel, linear_in, linear_bias = [1, 4, 4, 4, 4], 2, 4, True
        else:
            channels, kernel, linear_in, linear_bias = [1, 4, 8, 16, 32], 4, 288, False
        layers: list[nn.Module] = []
        for a, b in zip(channels[:-1], channels[1:]):
            layers += [
                nn.Conv2d(a, b, kernel_size=kernel, stride=1, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            ]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(linear_in, 2, bias=linear_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).flatten(1))


MODELS = dict(zip(MODEL_NAMES, (LLR, MLP, CNN)))


def he_normal_(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """He-normal weights (fan-in, ReLU gain) for every Linear and Conv2d layer, zero biases."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu", generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
    return module


def build_model(name: str, image_size: int = 8, seed: int = 0) -> nn.Module:
    """A freshly initialised reference model: ``name`` in ("llr", "mlp", "cnn"), ``image_size`` in
    (8, 64); the He-normal weights are a deterministic function of ``seed``."""
    if not isinstance(name, str) or name.lower() not in MODELS:
        raise ValueError(f"model name must be one of {tuple(MODELS)}; got {name!r}")
    if isinstance(seed, np.random.Generator) or seed is None:
        raise TypeError(f"seed must be a non-negative int (the benchmark's models are rebuilt from it); got {seed!r}")
    seed = parse_seed(seed)
    # torch's default initialisation (overwritten below) draws from the global generator; fork it
    # so that building a model leaves the caller's random state alone.
    with torch.random.fork_rng(devices=[]):
        model = MODELS[name.lower()](image_size)
    return he_normal_(model, torch_generator(seed))


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
