"""TorchScript models in the audit: their layers are reachable (``named_modules()`` lists each
submodule as a ``RecursiveScriptModule`` whose ``original_name`` is the eager class name, e.g.
``"Conv2d"``), but they have no ``reset_parameters`` and run no Python hooks. This module lets the
randomisation check re-initialise them and names what cannot run, and why.
"""

from __future__ import annotations

import copy
import math

import torch

#: ``original_name`` of the convolutions Grad-CAM would hook.
CONV_NAMES = ("Conv1d", "Conv2d", "Conv3d")


def is_script(module) -> bool:
    return isinstance(module, torch.jit.ScriptModule)


def conv_layers(module) -> list[tuple[str, str]]:
    """``(name, original_name)`` of the convolutions inside a TorchScript module."""
    return [(name, m.original_name) for name, m in module.named_modules()
            if getattr(m, "original_name", None) in CONV_NAMES]


def gradcam_reason(module) -> str | None:
    """Why Grad-CAM cannot run on the TorchScript ``module`` when it has convolutions (None when it
    has none: the usual "no convolutional layer" reason then holds)."""
    convs = conv_layers(module)
    if not convs:
        return None
    listed = ", ".join(f"{name} ({kind})" for name, kind in convs[:4]) + (" ..." if len(convs) > 4 else "")
    return (f"not run: the model is TorchScript, and Grad-CAM must hook a convolutional layer, which a "
            f"compiled forward does not allow (register_forward_hook is not supported on ScriptModules); "
            f"its {len(convs)} convolution{'s' if len(convs) > 1 else ''}: {listed}. Audit the eager "
            "torch module (or a state dict with --architecture) to include Grad-CAM")


def _layers_with_parameters(module) -> list[tuple[str, torch.nn.Module]]:
    """Submodules that own parameters directly, in definition order."""
    return [(name, m) for name, m in module.named_modules()
            if any(True for _ in m.parameters(recurse=False))]


@torch.no_grad()
def reinitialise(layer) -> None:
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
