"""Layer AGOPs and the Neural Feature Ansatz (NFA).

For a layer with weight ``W`` (out x d) and input ``h`` (the activation that enters it), the NFA
states ``W^T W  ~  AGOP_l^alpha`` with

    AGOP_l = (1/n) sum_i J_i^T J_i,   J_i = d f(x_i) / d h_l(x_i)   (outputs x d),

i.e. every output of the network contributes (``J^T J`` over all outputs, the convention of the
rfm-grokking code and of :func:`featurelens.learning.agop` with ``target="all"``), normalised by the
number of samples n, power 1. ``alpha = 1/2`` in the Science version (default ``power=0.5``).

Radhakrishnan, Beaglehole, Pandit, Belkin, "Mechanism for feature learning in neural networks and
backpropagation-free machine learning models", Science 2024, arXiv 2212.13881. Convolutions follow
Beaglehole, Radhakrishnan, Pandit, Belkin, "Mechanism of feature learning in convolutional neural
networks", 2023, arXiv 2309.00570: the AGOP is taken with respect to the unfolded input patches and
compared with ``W^T W`` of the kernel reshaped to (out, c*kh*kw).
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import torch

from .._batching import chunks
from .._validation import check_float, check_int, check_option
from ..models import Model

__all__ = ["nfa", "layer_agops", "matrix_power_psd", "correlation"]

MEASURES = ("pearson", "cosine", "pearson_offdiag")
def _layer_types() -> tuple:
    """The layer types the NFA reads (read when a network is inspected: no torch at import)."""
    return (torch.nn.Linear, torch.nn.Conv2d)


def resolve_module(model) -> tuple[Model, torch.nn.Module]:
    m = Model.wrap(model)
    if m.module is None:
        raise TypeError(
            f"model must be a torch.nn.Module (layers are found by name); got {type(m.function).__name__}"
        )
    return m, m.module


def select_layers(module: torch.nn.Module, layers) -> dict[str, torch.nn.Module]:
    """The named Linear/Conv2d modules: those named in ``layers`` (in that order), or with ``layers``
    None every Linear and every Conv2d with ``groups=1``."""
    valid = {name: mod for name, mod in module.named_modules() if isinstance(mod, _layer_types())}
    if not valid:
        raise ValueError("model has no torch.nn.Linear or torch.nn.Conv2d layer; the NFA needs one")
    if layers is None:
        # A grouped convolution's weight (out, c/groups*kh*kw) does not act on whole patches, so its
        # patch AGOP and W^T W would not match; by default it is left out rather than measured wrongly.
        chosen = {k: m for k, m in valid.items() if not (isinstance(m, torch.nn.Conv2d) and m.groups != 1)}
        if not chosen:
            raise ValueError("model has only grouped convolutions (groups > 1); the NFA needs a Linear or Conv2d with groups=1")
        return chosen
    if isinstance(layers, str):
        layers = [layers]
    layers = list(layers)
    if not layers:
        raise ValueError("layers is empty; expected None (every Linear/Conv2d layer) or a list of layer names")
    chosen = {}
    for name in layers:
        if name not in valid:
            raise ValueError(
                f"layers: no Linear or Conv2d layer named {name!r}; valid names: {', '.join(map(repr, valid))}"
            )
        mod = valid[name]
        if isinstance(mod, torch.nn.Conv2d) and mod.groups != 1:
            raise ValueError(f"layers: {name!r} is a grouped convolution (groups={mod.groups}); expected groups=1")
        chosen[name] = mod
    return chosen


def layer_weight(module: torch.nn.Module) -> torch.Tensor:
    """The weight as a matrix (out, d): Linear as is, Conv2d reshaped to (out, c*kh*kw)."""
    w = module.weight.detach()
    return w.reshape(w.shape[0], -1)


class _Capture:
    """Forward hooks that keep each selected layer's input (Linear) or output (Conv2d) tensor.

    Linear: the gradient is taken with respect to the input tensor itself. Conv2d: with respect to
    the layer's output ``o``; the gradient with respect to patch ``l`` is then ``W^T do[:, l]``,
    since ``o[:, l] = W patch_l + b`` treats every patch as an independent input.
    """

    def __init__(self, layers: dict[str, torch.nn.Module]):
        self.layers = layers
        self.tensors: dict[str, list[torch.Tensor]] = {}
        self.inputs: dict[str, list[torch.Tensor]] = {}
        self.handles = []

    def __enter__(self):
        for name, mod in self.layers.items():
            self.handles.append(mod.register_forward_hook(self._hook(name)))
        return self

    def _hook(self, name):
        def hook(mod, inputs, output):
            if isinstance(mod, torch.nn.Conv2d):
                self.tensors.setdefault(name, []).append(output)
                self.inputs.setdefault(name, []).append(inputs[0].detach())
            else:
                self.tensors.setdefault(name, []).append(inputs[0])
                self.inputs.setdefault(name, []).append(inputs[0].detach())

        return hook

    def clear(self):
        self.tensors.clear()
        self.inputs.clear()

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles.clear()


def _batched_jacobians(out: torch.Tensor, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Gradients of every output column w.r.t. each tensor, shaped (outputs, *tensor.shape), by one
    vectorised backward pass (``is_grads_batched``); one pass per output where an op lacks a
    batching rule."""
    n_out = out.shape[1]
    basis = torch.eye(n_out, device=out.device, dtype=out.dtype)[:, None, :].expand(n_out, *out.shape)
    try:
        return list(torch.autograd.grad(out, tensors, grad_outputs=basis, is_grads_batched=True, allow_unused=True))
    except RuntimeError:
        per_output = [
            torch.autograd.grad(out[:, k].sum(), tensors, retain_graph=True, allow_unused=True) for k in range(n_out)
        ]
        return [
            None if per_output[0][j] is None else torch.stack([g[j] for g in per_output])
            for j in range(len(tensors))
        ]


