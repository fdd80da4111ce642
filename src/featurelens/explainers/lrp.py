"""Layer-wise relevance propagation (LRP) with per-layer rules and composite presets.

Bach, Binder, Montavon, Klauschen, Mueller, Samek, "On Pixel-Wise Explanations for Non-Linear
Classifier Decisions by Layer-Wise Relevance Propagation", PLOS ONE 10(7) e0130140, 2015;
Montavon, Binder, Lapuschkin, Samek, Mueller, "Layer-Wise Relevance Propagation: An Overview", in
*Explainable AI*, LNCS 11700, Springer 2019, pp. 193-209.

How it is computed: a forward hook on every leaf module replaces the module's output by a tensor of
the same values whose *backward* is the layer's relevance rule (a small autograd function). The
quantity that autograd carries backwards is then the relevance itself, and one ordinary input
gradient pass of the model (:meth:`featurelens.models.Model.gradient`, chunked by ``batch_size``)
returns the input relevance. Inside a rule the "gradient x input" identity does the work: for a
layer ``z = F(a; W, b)`` and modified parameters ``W', b'``, the relevance

    ``R_in = a * J_{F(.; W', b')}(a)^T (R_out / stab(z'))``,   ``z' = F(a; W', b')``,

is one vector-Jacobian product of the modified layer (``stab(z) = z + eps sign(z)``, sign(0) = 1).
The hooks are removed in a ``finally`` block and no weight is ever written: the model is unchanged
afterwards, and a module called several times in one forward gets one rule application per call
(torchvision's ``BasicBlock`` calls its one ``ReLU(inplace=True)`` twice). An in-place module
(``inplace=True``) runs on a copy of its input, so the tensors a rule keeps for the backward pass
are never overwritten. Functional activations and pooling in a ``forward`` (``F.relu``,
``torch.relu``, ``x.relu_()``, ``torch.sigmoid``, ``F.gelu``, ``F.max_pool2d``,
``F.adaptive_avg_pool2d``...) are routed by a torch function mode through the rule their module
would get (``functional=True``, the default): relevance passes the activations unchanged and the
pools get the epsilon rule on the call itself.

Residual additions and concatenations (two-input operations): while the model's forward runs, a
torch function mode (:class:`torch.overrides.TorchFunctionMode`) routes every addition of two
tensors that carry the input's graph (``a + b``, ``torch.add``, ``out += identity``) through the
z-rule on the sum, ``R_a = a / stab(a + b) R``, ``R_b = b / stab(a + b) R`` (each summand gets the
share it contributes; Captum's ``EpsilonRule`` on its ``Addition_Module``), and a concatenation
(``torch.cat``) splits the relevance by slices, which is its gradient. The modules ``Add``
and ``Concat`` (and Captum's ``Addition_Module``) are these operations as modules.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import numpy as np
from featurelens._optional import is_tensor, torch
import torch.nn.functional as F

from .._validation import check_bool, check_float, check_option
from ._base import Explainer, Requires, register
from ._functional_rules import ELEMENTWISE, POOLING, FunctionalRules

_LINEAR = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
_CONV = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
_BATCHNORM = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)
#: Weightless or affine layers that get the epsilon rule (Captum's default for pooling and BatchNorm).
_EPSILON_ONLY = (
    torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d,
    torch.nn.AvgPool1d, torch.nn.AvgPool2d, torch.nn.AvgPool3d,
    torch.nn.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool3d,
    torch.nn.AdaptiveMaxPool1d, torch.nn.AdaptiveMaxPool2d, torch.nn.AdaptiveMaxPool3d,
    torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d,
)
#: Layers through which relevance passes unchanged (elementwise activations, dropout, reshapes).
_PASS = (
    torch.nn.ReLU, torch.nn.ReLU6, torch.nn.LeakyReLU, torch.nn.PReLU, torch.nn.ELU, torch.nn.SELU,
    torch.nn.CELU, torch.nn.GELU, torch.nn.SiLU, torch.nn.Mish, torch.nn.Tanh, torch.nn.Sigmoid,
    torch.nn.Softplus, torch.nn.Hardtanh, torch.nn.Hardswish, torch.nn.Hardsigmoid,
    torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d, torch.nn.AlphaDropout,
    torch.nn.FeatureAlphaDropout, torch.nn.Flatten, torch.nn.Unflatten, torch.nn.Identity,
)

RULES = ("epsilon", "gamma", "alpha_beta", "zplus", "flat", "w_square", "zbox", "pass")


class Add(torch.nn.Module):
    """The sum of its tensor arguments, as a module (a residual ``x + f(x)``): LRP splits the
    relevance of the sum among the summands by the z-rule (see :mod:`featurelens.explainers.lrp`);
    a plain ``+`` or ``torch.add`` in a ``forward`` gets the same rule."""

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        if not tensors:
            raise ValueError("Add needs at least one tensor to add")
        total = tensors[0]
        for t in tensors[1:]:
            total = total + t
        return total


class Concat(torch.nn.Module):
    """``torch.cat(tensors, dim)`` as a module: LRP splits the relevance by slices."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = int(dim)

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return torch.cat(tensors, dim=self.dim)


