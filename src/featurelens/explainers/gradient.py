"""Gradient attributions: saliency, input x gradient, integrated gradients, SmoothGrad, GradCAM,
and the seeded random map that every method must beat.

All of them reduce to batched input gradients from :class:`featurelens.models.Model`; expansions
(IG path points, noise samples) are built chunk by chunk and never materialised whole.
"""

from __future__ import annotations

import threading

import numpy as np
from featurelens._optional import is_tensor, torch
import torch.nn.functional as F

from .._batching import chunks
from .._random import RowNormal, parse_seed, root_seed
from .._validation import check_bool, check_float, check_option, relative_scale
from .._budgets import check_budget
from ._base import Explainer, Requires, register
from ._requires import conv_types


#: Rows per chunk of the gradient passes of this module (saliency, input x gradient, integrated
#: gradients, SmoothGrad, Grad-CAM) are at least this many when no batch_size was given. The
#: automatic chunks (``Model.chunk_rows``: at most 2**19 input elements) keep each chunk's
#: activations small; on 3x224x224 images they hold 3 rows, and a convolution over 3 rows runs
#: slower per row than over 8 (ResNet-18: one pass over 8 images in chunks of 3, 3 and 2 took
#: about 1.15x the time of one pass of 8; benchmarks/bench_scale.py). Inputs under 2**16 elements
#: (3x147x147) are not affected: their automatic chunks already hold 8 rows or more.
GRADIENT_MIN_ROWS = 8


def gradient_rows(model, x) -> int | None:
    """Rows per chunk of a gradient pass over ``x`` (or over expanded copies of it): None when the
    Model has a ``batch_size`` of its own (the Model's passes read it), else its automatic chunk
    size but at least :data:`GRADIENT_MIN_ROWS` rows.

    Parameters
    ----------
    model : featurelens.models.Model
        The explainer's Model.
    x : torch.Tensor
        The batch whose input gradients are taken.

    Returns
    -------
    int or None
        The rows per chunk, or None to use the Model's ``batch_size``.

    Examples
    --------
    >>> import torch
    >>> from featurelens.models import Model
    >>> m = Model(torch.nn.Linear(3 * 224 * 224, 2))
    >>> m.chunk_rows(torch.zeros(8, 3 * 224 * 224)), gradient_rows(m, torch.zeros(8, 3 * 224 * 224))
    (3, 8)
    >>> gradient_rows(m, torch.zeros(2, 3 * 224 * 224))  # 8 rows: 4 IG steps of 2 images per chunk
    8
    >>> gradient_rows(m, torch.zeros(8, 3 * 32 * 32))  # small inputs: the automatic size
    170
    >>> gradient_rows(Model(torch.nn.Linear(4, 2), batch_size=2), torch.zeros(8, 4)) is None
    True
    """
    if not model.auto_batch:
        return None
    return max(model.chunk_rows(x), GRADIENT_MIN_ROWS)


@register("saliency")
class Saliency(Explainer):
    """Saliency: the signed input gradient ``a = d f_t(x) / d x``.

    Simonyan, Vedaldi, Zisserman, "Deep Inside Convolutional Networks", 2013, arXiv 1312.6034.
    Unlike Captum (``abs=True`` by default) the raw signed gradient is the default; ``abs=True``
    returns ``|d f_t / d x|``. ``Explanation.extra["outputs"]``: the model's outputs on ``x`` from
    the same forward pass.
    """

    audit_order = 0
    benchmark_order = 0
    target_in_pass = True  # its passes check the target (Model.pick): no one-row target pass

    def __init__(self, model, abs: bool = False, batch_size: int | None = None):
        super().__init__(model, batch_size)
        self.abs = check_bool(abs, "abs")

    def params(self):
        return {**super().params(), "abs": self.abs}

    def _attribute(self, x, target, outputs):
        grad, out = self.model.gradient(x, target, batch_size=gradient_rows(self.model, x), outputs=True)
        return (grad.abs() if self.abs else grad), {"arrays": {"outputs": out}}


