"""TorchScript models in the audit: their layers are reachable (``named_modules()`` lists each
submodule as a ``RecursiveScriptModule`` whose ``original_name`` is the eager class name, e.g.
``"Conv2d"``), but they have no ``reset_parameters`` and run no Python hooks. This module lets the
randomisation check re-initialise them (``featurelens._audit._script_layers``, which needs
torch) and names what cannot run, and why.
"""

from __future__ import annotations

import sys

#: ``original_name`` of the convolutions Grad-CAM would hook.
CONV_NAMES = ("Conv1d", "Conv2d", "Conv3d")


def is_script(module) -> bool:
    """Whether ``module`` is a TorchScript module (never imports torch: without torch imported,
    nothing is one)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(module, torch.jit.ScriptModule)


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