def _is_two_input_module(module) -> bool:
    """Modules that only add or concatenate their inputs: not hooked, their forward's additions and
    concatenations get the functional rules (Captum's Addition_Module recognised by name)."""
    kind = type(module)
    return isinstance(module, (Add, Concat)) or (
        kind.__name__ == "Addition_Module" and kind.__module__.split(".")[0] == "captum")


class _SumRelevance(torch.autograd.Function):
    """Forward: ``a + b`` (broadcast). Backward: the z-rule on the sum, ``R_a = a R / stab(z)``,
    ``R_b = b R / stab(z)`` (each summed back to its own shape where it was broadcast)."""

    @staticmethod
    def forward(ctx, eps, a, b):
        z = a + b
        # The stabilised sum is kept, not the sum itself: the model may change z in place next
        # (torchvision's ``out += identity; out = relu(out)`` with an in-place ReLU).
        ctx.save_for_backward(a, b, _stab(z, eps))
        return z

    @staticmethod
    def backward(ctx, r):
        a, b, stab_z = ctx.saved_tensors
        share = r / stab_z
        grads = [None]
        for i, t in enumerate((a, b)):
            grads.append((t * share).sum_to_size(t.shape).to(t.dtype) if ctx.needs_input_grad[i + 1] else None)
        return tuple(grads)


class _SumRelevanceInPlace(torch.autograd.Function):
    """:class:`_SumRelevance` for ``a += b`` / ``a.add_(b)``: ``a`` is changed in place (as the
    forward asks), and its summand's value is kept for the backward."""

    @staticmethod
    def forward(ctx, eps, a, b):
        before = a.detach().clone()
        a.add_(b)
        ctx.mark_dirty(a)
        ctx.save_for_backward(before, b, _stab(a, eps))  # not a itself, which may change in place next
        return a

    @staticmethod
    def backward(ctx, r):
        return _SumRelevance.backward(ctx, r)


_ADDITIONS = {torch.add, torch.Tensor.add, torch.Tensor.__add__, torch.Tensor.__radd__}
_IN_PLACE_ADDITIONS = {torch.Tensor.add_, torch.Tensor.__iadd__}


class _AdditionRule(torch.overrides.TorchFunctionMode):
    """While ``active()``: additions of two floating tensors of which one carries a gradient go
    through :class:`_SumRelevance` (an in-place ``+=`` returns the new sum: the name is rebound to
    it); everything else runs as it is."""

    def __init__(self, eps: float, active):
        super().__init__()
        self.eps, self.active = eps, active

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        in_place = func in _IN_PLACE_ADDITIONS
        if (in_place or func in _ADDITIONS) and self.active() and len(args) >= 2 and "out" not in kwargs:
            a, b = args[0], args[1]
            if (is_tensor(a) and is_tensor(b) and a.is_floating_point()
                    and b.is_floating_point() and (a.requires_grad or b.requires_grad)
                    and torch.is_grad_enabled()):
                alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
                if alpha != 1:
                    b = b * alpha
                if not in_place:
                    return _SumRelevance.apply(self.eps, a, b)
                if a.grad_fn is not None and a._base is None and a.shape == torch.broadcast_shapes(a.shape, b.shape):
                    return _SumRelevanceInPlace.apply(self.eps, a, b)
        return func(*args, **kwargs)
