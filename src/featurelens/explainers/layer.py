"""Layer and neuron attributions: what a named layer's units contribute to an output, and how one
unit of a layer depends on the inputs.

- ``layer_integrated_gradients``: integrated gradients in the layer's output space.
- ``layer_gradient_x_activation``: the layer's activation times the output's gradient w.r.t. it.
- ``layer_conductance``: the flow of integrated gradients through each unit of the layer.
- ``neuron_gradient`` / ``neuron_integrated_gradients``: the input gradient / integrated gradients
  of one unit of the layer's output: ``neuron=`` an index tuple, a tuple with slices (the selected
  units summed) or a callable (layer output -> one value per sample), as Captum's
  ``neuron_selector``.
- ``layer_deeplift`` / ``layer_deeplift_shap`` live in :mod:`.deeplift` (they share its hooks).

Each takes ``layer="module.name"`` (a name from ``model.named_modules()``, a unique dotted suffix
of one, e.g. ``"4"`` for ``"net.4"`` of a wrapped model, or the module itself).
The layer is reached (:mod:`._layer_hooks`) by a forward hook on that module, registered for one call and removed in a
``finally`` block; it must be applied exactly once per forward pass and return one tensor. Layer
attributions keep the layer's output shape, ``(n, *layer_shape)``; neuron attributions have the
input's shape. Every pass goes through the Model (rows counted, outputs checked for NaN) in chunks
of at most ``batch_size`` rows; expansions (path points) are built chunk by chunk.

These explainers apply only where a layer is named, so their :class:`Requires` refuses every model
in the audit and the benchmark, which do not choose layers (build them with ``layer=``).
"""

from __future__ import annotations

from featurelens._optional import torch

from .._batching import chunks, expansion_index
from .._validation import check_bool, check_int
from ._base import Explainer, register
from ._layer_hooks import LayerHook, NamedLayerRequires, NeuronSelector, resolve_layer
from .gradient import gradient_rows, integration_rule


class _PathIntegral:
    """The path-integral settings shared by the layer and neuron IG explainers: the quadrature
    (:func:`integration_rule`) and the baseline."""

    def _init_path(self, method, n_steps, baseline):
        self.alphas, self.weights = integration_rule(method, n_steps)
        self.n_steps = int(n_steps)
        self.method = "riemann_trapezoid" if method == "riemann" else method
        self.baseline = baseline

    def _path_params(self) -> dict:
        return {"n_steps": self.n_steps, "method": self.method}


