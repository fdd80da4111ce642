"""Modified-backward gradient attributions: guided backpropagation, deconvolution, and GradientSHAP
(expected gradients with noise).

Guided backprop and deconvolution change only the backward rule of ReLUs: ``torch.nn.ReLU``
modules, by forward hooks that route each ReLU's output through a small autograd function (at each
call of a module called several times per pass, as torchvision's shared ``ReLU(inplace=True)``),
and functional ReLUs in a ``forward`` (``F.relu``, ``torch.relu``, ``x.relu_()``), by a torch
function mode active during the model's forward; the hooks are removed in a ``finally`` block, so
the model is unchanged afterwards. GradientSHAP is an expanded
gradient pass (:meth:`featurelens.models.Model.expanded_gradient`) over random points between the
input and baselines drawn from a background.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

import numpy as np
from featurelens._optional import torch

from .._random import RowNormal, parse_seed, row_draws
from .._validation import check_bool, check_float, check_int, check_option, relative_scale
from .._budgets import check_budget
from ..games import split_background
from ._base import Explainer, Requires, register
from ._functional_rules import FunctionalRules

# --------------------------------------------------------------------------------------------------
# guided backprop and deconvolution


class _GuidedReLU(torch.autograd.Function):
    """ReLU forward; backward ``g * 1[x > 0] * 1[g > 0]`` (Springenberg et al. 2015)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.clamp(min=0) * (x > 0).to(grad.dtype)


class _DeconvReLU(torch.autograd.Function):
    """ReLU forward; backward ``max(g, 0)``, ignoring the forward mask (Zeiler & Fergus 2014)."""

    @staticmethod
    def forward(ctx, x):
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        return grad.clamp(min=0)


class ReLUBackprop(Explainer):
    """Shared machinery: the gradient of the target output with every ``torch.nn.ReLU`` module's
    backward rule replaced by ``_rule`` for the duration of one call.

    Every ReLU of the forward pass is modified: ``torch.nn.ReLU`` modules at each call (a module
    called several times, as torchvision's ``BasicBlock`` calls its one ``ReLU(inplace=True)``),
    and with ``functional=True`` (the default) the functional ReLUs of a ``forward``
    (``F.relu``, ``torch.relu``, ``x.relu()``, ``x.relu_()``, in place or not), which get the rule
    of a ReLU module: the values equal those of the same network with a distinct ``nn.ReLU`` at
    every call site (tests/explainers/test_reused_modules.py). Captum modifies modules only and
    refuses a reused one; ``functional=False`` reproduces that (functional ReLUs keep their
    gradient, and a model without a ReLU module gets a warning at construction). Other
    activations (``x.clamp(min=0)``, GELU) keep their ordinary gradient; a pass that ran no ReLU at
    all gives the plain gradient (saliency), with one warning. In-place ReLUs work: the hook keeps
    the module's input by running the module on a copy.
    """

    requires = Requires(gradients=True, hooks="rules")  # refused for TorchScript (Requires.hooks)
    _rule: type[torch.autograd.Function]

    def __init__(self, model, batch_size: int | None = None, functional: bool = True):
        super().__init__(model, batch_size)
        self.functional = check_bool(functional, "functional")
        module = self.model.module
        if module is None:
            raise TypeError(
                f"{self.name} needs model to be a torch.nn.Module (it changes the backward rule of its "
                f"torch.nn.ReLU modules); got a {type(self.model.function).__name__}"
            )
        self._warned = False
        if not self.functional and not any(isinstance(m, torch.nn.ReLU) for m in module.modules()):
            self._warned = True
            warnings.warn(
                f"{self.name}: model ({type(module).__name__}) has no torch.nn.ReLU module and functional=False: "
                "functional ReLUs (torch.relu, F.relu) are not seen, so the result is the plain gradient "
                "(as Captum's, which also hooks only nn.ReLU modules)",
                UserWarning,
                stacklevel=3,
            )

    def params(self):
        return {**super().params(), "functional": self.functional}

    def relu_modules(self) -> list:
        """The ``torch.nn.ReLU`` modules whose backward rule a call replaces."""
        return [m for m in self.model.module.modules() if isinstance(m, torch.nn.ReLU)]

    def _functional_calls(self, rule):
        """The functional ReLUs of the forward (``F.relu``, ``torch.relu``, ``x.relu_()``) through
        ``rule(call)`` while entered (nothing with ``functional=False``)."""
        if not self.functional:
            return contextlib.nullcontext()
        return FunctionalRules(self.model.module, self.relu_modules(), ("relu",), rule)

    def _ran(self, seen: list) -> None:
        """Warn once when a pass ran no ReLU at all (the result is then the plain gradient)."""
        if not seen and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self.name}: the forward pass of {type(self.model.module).__name__} ran no ReLU (no "
                "torch.nn.ReLU module, no F.relu / torch.relu call), so the result is the plain gradient",
                UserWarning, stacklevel=3)

    @contextlib.contextmanager
    def _hooked(self):
        """Forward hooks on every ReLU module that replace its output by ``_rule(input)`` (same
        values, modified backward), and the same for each functional ReLU of the forward, acting
        only on this thread's passes (the threads of a row-parallel explain share the module);
        removed in ``finally``."""
        me = threading.get_ident()
        rule = self._rule
        kept = {}  # module -> its input, for in-place ReLUs (which overwrite it)
        seen = []

        def pre(module, args):
            if threading.get_ident() != me or not getattr(module, "inplace", False):
                return None
            kept[module] = args[0]
            return (args[0].clone(),) + tuple(args[1:])

        def post(module, args, out):
            if threading.get_ident() != me:
                return None
            seen.append(True)
            source = kept.pop(module) if module in kept else args[0]
            return rule.apply(source)

        def functional_rule(call):
            seen.append(True)
            return call.finish(rule.apply(call.x.clone() if call.inplace else call.x))

        handles = []
        try:
            for m in self.relu_modules():
                handles.append(m.register_forward_pre_hook(pre))
                handles.append(m.register_forward_hook(post))
            with self._functional_calls(functional_rule):
                yield seen  # one entry per ReLU call of this thread's passes
        finally:
            for h in handles:
                h.remove()

    def _attribute(self, x, target, outputs):
        with self._hooked() as seen:
            grad = self.model.gradient(x, target)
        self._ran(seen)
        return grad, {}