COMPOSITES = ("epsilon", "epsilon_plus_flat", "epsilon_gamma_box", "alpha_beta")


@dataclass(frozen=True)
class Rule:
    """One LRP rule with its parameters (see :class:`LRP` for the formulas).

    ``kind``: "epsilon", "gamma", "alpha_beta", "zplus" (= alpha_beta with alpha 1, beta 0),
    "flat", "w_square", "zbox" or "pass". ``low``/``high`` (zbox): bounds of the layer's input, a
    number or an array shaped like one input; None: each sample's own minimum / maximum.
    """

    kind: str
    epsilon: float = 1e-9
    gamma: float = 0.25
    alpha: float = 1.0
    beta: float = 0.0
    low: object = None
    high: object = None

    def __post_init__(self):
        object.__setattr__(self, "kind", check_option(self.kind, "rule", RULES))
        object.__setattr__(self, "epsilon", check_float(self.epsilon, "epsilon", low=0.0))
        object.__setattr__(self, "gamma", check_float(self.gamma, "gamma", low=0.0))
        alpha = check_float(self.alpha, "alpha", low=0.0)
        beta = check_float(self.beta, "beta", low=0.0)
        if abs(alpha - beta - 1.0) > 1e-12:
            raise ValueError(f"alpha and beta must satisfy alpha - beta = 1 (conservation); got alpha={alpha}, "
                             f"beta={beta}")
        if self.kind == "zplus":
            object.__setattr__(self, "kind", "alpha_beta")
            alpha, beta = 1.0, 0.0
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "beta", beta)

    def describe(self) -> str:
        extra = {"epsilon": f"(eps={self.epsilon:g})", "gamma": f"(gamma={self.gamma:g})",
                 "alpha_beta": f"(alpha={self.alpha:g}, beta={self.beta:g})"}.get(self.kind, "")
        return self.kind + extra


# --------------------------------------------------------------------------------------------------
# the rules: relevance at a layer's input from the relevance at its output


def _stab(z: torch.Tensor, eps: float) -> torch.Tensor:
    """``z + eps sign(z)`` with sign(0) = 1 (Captum's stabiliser), so no denominator is 0."""
    return z + eps * torch.where(z >= 0, 1.0, -1.0).to(z.dtype)


def _layer_fn(module):
    """``f(a, weight, bias)``: the module's linear map with the given parameters (no hooks)."""
    if isinstance(module, torch.nn.Linear):
        return F.linear
    return module._conv_forward  # Conv1d/2d/3d: padding modes, stride, groups and dilation kept


def _vjp(fn, inputs: list, cotangent: torch.Tensor) -> list:
    """Vector-Jacobian products of ``fn(*inputs)`` (a sum of terms) with ``cotangent``."""
    leaves = [t.detach().requires_grad_(True) for t in inputs]
    with torch.enable_grad():
        out = fn(*leaves)
        return list(torch.autograd.grad(out, leaves, cotangent))


def _folded(w: torch.Tensor, b, bn):
    """Weight and bias of a dense/conv layer followed by the eval-mode BatchNorm ``bn``, merged:
    ``w' = s w``, ``b' = s (b - mean) + beta`` with ``s = gamma / sqrt(var + eps)`` per channel."""
    scale = torch.rsqrt(bn.running_var.detach() + bn.eps)
    shift = -bn.running_mean.detach() * scale
    if b is not None:
        shift = shift + b * scale
    if bn.affine:
        scale, shift = scale * bn.weight.detach(), shift * bn.weight.detach() + bn.bias.detach()
    return w * scale.reshape(-1, *([1] * (w.ndim - 1))).to(w.dtype), shift.to(w.dtype)


