"""The pieces every layer and neuron explainer shares: naming a layer (:func:`resolve_layer`), one
forward hook on it that records and may replace its output (:class:`LayerHook`), the
:class:`Requires` of an explainer that needs ``layer=`` and the ``neuron=`` selectors
(:class:`NeuronSelector`). Used by :mod:`.layer` and by the layer DeepLift explainers of
:mod:`.deeplift`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from featurelens._optional import is_tensor, torch

from ._base import Requires


@dataclass(frozen=True)
class NamedLayerRequires(Requires):
    """:class:`Requires` of an explainer that needs ``layer=`` (which no harness chooses)."""

    def why_not(self, model, input_shape, n_players=None):
        reason = super().why_not(model, input_shape, n_players)
        if reason is not None:
            return reason
        return "needs a named layer (layer=...), which the audit and benchmark do not choose"


def resolve_layer(module: torch.nn.Module | None, layer, method: str,
                  argument: str = "layer") -> tuple[str, torch.nn.Module]:
    """``(name, module)`` of ``layer`` (a submodule name, a unique dotted suffix of one, or a
    submodule), with an error listing the valid names when it is missing or wrong; ``argument``
    is the keyword the caller took it as (named in the errors)."""
    if module is None:
        raise TypeError(f"{method} needs model to be a torch.nn.Module (it hooks a named layer)")
    names = [n for n, _ in module.named_modules() if n]
    listing = ", ".join(repr(n) for n in names[:40]) + (", ..." if len(names) > 40 else "")
    if layer is None:
        raise ValueError(f"{method} needs {argument}= (a submodule name of the model); valid names: {listing}")
    if isinstance(layer, str):
        named = dict(module.named_modules())
        if layer and layer in named:
            return layer, named[layer]
        # A unique dotted suffix names the layer of a wrapped model too ("4" for "module.4" of a
        # DataParallel or any wrapper that holds the model as an attribute).
        ends = [n for n in names if layer and n.endswith("." + layer)]
        if len(ends) == 1:
            return ends[0], named[ends[0]]
        if len(ends) > 1:
            raise ValueError(f"{argument} {layer!r} is ambiguous: it ends {len(ends)} submodule names "
                             f"({', '.join(repr(n) for n in ends[:8])}); give the full name")
        raise ValueError(f"{argument} {layer!r} is not a submodule name of the model; valid names: {listing}")
    if isinstance(layer, torch.nn.Module):
        found = [n for n, m in module.named_modules() if m is layer and n]
        if not found:
            raise ValueError(f"{argument} must be a submodule of the model; valid names: {listing}")
        return found[0], layer
    raise TypeError(f"{argument} must be a submodule name (str) or a torch.nn.Module; got {type(layer).__name__}")


class _StopForward(Exception):
    """Raised by a :class:`LayerHook` run with ``stop=True`` once the layer has run: the rest of
    the model is not needed (neuron attributions read the layer only). Not a RuntimeError or
    ValueError, so the Model adapter lets it through unwrapped."""


class LayerHook:
    """A forward hook on one layer, active only inside ``with``: it records the layer's output of
    each forward pass of this thread (the threads of a row-parallel explain share the module) and,
    when ``replace`` is set, puts ``replace(output)`` in its place; the model continues with a copy
    of the recorded tensor. Removed on exit, always. Forward hooks run in the order they were
    registered, so a hook entered after another one on the same module sees (and replaces) that
    one's output. ``detach=True`` records detached outputs (for a reader of the values only: a
    recorded tensor then holds no autograd graph alive)."""

    def __init__(self, layer: torch.nn.Module, name: str, method: str, detach: bool = False):
        self.layer, self.name, self.method = layer, name, method
        self.detach = detach
        self.captured: list = []
        self.replace = None
        self.stop = False
        self._me = threading.get_ident()
        self._handle = None

    def _hook(self, module, inputs, output):
        if threading.get_ident() != self._me:
            return None
        if not is_tensor(output):
            raise TypeError(
                f"{self.method}: layer {self.name!r} returns a {type(output).__name__}, not one tensor; "
                "choose a layer whose output is a tensor"
            )
        if self.replace is not None:
            output = self.replace(output)
        self.captured.append(output.detach() if self.detach else output)
        if self.stop:
            raise _StopForward
        # The model goes on with a copy: a later in-place op (ReLU(inplace=True)) must change
        # neither the recorded activation nor a leaf that requires grad.
        return output.clone()

    def __enter__(self):
        self._handle = self.layer.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc):
        self._handle.remove()
        return False

    def run(self, model, rows: torch.Tensor, replace=None, stop: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``(outputs, layer output)`` of one forward pass of ``rows`` through the Model; with
        ``stop`` the pass ends at the layer (outputs None): the layers after it do not run. Such a
        pass cannot see a layer applied twice: check that on one row without ``stop`` first."""
        self.captured.clear()
        self.replace = replace
        self.stop = stop
        out = None
        try:
            out = model.forward(rows)
        except _StopForward:
            pass
        finally:
            self.replace = None
            self.stop = False
        if len(self.captured) != 1:
            raise ValueError(
                f"{self.method}: layer {self.name!r} ran {len(self.captured)} times in one forward pass; "
                "choose a layer that is applied exactly once"
            )
        return out, self.captured[0]