def layer_stats(model, X, layers=None, batch_size: int | None = None, representations: bool = False):
    """Float64 sums of ``J^T J`` per layer (and optionally the layer outputs), one batched
    forward/backward per chunk of rows. Returns (agops, outputs, modules)."""
    m, module = resolve_module(model)
    m.require_gradients("the layer AGOP")
    chosen = select_layers(module, layers)
    batch_size = check_int(batch_size, "batch_size", low=1, allow_none=True)
    x = m.to_tensor(X, "X")
    n = x.shape[0]
    rows = m.chunk_rows(x, batch_size)  # read from the Model (or this call's override), never set on it
    sums: dict[str, torch.Tensor] = {}
    outputs: dict[str, list[torch.Tensor]] = {name: [] for name in chosen}
    with m.evaluating(), _Capture(chosen) as cap:
        for s in chunks(n, rows):
            cap.clear()
            xb = x[s].detach().requires_grad_(True)  # so that every activation is in the graph
            with torch.enable_grad():
                out = m.forward(xb)
                names = [k for k in chosen if k in cap.tensors]
                missing = [k for k in chosen if k not in cap.tensors]
                if missing:
                    raise ValueError(f"layers {missing} were not called in the forward pass; their AGOP is undefined")
                flat = [t for k in names for t in cap.tensors[k]]
                grads = _batched_jacobians(out, flat)
            pos = 0
            for k in names:
                mod = chosen[k]
                w = layer_weight(mod).double()
                for j, inp in enumerate(cap.inputs[k]):
                    g = grads[pos]
                    pos += 1
                    if g is None:  # the output does not depend on this layer
                        d = w.shape[1]
                        g = torch.zeros((1, d), dtype=torch.float64, device=x.device)
                    elif isinstance(mod, torch.nn.Conv2d):
                        # (outputs, b, out_ch, H', W') -> patch gradients (outputs*b*L, c*kh*kw)
                        g = g.double().flatten(3).transpose(2, 3) @ w
                        g = g.reshape(-1, w.shape[1])
                    else:
                        g = g.double().reshape(-1, w.shape[1])
                    if k not in sums:
                        sums[k] = torch.zeros((w.shape[1], w.shape[1]), dtype=torch.float64, device=x.device)
                    sums[k].addmm_(g.T, g)
                    if representations and j == 0:
                        # (input, pre-activation output) of the layer's first call, flattened per sample
                        if isinstance(mod, torch.nn.Conv2d):
                            rep = cap.tensors[k][0].detach()
                        else:
                            rep = torch.nn.functional.linear(
                                inp, mod.weight.detach(), None if mod.bias is None else mod.bias.detach()
                            )
                        outputs[k].append((inp.reshape(inp.shape[0], -1).double(), rep.reshape(rep.shape[0], -1).double()))
    agops = {k: (v / n).cpu().numpy() for k, v in sums.items()}
    reps = {}
    if representations:
        for k, v in outputs.items():
            if v:
                reps[k] = (torch.cat([a for a, _ in v]).cpu().numpy(), torch.cat([b for _, b in v]).cpu().numpy())
    return agops, reps, chosen


