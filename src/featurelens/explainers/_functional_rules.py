"""Functional activations and pooling as rule layers, for the explainers that change the backward
pass of a network's modules (DeepLift, LRP, guided backprop, deconvolution).

Module hooks see ``nn.ReLU()`` but not ``F.relu(x)``, ``torch.relu(x)`` or ``x.relu_()`` written in
a ``forward`` (torchvision's DenseNet, Inception and ViT code, many user models). While a rule
explainer runs, :class:`FunctionalRules` routes such calls through the explainer's rule as if each
call were a module of its own: a torch function mode (:class:`torch.overrides.TorchFunctionMode`,
this thread's stack only) that is active only inside the root module's forward (not in the output
units the Model adapter applies after it) and not inside a module that already carries the
explainer's hooks (``nn.ReLU.forward`` calls ``F.relu``: the module's rule is the one that counts).

Each call is handed to the explainer's rule as a :class:`Call`: its kind (``"relu"``,
``"max_pool2d"``...), its input, ``run(t)`` (the same function with the same parameters applied
out of place to ``t``), whether the call was in place, and ``finish(result)`` (what the call
returns: ``result`` itself, or for an in-place call the input tensor with ``result`` written into
it, so code that ignores the return value of ``x.relu_()`` still sees the new values).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from featurelens._optional import is_tensor, torch

#: Elementwise activations, named as their ``torch.nn`` module's functional form.
ELEMENTWISE = ("relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "sigmoid", "tanh",
               "softplus", "hardtanh", "hardswish", "hardsigmoid")
#: Pooling functions (``torch.nn.functional`` names).
POOLING = tuple(f"{kind}_pool{d}d" for kind in ("max", "avg", "adaptive_avg", "adaptive_max") for d in (1, 2, 3))

_TABLE: dict | None = None


def _table() -> dict:
    """``{function as torch reports it to a function mode: (kind, out-of-place twin or None)}``; a
    twin marks an in-place builtin (``torch.relu_``: ``torch.relu``). Built on first use (no torch
    at import time)."""
    global _TABLE
    if _TABLE is not None:
        return _TABLE
    F, T, nn_c = torch.nn.functional, torch.Tensor, torch._C._nn
    table = {}
    # Python functionals: their in-place flag is the keyword ``inplace`` (when they have one).
    for kind in ("relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh", "hardswish",
                 "hardsigmoid"):
        table[getattr(F, kind)] = (kind, None)
    table[nn_c.gelu] = ("gelu", None)
    table[nn_c.softplus] = ("softplus", None)
    for kind, plain, methods in (("relu", torch.relu, (T.relu,)), ("sigmoid", torch.sigmoid, (T.sigmoid,)),
                                 ("tanh", torch.tanh, (T.tanh,))):
        for f in (plain,) + methods:
            table[f] = (kind, None)
        for f in (getattr(torch, kind + "_"), getattr(T, kind + "_")):
            table[f] = (kind, plain)
    table[nn_c.elu_] = ("elu", F.elu)
    table[nn_c.leaky_relu_] = ("leaky_relu", F.leaky_relu)
    table[nn_c.hardtanh_] = ("hardtanh", F.hardtanh)
    for d in (1, 2, 3):
        # Max pools are dispatchers on return_indices; the function mode sees the dispatcher.
        table[getattr(F, f"max_pool{d}d")] = (f"max_pool{d}d", None)
        table[getattr(F, f"adaptive_max_pool{d}d")] = (f"adaptive_max_pool{d}d", None)
        table[getattr(F, f"avg_pool{d}d")] = (f"avg_pool{d}d", None)
        table[getattr(F, f"adaptive_avg_pool{d}d")] = (f"adaptive_avg_pool{d}d", None)
    _TABLE = table
    return table


@dataclass
class Call:
    """One call of a functional activation or pooling in the forward (see the module docstring)."""

    kind: str
    x: object  # the input tensor
    args: tuple  # the call's other positional arguments
    kwargs: dict  # its keyword arguments (``inplace`` set to False)
    function: object  # the out-of-place function
    inplace: bool

    def run(self, t):
        """The call's function, out of place, on ``t``."""
        return self.function(t, *self.args, **self.kwargs)

    def finish(self, result):
        """What the call returns: ``result``, or (in place) ``x`` holding ``result``'s values, with
        its gradient flowing to ``result``'s graph."""
        if not self.inplace:
            return result
        self.x.copy_(result)
        return self.x


class FunctionalRules(torch.overrides.TorchFunctionMode):
    """While entered: each call of a function of one of ``kinds`` made in ``root``'s forward on this
    thread, outside the modules ``inner`` (those the explainer hooks itself), returns ``rule(call)``
    (a :class:`Call`) instead of the function's result. Hooks on ``root`` (when it starts and ends
    a forward) and on ``inner`` (entering and leaving them) are removed on exit, always. Calls
    whose input is not a floating tensor, or that return indices, run as they are."""

    def __init__(self, root, inner, kinds, rule):
        super().__init__()
        self.root, self.inner, self.kinds, self.rule = root, list(inner), frozenset(kinds), rule
        self.me = threading.get_ident()
        self.in_forward, self.depth = False, 0
        self._handles = []

    # -- where the mode acts -----------------------------------------------------------------
    def _root_pre(self, module, args):
        if threading.get_ident() == self.me:
            self.in_forward, self.depth = True, 0

    def _root_post(self, module, args, out):
        if threading.get_ident() == self.me:
            self.in_forward = False

    def _enter(self, module, args):
        if threading.get_ident() == self.me:
            self.depth += 1

    def _leave(self, module, args, out):
        if threading.get_ident() == self.me:
            self.depth -= 1

    def __enter__(self):
        try:
            # The root's hooks first: a root that is itself an inner module resets, then enters.
            self._handles.append(self.root.register_forward_pre_hook(self._root_pre))
            for m in self.inner:
                self._handles.append(m.register_forward_pre_hook(self._enter))
                self._handles.append(m.register_forward_hook(self._leave))
            self._handles.append(self.root.register_forward_hook(self._root_post))
            return super().__enter__()
        except BaseException:
            self._remove()
            raise

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._remove()

    def _remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        self.in_forward, self.depth = False, 0

    # -- the calls ---------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        entry = _table().get(func) if self.kinds else None
        if (entry is None or entry[0] not in self.kinds or not self.in_forward or self.depth > 0
                or threading.get_ident() != self.me or not args or not is_tensor(args[0])
                or not args[0].is_floating_point() or kwargs.get("return_indices", False)
                or "out" in kwargs):
            return func(*args, **kwargs)
        kind, twin = entry
        inplace = twin is not None or bool(kwargs.get("inplace", False))
        if "inplace" in kwargs:
            kwargs = {**kwargs, "inplace": False}
        return self.rule(Call(kind, args[0], tuple(args[1:]), kwargs, twin or func, inplace))
