"""Where an explainer applies: :class:`Requires`, the declaration each explainer class makes
(gradients, a convolutional layer, a named layer, a scikit-learn estimator, data, hooks, a player
bound, ...), and :meth:`Requires.why_not`, which the audit, the benchmark and the command line read
to skip an explainer with its reason before running it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from featurelens._optional import torch

from ..models import Model

__all__ = ["Requires", "conv_types", "script_reason"]


def conv_types() -> tuple:
    """Layer types that make a "convolutional layer" for ``Requires.conv_layer`` (Grad-CAM's
    default): ``torch.nn.Conv1d/2d/3d`` (read when a torch model is checked, so that importing
    this module imports no torch)."""
    return (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def _estimator_reason(estimator, names: tuple) -> str | None:
    """Why ``estimator`` (a Model's scikit-learn estimator, or None) is not a fitted scikit-learn
    estimator of one of the class ``names``, or None."""
    listed = ", ".join(names)
    if estimator is None:
        return f"needs a fitted scikit-learn model ({listed}), and the model is not a scikit-learn estimator"
    name = type(estimator).__name__
    if type(estimator).__module__.split(".")[0] not in ("sklearn", "lightgbm", "xgboost") or name not in names:
        hint = " (explain its final step on the transformed features)" if name == "Pipeline" else ""
        return f"needs a fitted scikit-learn model ({listed}), and the model is a {name}{hint}"
    if not hasattr(estimator, "n_features_in_"):
        return f"needs a fitted model, and the {name} is not fitted"
    return None


def _script_modules(module) -> list[str]:
    """Names of the outermost TorchScript modules (scripted or traced) in ``module``, itself as
    "the model itself"; empty for an eager module or no module."""
    if module is None:
        return []
    if isinstance(module, torch.jit.ScriptModule):  # a module exists: torch is imported already
        return ["the model itself"]
    found = []
    for name, m in module.named_modules():
        if isinstance(m, torch.jit.ScriptModule) and not any(name.startswith(f + ".") for f in found):
            found.append(name)
    return found


#: Why an explainer with ``Requires.hooks`` does not run on TorchScript, by what its hooks do.
_HOOK_REASONS = {
    "rules": "its rules change the backward pass through forward/backward hooks on the model's modules",
    "layer": "it reads a layer's output through a forward hook on that module",
}


def script_reason(hooks: str | None, module) -> str | None:
    """The reason an explainer whose ``hooks`` are "rules" or "layer" cannot explain ``module``
    (a TorchScript module, or an eager one holding one), or None."""
    if hooks is None:
        return None
    scripted = _script_modules(module)
    if not scripted:
        return None
    shown = ", ".join(scripted[:4]) + (" ..." if len(scripted) > 4 else "")
    return (f"needs module hooks ({_HOOK_REASONS[hooks]}), which TorchScript modules do not run, and the "
            f"model is or holds a TorchScript module ({shown}); explain the eager torch module instead")


@dataclass(frozen=True)
class Requires:
    """Where an explainer applies: declared once on its class (``Explainer.requires``) and read by
    the audit, the benchmark and the contract tests instead of lists of names kept elsewhere.

    Attributes
    ----------
    gradients
        The model must be differentiable (a torch module or torch callable).
    conv_layer
        The model must contain a convolution (``torch.nn.Conv1d/2d/3d``) to hook.
    channel_axis
        Inputs must be 1-D, 2-D or 3-D signals with a channel axis: one input has shape ``(C, L)``,
        ``(C, H, W)`` or ``(C, D, H, W)``.
    data
        It summarises the model over training rows (``data=``) before explaining (AGOP-Global,
        AGOP-Weighted): the harness passes the rows it was given. Computing that summary needs
        gradients, so ``data`` implies a differentiable model there.
    max_players
        The largest number of players it evaluates exactly (``2^n`` coalitions); None: no limit.
    package
        An optional package it needs beyond the core dependencies (None: none).
    estimators
        The model must be a fitted scikit-learn estimator of one of these class names (it reads the
        estimator's structure, e.g. TreeSHAP its trees; ``Model.estimator``). None: any model.
    hooks
        It works through hooks on the model's modules, which TorchScript modules
        (``torch.jit.ScriptModule``: scripted or traced) do not run: ``"rules"`` (its rules change
        the backward pass: DeepLift, LRP, guided backpropagation, deconvolution) or ``"layer"`` (it
        reads a layer's output: Grad-CAM, the layer and neuron attributions). Such an explainer is
        refused for a TorchScript model, or an eager one holding a TorchScript submodule, at
        construction (a TypeError naming the method and the reason) and by :meth:`why_not`,
        never run with its hooks silently not firing. None: no module hooks.
    """

    gradients: bool = True
    conv_layer: bool = False
    channel_axis: bool = False
    data: bool = False
    max_players: int | None = None
    package: str | None = None
    estimators: tuple | None = None
    hooks: str | None = None

    def why_not(self, model: Model, input_shape: tuple, n_players: int | None = None) -> str | None:
        """The reason this explainer does not apply to ``model`` on inputs of one-sample shape
        ``input_shape`` with ``n_players`` players (default: every input element), or None."""
        if (self.gradients or self.data) and not model.differentiable:
            return "needs gradients, and the model is not differentiable (a numpy callable or scikit-learn model)"
        reason = script_reason(self.hooks, model.module)
        if reason is not None:
            return reason
        if self.conv_layer and not (
            model.module is not None and any(isinstance(m, conv_types()) for m in model.module.modules())
        ):
            return "needs a convolutional layer, and the model has none"
        if self.channel_axis and not 2 <= len(input_shape) <= 4:
            return "needs 1-D, 2-D or 3-D inputs with a channel axis, (C, L), (C, H, W) or (C, D, H, W)"
        if self.estimators is not None:
            reason = _estimator_reason(model.estimator, self.estimators)
            if reason is not None:
                return reason
        n = int(np.prod(input_shape)) if n_players is None else int(n_players)
        if self.max_players is not None and n > self.max_players:
            return f"evaluates 2^n coalitions, and the inputs have {n} players (> {self.max_players})"
        if self.package is not None:
            import importlib.util

            if importlib.util.find_spec(self.package) is None:
                return f"needs the optional package {self.package!r}, which is not installed"
        return None