def layer_agops(model, X, layers=None, batch_size: int | None = None) -> dict[str, np.ndarray]:
    """The AGOP of the model's outputs with respect to each layer's input.

    ``AGOP_l = (1/n) sum_i J_i^T J_i`` with ``J_i = d f(x_i)/d h_l`` over all outputs of the model
    (for a Conv2d: ``h_l`` is the unfolded input patches and the sum also runs over patch
    positions), float64, normalisation 1/n, power 1 (Radhakrishnan et al., Science 2024,
    arXiv 2212.13881; patch AGOP: Beaglehole et al. 2023, arXiv 2309.00570).

    Parameters
    ----------
    model
        A ``torch.nn.Module`` (or a featurelens ``Model`` around one).
    X
        Inputs, samples first.
    layers
        None (every ``nn.Linear`` and every ``nn.Conv2d`` with ``groups=1``) or module names as in
        ``model.named_modules()``.
    batch_size
        Rows per batched backward pass (default: the Model's automatic chunking).

    Returns
    -------
    ``{layer_name: (d, d) float64 array}``; d = in_features, or c*kh*kw for a convolution.
    """
    agops, _, _ = layer_stats(model, X, layers, batch_size)
    return agops


def matrix_power_psd(A: np.ndarray, power: float) -> np.ndarray:
    """``A^power`` of a symmetric PSD matrix by ``eigh`` (negative eigenvalues from round-off
    clipped to 0), float64.

    torch's eigh rather than numpy's: it follows torch's thread setting, while a multithreaded
    OpenBLAS on a busy machine made a 256 x 256 eigh 20x slower (measured 0.5 s against 0.01 s)."""
    A = torch.as_tensor(np.asarray(A, dtype=np.float64))
    vals, vecs = torch.linalg.eigh((A + A.T) / 2)
    powered = torch.where(vals > 0, vals.clamp_min(0.0) ** float(power), torch.zeros_like(vals))
    return ((vecs * powered) @ vecs.T).numpy()


def correlation(A: np.ndarray, B: np.ndarray, measure: str = "pearson") -> float:
    """Similarity of two square matrices: ``"pearson"`` (correlation of the flattened entries),
    ``"cosine"`` (<A, B>_F / (||A||_F ||B||_F), uncentred) or ``"pearson_offdiag"`` (Pearson over
    the off-diagonal entries only). NaN when one side is constant."""
    measure = check_option(measure, "measure", MEASURES)
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if measure == "pearson_offdiag":
        mask = ~np.eye(A.shape[0], dtype=bool)
        a, b = A[mask], B[mask]
    else:
        a, b = A.ravel(), B.ravel()
    if measure != "cosine":
        a = a - a.mean()
        b = b - b.mean()
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / denom) if denom > 0 else float("nan")


def nfa(model, X, layers=None, power: float = 0.5, measure: str = "pearson", batch_size: int | None = None) -> dict:
    """Neural Feature Ansatz correlation per layer: ``corr(W^T W, AGOP_l^power)``.

    ``AGOP_l = (1/n) sum_i J_i^T J_i`` of all model outputs with respect to the layer's input
    (:func:`layer_agops`); ``W`` the layer's weight (out x in; a Conv2d kernel reshaped to
    (out, c*kh*kw)). ``power`` = 1/2 (Science 2024 statement) or 1 (arXiv v1), applied by a
    symmetric eigendecomposition with negative eigenvalues clipped. ``measure``: ``"pearson"``
    (flattened entries, as in the rfm-grokking code), ``"cosine"`` (uncentred
    <A,B>_F/(||A|| ||B||)) or ``"pearson_offdiag"`` (diagonals removed).

    Radhakrishnan, Beaglehole, Pandit, Belkin, Science 2024, arXiv 2212.13881.

    Returns ``{layer_name: float}`` in the order of ``layers`` (or of ``model.named_modules()``).
    """
    power = check_float(power, "power", low=0.0, low_inclusive=False)
    measure = check_option(measure, "measure", MEASURES)
    agops, _, chosen = layer_stats(model, X, layers, batch_size)
    return {k: nfa_from_agop(chosen[k], agops[k], power, measure) for k in chosen}


def nfa_from_agop(module: torch.nn.Module, agop_matrix: np.ndarray, power: float = 0.5, measure: str = "pearson") -> float:
    """``correlation(W^T W, AGOP^power)`` for one layer, given its AGOP."""
    w = layer_weight(module).double().cpu().numpy()
    return correlation(w.T @ w, matrix_power_psd(agop_matrix, power), measure)