@register("input_x_gradient")
class InputXGradient(Explainer):
    """Input x gradient: ``a = x * d f_t(x) / d x`` (elementwise).

    Shrikumar, Greenside, Shcherbina, Kundaje, "Not Just a Black Box", 2016, arXiv 1605.01713.
    For a linear model ``f(x) = w.x + b`` this is ``w * x``, which sums to ``f(x) - b``.
    ``Explanation.extra["outputs"]``: the model's outputs on ``x`` from the same forward pass.
    """

    audit_order = 1
    benchmark_order = 1
    target_in_pass = True

    def _attribute(self, x, target, outputs):
        grad, out = self.model.gradient(x, target, batch_size=gradient_rows(self.model, x), outputs=True)
        return x * grad, {"arrays": {"outputs": out}}


_IG_RULES = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")
#: The most Gauss-Legendre nodes: numpy's ``leggauss`` solves an n x n eigenproblem (O(n^3), about
#: 1 s at 2,000 nodes and 25 s at 4,000); a Riemann rule takes up to MAX_EVALUATIONS steps.
MAX_GAUSS_LEGENDRE_STEPS = 2048


def integration_rule(method: str, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``alpha`` in [0, 1] and weights ``w`` with ``sum_k w_k g(alpha_k) ~ int_0^1 g``.

    ``gausslegendre`` maps the Legendre nodes from [-1, 1] to [0, 1]; the Riemann rules use
    ``n_steps`` equal intervals (left, right, middle points) or the trapezoid rule on
    ``n_steps`` points. ``riemann`` is an alias of ``riemann_trapezoid``. ``n_steps`` (model
    evaluations per input) is refused before any work above
    ``featurelens._budgets.MAX_EVALUATIONS`` (10^8), and above
    :data:`MAX_GAUSS_LEGENDRE_STEPS` (2,048) for ``gausslegendre``.
    """
    method = check_option(method, "method", _IG_RULES + ("riemann",))
    if method == "riemann":
        method = "riemann_trapezoid"
    n_steps = check_budget(n_steps, "n_steps", unit="model evaluations", what="per input",
                           nbytes=lambda v: 16 * v, hint="lower n_steps (50 to 300 nodes are usual)")
    if method == "gausslegendre":
        check_budget(n_steps, "n_steps", unit="Gauss-Legendre nodes", limit=MAX_GAUSS_LEGENDRE_STEPS,
                     source="featurelens.explainers.gradient.MAX_GAUSS_LEGENDRE_STEPS: numpy's leggauss is O(n^3)",
                     hint="lower n_steps, or use method='riemann_trapezoid' for more steps")
        nodes, weights = np.polynomial.legendre.leggauss(n_steps)
        return 0.5 * (nodes + 1.0), 0.5 * weights
    if method == "riemann_trapezoid":
        if n_steps < 2:
            raise ValueError(f"n_steps must be at least 2 for the trapezoid rule; got {n_steps}")
        alphas = np.linspace(0.0, 1.0, n_steps)
        weights = np.full(n_steps, 1.0 / (n_steps - 1))
        weights[[0, -1]] *= 0.5
        return alphas, weights
    offset = {"riemann_left": 0.0, "riemann_right": 1.0, "riemann_middle": 0.5}[method]
    return (np.arange(n_steps) + offset) / n_steps, np.full(n_steps, 1.0 / n_steps)


@register("integrated_gradients")
class IntegratedGradients(Explainer):
    """Integrated gradients along the straight path from a baseline ``x'`` to ``x``:

    ``a_i = (x_i - x'_i) * int_0^1 d f_t(x' + alpha (x - x')) / d x_i  d alpha``,

    with the integral by Gauss-Legendre (default, as Captum) or a Riemann rule on ``n_steps`` nodes.
    Completeness says ``sum_i a_i = f_t(x) - f_t(x')``; each explanation's params hold the gap
    ``sum(a) - (f(x) - f(x'))`` per sample (``completeness_gap``) and its largest relative value
    (``max_relative_gap``, relative to ``|f(x) - f(x')|``).

    Sundararajan, Taly, Yan, "Axiomatic Attribution for Deep Networks", ICML 2017, arXiv 1703.01365.

    ``baseline``: None (zeros), a scalar, an array shaped like one input or like the batch; it can
    also be passed to ``explain`` for one call.
    """

    audit_order = 2
    benchmark_order = 2
    accepts = frozenset({"baseline"})  # the harness options it takes (see Explainer.accepts)
    target_in_pass = True  # the path passes check the target (Model.pick) before the completeness pass
    # A row-parallel explain (explain(x, executor=...)) joins the parts' diagnostics.
    row_params = frozenset({"base_values", "completeness_gap"})
    param_reductions = {"max_relative_gap": max}

    def __init__(
        self,
        model,
        n_steps: int = 50,
        method: str = "gausslegendre",
        baseline=None,
        batch_size: int | None = None,
    ):
        super().__init__(model, batch_size)
        self.alphas, self.weights = integration_rule(method, n_steps)
        self.n_steps = int(n_steps)
        self.method = "riemann_trapezoid" if method == "riemann" else method
        self.baseline = baseline

    def params(self):
        return {**super().params(), "n_steps": self.n_steps, "method": self.method}

    def _path_gradient(self, x, target, baseline=None):
        """``(base, delta, avg_grad)``: the baseline broadcast to ``x``, ``x - base`` and the
        quadrature of the gradient along the straight path (one expanded, chunked gradient pass)."""
        base = self._resolve_baseline(x, baseline)
        delta = x - base
        alphas = torch.as_tensor(self.alphas, device=x.device, dtype=x.dtype)
        weights = torch.as_tensor(self.weights, device=x.device, dtype=x.dtype)
        view = (-1,) + (1,) * (x.ndim - 1)

        def path_points(step, sample):
            return base[sample] + alphas[step].view(view) * delta[sample]

        avg_grad = self.model.expanded_gradient(x, target, self.n_steps, path_points, weights=weights,
                                                batch_size=gradient_rows(self.model, x))
        return base, delta, avg_grad

    def _completeness(self, x, target, outputs, base, total, baseline=None) -> dict:
        """The completeness diagnostic: ``total - (f(x) - f(base))`` per sample, where ``total`` is
        the attributions' sum. Extra forward rows for x (unless known) and the baseline go in one
        call; a baseline shared by all samples (zeros, a scalar, one input) is evaluated once."""
        n = x.shape[0]
        base_rows = base[:1] if bool((base == base[:1]).all()) else base
        if outputs is None:
            f_both = self.model.predict(torch.cat([x, base_rows]))
            f_x, f_b = f_both[:n], f_both[n:]
        else:
            f_x, f_b = outputs, self.model.predict(base_rows)
        f_b = f_b.expand(n, -1)
        idx = target[:, None]
        change = (f_x.gather(1, idx) - f_b.gather(1, idx)).squeeze(1).double()
        gap = total - change
        relative = gap.abs() / change.abs().clamp_min(1e-12)
        return {
            "completeness_gap": gap.cpu().tolist(),
            "max_relative_gap": float(relative.max()),
            "base_values": f_b.gather(1, idx).squeeze(1).double().cpu().tolist(),  # f(baseline): Explanation.base_values
        }

    def _attribute(self, x, target, outputs, baseline=None):
        base, delta, avg_grad = self._path_gradient(x, target, baseline)
        attributions = delta * avg_grad
        total = attributions.flatten(1).double().sum(1)
        return attributions, self._completeness(x, target, outputs, base, total, baseline)


_SMOOTHGRAD_VARIANTS = ("mean", "square", "var")


@register("smoothgrad")
class SmoothGrad(Explainer):
    """SmoothGrad: the gradient averaged over noisy copies of the input,

    ``a = (1/n) sum_k grad f_t(x + eps_k)``, ``eps_k ~ N(0, sigma^2)``, with
    ``sigma = noise_level * (max(x) - min(x))`` computed **per sample** (relative to each input's
    value range, as the paper recommends; Captum's ``stdevs`` is absolute; a constant input, whose
    range is 0, gets the unit range 1: ``featurelens._validation.relative_scale``).
    ``noise="absolute"`` makes ``noise_level`` the standard deviation itself. ``variant="square"``
    averages squared gradients (SmoothGrad-Squared), ``variant="var"`` returns their variance
    (VarGrad).

    Smilkov, Thorat, Kim, Viegas, Wattenberg, "SmoothGrad: removing noise by adding noise", 2017,
    arXiv 1706.03825.

    ``seed``: None, an int or a ``numpy.random.Generator``. The noise is drawn chunk by chunk:
    noisy copy ``k`` reads the stream ``SeedSequence(root, spawn_key=(k,))`` in row order, row
    ``i`` of the call taking its elements ``[i d, (i + 1) d)`` (``featurelens._random.RowNormal``;
    ``root``: the int seed, an int drawn from a Generator once per call, fresh entropy for None,
    recorded as ``params["seed_root"]``), so the same int seed gives the same map whatever the
    ``batch_size``, the device, or how the rows are split (``explain(x, executor=...)``), and
    memory stays bounded by the chunk.
    """

    audit_order = 3
    benchmark_order = 3
    accepts = frozenset({"seed"})  # the harness options it takes (see Explainer.accepts)
    target_in_pass = True

    def __init__(
        self,
        model,
        n_samples: int = 25,
        noise_level: float = 0.15,
        noise: str = "relative",
        variant: str = "mean",
        seed=0,
        batch_size: int | None = None,
    ):
        super().__init__(model, batch_size)
        self.n_samples = check_budget(n_samples, "n_samples", unit="model evaluations", what="per input",
                                      hint="lower n_samples (Smilkov et al. use about 50)")
        self.noise_level = check_float(noise_level, "noise_level", low=0.0)
        self.noise = check_option(noise, "noise", ("relative", "absolute"))
        self.variant = check_option(variant, "variant", _SMOOTHGRAD_VARIANTS)
        self.seed = parse_seed(seed)

    def params(self):
        return {
            **super().params(),
            "n_samples": self.n_samples,
            "noise_level": self.noise_level,
            "noise": self.noise,
            "variant": self.variant,
            **self.seed_params(),
        }

    def _noise(self, x: torch.Tensor, root: int | None = None, row_start: int | None = None) -> RowNormal:
        # Inside explain: the call's root and the batch index of x's first row (Explainer.row_rng).
        root = self._stream_root if root is None else root
        row_start = self._row_start if row_start is None else row_start
        return RowNormal(root, row_start, x, self.n_samples)

    def noise_draws(self, x: torch.Tensor, first_row: int = 0) -> torch.Tensor:
        """The (n_samples, *x.shape) noise one ``explain`` call (with ``first_row``) adds to
        this batch (for inspection and tests; ``explain`` itself never builds this tensor)."""
        source = self._noise(x, root_seed(self.seed), int(first_row))
        return torch.stack([source.copy(e) for e in range(self.n_samples)]) * self.sigma(x)[None]

    def sigma(self, x: torch.Tensor) -> torch.Tensor:
        """Noise standard deviation per sample, broadcastable against ``x``."""
        view = (-1,) + (1,) * (x.ndim - 1)
        if self.noise == "absolute":
            return torch.full((x.shape[0],), self.noise_level, device=x.device, dtype=x.dtype).view(view)
        return (self.noise_level * relative_scale(x)).view(view)

    def _noisy_rows(self, x: torch.Tensor):
        """``make_rows(copy, sample)`` for :meth:`Model.expanded_gradient`: the chunk's noisy copies."""
        source, sigma = self._noise(x), self.sigma(x)

        def noisy(copy, sample):
            return x[sample] + source.rows(copy, sample) * sigma[sample]

        return noisy

    def _attribute(self, x, target, outputs):
        noisy = self._noisy_rows(x)
        n = self.n_samples
        rows = gradient_rows(self.model, x)
        if self.variant == "mean":
            return self.model.expanded_gradient(x, target, n, noisy, batch_size=rows) / n, {}
        if self.variant == "square":
            return self.model.expanded_gradient(x, target, n, noisy, transform=torch.square, batch_size=rows) / n, {}
        # VarGrad: E[g^2] - E[g]^2 from one pass over the noisy copies (g and g^2 stacked).
        both = self.model.expanded_gradient(
            x, target, n, noisy, transform=lambda g: torch.stack([g, g.square()], dim=1), batch_size=rows
        ) / n
        return both[:, 1] - both[:, 0].square(), {}


#: torch.nn.functional.interpolate's modes per spatial dimensionality of the map.
_MODES_BY_NDIM = {
    1: ("nearest", "nearest-exact", "linear", "area"),
    2: ("nearest", "nearest-exact", "bilinear", "bicubic", "area"),
    3: ("nearest", "nearest-exact", "trilinear", "area"),
}
_INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_LINEAR_FAMILY = {1: "linear", 2: "bilinear", 3: "trilinear"}


def _interpolation_mode(mode: str, ndim: int) -> str:
    """The torch mode that upsamples an ``ndim``-D map for the requested ``mode``."""
    if mode in ("linear", "bilinear", "trilinear") and ndim in _LINEAR_FAMILY:
        return _LINEAR_FAMILY[ndim]
    valid = _MODES_BY_NDIM.get(ndim, ())
    if mode not in valid:
        raise ValueError(
            f"interpolate={mode!r} cannot upsample a {ndim}-D map; expected one of "
            f"{', '.join(repr(m) for m in valid) or 'none (only 1-D to 3-D maps are upsampled)'}"
        )
    return mode


def last_conv_layer(module: torch.nn.Module) -> tuple[str, torch.nn.Module]:
    """The last convolution in registration order (usually the last one applied), with its name."""
    convs = [(name, m) for name, m in module.named_modules() if isinstance(m, conv_types())]
    if not convs:
        raise ValueError(
            f"gradcam needs a convolutional layer, and model ({type(module).__name__}) has none; "
            "pass layer= a module whose output is a (n, channels, *spatial) feature map, "
            "or use another explainer"
        )
    return convs[-1]


@register("gradcam")
class GradCAM(Explainer):
    """Grad-CAM: a class activation map from a convolutional layer's feature maps ``A_k``,

    ``L = ReLU(sum_k alpha_k A_k)``, ``alpha_k = mean over positions of d f_t / d A_k``,

    upsampled to the input's spatial size (bilinear by default) and returned with shape
    ``(n, 1, *input spatial)``. Selvaraju et al., ICCV 2017, arXiv 1610.02391.

    ``layer``: a module of the model or its name (``model.named_modules()``); default the last
    convolution. ``relu=True`` follows the paper (Captum's default is ``relu_attributions=False``);
    ``relu=False`` keeps the negative evidence. ``interpolate`` is a torch interpolation mode valid
    for the map's dimensionality (1-D: nearest, nearest-exact, linear, area; 2-D: nearest,
    nearest-exact, bilinear, bicubic, area; 3-D: nearest, nearest-exact, trilinear, area); the
    linear family ("linear", "bilinear", "trilinear") is matched to the map, so the default
    "bilinear" also upsamples 1-D and 3-D maps.

    Frozen weights (``requires_grad=False`` everywhere) work: when the layer's activation carries
    no gradient, the hook hands the rest of the network a copy that requires one (the model's flags
    are not touched); otherwise the activation is used as it is and the input needs no gradient.
    """

    audit_order = 4
    benchmark_order = 4
    requires = Requires(gradients=True, conv_layer=True, hooks="layer")
    target_in_pass = True  # its pass checks the target (Model.pick)

    def __init__(
        self,
        model,
        layer=None,
        relu: bool = True,
        interpolate: str = "bilinear",
        batch_size: int | None = None,
    ):
        super().__init__(model, batch_size)
        module = self.model.module
        if module is None:
            raise TypeError("gradcam needs model to be a torch.nn.Module (it hooks a layer)")
        if layer is None:
            self.layer_name, self.layer = last_conv_layer(module)
        elif isinstance(layer, str):
            named = dict(module.named_modules())
            if layer not in named:
                raise ValueError(f"layer {layer!r} is not a submodule name of the model; "
                                 f"names include: {', '.join(list(named)[1:8])}")
            self.layer_name, self.layer = layer, named[layer]
        elif isinstance(layer, torch.nn.Module):
            name = next((n for n, m in module.named_modules() if m is layer), None)  # stops at the layer
            if name is None:
                raise ValueError("layer must be a submodule of the model")
            self.layer_name, self.layer = name, layer
        else:
            raise TypeError(f"layer must be None, a module name or a torch.nn.Module; got {type(layer).__name__}")
        self.relu = check_bool(relu, "relu")
        self.interpolate = check_option(interpolate, "interpolate", _INTERPOLATE_MODES)

    def params(self):
        return {**super().params(), "layer": self.layer_name, "relu": self.relu, "interpolate": self.interpolate}

    def _attribute(self, x, target, outputs):
        maps = []
        captured = []
        # Only this thread's passes: the threads of a row-parallel explain share the module.
        me = threading.get_ident()

        def hook(mod, inp, out):
            if threading.get_ident() != me:
                return None
            if is_tensor(out) and not out.requires_grad:
                # Every weight up to the layer frozen (Captum's test_simple_input_conv_no_grad):
                # the rest of the network runs on a copy that requires grad, so d f / d A exists.
                out = out.detach().requires_grad_(True)
                captured.append(out)
                return out
            captured.append(out)
            return None

        handle = self.layer.register_forward_hook(hook)
        try:
            with self.model.evaluating(), torch.enable_grad():
                for s in chunks(x.shape[0], gradient_rows(self.model, x) or self.model.chunk_rows(x)):
                    captured.clear()
                    out = self.model.forward(x[s])
                    if len(captured) != 1:
                        raise ValueError(
                            f"gradcam layer {self.layer_name!r} ran {len(captured)} times in one forward "
                            "pass; choose a layer that is applied exactly once"
                        )
                    act = captured[0]
                    if act.ndim < 3:
                        raise ValueError(
                            f"gradcam layer {self.layer_name!r} outputs shape {tuple(act.shape)}; "
                            "expected a feature map (n, channels, *spatial)"
                        )
                    picked = self.model.pick(out, target[s])
                    if not picked.requires_grad:
                        raise ValueError(
                            f"gradcam: the model's outputs do not depend on layer {self.layer_name!r} "
                            "through autograd; choose a layer on the path to the outputs"
                        )
                    (grad,) = torch.autograd.grad(picked.sum(), act, allow_unused=True)
                    if grad is None:
                        raise ValueError(
                            f"gradcam: the model's outputs do not depend on layer {self.layer_name!r}'s "
                            "output; choose a layer on the path to the outputs"
                        )
                    spatial = tuple(range(2, act.ndim))
                    weights = grad.mean(dim=spatial, keepdim=True)
                    cam = (weights * act).sum(dim=1, keepdim=True).detach()
                    maps.append(F.relu(cam) if self.relu else cam)
        finally:
            handle.remove()
        cam = torch.cat(maps)
        size = tuple(x.shape[2:])
        if cam.shape[2:] != size:
            if len(size) != cam.ndim - 2:
                raise ValueError(
                    f"cannot upsample a {cam.ndim - 2}-D map to input spatial shape {size}"
                )
            mode = _interpolation_mode(self.interpolate, cam.ndim - 2)
            kwargs = {"align_corners": False} if mode in ("linear", "bilinear", "bicubic", "trilinear") else {}
            cam = F.interpolate(cam, size=size, mode=mode, **kwargs)
        return cam, {}
