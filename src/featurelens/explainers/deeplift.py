"""DeepLift (the Rescale rule) and DeepLiftSHAP, by autograd hooks on the model's nonlinear modules,
of the inputs (``deeplift``, ``deeplift_shap``) or of a named layer's output (``layer_deeplift``,
``layer_deeplift_shap``: ``layer="name"``, values of the layer's output shape, the quantity of
Captum's ``LayerDeepLift`` / ``LayerDeepLiftShap`` with ``attribute_to_layer_input=False``).

Against Captum 0.9 (see :class:`DeepLift`): equal (to 1e-5 in the tests) on networks where no
module with a rule takes its input straight from another module with a rule (a Linear or Conv
between any two activations or max pools); on the usual Conv -> ReLU -> MaxPool Captum loses a
rule and misses summation-to-delta, featurelens does not, and ``maxpool="gradient"`` reproduces
Captum's values there.

Shrikumar, Greenside, Kundaje, "Learning Important Features Through Propagating Activation
Differences", ICML 2017, arXiv 1704.02685; gradient form: Ancona, Ceolini, Oeztireli, Gross, ICLR
2018, arXiv 1711.06104. DeepLiftSHAP: Lundberg & Lee, NeurIPS 2017, arXiv 1705.07874.

How it runs: a reference pass (no gradient) records the input and output of every hooked module on
the baseline rows; the pass on ``x`` then replaces each hooked module's output by a tensor with the
same value whose local derivative is the DeepLift multiplier (``Delta out / Delta in`` for the
elementwise activations), so one ordinary backward pass of the target output carries the chain rule
of multipliers to the input. Linear modules (Linear, Conv, BatchNorm in eval, Dropout in eval,
average pooling, Flatten) need no hook: their multiplier is their gradient. Functional activations
and max pools in a ``forward`` (``F.relu``, ``torch.relu``, ``x.relu_()``, ``torch.sigmoid``,
``F.max_pool2d``) get the rule of their module, by a torch function mode active during the model's
forward (``functional=True``, the default); modules called several times per pass (torchvision's
shared ``ReLU(inplace=True)``) and functional calls are matched to the reference pass call by call,
and in-place ones run on a copy of their input. The hooks are removed in
a ``finally`` block, and act only on the passes of the thread that registered them. The layer
variants add one forward hook on the layer (:mod:`._layer_hooks`): it records ``z(x')`` in the
reference pass and puts a leaf in place of ``z(x)`` in the pass on ``x``, so the backward pass
stops there with the layer's multipliers.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from typing import ClassVar

import numpy as np
from featurelens._optional import torch
import torch.nn.functional as F

from .._batching import chunks
from .._validation import check_bool, check_float, check_option
from ._base import Explainer, Requires, register
from ._functional_rules import FunctionalRules
from .gradient import gradient_rows
from ._layer_hooks import LayerHook, NamedLayerRequires, resolve_layer

nn = torch.nn

#: Elementwise activations with the Rescale rule (Captum 0.9's list).
RESCALE_TYPES = (nn.ReLU, nn.ELU, nn.LeakyReLU, nn.Sigmoid, nn.Tanh, nn.Softplus)
#: Max pooling and the functional pool that returns the arg-max indices.
MAXPOOL_TYPES = {nn.MaxPool1d: F.max_pool1d, nn.MaxPool2d: F.max_pool2d, nn.MaxPool3d: F.max_pool3d}
#: Modules whose DeepLift multiplier is their gradient (linear in eval mode, or pass-through).
LINEAR_TYPES = (
    nn.Linear, nn.Bilinear, nn.Identity, nn.Flatten, nn.Unflatten,
    nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
    nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d,
    nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
    nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d,
    nn.ZeroPad2d, nn.ConstantPad1d, nn.ConstantPad2d, nn.ConstantPad3d, nn.Embedding,
)


def _rule(module: nn.Module) -> str | None:
    """"rescale", "maxpool", "softmax", "linear" (no hook needed) or None (no rule: gradient)."""
    if type(module) in MAXPOOL_TYPES:
        return "maxpool"
    if isinstance(module, RESCALE_TYPES):
        return "rescale"
    if isinstance(module, nn.Softmax):
        return "softmax"
    if isinstance(module, LINEAR_TYPES):
        return "linear"
    return None


def module_rules(module: nn.Module | None, maxpool: str = "rescale") -> tuple[dict, list]:
    """``(hooked, fallback)``: the leaf modules with a DeepLift rule (module -> rule) and the names
    of the leaf modules without one (the plain gradient passes through them). ``maxpool="gradient"``
    leaves max pooling unhooked (its gradient: the multiplier flows to x's arg-max)."""
    hooked, fallback = {}, []
    if module is None:
        return hooked, fallback
    for name, m in module.named_modules():
        if next(m.children(), None) is not None:
            continue  # containers: their leaves carry the rules
        rule = _rule(m)
        if rule == "maxpool" and maxpool == "gradient":
            continue
        if rule is None:
            fallback.append(f"{name or '<model>'} ({type(m).__name__})")
        elif rule != "linear":
            hooked[m] = rule
    return hooked, fallback


class _SoftmaxRule(torch.autograd.Function):
    """Identity forward on the softmax output ``y``; backward: the Rescale multiplier (the softmax
    gradient where ``|Delta in| < eps``), then the mean over each sample's elements subtracted
    (Shrikumar et al. sec. 3.6: softmax contributions are normalised by their mean)."""

    @staticmethod
    def forward(ctx, a, y, mult, small, dim):
        ctx.save_for_backward(y, mult, small)
        ctx.dim = dim
        return y.clone()

    @staticmethod
    def backward(ctx, g):
        y, mult, small = ctx.saved_tensors
        plain = y * (g - (g * y).sum(dim=ctx.dim, keepdim=True))
        u = torch.where(small, plain, g * mult)
        u = u - u.flatten(1).mean(1).view((-1,) + (1,) * (u.ndim - 1))
        return u, None, None, None, None


#: Functional calls (``_functional_rules``) with a DeepLift rule: the Rescale activations and max
#: pooling, as their modules in ``RESCALE_TYPES`` and ``MAXPOOL_TYPES``.
FUNCTIONAL_RESCALE = ("relu", "elu", "leaky_relu", "sigmoid", "tanh", "softplus")
FUNCTIONAL_MAXPOOL = ("max_pool1d", "max_pool2d", "max_pool3d")


class _Hooks:
    """The hooks of one DeepLift call on ``module``: ``record`` mode stores each hooked module's
    input and output per call (the reference pass), ``replace`` mode swaps the outputs for tensors
    whose derivative is the DeepLift multiplier against the k-th recorded call. A module used
    several times in one forward pass is matched call by call; with ``root`` (the model's module)
    the functional activations and max pools of its forward (``F.relu``, ``torch.sigmoid``,
    ``x.relu_()``, ``F.max_pool2d``: ``_functional_rules``) get the same rules, matched by
    their order in the forward pass."""

    def __init__(self, hooked: dict, eps: float, root=None, maxpool: str = "rescale"):
        self.hooked, self.eps = hooked, eps
        self.thread = threading.get_ident()
        self.mode = None
        self.refs = {m: [] for m in hooked}
        self.count = {m: 0 for m in hooked}
        self.calls, self.call_count = [], 0  # the functional calls: (kind, input, output) per call
        self.inputs = {}
        self.handles = []
        kinds = FUNCTIONAL_RESCALE + (FUNCTIONAL_MAXPOOL if maxpool == "rescale" else ())
        self.functional = None if root is None else FunctionalRules(root, hooked, kinds, self._functional_call)

    def __enter__(self):
        try:
            for m in self.hooked:
                self.handles.append(m.register_forward_pre_hook(self._pre))
                self.handles.append(m.register_forward_hook(self._post))
            if self.functional is not None:
                self.functional.__enter__()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        if self.functional is not None and self.functional._handles:
            self.functional.__exit__(None, None, None)

    def record(self):
        self.mode = "record"
        self.refs = {m: [] for m in self.hooked}
        self.calls = []

    def replace(self):
        self.mode = "replace"
        self.count = {m: 0 for m in self.hooked}
        self.call_count = 0

    def _functional_call(self, call):
        """A functional activation or max pool of the forward (a ``_functional_rules.Call``):
        recorded in the reference pass, its rule against the k-th recorded call in the pass on x."""
        if self.mode is None or threading.get_ident() != self.thread:
            return call.finish(call.run(call.x.clone() if call.inplace else call.x))
        if self.mode == "record":
            a = call.x.detach().clone()
            y = call.run(a)
            self.calls.append((call.kind, a, y.detach().clone()))  # the model may change y in place
            return call.finish(y)
        k = self.call_count
        self.call_count = k + 1
        if k >= len(self.calls) or self.calls[k][0] != call.kind:
            ref = "none" if k >= len(self.calls) else self.calls[k][0]
            raise RuntimeError(
                f"deeplift: functional call {k + 1} of the forward pass on x is {call.kind}, on the baseline "
                f"{ref}: the forward takes a different path on x than on the baseline, so its functional "
                "activations cannot be matched call by call")
        _, a0, y0 = self.calls[k]
        # In place: the rule runs on a copy of the input (the call then writes its result into x).
        a = call.x.clone() if call.inplace else call.x
        y = call.run(a)
        if call.kind in FUNCTIONAL_MAXPOOL:
            pool = getattr(F, call.kind)
            kernel = call.args[0] if call.args else call.kwargs["kernel_size"]
            kw = call.kwargs
            stride = call.args[1] if len(call.args) > 1 else kw.get("stride")
            if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
                stride = kernel
            pool_args = (kernel, stride, kw.get("padding", 0), kw.get("dilation", 1), kw.get("ceil_mode", False),
                         True)
            return call.finish(self._maxpool_rule(pool, pool_args, a, y, a0, y0))
        return call.finish(self._rescale(None, a, y, a0, y0))

    def _pre(self, module, args):
        if self.mode is None or threading.get_ident() != self.thread:
            return None
        a = args[0]
        if self.mode == "record":
            self.inputs[module] = a.detach().clone()  # before an in-place activation overwrites it
            return None
        self.inputs[module] = a
        if getattr(module, "inplace", False):
            return (a.clone(),) + tuple(args[1:])  # the in-place op writes into the copy, not into a
        return None

    def _post(self, module, args, out):
        if self.mode is None or threading.get_ident() != self.thread:
            return None
        a = self.inputs.pop(module)
        if self.mode == "record":
            self.refs[module].append((a, out.detach().clone()))
            return None
        k = self.count[module]
        self.count[module] = k + 1
        if k >= len(self.refs[module]):
            raise RuntimeError(f"deeplift: module {type(module).__name__} ran more often on x than on the baseline")
        a0, y0 = self.refs[module][k]
        return getattr(self, "_" + self.hooked[module])(module, a, out, a0, y0)

    def _rescale(self, module, a, y, a0, y0):
        d_in = a.detach() - a0
        small = d_in.abs() < self.eps
        mult = (y.detach() - y0) / torch.where(small, torch.ones_like(d_in), d_in)
        # Same value as y; derivative mult (the plain derivative where Delta in ~ 0).
        return torch.where(small, y, y.detach() + (a - a.detach()) * mult)

    def _softmax(self, module, a, y, a0, y0):
        d_in = a.detach() - a0
        small = d_in.abs() < self.eps
        mult = (y.detach() - y0) / torch.where(small, torch.ones_like(d_in), d_in)
        dim = module.dim if module.dim is not None else 1
        return _SoftmaxRule.apply(a, y.detach(), mult, small.expand_as(y), dim)

    def _maxpool(self, module, a, y, a0, y0):
        """The max-pool rule Captum 0.9 writes (and applies where the pool's input comes from a
        module without a rule, e.g. a Conv): each window's output difference goes to the arg-max
        of the larger of (x's window, the reference's window), divided by that input's
        difference (the plain max-pool gradient where ``|Delta in| < eps``); overlapping windows
        add up. Here it is applied after a ReLU too, where Captum's is lost (see DeepLift)."""
        pool = MAXPOOL_TYPES[type(module)]
        args = (module.kernel_size, module.stride, module.padding, module.dilation, module.ceil_mode, True)
        return self._maxpool_rule(pool, args, a, y, a0, y0)

    def _maxpool_rule(self, pool, args, a, y, a0, y0):
        """:meth:`_maxpool` for the functional ``pool`` with ``args`` (kernel, stride, padding,
        dilation, ceil_mode, True)."""
        ad = a.detach()
        _, ix = pool(ad, *args)
        _, ir = pool(a0, *args)
        ir = ir.expand_as(ix)
        o = y.detach()
        top = torch.maximum(o, y0)
        above, below = (top - y0).expand_as(o), o - top  # shares of the window's difference
        d_in = ad - a0
        small = d_in.abs() < self.eps
        w = torch.where(small, torch.zeros_like(d_in), 1.0 / torch.where(small, torch.ones_like(d_in), d_in))

        def take(t, idx):
            return t.flatten(2).gather(2, idx.flatten(2)).view_as(o)

        psi = take(a * w, ix) * above + take(a * w, ir) * below + take(a * small, ix)
        return o + (psi - psi.detach())


def _check_eps(eps) -> float:
    return check_float(eps, "eps", low=0.0)


class _DeepLiftBase(Explainer):
    """Shared machinery: hooked pairs of (x row, reference row) in chunks of at most batch_size."""

    requires = Requires(gradients=True, hooks="rules")  # refused for TorchScript (Requires.hooks)
    row_params = frozenset({"base_values", "completeness_gap"})
    param_reductions: ClassVar[dict] = {"max_relative_gap": max, "max_abs_gap": max}
    layer = layer_name = None  # set by the layer variants

    def __init__(self, model, multiply_by_inputs: bool = True, eps: float = 1e-10, maxpool: str = "rescale",
                 batch_size=None, functional: bool = True):
        super().__init__(model, batch_size)
        self.multiply_by_inputs = check_bool(multiply_by_inputs, "multiply_by_inputs")
        self.eps = _check_eps(eps)
        self.maxpool = check_option(maxpool, "maxpool", ("rescale", "gradient"))
        self.functional = check_bool(functional, "functional")
        self._hooked, self.fallback = module_rules(self.model.module, self.maxpool)
        if self.model.module is None:
            warnings.warn(
                f"{self.name}: the model is not a torch.nn.Module, so no DeepLift rule can be hooked; "
                "the plain gradient is used (values are gradient x (x - baseline))", stacklevel=3)
        elif self.fallback:
            warnings.warn(
                f"{self.name}: no DeepLift rule for {', '.join(self.fallback)}; the plain gradient passes "
                "through these layers (Captum does the same silently), so summation-to-delta may fail "
                "there: see params['max_relative_gap']", stacklevel=3)

    def params(self):
        return {**super().params(), "multiply_by_inputs": self.multiply_by_inputs, "eps": self.eps,
                "maxpool": self.maxpool, "functional": self.functional, "gradient_fallback": list(self.fallback)}

    def _pairs(self, x, target, n_pairs, x_index, ref_rows, shared_ref=None):
        """DeepLift of ``n_pairs`` (x row, reference row) pairs: ``x[x_index(p)]`` against
        ``ref_rows(p)`` (or the one row ``shared_ref``, recorded once). Returns per pair the
        attributions (of the inputs, or of the named layer's output when ``self.layer`` is set),
        f(x row) and f(reference row) at the target."""
        bs = gradient_rows(self.model, x) or self.model.chunk_rows(x)  # at least 8 rows unless given
        parts = []
        f_x = torch.empty(n_pairs, dtype=torch.float64, device=x.device)
        f_b = torch.empty(n_pairs, dtype=torch.float64, device=x.device)
        # The layer hook is entered after the DeepLift hooks: on a hooked layer (a ReLU) it runs
        # second and replaces the rule's output by the leaf the multipliers are taken at.
        layer_hook = contextlib.nullcontext() if self.layer is None else LayerHook(self.layer, self.layer_name,
                                                                                   self.name)
        root = self.model.module if self.functional else None
        with self.model.evaluating(), _Hooks(self._hooked, self.eps, root, self.maxpool) as hooks, \
                layer_hook as lh:

            def forward(rows, replace=None):  # (outputs, layer output or None)
                return (self.model.forward(rows), None) if lh is None else lh.run(self.model, rows, replace)

            if shared_ref is not None:
                hooks.record()
                with torch.no_grad():
                    out_ref, z_ref = forward(shared_ref)
            for s in chunks(n_pairs, bs):
                p = torch.arange(s.start, s.stop, device=x.device)
                rows = x[x_index(p)]
                t = target[x_index(p)]
                if shared_ref is None:
                    ref = ref_rows(p)
                    hooks.record()
                    with torch.no_grad():
                        out_b, z_b = forward(ref)
                else:
                    ref, z_b = shared_ref, z_ref
                    out_b = out_ref.expand(rows.shape[0], -1)
                hooks.replace()
                if lh is None:
                    leaf = rows.detach().requires_grad_(True)
                    with torch.enable_grad():
                        out, _ = forward(leaf)
                        (grad,) = torch.autograd.grad(out.gather(1, t[:, None]).sum(), leaf)
                    diff = rows - ref
                else:
                    with torch.enable_grad():
                        out, leaf = forward(rows, lambda z: z.detach().requires_grad_(True))
                        (grad,) = torch.autograd.grad(out.gather(1, t[:, None]).sum(), leaf)
                    diff = leaf.detach() - z_b
                hooks.mode = None
                parts.append(diff * grad if self.multiply_by_inputs else grad)
                f_x[s] = out.detach().gather(1, t[:, None]).squeeze(1).double()
                f_b[s] = out_b.gather(1, t[:, None]).squeeze(1).double()
        return torch.cat(parts), f_x, f_b

    @staticmethod
    def _gap_params(total, f_x, f_b) -> dict:
        change = f_x - f_b
        gap = total - change
        relative = gap.abs() / change.abs().clamp_min(1e-12)
        return {
            "completeness_gap": gap.cpu().tolist(),  # sum(a) - (f(x) - f(baseline)): summation-to-delta
            "max_abs_gap": float(gap.abs().max()),
            "max_relative_gap": float(relative.max()),
            "base_values": f_b.cpu().tolist(),
        }


@register("deeplift")
class DeepLift(_DeepLiftBase):
    """DeepLift with the Rescale rule: ``a_i = (x_i - x'_i) * m_i`` where the multipliers ``m``
    follow the chain rule through the network with ``m = (g(z) - g(z')) / (z - z')`` at each
    elementwise nonlinearity ``g`` (its derivative where ``|z - z'| < eps``), the weights at linear
    layers, so that ``sum_i a_i = f_t(x) - f_t(x')`` (summation-to-delta) where every nonlinearity
    has a rule.

    Shrikumar, Greenside, Kundaje, "Learning Important Features Through Propagating Activation
    Differences", ICML 2017, arXiv 1704.02685 (Rescale rule, sec. 3.5.2).

    Rules by module type (the rules Captum 0.9's ``DeepLift`` writes): Rescale on ReLU, ELU,
    LeakyReLU, Sigmoid, Tanh, Softplus; MaxPool1/2/3d: each window's output difference goes to the
    arg-max of the larger of the two windows (x's, the reference's) and is divided by that input's
    difference; Softmax: Rescale, then each sample's mean multiplier subtracted (Captum subtracts
    the mean over the whole doubled batch, which couples the samples); Linear, Conv, BatchNorm
    (eval), Dropout (eval), average pooling, Flatten: their gradient.

    Where the values equal Captum 0.9's ``DeepLift`` (to 1e-5 in the tests, same baseline and
    target): networks in which no module with a rule takes its input straight from another module
    with a rule, e.g. Linear -> ReLU -> Linear -> Tanh -> Linear, or Conv -> MaxPool -> Conv ->
    ReLU -> AvgPool -> Linear. Where they differ, and why: Captum's hooks on a module record the
    gradient at its output before the next module's hook rewrites it, so in a chain of two modules
    with rules Captum loses one rule. On the usual Conv -> ReLU -> MaxPool its ReLU multiplies the
    plain max-pool gradient (all of a window to x's arg-max): Captum's values miss
    summation-to-delta (on the tests' small CNN its convergence delta exceeds the output change
    ``f(x) - f(x')`` itself for some samples), while these apply both rules and sum to
    ``f(x) - f(x')`` to rounding; the two differ by the max-pool rule's share. To reproduce
    Captum's values on such a network, pass ``maxpool="gradient"`` (max pooling left unhooked, its
    gradient used): equal to Captum to 1e-5 in the tests, with Captum's gap. On other chains (two
    activations in a row such as ReLU -> Tanh, or MaxPool -> ReLU) the values differ from Captum's
    and no option reproduces them; these are the exact ones (gap ~1e-16). Any other leaf module (GELU, SiLU, LayerNorm,
    adaptive max pooling...) passes its plain gradient, with one warning at construction naming
    those layers. Each explanation records the summation-to-delta gap
    ``sum(a) - (f(x) - f(x'))`` per sample (``completeness_gap``), its largest absolute and
    relative values (``max_abs_gap``, ``max_relative_gap``) and ``f(x')`` (``base_values``).

    Networks as torchvision writes them (ResNet, DenseNet, ViT-style code) need no change: a
    module called several times in one forward pass (a ``BasicBlock``'s one ``ReLU(inplace=True)``
    called twice) gets its rule at each call, matched to the same call of the reference pass;
    in-place activations run on a copy of their input; residual additions and concatenations are
    linear (their gradient is their multiplier). Functional activations in a ``forward``
    (``F.relu``, ``torch.relu``, ``x.relu()``, ``x.relu_()``, ``F.elu``, ``F.leaky_relu``,
    ``torch.sigmoid``, ``torch.tanh``, ``F.softplus``) get the Rescale rule and ``F.max_pool1d/2d/3d``
    the max-pool rule, exactly as the module would, matched to the reference pass by their order in
    the forward (``functional=True``, the default): DeepLift's multipliers and their chain rule are
    defined per neuron, not per module (Shrikumar et al. 2017, sec. 3.2 and 3.5), so a functional
    ReLU between two layers is the same neuron as a module ReLU there, and the values equal those
    of the same network with a distinct module at every call site
    (tests/explainers/test_reused_modules.py). Captum
    refuses reused modules and passes the plain gradient through functional calls, which breaks
    summation-to-delta; ``functional=False`` reproduces the latter (only modules get rules). Calls
    inside a module that has a rule (``nn.ReLU.forward`` calls ``F.relu``) are that module's; other
    functional calls (softmax, GELU, products) keep their gradient.

    ``baseline``: None (zeros), a scalar, an array shaped like one input or like the batch (also
    per call: ``explain(x, baseline=...)``). A baseline shared by every sample costs one reference
    row per call; per-sample baselines one reference pass per chunk. ``multiply_by_inputs=False``
    returns the multipliers themselves (Ancona et al.'s "local" variant). ``functional``: rules for
    functional activations and max pools too (see above). Rows per model call never exceed
    ``batch_size``.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    accepts = frozenset({"baseline"})

    def __init__(self, model, baseline=None, multiply_by_inputs: bool = True, eps: float = 1e-10,
                 maxpool: str = "rescale", batch_size: int | None = None, functional: bool = True):
        super().__init__(model, multiply_by_inputs=multiply_by_inputs, eps=eps, maxpool=maxpool,
                         batch_size=batch_size, functional=functional)
        self.baseline = baseline

    def _attribute(self, x, target, outputs, baseline=None):
        base = self._resolve_baseline(x, baseline)
        n = x.shape[0]
        shared = bool((base == base[:1]).all()) if n > 1 else True
        ident = lambda p: p
        if shared:
            values, f_x, f_b = self._pairs(x, target, n, ident, None, shared_ref=base[:1].contiguous())
        else:
            values, f_x, f_b = self._pairs(x, target, n, ident, lambda p: base[p])
        total = values.flatten(1).double().sum(1)
        return values, self._gap_params(total, f_x, f_b)


@register("deeplift_shap")
class DeepLiftShap(_DeepLiftBase):
    """DeepLiftSHAP: DeepLift averaged over background rows used as baselines,

    ``a_i(x) = sum_j w_j DeepLift_i(x; baseline = b_j)`` (``w_j = 1/B``, or a weighted summary),
    which approximates SHAP values with the background as the data distribution.

    Lundberg & Lee, "A Unified Approach to Interpreting Model Predictions", NeurIPS 2017, arXiv
    1705.07874 (Deep SHAP); rules as :class:`DeepLift` (Shrikumar et al. 2017, arXiv 1704.02685).
    With equal weights it equals Captum 0.9's ``DeepLiftShap`` (to 1e-5 in the tests) where
    :class:`DeepLift` equals Captum's ``DeepLift`` (no module with a rule fed straight by another);
    on Conv -> ReLU -> MaxPool Captum's values miss summation-to-delta and these do not, and
    ``maxpool="gradient"`` reproduces Captum's, exactly as for :class:`DeepLift`. Reused modules,
    in-place and functional activations (``functional=``) are handled as in :class:`DeepLift`.

    ``background``: rows shaped like the batch (numpy, tensor), at least one, or a weighted summary
    (:func:`featurelens.games.summarize_background` or a ``(rows, weights)`` pair). The ``n x B``
    (row, background row) pairs run in chunks of at most ``batch_size`` pairs (a reference pass and
    a hooked pass of that many rows each). The summation-to-delta gap is recorded against the mean
    reference output: ``sum(a) - (f(x) - sum_j w_j f(b_j))`` (``completeness_gap``), with
    ``base_values = sum_j w_j f(b_j)``.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    accepts = frozenset()

    def __init__(self, model, background=None, multiply_by_inputs: bool = True, eps: float = 1e-10,
                 maxpool: str = "rescale", batch_size: int | None = None, functional: bool = True):
        super().__init__(model, multiply_by_inputs=multiply_by_inputs, eps=eps, maxpool=maxpool,
                         batch_size=batch_size, functional=functional)
        if background is None:
            raise ValueError("deeplift_shap needs background= rows (a batch shaped like the inputs) to average "
                             "DeepLift over; got None (use deeplift for a single baseline)")
        from ..games import split_background

        rows, weights = split_background(background)
        self.background = background
        self._rows, self._weights = rows, weights

    def params(self):
        p = super().params()
        rows = self._rows
        p["n_background"] = int(rows.shape[0] if hasattr(rows, "shape") else np.shape(rows)[0])
        p["background_weighted"] = self._weights is not None
        return p

    def _background(self, x) -> torch.Tensor:
        rows = self.model.to_tensor(self._rows, name="background")
        if tuple(rows.shape[1:]) != tuple(x.shape[1:]) or rows.shape[0] < 1:
            raise ValueError(f"background must be rows shaped like the inputs, (B, {', '.join(map(str, x.shape[1:]))}) "
                             f"with B >= 1; got shape {tuple(rows.shape)}")
        return rows.to(device=x.device, dtype=x.dtype)

    def _attribute(self, x, target, outputs):
        bg = self._background(x)
        n, b = x.shape[0], bg.shape[0]
        values, f_x, f_b = self._pairs(x, target, n * b, lambda p: p // b, lambda p: bg[p % b])
        w = (torch.full((b,), 1.0 / b, dtype=torch.float64, device=x.device) if self._weights is None
             else torch.as_tensor(self._weights, dtype=torch.float64, device=x.device))
        values = values.view(n, b, *values.shape[1:])
        mean = torch.tensordot(w.to(values.dtype), values, dims=([0], [1])) if self._weights is not None \
            else values.mean(1)
        f_x = f_x.view(n, b)[:, 0]
        f_b = (f_b.view(n, b) * w).sum(1)
        total = mean.flatten(1).double().sum(1)
        return mean, self._gap_params(total, f_x, f_b)


class _LayerVariant:
    """``layer=`` for the DeepLift explainers: the named layer whose output is attributed."""

    requires = NamedLayerRequires(gradients=True, hooks="rules")

    def _init_layer(self, layer):
        self.layer_name, self.layer = resolve_layer(self.model.module, layer, self.name)

    def params(self):
        return {**super().params(), "layer": self.layer_name}


@register("layer_deeplift")
class LayerDeepLift(_LayerVariant, DeepLift):
    """Layer DeepLift: the contributions of the named layer's output units ``z_j`` to the target,

    ``a_j = (z_j(x) - z_j(x')) * m_j``, with ``m_j`` the DeepLift multiplier of ``f_t`` w.r.t.
    ``z_j``, carried from the output down to the layer by the Rescale rules of :class:`DeepLift`
    (``multiply_by_inputs=False``: ``m`` itself). Values have the layer's output shape ``(n,
    *layer_shape)``. Where every module after the layer has an exact rule (linear modules, the
    elementwise Rescale activations) summation-to-delta holds at the layer: ``sum_j a_j = f_t(x) -
    f_t(x')``, recorded per sample as ``completeness_gap`` (with ``max_abs_gap``,
    ``max_relative_gap`` and ``base_values = f_t(x')``), as for :class:`DeepLift`.

    Shrikumar, Greenside, Kundaje, "Learning Important Features Through Propagating Activation
    Differences", ICML 2017, arXiv 1704.02685. Equals Captum 0.9's ``LayerDeepLift`` with
    ``attribute_to_layer_input=False`` (Kokhlikyan et al., 2020, arXiv 2009.07896; to 1e-5 in the
    tests) where :class:`DeepLift` equals Captum's ``DeepLift`` (no module with a rule fed
    straight by another between the layer and the output); after Conv -> ReLU -> MaxPool Captum's
    layer values miss summation-to-delta and these do not, and ``maxpool="gradient"`` reproduces
    Captum's at layers other than a ReLU that feeds a max pool.

    ``layer``: a submodule name (or a unique dotted suffix of one, or the submodule), applied once
    per forward pass and returning one tensor; ``baseline`` (input space) as for :class:`DeepLift`
    (also per call). The layer's output is reached by a forward hook removed in a ``finally``
    block; the reference pass records ``z(x')`` with the DeepLift references, and the pass on ``x``
    replaces ``z(x)`` by a leaf whose gradient is the multiplier.
    """

    audit_default = True  # not the reason of DeepLift, its base

    def __init__(self, model, layer=None, baseline=None, multiply_by_inputs: bool = True, eps: float = 1e-10,
                 maxpool: str = "rescale", batch_size: int | None = None, functional: bool = True):
        super().__init__(model, baseline=baseline, multiply_by_inputs=multiply_by_inputs, eps=eps,
                         maxpool=maxpool, batch_size=batch_size, functional=functional)
        self._init_layer(layer)


@register("layer_deeplift_shap")
class LayerDeepLiftShap(_LayerVariant, DeepLiftShap):
    """Layer DeepLiftSHAP: :class:`.LayerDeepLift` averaged over background rows used as baselines,
    ``a_j(x) = sum_k w_k LayerDeepLift_j(x; baseline = b_k)`` (``w_k = 1/B``, or a weighted
    summary); values have the layer's output shape. Summation-to-delta is recorded against the mean
    reference output, as for :class:`.DeepLiftShap`.

    Lundberg & Lee, "A Unified Approach to Interpreting Model Predictions", NeurIPS 2017, arXiv
    1705.07874; Shrikumar et al. 2017, arXiv 1704.02685. With equal weights it equals Captum 0.9's
    ``LayerDeepLiftShap`` (``attribute_to_layer_input=False``; to 1e-5 in the tests) on the
    networks where :class:`.LayerDeepLift` equals Captum's ``LayerDeepLift``.

    ``background`` and the chunking of the ``n x B`` pairs as :class:`.DeepLiftShap`; ``layer`` as
    :class:`.LayerDeepLift`.
    """

    audit_default = True  # not the reason of DeepLiftShap, its base

    def __init__(self, model, layer=None, background=None, multiply_by_inputs: bool = True, eps: float = 1e-10,
                 maxpool: str = "rescale", batch_size: int | None = None, functional: bool = True):
        super().__init__(model, background=background, multiply_by_inputs=multiply_by_inputs, eps=eps,
                         maxpool=maxpool, batch_size=batch_size, functional=functional)
        self._init_layer(layer)