class _LayerExplainer(Explainer):
    """Shared machinery: the named layer, the hook and the chunked passes."""

    requires = NamedLayerRequires(gradients=True, hooks="layer")  # refused for TorchScript (Requires.hooks)

    def __init__(self, model, layer=None, batch_size: int | None = None):
        super().__init__(model, batch_size)
        self.layer_name, self.layer = resolve_layer(self.model.module, layer, self.name)

    def params(self):
        return {**super().params(), "layer": self.layer_name}

    def _hook(self) -> LayerHook:
        return LayerHook(self.layer, self.layer_name, self.name)

    def _rows(self, x: torch.Tensor) -> int:
        """Rows per chunk of this explainer's gradient passes (:func:`.gradient.gradient_rows`)."""
        return gradient_rows(self.model, x) or self.model.chunk_rows(x)

    def _activations(self, hook: LayerHook, x: torch.Tensor):
        """``(outputs, layer outputs)`` of ``x`` without gradients, in chunks."""
        outs, acts = [], []
        with torch.no_grad():
            for s in chunks(x.shape[0], self.model.chunk_rows(x)):
                out, act = hook.run(self.model, x[s])
                outs.append(out)
                acts.append(act.detach())
        return torch.cat(outs), torch.cat(acts)

    def _rows_of(self, x: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
        """The baseline's distinct rows: one row when every sample shares it (zeros, a scalar, one
        input), else one per sample."""
        return base[:1] if bool((base == base[:1]).all()) else base

    def _expansion(self, x: torch.Tensor, n_expand: int):
        """``(copy_idx, sample_idx)`` per chunk of an ``n_expand``-fold expansion of ``x``
        (expansion-major, at most ``chunk_rows`` rows, whole copies when a copy fits)."""
        n = x.shape[0]
        bs = self._rows(x)
        if bs >= n:
            bs = (bs // n) * n
            for part in chunks(n_expand * n, bs):
                yield expansion_index(part, n, x.device)
        else:
            for copy_number in range(n_expand):
                for s in chunks(n, bs):
                    sample_idx = torch.arange(s.start, s.stop, device=x.device)
                    yield torch.full_like(sample_idx, copy_number), sample_idx


def _layer_gradient(hook, model, rows, target, point=None):
    """``(outputs, layer output, d sum_i f_{t_i} / d layer output)`` for one chunk; the layer's
    output is replaced by ``point`` (detached, a leaf) when given, else by a detached copy of
    itself, so the gradient is w.r.t. the layer's output even with frozen weights."""
    with torch.enable_grad():
        leaf = []

        def replace(output):
            value = (output if point is None else point.to(output.dtype)).detach().requires_grad_(True)
            if value.shape != output.shape:
                raise ValueError(f"layer output has shape {tuple(output.shape)}, path point {tuple(value.shape)}")
            leaf.append(value)
            return value

        out, act = hook.run(model, rows, replace=replace)
        (grad,) = torch.autograd.grad(out.gather(1, target[:, None]).sum(), leaf[0])
    return out.detach(), act.detach(), grad


@register("layer_integrated_gradients")
class LayerIntegratedGradients(_LayerExplainer, _PathIntegral):
    """Integrated gradients w.r.t. a named layer's output ``z(x)``, along the straight path in the
    layer's space from ``z' = z(x')`` (the layer's output at the baseline input ``x'``) to ``z(x)``:

    ``a_j = (z_j(x) - z'_j) * int_0^1 d f_t / d z_j (z' + alpha (z(x) - z'))  d alpha``,

    with ``f`` the model evaluated from the layer on (the layer's output replaced by the path
    point). Gauss-Legendre nodes by default (as Captum's ``LayerIntegratedGradients``), or a Riemann
    rule. Values have the layer's output shape ``(n, *layer_shape)``. When the model's output
    depends on ``x`` only through the layer, completeness holds: ``sum_j a_j = f_t(x) - f_t(x')``
    up to the quadrature error; params hold the gap per sample (``completeness_gap``) and
    ``base_values`` ``f_t(x')``.

    Sundararajan, Taly, Yan, "Axiomatic Attribution for Deep Networks", ICML 2017, arXiv 1703.01365;
    layer attribution as in Captum (Kokhlikyan et al., 2020, arXiv 2009.07896).

    ``baseline`` (input space): None (zeros), a scalar, an array shaped like one input or like the
    batch; it can also be passed to ``explain``.
    """

    accepts = frozenset({"baseline"})
    row_params = frozenset({"base_values", "completeness_gap"})

    def __init__(self, model, layer=None, n_steps: int = 50, method: str = "gausslegendre", baseline=None,
                 batch_size: int | None = None):
        super().__init__(model, layer, batch_size)
        self._init_path(method, n_steps, baseline)

    def params(self):
        return {**super().params(), **self._path_params()}

    def _attribute(self, x, target, outputs, baseline=None):
        base = self._resolve_baseline(x, baseline)
        n = x.shape[0]
        alphas = torch.as_tensor(self.alphas, device=x.device, dtype=x.dtype)
        weights = torch.as_tensor(self.weights, device=x.device, dtype=x.dtype)
        with self._hook() as hook:
            f_x, z_x = self._activations(hook, x)
            base_rows = self._rows_of(x, base)
            f_b, z_b = self._activations(hook, base_rows)
            f_b, z_b = f_b.expand(n, -1), z_b.expand(n, *z_b.shape[1:])
            delta = z_x - z_b
            view = (-1,) + (1,) * (delta.ndim - 1)
            total = torch.zeros_like(z_x)
            for copy_idx, sample_idx in self._expansion(x, self.n_steps):
                point = z_b[sample_idx] + alphas[copy_idx].view(view) * delta[sample_idx]
                _, _, grad = _layer_gradient(hook, self.model, x[sample_idx], target[sample_idx], point)
                total.index_add_(0, sample_idx, grad * weights[copy_idx].view(view))
        attributions = delta * total
        idx = target[:, None]
        change = (f_x.gather(1, idx) - f_b.gather(1, idx)).squeeze(1).double()
        gap = attributions.flatten(1).double().sum(1) - change
        return attributions, {
            "completeness_gap": gap.cpu().tolist(),
            "base_values": f_b.gather(1, idx).squeeze(1).double().cpu().tolist(),
        }


@register("layer_gradient_x_activation")
class LayerGradientXActivation(_LayerExplainer):
    """Layer gradient x activation: ``a = z(x) * d f_t / d z (x)`` elementwise, for the named
    layer's output ``z`` (``multiply=False``: the layer gradient alone). Values have the layer's
    output shape.

    Shrikumar, Greenside, Shcherbina, Kundaje, "Not Just a Black Box", 2016, arXiv 1605.01713
    (input x gradient), applied to a layer as Captum's ``LayerGradientXActivation``.
    """

    def __init__(self, model, layer=None, multiply: bool = True, batch_size: int | None = None):
        super().__init__(model, layer, batch_size)
        self.multiply = check_bool(multiply, "multiply")

    def params(self):
        return {**super().params(), "multiply": self.multiply}

    def _attribute(self, x, target, outputs):
        parts = []
        with self._hook() as hook:
            for s in chunks(x.shape[0], self._rows(x)):
                _, act, grad = _layer_gradient(hook, self.model, x[s], target[s])
                parts.append(act * grad if self.multiply else grad)
        return torch.cat(parts), {}


@register("layer_conductance")
class LayerConductance(_LayerExplainer):
    """Layer conductance: the part of integrated gradients that flows through each unit ``z_j`` of
    the named layer, along the straight input path ``x(alpha) = x' + alpha (x - x')``:

    ``c_j = int_0^1 d f_t / d z_j (x(alpha)) * d z_j(x(alpha)) / d alpha  d alpha``,

    approximated, as Captum's ``LayerConductance``, on ``n_steps + 1`` nodes ``alpha_0 < ... <
    alpha_n`` of the rule by ``sum_k (z_j(x(alpha_{k+1})) - z_j(x(alpha_k))) * d f_t / d z_j
    (x(alpha_k))``. Summed over the layer it gives ``f_t(x) - f_t(x')`` (as the nodes approach 0
    and 1) when the output depends on ``x`` only through the layer. Values have the layer's output
    shape.

    Dhamdhere, Sundararajan, Yan, "How Important Is a Neuron?", 2018, arXiv 1805.12233.
    """

    accepts = frozenset({"baseline"})

    def __init__(self, model, layer=None, n_steps: int = 50, method: str = "gausslegendre", baseline=None,
                 batch_size: int | None = None):
        super().__init__(model, layer, batch_size)
        self.n_steps = check_int(n_steps, "n_steps", low=1)
        self.alphas, _ = integration_rule(method, self.n_steps + 1)
        self.method = "riemann_trapezoid" if method == "riemann" else method
        self.baseline = baseline

    def params(self):
        return {**super().params(), "n_steps": self.n_steps, "method": self.method}

    def _attribute(self, x, target, outputs, baseline=None):
        base = self._resolve_baseline(x, baseline)
        delta = x - base
        alphas = torch.as_tensor(self.alphas, device=x.device, dtype=x.dtype)
        view = (-1,) + (1,) * (x.ndim - 1)
        total = prev_act = prev_grad = None
        with self._hook() as hook:
            for copy_idx, sample_idx in self._expansion(x, self.n_steps + 1):
                rows = base[sample_idx] + alphas[copy_idx].view(view) * delta[sample_idx]
                _, act, grad = _layer_gradient(hook, self.model, rows, target[sample_idx])
                if total is None:
                    shape = (x.shape[0],) + tuple(act.shape[1:])
                    total = act.new_zeros(shape)
                    prev_act, prev_grad = act.new_zeros(shape), act.new_zeros(shape)
                # Rows are copy-major: each copy's rows see the previous copy's stored values.
                for c in torch.unique(copy_idx).tolist():
                    rows_c = copy_idx == c
                    s = sample_idx[rows_c]
                    if c > 0:
                        total.index_add_(0, s, (act[rows_c] - prev_act[s]) * prev_grad[s])
                    prev_act[s] = act[rows_c]
                    prev_grad[s] = grad[rows_c]
        return total, {}


class _NeuronExplainer(_LayerExplainer):
    """One selection ``neuron`` of the named layer's units attributed to the inputs (``target`` is
    not used): an index tuple (one unit), a tuple with slices (the selected units summed) or a
    callable (layer output -> one value per sample), as Captum's ``neuron_selector``
    (:class:`~featurelens.explainers._layer_hooks.NeuronSelector`). With ``target=None`` no
    forward pass looks for the predicted classes (the explanation records target 0)."""

    uses_target = False

    def __init__(self, model, layer=None, neuron=None, batch_size: int | None = None):
        super().__init__(model, layer, batch_size)
        if neuron is None:
            raise ValueError(f"{self.name} needs neuron= (an index tuple into one sample's output of layer "
                             f"{self.layer_name!r}, a tuple with slices, or a callable)")
        self._selector = NeuronSelector(neuron)
        self.neuron = self._selector.fn if self._selector.fn is not None else self._selector.index

    def params(self):
        return {**super().params(), "neuron": self._selector.describe()}

    def _check_layer_runs_once(self, hook, x: torch.Tensor) -> None:
        """One row through the whole model: the layer must run exactly once (the gradient passes
        stop at the layer and could not tell)."""
        with torch.no_grad():
            hook.run(self.model, x[:1])

    def _neuron_gradient(self, hook, rows: torch.Tensor) -> torch.Tensor:
        """``d z_neuron / d rows`` for one chunk (the rows are leaves here). The forward pass stops
        at the layer: the unit depends on nothing after it (Captum runs the whole model)."""
        with torch.enable_grad():
            leaf = rows.detach().requires_grad_(True)
            _, act = hook.run(self.model, leaf, stop=True)
            unit = self._selector.select(act, self.layer_name)
            if not unit.requires_grad:
                return torch.zeros_like(rows)
            (grad,) = torch.autograd.grad(unit.sum(), leaf, allow_unused=True)
        return torch.zeros_like(rows) if grad is None else grad


@register("neuron_gradient")
class NeuronGradient(_NeuronExplainer):
    """Neuron gradient: ``a = d z_u(x) / d x``, the input gradient of the unit ``u = neuron`` (an
    index tuple into one sample's output of the named layer; a tuple with slices: the sum of the
    selected units; a callable: its value per sample). ``target`` is not used. Values have the
    input's shape. As Captum's ``NeuronGradient`` with the same ``neuron_selector``.

    Simonyan, Vedaldi, Zisserman, "Deep Inside Convolutional Networks", 2013, arXiv 1312.6034
    (gradients of a unit rather than of a class score).
    """

    def __init__(self, model, layer=None, neuron=None, batch_size: int | None = None):
        super().__init__(model, layer, neuron, batch_size)

    def _attribute(self, x, target, outputs):
        parts = []
        with self._hook() as hook:
            self._check_layer_runs_once(hook, x)
            for s in chunks(x.shape[0], self._rows(x)):
                grad = self._neuron_gradient(hook, x[s])
                parts.append(grad)
        return torch.cat(parts), {}


@register("neuron_integrated_gradients")
class NeuronIntegratedGradients(_NeuronExplainer, _PathIntegral):
    """Neuron integrated gradients: integrated gradients of the unit ``z_u`` (``u = neuron``, an
    index tuple into one sample's output of the named layer, a tuple with slices or a callable, as
    for :class:`~featurelens.explainers.layer.NeuronGradient`) along the straight input path,

    ``a_i = (x_i - x'_i) * int_0^1 d z_u(x' + alpha (x - x')) / d x_i  d alpha``,

    Gauss-Legendre by default (as Captum's ``NeuronIntegratedGradients``). ``target`` is not used;
    values have the input's shape and sum to ``z_u(x) - z_u(x')`` up to the quadrature error.

    Sundararajan, Taly, Yan, "Axiomatic Attribution for Deep Networks", ICML 2017, arXiv 1703.01365.
    """

    accepts = frozenset({"baseline"})

    def __init__(self, model, layer=None, neuron=None, n_steps: int = 50, method: str = "gausslegendre",
                 baseline=None, batch_size: int | None = None):
        super().__init__(model, layer, neuron, batch_size)
        self._init_path(method, n_steps, baseline)

    def params(self):
        return {**super().params(), **self._path_params()}

    def _attribute(self, x, target, outputs, baseline=None):
        base = self._resolve_baseline(x, baseline)
        delta = x - base
        alphas = torch.as_tensor(self.alphas, device=x.device, dtype=x.dtype)
        weights = torch.as_tensor(self.weights, device=x.device, dtype=x.dtype)
        view = (-1,) + (1,) * (x.ndim - 1)
        total = torch.zeros_like(x)
        with self._hook() as hook:
            self._check_layer_runs_once(hook, x)
            for copy_idx, sample_idx in self._expansion(x, self.n_steps):
                rows = base[sample_idx] + alphas[copy_idx].view(view) * delta[sample_idx]
                grad = self._neuron_gradient(hook, rows)
                total.index_add_(0, sample_idx, grad * weights[copy_idx].view(view))
        return delta * total, {}