def _relevance_in(module, rule: Rule, a: torch.Tensor, r_out: torch.Tensor, bn=None) -> torch.Tensor:
    """The relevance at the input ``a`` of ``module`` from the relevance ``r_out`` at its output
    (``bn``: an eval-mode BatchNorm that follows the dense/conv ``module`` and is folded into it;
    ``r_out`` is then the relevance at the BatchNorm's output)."""
    if rule.kind == "pass":
        if r_out.numel() != a.numel():
            raise ValueError(f"rule 'pass' needs a layer whose output has as many elements as its input; "
                             f"{type(module).__name__} maps {tuple(a.shape)} to {tuple(r_out.shape)}")
        return r_out.reshape(a.shape)
    eps = rule.epsilon
    if not isinstance(module, _LINEAR):
        # Pooling and BatchNorm: the epsilon rule on the module's own forward (flat: uniform split
        # over each output's receptive field; anything else is refused when the rules are set).
        if rule.kind == "flat":
            ones = torch.ones_like(a)
            z = module.forward(ones)
            (g,) = _vjp(module.forward, [ones], r_out / _stab(z, eps))
            return g
        with torch.enable_grad():
            leaf = a.detach().requires_grad_(True)
            z = module.forward(leaf)
            (g,) = torch.autograd.grad(z, leaf, r_out / _stab(z.detach(), eps))
        return a * g
    fn = _layer_fn(module)
    w = module.weight.detach()
    b = None if module.bias is None else module.bias.detach()
    if bn is not None:
        w, b = _folded(w, b, bn)
    if rule.kind in ("epsilon", "gamma"):
        if rule.kind == "gamma":
            w = w + rule.gamma * w.clamp(min=0)
            b = None if b is None else b + rule.gamma * b.clamp(min=0)
        z = fn(a, w, b)
        (g,) = _vjp(lambda t: fn(t, w, b), [a], r_out / _stab(z, eps))
        return a * g
    if rule.kind in ("flat", "w_square"):
        ones = torch.ones_like(a)
        w2 = torch.ones_like(w) if rule.kind == "flat" else w * w
        z = fn(ones, w2, None)
        (g,) = _vjp(lambda t: fn(t, w2, None), [ones], r_out / _stab(z, eps))
        return g
    if rule.kind == "zbox":
        dims = tuple(range(1, a.ndim))
        low = a.amin(dim=dims, keepdim=True) if rule.low is None else torch.as_tensor(rule.low, dtype=a.dtype,
                                                                                     device=a.device)
        high = a.amax(dim=dims, keepdim=True) if rule.high is None else torch.as_tensor(rule.high, dtype=a.dtype,
                                                                                       device=a.device)
        try:
            low, high = torch.broadcast_to(low, a.shape), torch.broadcast_to(high, a.shape)
        except RuntimeError as err:
            raise ValueError(f"low and high (bounds of the zbox rule) must be numbers or arrays shaped like "
                             f"the input of the layer, {tuple(a.shape[1:])}; got shapes {tuple(low.shape)} "
                             f"and {tuple(high.shape)}") from err
        wp, wn = w.clamp(min=0), w.clamp(max=0)

        def terms(x, lo, hi):
            return fn(x, w, None) - fn(lo, wp, None) - fn(hi, wn, None)

        z = terms(a, low, high)
        gx, gl, gh = _vjp(terms, [a, low, high], r_out / _stab(z, eps))
        return a * gx + low * gl + high * gh  # gl, gh already carry the minus signs
    # alpha-beta on the products a_j w_jk split by sign (valid for inputs of either sign):
    # z+ = W+ a+ + W- a- + b+,  z- = W+ a- + W- a+ + b-.
    ap, an = a.clamp(min=0), a.clamp(max=0)
    wp, wn = w.clamp(min=0), w.clamp(max=0)
    b_pos = None if b is None else b.clamp(min=0)
    b_neg = None if b is None else b.clamp(max=0)

    def part(wa, wb, bias):
        def f(x1, x2):
            return fn(x1, wa, bias) + fn(x2, wb, None)

        z = f(ap, an)
        return z, f

    zp, fp = part(wp, wn, b_pos)
    g1, g2 = _vjp(fp, [ap, an], r_out / (zp + eps))
    relevance = rule.alpha * (ap * g1 + an * g2)
    if rule.beta > 0:
        zn, fn_neg = part(wn, wp, b_neg)
        g1, g2 = _vjp(fn_neg, [ap, an], r_out / (zn - eps))
        relevance = relevance - rule.beta * (ap * g1 + an * g2)
    return relevance


class _FunctionalLayer:
    """A functional pooling call of the forward as the layer :func:`_relevance_in` reads: its
    ``forward`` is the call, out of place."""

    def __init__(self, call):
        self.forward = call.run


