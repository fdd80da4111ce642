"""The one model adapter.

:class:`Model` wraps a ``torch.nn.Module`` or a plain callable and gives every explainer, metric and
learning tool the same few operations: forward passes in bounded chunks, target selection, input
gradients (plain or over an expansion of the batch), and the bookkeeping of how many rows went
through the model. Torch models are put in eval mode for the duration of each call and their
previous train/eval flags restored afterwards; inputs are moved to the model's device, so the same
code runs on a GPU.
"""

from __future__ import annotations

import contextlib
import math
from typing import Callable

import numpy as np
import torch

from ._batching import check_batch_size, chunks, default_rows, expansion_index
from ._validation import as_numpy, check_floating


class Model:
    """Adapter around a ``torch.nn.Module`` or a callable.

    Parameters
    ----------
    model
        A ``torch.nn.Module`` (differentiable), or a callable mapping a batch to outputs of shape
        ``(batch,)`` or ``(batch, classes)``. A callable receives numpy arrays unless
        ``accepts="torch"``, in which case it receives tensors and, if it is built from torch
        operations, is differentiable too.
    batch_size
        The most rows sent through the model in one call (memory bound for every expansion).
        None (default): chunks of at most 1024 rows and at most 2**19 input elements
        (:func:`featurelens._batching.default_rows`), so that large inputs go in smaller chunks.
    device
        Where inputs go. Default: the device of the module's first parameter (CPU otherwise).
    accepts
        For a callable: ``"numpy"`` (default) or ``"torch"``. Ignored for modules.
    """

    def __init__(
        self,
        model,
        batch_size: int | None = None,
        device: str | torch.device | None = None,
        accepts: str = "numpy",
    ):
        if isinstance(model, Model):
            raise TypeError("model is already a featurelens Model; pass it directly instead of wrapping it")
        if not (isinstance(model, torch.nn.Module) or callable(model)):
            raise TypeError(
                f"model must be a torch.nn.Module or a callable; got {type(model).__name__}"
            )
        if accepts not in ("numpy", "torch"):
            raise ValueError(f"accepts must be 'numpy' or 'torch'; got {accepts!r}")
        self.module = model if isinstance(model, torch.nn.Module) else None
        self.function = model
        self.accepts = "torch" if self.module is not None else accepts
        self.batch_size = check_batch_size(batch_size)
        self.auto_batch = batch_size is None  # chunk rows also bounded by input size (chunk_rows)
        if device is None:
            param = next(iter(self.module.parameters()), None) if self.module is not None else None
            device = param.device if param is not None else torch.device("cpu")
        self.device = torch.device(device)
        param = next(iter(self.module.parameters()), None) if self.module is not None else None
        self.dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
        self.calls = 0  # rows sent through the model since construction
        self._eval_depth = 0  # nesting of evaluating() contexts

    # -- construction helpers ---------------------------------------------------------------
    @classmethod
    def wrap(cls, model, batch_size: int | None = None) -> "Model":
        """Return ``model`` if it is a Model already (updating its batch size when one is given),
        else a new Model around it."""
        if isinstance(model, Model):
            if batch_size is not None:
                model.batch_size = check_batch_size(batch_size)
                model.auto_batch = False
            return model
        return cls(model, batch_size=batch_size)

    @property
    def differentiable(self) -> bool:
        return self.accepts == "torch"

    def require_gradients(self, method: str) -> None:
        if not self.differentiable:
            raise TypeError(
                f"{method} needs gradients, so model must be a torch.nn.Module or a torch callable "
                f"(Model(fn, accepts='torch')); got a numpy callable "
                f"({type(self.function).__name__}). Use a black-box explainer instead."
            )

    # -- eval mode --------------------------------------------------------------------------
    @contextlib.contextmanager
    def evaluating(self):
        """Put the module in eval mode and restore every submodule's previous flag afterwards."""
        if self.module is None or self._eval_depth > 0:
            # Nested calls (an explainer's many chunked passes) reuse the outer context: walking
            # every submodule costs tens of microseconds per call.
            self._eval_depth += 1
            try:
                yield
            finally:
                self._eval_depth -= 1
            return
        flags = [(m, m.training) for m in self.module.modules()]
        self.module.eval()
        self._eval_depth += 1
        try:
            yield
        finally:
            self._eval_depth -= 1
            for m, flag in flags:
                m.training = flag

    # -- inputs -----------------------------------------------------------------------------
    def to_tensor(self, x, name: str = "x") -> torch.Tensor:
        """Validate a batch (numpy or torch) and return it as a tensor on the model's device."""
        if isinstance(x, torch.Tensor):
            check_floating(x, name)
            t = x.detach()
        else:
            arr = as_numpy(x, name)
            check_floating(arr, name)
            t = torch.from_numpy(np.ascontiguousarray(arr))
        if t.ndim < 2:
            raise ValueError(
                f"{name} must be a batch with the samples along the first axis, shape (n, ...); "
                f"got shape {tuple(t.shape)}. For one sample use {name}[None]"
            )
        if t.shape[0] == 0:
            raise ValueError(f"{name} is an empty batch (shape {tuple(t.shape)}); expected n >= 1 rows")
        return t.to(device=self.device, dtype=self.dtype)

    # -- forward ----------------------------------------------------------------------------
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One forward pass of at most batch_size validated rows, as a (rows, classes) tensor.

        Errors the model raises on the input are re-raised as a ValueError naming x's shape.
        """
        self.calls += x.shape[0]
        try:
            if self.accepts == "torch":
                out = self.function(x)
            else:
                out = self.function(x.detach().cpu().numpy())
        except (RuntimeError, ValueError) as err:
            raise ValueError(
                f"x has shape {tuple(x.shape)} (samples first), and the model failed on it: {err}"
            ) from err
        if not isinstance(out, torch.Tensor):
            try:
                out = torch.as_tensor(np.asarray(out, dtype=np.float64), device=x.device).to(self.dtype)
            except (TypeError, ValueError) as err:
                raise TypeError(f"model must return a tensor or an array of numbers; got {type(out).__name__}") from err
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != x.shape[0]:
            raise ValueError(
                f"model must map a batch of {x.shape[0]} rows to outputs of shape (batch,) or "
                f"(batch, classes); got output shape {tuple(out.shape)}"
            )
        return out

    def chunk_rows(self, x: torch.Tensor, batch_size: int | None = None, forward_only: bool = False) -> int:
        """Rows per chunk for inputs shaped like ``x``: ``batch_size`` when given, else the model's
        ``batch_size`` when one was given, else :func:`featurelens._batching.default_rows` (bounded
        by input size; a larger row cap for ``forward_only`` passes, which keep no graph)."""
        if batch_size is not None:
            return check_batch_size(batch_size)
        if self.auto_batch:
            return default_rows(math.prod(x.shape[1:]), forward_only=forward_only)
        return self.batch_size

    def predict(self, x, batch_size: int | None = None) -> torch.Tensor:
        """Outputs for a batch, computed in chunks without gradients, as a (n, classes) tensor."""
        x = x if isinstance(x, torch.Tensor) else self.to_tensor(x)
        bs = self.chunk_rows(x, batch_size, forward_only=True)
        with self.evaluating(), torch.no_grad():
            return torch.cat([self.forward(x[s]) for s in chunks(x.shape[0], bs)])

    def n_outputs(self, x: torch.Tensor) -> int:
        return int(self.predict(x[:1]).shape[1])

    # -- targets ----------------------------------------------------------------------------
    def resolve_target(self, target, x: torch.Tensor, outputs: torch.Tensor | None = None) -> torch.Tensor:
        """Return one target index per sample as a long tensor.

        ``target`` is None (the predicted class, argmax of the outputs), an int, or one int per
        sample (list, numpy or torch).
        """
        n = x.shape[0]
        if target is None:
            if outputs is None:
                outputs = self.predict(x)
            return outputs.argmax(dim=1).to(torch.long)
        if outputs is None:
            n_out = self.n_outputs(x)
        else:
            n_out = outputs.shape[1]
        if isinstance(target, (bool, np.bool_)) or isinstance(target, float):
            raise TypeError(f"target must be None, an int or one int per sample; got {target!r}")
        if isinstance(target, (int, np.integer)):
            t = torch.full((n,), int(target), dtype=torch.long)
        else:
            arr = as_numpy(target, "target")
            if arr.dtype.kind not in "iu":
                raise TypeError(
                    f"target must be None, an int or one int per sample; got an array of dtype {arr.dtype}"
                )
            arr = arr.reshape(-1) if arr.ndim == 0 else arr
            if arr.ndim != 1 or arr.shape[0] != n:
                raise ValueError(
                    f"target must hold one int per sample ({n}); got shape {tuple(arr.shape)}"
                )
            t = torch.from_numpy(arr.astype(np.int64))
        bad = (t < 0) | (t >= n_out)
        if bool(bad.any()):
            raise ValueError(
                f"target {t[bad][0].item()} is out of range; the model has {n_out} output(s), "
                f"so targets must lie in [0, {n_out - 1}]"
            )
        return t.to(self.device)

    # -- gradients --------------------------------------------------------------------------
    def _target_gradient(self, rows: torch.Tensor, target: torch.Tensor | None):
        """Gradient of out[i, target_i] w.r.t. each row, by one backward pass of their sum
        (``target=None``: each row's predicted class, taken from the same forward pass).

        In eval mode samples do not interact, so the gradient of the summed selected outputs with
        respect to the batch is exactly the stack of per-sample gradients.
        """
        rows = rows.detach().requires_grad_(True)
        with torch.enable_grad():
            out = self.forward(rows)
            if target is None:
                target = out.detach().argmax(1)
            selected = out.gather(1, target[:, None]).sum()
            (grad,) = torch.autograd.grad(selected, rows)
        return grad, out.detach()

    def gradient(self, x: torch.Tensor, target: torch.Tensor, batch_size: int | None = None) -> torch.Tensor:
        """Per-sample input gradients of the target outputs, in chunks of at most batch_size rows."""
        self.require_gradients("this method")
        bs = self.chunk_rows(x, batch_size)
        grads = torch.empty_like(x)
        with self.evaluating():
            for s in chunks(x.shape[0], bs):
                grads[s], _ = self._target_gradient(x[s], target[s])
        return grads

    def expanded_gradient(
        self,
        x: torch.Tensor,
        target: torch.Tensor,
        n_expand: int,
        make_rows: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        weights: torch.Tensor | None = None,
        transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
        batch_size: int | None = None,
    ) -> torch.Tensor:
        """Sum over ``n_expand`` copies of each sample of (weighted, transformed) input gradients.

        ``make_rows(copy_index, sample_index)`` builds the inputs of one chunk of the expansion
        (for example the IG path points or noisy copies) so that the whole ``n_expand * n`` batch is
        never materialised. Returns ``sum_e weights[e] * transform(grad(make_rows(e, i)))`` per
        sample ``i``, shaped like ``x`` (like ``transform``'s output per row when it changes the
        shape, e.g. a stack of ``g`` and ``g**2``).
        """
        self.require_gradients("this method")
        bs = self.chunk_rows(x, batch_size)
        n = x.shape[0]
        total = None

        def accumulate(part):
            nonlocal total
            total = part if total is None else total.add_(part)

        with self.evaluating():
            if bs >= n:
                # Chunks of whole copies: the sum over copies is a reshape and a reduction, not a
                # scatter (index_add_ on CPU is slow, and very slow when threads are contended).
                per_chunk = bs // n
                for copies in chunks(n_expand, per_chunk):
                    first, k = copies.start, copies.stop - copies.start
                    copy_idx, sample_idx = expansion_index(slice(first * n, (first + k) * n), n, x.device)
                    grad, _ = self._target_gradient(make_rows(copy_idx, sample_idx), target.repeat(k))
                    if transform is not None:
                        grad = transform(grad)
                    grad = grad.view(k, n, *grad.shape[1:])
                    if weights is None:
                        accumulate(grad.sum(0))
                    else:
                        accumulate(torch.tensordot(weights[first : first + k], grad, dims=1))
            else:
                # One copy of the batch spans several chunks: split each copy's samples into equal
                # parts of at most bs rows and add each part to its slice of the total.
                parts = -(-n // bs)
                size = -(-n // parts)
                for copy in range(n_expand):
                    for s in chunks(n, size):
                        sample_idx = torch.arange(s.start, s.stop, device=x.device)
                        copy_idx = torch.full_like(sample_idx, copy)
                        grad, _ = self._target_gradient(make_rows(copy_idx, sample_idx), target[s])
                        if transform is not None:
                            grad = transform(grad)
                        if weights is not None:
                            grad = grad * weights[copy]
                        if total is None:
                            total = grad.new_zeros((n,) + tuple(grad.shape[1:]))
                        total[s] += grad
        return total

    def __repr__(self) -> str:
        kind = type(self.function).__name__
        bs = "auto" if self.auto_batch else self.batch_size
        return f"Model({kind}, device={self.device}, batch_size={bs})"
