"""The randomisation check's handle on a TorchScript model: :class:`ScriptLayers` re-initialises
its layers (they have no ``reset_parameters``). Imported only when a TorchScript model is audited.
"""

from __future__ import annotations

import copy
import math

from featurelens._optional import torch

__all__ = ["ScriptLayers", "reinitialise"]


def _layers_with_parameters(module) -> list[tuple[str, torch.nn.Module]]:
    """Submodules that own parameters directly, in definition order."""
    return [(name, m) for name, m in module.named_modules()
            if any(True for _ in m.parameters(recurse=False))]


def reinitialise(layer) -> None:
    """Redraw the parameters of one TorchScript layer in place (``_reinitialise``, without
    autograd)."""
    with torch.no_grad():
        _reinitialise(layer)


def _reinitialise(layer) -> None:
    """Redraw the parameters of one TorchScript layer in place with torch.nn's default
    initialisation for its ``original_name``: Linear, Conv and Bilinear layers as their
    ``reset_parameters`` (Kaiming-uniform weights with ``a = sqrt(5)``, biases uniform in
    ``+-1/sqrt(fan_in)``, drawn in that order, so the draws equal the eager layer's under the same
    seed); normalisation layers (names containing "Norm") get weights 1, biases 0 and fresh running
    statistics; any other layer the same rule as Linear for parameters of two or more dimensions
    and biases, and 1/0 for other one-dimensional weights/biases."""
    params = dict(layer.named_parameters(recurse=False))
    kind = getattr(layer, "original_name", "")
    if "Norm" in kind:
        for name, p in params.items():
            if name == "weight":
                p.fill_(1.0)
            else:
                p.zero_()
        for name, b in layer.named_buffers(recurse=False):
            if name == "running_mean":
                b.zero_()
            elif name == "running_var":
                b.fill_(1.0)
            elif name == "num_batches_tracked":
                b.zero_()
        return
    weight = params.get("weight")
    fan_in = None
    if weight is not None and weight.dim() >= 2:
        torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
        fan_in = torch.nn.init._calculate_fan_in_and_fan_out(weight)[0]
    elif weight is not None:
        weight.fill_(1.0)
    for name, p in params.items():
        if name == "weight":
            continue
        if p.dim() >= 2:
            torch.nn.init.kaiming_uniform_(p, a=math.sqrt(5))
        elif name == "bias" and fan_in:
            bound = 1.0 / math.sqrt(fan_in)
            torch.nn.init.uniform_(p, -bound, bound)
        else:
            p.zero_()


class _Reset(torch.nn.Module):
    """A handle on one layer of the TorchScript copy: ``reset_parameters`` redraws it in place (the
    layer is not registered as a child, so it is neither listed twice nor copied twice)."""

    def __init__(self, layer):
        super().__init__()
        object.__setattr__(self, "_layer", layer)

    def reset_parameters(self):
        reinitialise(self._layer)


class ScriptLayers(torch.nn.Module):
    """An eager module around a TorchScript ``module`` for
    :func:`featurelens.metrics.model_randomization`: it computes the same function, and its
    ``named_modules()`` list one handle with ``reset_parameters`` per TorchScript layer that owns
    parameters (in definition order), which re-initialises that layer of the wrapped module. A deep
    copy copies the TorchScript module and re-points the handles at the copy's layers."""

    def __init__(self, module):
        super().__init__()
        self.net = module
        self.layers = torch.nn.ModuleDict()
        for name, layer in _layers_with_parameters(module):
            self.layers[name.replace(".", "_") or "model"] = _Reset(layer)

    def forward(self, x):
        return self.net(x)

    def __deepcopy__(self, memo):
        return ScriptLayers(copy.deepcopy(self.net, memo))