class _Relevance(torch.autograd.Function):
    """Forward: the module's output as it is. Backward: the layer's LRP rule on the relevance."""

    @staticmethod
    def forward(ctx, a, out, module, rule, fold):
        ctx.save_for_backward(a)
        ctx.module, ctx.rule, ctx.fold = module, rule, fold
        return out.clone()

    @staticmethod
    def backward(ctx, r_out):
        (a,) = ctx.saved_tensors
        bn = ctx.fold[0] if ctx.fold else None  # a BatchNorm folded into this layer after its call
        return _relevance_in(ctx.module, ctx.rule, a.detach(), r_out, bn), None, None, None, None


class _ScaleByOutput(torch.autograd.Function):
    """Forward: the model's output as it is. Backward: the incoming one-hot gradient times the
    output, so the relevance that starts the propagation is ``f_t(x)`` at the target."""

    @staticmethod
    def forward(ctx, out):
        ctx.save_for_backward(out)
        return out.clone()

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


# --------------------------------------------------------------------------------------------------
# the explainer


def _as_rule(value, name: str, defaults: dict) -> Rule:
    if isinstance(value, Rule):
        return value
    if isinstance(value, str):
        return Rule(check_option(value, name, RULES), **defaults)
    raise TypeError(f"{name} must be a rule name ({', '.join(RULES)}) or a featurelens.explainers.lrp.Rule; "
                    f"got {type(value).__name__}")