@register("guided_backprop")
class GuidedBackprop(ReLUBackprop):
    """Guided backpropagation: the input gradient of ``f_t`` with each ReLU's backward rule
    ``g_in = g_out * 1[x > 0] * 1[g_out > 0]`` (only positive gradients through positive inputs).

    Springenberg, Dosovitskiy, Brox, Riedmiller, "Striving for Simplicity: The All Convolutional
    Net", ICLR 2015 workshop, arXiv 1412.6806. Equal to Captum's ``GuidedBackprop`` where Captum
    runs (no reused ReLU module; with ``functional=False``, or no functional ReLU): functional ReLUs
    get the rule too by default (see ``ReLUBackprop``); the result is not multiplied by the
    input.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    _rule = _GuidedReLU

    @contextlib.contextmanager
    def _hooked(self):
        """Forward hooks on every ReLU module that register a gradient hook on its output:
        ``g -> max(g, 0)``; the ReLU's own backward then applies the mask ``1[out > 0]``
        (``= 1[x > 0]``), which gives ``_GuidedReLU``'s rule without recomputing the ReLU, saving
        its input or building a mask (in-place ReLUs need no copy either: their backward reads
        the output). Acts only on this thread's passes; the module hooks are removed in
        ``finally`` (the gradient hooks live on the outputs of that pass only)."""
        me = threading.get_ident()
        seen = []

        def clamp(grad):
            return grad.clamp(min=0)

        def post(module, args, out):
            if threading.get_ident() == me:
                seen.append(True)
                if out.requires_grad:
                    out.register_hook(clamp)

        def functional_rule(call):
            # The same for a functional ReLU: relu's own backward masks, the hook clamps g first.
            seen.append(True)
            out = call.run(call.x.clone() if call.inplace else call.x)
            if out.requires_grad:
                out.register_hook(clamp)
            return call.finish(out)

        handles = []
        try:
            for m in self.relu_modules():
                handles.append(m.register_forward_hook(post))
            with self._functional_calls(functional_rule):
                yield seen  # one entry per ReLU call of this thread's passes
        finally:
            for h in handles:
                h.remove()


@register("deconvolution")
class Deconvolution(ReLUBackprop):
    """Deconvolution (DeconvNet): the input "gradient" of ``f_t`` with each ReLU's backward rule
    ``g_in = max(g_out, 0)``, ignoring the forward mask.

    Zeiler, Fergus, "Visualizing and Understanding Convolutional Networks", ECCV 2014,
    arXiv 1311.2901. Equal to Captum's ``Deconvolution`` where Captum runs (no reused ReLU module;
    with ``functional=False``, or no functional ReLU): functional ReLUs get the rule too by default
    (see ``ReLUBackprop``); the result is not multiplied by the input.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    _rule = _DeconvReLU