def _is_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _slice_text(s: slice) -> str:
    parts = ["" if v is None else str(v) for v in (s.start, s.stop, s.step)]
    return ":".join(parts[:2] if s.step is None else parts)


class NeuronSelector:
    """``neuron=`` of the neuron explainers, as Captum's ``neuron_selector``:

    - an int or a tuple of ints, one index per axis of one sample's layer output: that unit;
    - a tuple of ints and slices (at most one entry per axis; missing trailing axes are whole): the
      sum of the selected units (Captum sums over the slices the same way);
    - a callable mapping the layer output ``(n, *layer_shape)`` to one value per sample ``(n,)``.
    """

    def __init__(self, neuron):
        if callable(neuron) and not isinstance(neuron, (tuple, list)):
            self.index, self.fn = None, neuron
            return
        self.fn = None
        if _is_int(neuron):
            self.index = (int(neuron),)
            return
        ok = isinstance(neuron, (tuple, list)) and len(neuron) > 0 and all(
            _is_int(i) or (isinstance(i, slice) and all(v is None or _is_int(v) for v in (i.start, i.stop, i.step)))
            for i in neuron)
        if not ok:
            raise TypeError("neuron must be an int, a tuple of ints and slices (one entry per axis of one sample's "
                            f"layer output) or a callable (layer output -> one value per sample); got {neuron!r}")
        self.index = tuple(i if isinstance(i, slice) else int(i) for i in neuron)

    @property
    def sliced(self) -> bool:
        return self.index is not None and any(isinstance(i, slice) for i in self.index)

    def describe(self):
        """A JSON-able form for ``params``: the index list (slices as ``"start:stop[:step]"``) or the
        callable's name."""
        if self.fn is not None:
            return f"<callable {getattr(self.fn, '__qualname__', type(self.fn).__name__)}>"
        return [_slice_text(i) if isinstance(i, slice) else i for i in self.index]

    def select(self, act: torch.Tensor, layer_name: str) -> torch.Tensor:
        """The selected value per sample, ``(n,)``, of the layer output ``act``."""
        n, shape = act.shape[0], tuple(act.shape[1:])
        if self.fn is not None:
            value = self.fn(act)
            if not is_tensor(value) or tuple(value.shape) != (n,):
                got = tuple(value.shape) if is_tensor(value) else type(value).__name__
                raise ValueError(f"neuron: the callable must map layer {layer_name!r}'s output {tuple(act.shape)} "
                                 f"to a tensor of shape ({n},), one value per sample; got {got}")
            return value
        idx = self.index
        ints_ok = all(-s <= i < s for i, s in zip(idx, shape) if not isinstance(i, slice))
        length_ok = len(idx) <= len(shape) if self.sliced else len(idx) == len(shape)
        if not (ints_ok and length_ok):
            expected = (f"at most {len(shape)} entries" if self.sliced else f"{len(shape)} indices") + " within it"
            raise ValueError(f"neuron {self.index} does not select units of layer {layer_name!r}'s output, "
                             f"whose shape per sample is {shape}; expected {expected}")
        unit = act[(slice(None),) + idx]
        if not self.sliced:
            return unit
        if unit[:1].numel() == 0:
            raise ValueError(f"neuron {self.index} selects no unit of layer {layer_name!r}'s output "
                             f"(shape per sample {shape})")
        return unit.reshape(n, -1).sum(1)