@register("lrp")
class LRP(Explainer):
    """Layer-wise relevance propagation: the output ``f_t(x)`` is redistributed layer by layer down
    to the inputs; for a layer ``z_k = sum_j a_j w_jk + b_k`` (dense or convolution):

    - ``"epsilon"``: ``R_j = sum_k a_j w_jk / (z_k + eps sign z_k) R_k`` (eps -> 0: LRP-0);
    - ``"gamma"``: ``w -> w + gamma w+``, ``b -> b + gamma b+`` in numerator and denominator;
    - ``"alpha_beta"``: ``R_j = sum_k [alpha (a_j w_jk)+ / z+_k - beta (a_j w_jk)- / z-_k] R_k`` with
      ``alpha - beta = 1`` (default alpha 1, beta 0: the z+ rule, also ``"zplus"``); the products
      are split by sign, so inputs of either sign are handled (and bias+ / bias- join z+ / z-);
    - ``"flat"``: ``R_j = sum_k R_k / |receptive field of k|``; ``"w_square"``: weights ``w_jk^2``;
    - ``"zbox"`` (z^B, input layer, bounds ``l <= x <= h``): numerator
      ``x_j w_jk - l_j w+_jk - h_j w-_jk``, denominator its sum over ``j``;
    - ``"pass"``: relevance passes unchanged.

    Every stabiliser adds ``eps sign(z)`` (sign(0) = 1), ``eps = epsilon``. Pooling (max, average,
    adaptive) gets the epsilon rule on its own forward (Captum's default). BatchNorm (eval mode)
    that directly follows a dense/conv layer is folded into it in the composites other than
    ``"epsilon"`` (zennit's canonizer: the layer's rule acts on the merged weights); in
    ``"epsilon"``, and for any other BatchNorm, it gets the epsilon rule on its own forward
    (Captum's default), which for a preceding epsilon-rule layer equals folding up to ``eps``
    (the layer's output cancels out). Activations (ReLU, GELU, SiLU, Tanh, ...), Dropout,
    Flatten, Unflatten and Identity pass relevance unchanged: where Captum raises a TypeError for
    ``nn.Flatten`` and ``nn.GELU``, featurelens passes the relevance through them (zennit's "Pass").
    Other leaf modules are refused at construction unless ``rules`` names them. Residual additions
    (``a + b``, ``torch.add``, ``+=``, ``Add``, Captum's ``Addition_Module``) split the relevance
    of the sum by the z-rule, ``R_a = a R / stab(a + b)`` (where Captum copies the relevance of a
    plain ``+`` to both branches); concatenations (``torch.cat``, ``Concat``) split it by slices.

    Networks as torchvision writes them (ResNet, DenseNet) need no change: a module called several
    times in one forward pass gets its rule at each call, an in-place activation runs on a copy of
    its input, and a functional activation or pooling in a ``forward`` gets the rule its module
    would (``functional=True``, the default): ``F.relu``, ``torch.relu``, ``x.relu()`` /
    ``x.relu_()``, ``F.gelu``, ``F.silu``, ``torch.sigmoid``, ``torch.tanh`` and the other
    elementwise activations of the module list above pass the relevance unchanged (Bach et al.
    2015, Montavon et al. 2019 write each rule for a linear map followed by its activation, so the
    relevance of the activation's output is that of its input), and ``F.max_pool*d``,
    ``F.avg_pool*d``, ``F.adaptive_avg_pool*d`` / ``F.adaptive_max_pool*d`` get the epsilon rule
    on the call, as their modules. The values then
    equal those of the same network with a distinct module at each call site
    (tests/explainers/test_reused_modules.py). ``functional=False`` leaves functional calls their
    gradient (a ReLU's mask; a pool's gradient, which splits an average pool's relevance evenly
    instead of in proportion to its inputs). Calls inside a hooked module (``nn.ReLU.forward``
    calls ``F.relu``) are the module's; other functional operations (``x.view``, ``a * b``,
    ``F.linear``) keep their gradient, which is the right propagation for reshapes only (a ViT's
    attention and LayerNorm have no rule here: LayerNorm is refused unless ``rules`` names it).
    Captum refuses reused modules. The propagation starts from ``f_t(x)``, so for a bias-free ReLU
    network and ``epsilon -> 0`` the relevance sums to ``f_t(x)`` (conservation); each
    explanation's params hold ``conservation_gap = sum(R) - f_t(x)`` per sample.

    ``composite`` presets (the input layer is the first dense/conv layer the forward calls):
    ``"epsilon"`` (every dense/conv layer; equals Captum's ``LRP`` with its default rules),
    ``"epsilon_plus_flat"`` (zennit's EpsilonPlusFlat: flat on the input layer, z+ on
    convolutions, epsilon on dense layers), ``"epsilon_gamma_box"`` (zennit's EpsilonGammaBox: z^B
    on the input layer with bounds ``low``/``high``, gamma on convolutions, epsilon on dense layers)
    and ``"alpha_beta"`` (alpha-beta with ``alpha``/``beta`` on every dense/conv layer).
    ``rules={layer_name: rule}`` overrides any layer by its name in ``model.named_modules()``
    (a rule name or a ``Rule``).

    ``low``/``high`` (z^B): numbers or arrays shaped like one input; None: each sample's own
    minimum and maximum. Only raw outputs are explained (relevance of a softmax is not defined by
    these rules). Unlike Captum's weight-modifying gamma and alpha1-beta0 rules (which equal the
    paper's only for non-negative inputs), these act on the products ``a_j w_jk``.

    Checked in tests/explainers/test_lrp.py: equal to Captum 0.9's ``LRP`` with its default rules
    to rounding (1e-16) on an MLP and a CNN with BatchNorm, max and adaptive average pooling; equal
    to zennit 0.5.1's ``EpsilonPlusFlat`` / ``EpsilonGammaBox`` (``epsilon=1e-6``) to 3e-8 on that
    CNN (that test skips without zennit).
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    requires = Requires(gradients=True, hooks="rules")  # refused for TorchScript (Requires.hooks)
    outputs = ("raw",)

    def __init__(self, model, composite: str = "epsilon", rules: dict | None = None, epsilon: float = 1e-9,
                 gamma: float = 0.25, alpha: float = 1.0, beta: float = 0.0, low=None, high=None,
                 batch_size: int | None = None, functional: bool = True):
        super().__init__(model, batch_size)
        self.functional = check_bool(functional, "functional")
        module = self.model.module
        if module is None:
            raise TypeError(f"lrp needs model to be a torch.nn.Module (it propagates relevance through its "
                            f"layers); got a {type(self.model.function).__name__}")
        self.composite = check_option(composite, "composite", COMPOSITES)
        self.epsilon = check_float(epsilon, "epsilon", low=0.0)
        for name, value in (("low", low), ("high", high)):
            if value is not None:
                arr = np.asarray(value, dtype=np.float64)
                if not np.isfinite(arr).all():
                    raise ValueError(f"{name} must be finite numbers (bounds of the inputs for the zbox rule)")
        self.low, self.high = low, high
        # Rule validates gamma, alpha and beta (alpha - beta = 1) once here.
        base = Rule("epsilon", epsilon=self.epsilon, gamma=gamma, alpha=alpha, beta=beta, low=low, high=high)
        self.gamma, self.alpha, self.beta = base.gamma, base.alpha, base.beta
        defaults = {"epsilon": self.epsilon, "gamma": self.gamma, "alpha": self.alpha, "beta": self.beta,
                    "low": low, "high": high}
        self._defaults = defaults
        if rules is None:
            rules = {}
        if not isinstance(rules, dict):
            raise TypeError(f"rules must be a dict {{layer name: rule}}; got {type(rules).__name__}")
        names = dict(module.named_modules())
        self.rules = {}
        for name, value in rules.items():
            if name not in names:
                raise ValueError(f"rules names layer {name!r}, which is not in the model; its layers: "
                                 f"{', '.join(n for n in names if n)}")
            rule = _as_rule(value, f"rules[{name!r}]", defaults)
            if not isinstance(names[name], _LINEAR) and rule.kind in ("gamma", "alpha_beta", "zbox", "w_square"):
                raise ValueError(f"rules[{name!r}]: rule {rule.kind!r} needs a dense or convolution layer; "
                                 f"{name} is a {type(names[name]).__name__} (use 'epsilon', 'flat' or 'pass')")
            self.rules[name] = rule
        self._leaves = []  # (name, module) of every leaf module that gets a hook
        for name, m in module.named_modules():
            if len(list(m.children())) and name not in self.rules:
                continue
            if _is_two_input_module(m) and name not in self.rules:
                continue  # its additions and concatenations get the functional rules
            if name in self.rules or isinstance(m, _LINEAR + _EPSILON_ONLY + _PASS):
                self._leaves.append((name, m))
            else:
                raise TypeError(
                    f"lrp has no rule for layer {name or '(the model)'!r} of type {type(m).__name__}; pass "
                    f"rules={{{name!r}: 'pass'}} (relevance through unchanged, for elementwise maps) or "
                    f"'epsilon' (proportional to the layer's gradient x input)"
                )

    def params(self):
        return {**super().params(), "composite": self.composite, "epsilon": self.epsilon, "gamma": self.gamma,
                "alpha": self.alpha, "beta": self.beta, "functional": self.functional,
                "rules": {k: v.describe() for k, v in self.rules.items()}}

    def _rule_for(self, name: str, module, first: bool) -> Rule:
        """The rule of one call of a leaf module (``first``: the forward's first dense/conv layer)."""
        if name in self.rules:
            return self.rules[name]
        d = self._defaults
        if isinstance(module, _PASS):
            return Rule("pass")
        if not isinstance(module, _LINEAR):
            return Rule("epsilon", epsilon=self.epsilon)
        conv = isinstance(module, _CONV)
        c = self.composite
        if c == "epsilon":
            return Rule("epsilon", **d)
        if c == "alpha_beta":
            return Rule("alpha_beta", **d)
        if first:
            return Rule("flat" if c == "epsilon_plus_flat" else "zbox", **d)
        if not conv:
            return Rule("epsilon", **d)
        if c == "epsilon_plus_flat":
            return Rule("alpha_beta", **{**d, "alpha": 1.0, "beta": 0.0})
        return Rule("gamma", **d)  # epsilon_gamma_box

    @contextlib.contextmanager
    def _hooked(self):
        """Forward hooks that route every leaf module's output through its rule, acting only on
        this thread's passes (the threads of a row-parallel explain share the module); removed in
        ``finally``."""
        me = threading.get_ident()
        state = {"first_done": False}
        fold_bn = self.composite != "epsilon"
        root = self.model.module

        def pre_root(module, args):
            if threading.get_ident() == me:
                state["first_done"] = False  # a new forward: its first dense/conv layer is the input layer
                state["forward"] = True  # additions in the forward get the z-rule (_AdditionRule)

        kept = {}  # in-place modules: their input, kept whole (the module runs on a copy)

        def pre_inplace(module, args):
            if threading.get_ident() != me or not args or not is_tensor(args[0]):
                return None
            kept[module] = args[0]
            return (args[0].clone(),) + tuple(args[1:])

        def make_hook(name):
            def hook(module, args, out):
                if threading.get_ident() != me or not is_tensor(out):
                    kept.pop(module, None)
                    return None
                if module in kept:  # an in-place activation: its rule reads the input it was given
                    args = (kept.pop(module),) + tuple(args[1:])
                if len(args) != 1 or not is_tensor(args[0]):
                    if name in self.rules and self.rules[name].kind == "pass":
                        return None  # several inputs: its own additions / concatenations carry the rules
                    raise ValueError(
                        f"lrp: layer {name!r} ({type(module).__name__}) takes {len(args)} inputs and has a rule "
                        "for one; a module that adds or concatenates its inputs can be "
                        "featurelens.explainers.lrp.Add / Concat, a + b / torch.cat in the forward, or "
                        f"rules={{{name!r}: 'pass'}} (its additions and concatenations get their LRP rules)")
                linear = isinstance(module, _LINEAR)
                first = linear and not state["first_done"]
                state["first_done"] = state["first_done"] or linear
                last = state.pop("last_linear", None)
                if (fold_bn and isinstance(module, _BATCHNORM) and name not in self.rules and last is not None
                        and last[0] is args[0] and not module.training and module.running_var is not None):
                    # The BatchNorm is merged into the dense/conv layer whose output it normalises
                    # (zennit's canonizer): that layer's rule sees the merged weights and the
                    # relevance at the BatchNorm's output, which passes to it unchanged.
                    last[1].append(module)
                    rule = Rule("pass")
                else:
                    rule = self._rule_for(name, module, first)
                holder = []
                result = _Relevance.apply(args[0], out.detach(), module, rule, holder)
                if linear and name not in self.rules:
                    state["last_linear"] = (result, holder)
                return result

            return hook

        def post_root(module, args, out):
            if threading.get_ident() != me:
                return None
            state["forward"] = False
            if not is_tensor(out):
                return None
            self._seen_outputs.append(out.detach())
            return _ScaleByOutput.apply(out)

        def functional_rule(call):
            # A functional activation or pooling of the forward gets the rule its module would:
            # elementwise activations pass the relevance, pooling gets the epsilon rule on the call.
            elementwise = call.kind in ELEMENTWISE
            rule = Rule("pass") if elementwise else Rule("epsilon", epsilon=self.epsilon)
            a = call.x.clone() if call.inplace else call.x  # in place: the call writes into x after
            y = call.run(a)
            return call.finish(_Relevance.apply(a, y.detach(), None if elementwise else _FunctionalLayer(call),
                                                rule, []))

        handles = []
        additions = _AdditionRule(self.epsilon, lambda: state.get("forward", False) and threading.get_ident() == me)
        functional = (FunctionalRules(root, [m for _, m in self._leaves], ELEMENTWISE + POOLING, functional_rule)
                      if self.functional else contextlib.nullcontext())
        try:
            handles.append(root.register_forward_pre_hook(pre_root))
            for name, m in self._leaves:
                if getattr(m, "inplace", False) is True:
                    handles.append(m.register_forward_pre_hook(pre_inplace))
                handles.append(m.register_forward_hook(make_hook(name)))
            handles.append(root.register_forward_hook(post_root))  # last: after a leaf root's own rule
            with additions, functional:  # this thread's torch function mode stack only
                yield
        finally:
            state["forward"] = False
            for h in handles:
                h.remove()

    def _attribute(self, x, target, outputs):
        self._seen_outputs = []  # the model's outputs on each chunk of the gradient pass, in order
        try:
            with self._hooked():
                relevance = self.model.gradient(x, target)
            if outputs is None:
                seen = torch.cat(self._seen_outputs) if self._seen_outputs else None
                outputs = seen if seen is not None and seen.shape[0] == x.shape[0] else self.model.predict(x)
        finally:
            self._seen_outputs = []
        f_t = outputs.gather(1, target[:, None]).squeeze(1).double()
        gap = relevance.flatten(1).double().sum(1) - f_t
        return relevance, {"conservation_gap": gap.cpu().tolist()}

    row_params = frozenset({"base_values", "conservation_gap"})