# --------------------------------------------------------------------------------------------------
# GradientSHAP


class _Draws:
    """The random draws of one GradientSHAP call on a batch of ``n`` rows with ``S`` samples each:
    ``index`` (n, S) long (background rows), ``alpha`` (n, S) (points on the segments) and
    ``noise``: None or an object whose ``rows(copy, sample)`` gives standard normal rows shaped
    like the inputs for the (copy, sample) pairs of one chunk."""

    def __init__(self, index: torch.Tensor, alpha: torch.Tensor, noise=None):
        self.index, self.alpha, self.noise = index, alpha, noise


@register("gradient_shap")
class GradientShap(Explainer):
    """GradientSHAP (expected gradients with input noise):

    ``a = (1/S) sum_k (x~_k - b_k) * grad f_t(b_k + alpha_k (x~_k - b_k))``,

    with ``b_k`` drawn from the ``background`` rows (with replacement; by weight for a weighted
    background), ``alpha_k ~ U(0, 1)``, and ``x~_k = x + sigma eps_k``, ``eps_k ~ N(0, I)``,
    ``S = n_samples``. Its expectation is the expected-gradients attribution, which for a linear
    model ``f = w.x + c`` is ``w * (x - E[b])`` exactly when ``stdevs = 0`` (and in expectation
    otherwise); ``sum(a)`` approximates ``f_t(x) - E_b f_t(b)``.

    Lundberg, Lee, "A Unified Approach to Interpreting Model Predictions", NeurIPS 2017,
    arXiv 1705.07874; Erion, Janizek, Sturmfels, Lundberg, Lee, "Improving performance of deep
    learning models with axiomatic attribution priors and expected gradients", Nature Machine
    Intelligence 2021, arXiv 1906.10670. Captum's ``GradientShap`` computes the same estimator (its
    random point is written ``alpha x~ + (1 - alpha) b``); fed the same draws the two agree to
    rounding.

    ``background``: None (one all-zero baseline), rows ``(B, *input_shape)`` (one input shape
    alone is one row), a ``(rows, weights)`` pair or :func:`featurelens.games.summarize_background`.
    ``stdevs``: the noise standard deviation; ``noise="absolute"`` (default, as Captum's
    ``stdevs``) uses it as it is, ``noise="relative"`` multiplies it by each input's value range
    (as :class:`~featurelens.explainers.gradient.SmoothGrad`). ``stdevs=0`` draws no noise.

    ``seed``: None, an int or a ``numpy.random.Generator``. Row ``i`` of a call (its index in the
    whole call) draws its ``S`` background indices, then its ``S`` alphas, from
    ``SeedSequence(root, spawn_key=(i, 0))`` (``featurelens._random.row_draws``); the noise
    comes from the SmoothGrad copy streams (``featurelens._random.RowNormal``: copy ``k``
    reads ``SeedSequence(root, spawn_key=(k,))`` in row order), so a
    row's value never depends on ``batch_size``, the other rows or how the rows are split.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    accepts = frozenset({"seed"})  # the harness options it takes (see Explainer.accepts)

    def __init__(
        self,
        model,
        background=None,
        n_samples: int = 5,
        stdevs: float = 0.0,
        noise: str = "absolute",
        seed=0,
        batch_size: int | None = None,
    ):
        super().__init__(model, batch_size)
        self.n_samples = check_budget(n_samples, "n_samples", unit="model evaluations", what="per input")
        self.stdevs = check_float(stdevs, "stdevs", low=0.0)
        self.noise = check_option(noise, "noise", ("absolute", "relative"))
        self.seed = parse_seed(seed)
        self.background = background
        self._bg_rows, self._bg_weights = (None, None) if background is None else split_background(background)
        # Validated now (NaN, dtype, emptiness), so a bad background fails at construction.
        self._bg = None if self._bg_rows is None else self.model.to_tensor(self._bg_rows, "background")

    def params(self):
        p = {
            **super().params(),
            "n_samples": self.n_samples,
            "stdevs": self.stdevs,
            "noise": self.noise,
            **self.seed_params(),
            "n_background": 1 if self._bg is None else int(self._bg.shape[0]),
        }
        return p

    def _background(self, x: torch.Tensor) -> torch.Tensor:
        """The background rows ``(B, *x.shape[1:])`` on x's device and dtype."""
        if self._bg is None:
            return torch.zeros((1,) + tuple(x.shape[1:]), device=x.device, dtype=x.dtype)
        bg = self._bg
        if tuple(bg.shape[1:]) != tuple(x.shape[1:]):
            if tuple(bg.shape) == tuple(x.shape[1:]):  # one input: a single background row
                bg = bg[None]
            else:
                raise ValueError(
                    f"background rows must be shaped like one input {tuple(x.shape[1:])}, as "
                    f"(B, {', '.join(map(str, x.shape[1:]))}); got shape {tuple(bg.shape)}"
                )
        return bg.to(device=x.device, dtype=x.dtype)

    def _draws(self, x: torch.Tensor, n_background: int) -> _Draws:
        """This batch's draws (see the class docstring for the streams)."""
        n, s = x.shape[0], self.n_samples
        p = None if self._bg_weights is None else np.asarray(self._bg_weights, dtype=np.float64)
        if p is not None:
            p = p / p.sum()
        index, alpha = row_draws(self._stream_root, self._row_start, n, s, n_background, p)
        noise = None
        if self.stdevs > 0:
            noise = RowNormal(self._stream_root, self._row_start, x, s)
        return _Draws(torch.from_numpy(index).to(x.device),
                      torch.from_numpy(alpha).to(device=x.device, dtype=x.dtype), noise)

    def _sigma(self, x: torch.Tensor) -> torch.Tensor:
        view = (-1,) + (1,) * (x.ndim - 1)
        if self.noise == "absolute":
            return torch.full((x.shape[0],), self.stdevs, device=x.device, dtype=x.dtype).view(view)
        return (self.stdevs * relative_scale(x)).view(view)

    def _attribute(self, x, target, outputs):
        bg = self._background(x)
        draws = self._draws(x, bg.shape[0])
        sigma = self._sigma(x)
        view = (-1,) + (1,) * (x.ndim - 1)
        held = []  # the chunk's (x~ - b), read by the transform right after its gradient
        n = x.shape[0]
        shape = tuple(x.shape[1:])

        def points(copy, sample):
            m = sample.shape[0]
            if draws.noise is None and n and m % n == 0 and int(sample[0]) == 0:
                # Whole copies (expanded_gradient's chunks are contiguous, expansion-major): x is
                # broadcast over the copies instead of gathered, alpha read as a block. The same
                # points, element for element.
                first, k = int(copy[0]), m // n
                b = bg[draws.index[:, first : first + k].T.reshape(-1)].view(k, n, *shape)
                delta = x[None] - b
                alpha = draws.alpha[:, first : first + k].T.reshape(k, n, *((1,) * len(shape)))
                delta = delta.view(m, *shape)
                held[:] = [delta]
                return b.view(m, *shape) + alpha.reshape(view) * delta
            xs = x[sample]
            if draws.noise is not None:
                xs = xs + draws.noise.rows(copy, sample) * sigma[sample]
            b = bg[draws.index[sample, copy]]
            delta = xs - b
            held[:] = [delta]
            return b + draws.alpha[sample, copy].view(view) * delta

        def times_delta(grad):
            return grad * held[0]

        total = self.model.expanded_gradient(x, target, self.n_samples, points, transform=times_delta)
        return total / self.n_samples, {}
