"""The Model's passes in chunks (:class:`BatchedPasses`): input gradients of the target outputs,
plain (:meth:`~BatchedPasses.gradient`) or summed over an expansion of the batch
(:meth:`~BatchedPasses.expanded_gradient`: integrated-gradients paths, noisy copies), and forward
passes over an expansion (:meth:`~BatchedPasses.expanded_forward`: perturbation curves, infidelity,
sensitivity), optionally on an executor's workers. Every chunk follows
:meth:`featurelens.models.Model.chunk_rows`, so the ``n_expand * n`` rows are never held at once.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from featurelens._optional import torch

from .._batching import chunks, expansion_index
from .._validation import check_int, check_option


class BatchedPasses:
    """The chunked gradient and expanded passes of :class:`featurelens.models.Model`, one of its
    base classes. They read the adapter's ``forward``, ``pick``, ``chunk_rows``, ``evaluating``,
    ``require_gradients`` and ``executor``, count rows with ``count_calls`` (in this Model and the ones
    it was derived from) and copy it with ``_derive``."""

    def target_gradient(self, rows: torch.Tensor, target: torch.Tensor | None):
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
            selected = self.pick(out, target).sum()
            (grad,) = torch.autograd.grad(selected, rows)
        return grad, out.detach()

    def gradient(self, x: torch.Tensor, target: torch.Tensor, batch_size: int | None = None,
                 outputs: bool = False):
        """Per-sample input gradients of the target outputs, in chunks of at most batch_size rows.

        ``outputs=True`` returns ``(gradients, outputs)``: the model's outputs on ``x`` from the
        same forward passes (detached), for callers that need the predictions too.
        """
        self.require_gradients("this method")
        bs = self.chunk_rows(x, batch_size)
        if bs >= x.shape[0]:  # one chunk: its gradient as it is, no copy into a preallocated tensor
            with self.evaluating():
                grads, out = self.target_gradient(x, target)
            return (grads, out) if outputs else grads
        grads = torch.empty_like(x)
        outs = []
        with self.evaluating():
            for s in chunks(x.shape[0], bs):
                grads[s], out = self.target_gradient(x[s], target[s])
                if outputs:
                    outs.append(out)
        return (grads, torch.cat(outs)) if outputs else grads

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
                    grad, _ = self.target_gradient(make_rows(copy_idx, sample_idx), target.repeat(k))
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
                for copy_number in range(n_expand):
                    for s in chunks(n, size):
                        sample_idx = torch.arange(s.start, s.stop, device=x.device)
                        copy_idx = torch.full_like(sample_idx, copy_number)
                        grad, _ = self.target_gradient(make_rows(copy_idx, sample_idx), target[s])
                        if transform is not None:
                            grad = transform(grad)
                        if weights is not None:
                            grad = grad * weights[copy_number]
                        if total is None:
                            total = grad.new_zeros((n,) + tuple(grad.shape[1:]))
                        total[s] += grad
        return total

    def expanded_forward(
        self,
        x: torch.Tensor,
        n_expand: int,
        make_rows: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        target: torch.Tensor | None = None,
        transform: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
        reduce: str | None = None,
        batch_size: int | None = None,
    ) -> torch.Tensor:
        """Forward passes (no gradients) over ``n_expand`` copies of each of the ``n`` samples of
        ``x``, built and evaluated chunk by chunk so the ``n_expand * n`` rows are never held at once.

        The forward-only twin of :meth:`expanded_gradient` (metrics: perturbation curves,
        infidelity, sensitivity). Rows are expansion-major (:func:`featurelens._batching.expansion_index`);
        chunks follow :meth:`chunk_rows` with ``forward_only=True`` (``batch_size`` overrides it).
        In numpy mode (:meth:`with_numpy`: a numpy ``x``) every tensor below is a numpy array
        (the indices int64 arrays) and torch is never imported; the chunks and reductions are the
        same, so are the values.

        Parameters
        ----------
        x
            The validated batch ``(n, ...)`` (from :meth:`to_tensor`: a tensor, or a numpy array
            in numpy mode); only its length, device and per-row size are used here, ``make_rows``
            reads the inputs.
        n_expand
            Copies per sample (an int >= 1).
        make_rows
            ``make_rows(copy_index, sample_index) -> rows``: the inputs of one chunk, one row per
            (copy, sample) pair given as two long tensors of equal length.
        target
            None: keep every output, ``(rows, n_outputs)``. A long tensor ``(n,)`` of output indices:
            keep ``out[r, target[sample_index[r]]]``, ``(rows,)``.
        transform
            ``transform(values, copy_index, sample_index) -> tensor`` with one row per input row,
            applied to each chunk's (selected) outputs before they are stored or reduced (e.g. a
            squared error against the copy's perturbation, or ``.double()``).
        reduce
            None: return every row, shaped ``(n_expand, n, *per_row)``. ``"sum"``, ``"mean"``,
            ``"max"`` or ``"min"``: reduce over the copies, shaped ``(n, *per_row)``.

        Returns
        -------
        tensor or numpy.ndarray
            A tensor on the model's device (a numpy array in numpy mode), in the dtype of the
            (transformed) outputs.
        """
        n_expand = check_int(n_expand, "n_expand", low=1)
        reduce = check_option(reduce, "reduce", (None, "sum", "mean", "max", "min"))
        n = x.shape[0]
        bs = self.chunk_rows(x, batch_size, forward_only=True)
        if bs >= n:
            bs = (bs // n) * n  # whole copies per chunk: the sum over copies is a reshape
        if isinstance(x, np.ndarray):
            return self._expanded_forward_array(x, n_expand, make_rows, target, transform, reduce, bs)
        total_rows = n_expand * n
        result = None
        with self.evaluating(), torch.no_grad():
            for part, copy_idx, sample_idx, out in self._expanded_chunks(x, total_rows, bs, n, make_rows):
                if target is not None:
                    out = out.gather(1, target[sample_idx][:, None]).squeeze(1)
                if transform is not None:
                    out = transform(out, copy_idx, sample_idx)
                    if out.shape[0] != part.stop - part.start:
                        raise ValueError(
                            f"transform must return one row per input row ({part.stop - part.start}); "
                            f"got shape {tuple(out.shape)}"
                        )
                if reduce is None:
                    if result is None:
                        result = out.new_empty((total_rows,) + tuple(out.shape[1:]))
                    result[part] = out
                    continue
                if result is None:
                    result = out.new_zeros((n,) + tuple(out.shape[1:]))
                    if reduce in ("max", "min"):
                        result.fill_(-math.inf if reduce == "max" else math.inf)
                whole = part.start % n == 0 and (part.stop - part.start) % n == 0
                if reduce in ("sum", "mean"):
                    if whole:
                        result += out.view(-1, n, *out.shape[1:]).sum(0)
                    else:
                        result.index_add_(0, sample_idx, out)
                elif whole:
                    per = out.view(-1, n, *out.shape[1:])
                    both = torch.stack([result, per.amax(0) if reduce == "max" else per.amin(0)])
                    result = both.amax(0) if reduce == "max" else both.amin(0)
                else:
                    index = sample_idx.view(-1, *([1] * (out.ndim - 1))).expand_as(out)
                    result.scatter_reduce_(0, index, out, "amax" if reduce == "max" else "amin")
        if reduce is None:
            return result.view(n_expand, n, *result.shape[1:])
        if reduce == "mean":
            result /= n_expand
        return result

    def _expanded_forward_array(self, x: np.ndarray, n_expand: int, make_rows, target, transform, reduce,
                                bs: int) -> np.ndarray:
        """:meth:`expanded_forward` in numpy mode (:meth:`with_numpy`): ``x``, the rows
        ``make_rows`` builds, the indices it is given (int64 arrays), ``target`` and the result are
        numpy arrays, and torch is never imported. The chunks, their order and the reductions are
        those of the tensor path, so the values are the same."""
        n = x.shape[0]
        total_rows = n_expand * n
        result = None
        for part, copy_idx, sample_idx, out in self._expanded_chunks(x, total_rows, bs, n, make_rows):
            if target is not None:
                out = out[np.arange(out.shape[0]), np.asarray(target)[sample_idx]]
            if transform is not None:
                out = np.asarray(transform(out, copy_idx, sample_idx))
                if out.shape[0] != part.stop - part.start:
                    raise ValueError(
                        f"transform must return one row per input row ({part.stop - part.start}); "
                        f"got shape {tuple(out.shape)}"
                    )
            if reduce is None:
                if result is None:
                    result = np.empty((total_rows,) + tuple(out.shape[1:]), dtype=out.dtype)
                result[part] = out
                continue
            if result is None:
                result = np.zeros((n,) + tuple(out.shape[1:]), dtype=out.dtype)
                if reduce in ("max", "min"):
                    result.fill(-math.inf if reduce == "max" else math.inf)
            whole = part.start % n == 0 and (part.stop - part.start) % n == 0
            if reduce in ("sum", "mean"):
                if whole:
                    result += out.reshape(-1, n, *out.shape[1:]).sum(0)
                else:
                    np.add.at(result, sample_idx, out)
            elif whole:
                per = out.reshape(-1, n, *out.shape[1:])
                result = np.maximum(result, per.max(0)) if reduce == "max" else np.minimum(result, per.min(0))
            elif reduce == "max":
                np.maximum.at(result, sample_idx, out)
            else:
                np.minimum.at(result, sample_idx, out)
        if reduce is None:
            return result.reshape(n_expand, n, *result.shape[1:])
        if reduce == "mean":
            result /= n_expand
        return result

    def _expanded_chunks(self, x, total_rows: int, bs: int, n: int, make_rows):
        """``(part, copy_idx, sample_idx, outputs)`` per chunk of :meth:`expanded_forward`, in
        order: evaluated here, or with an executor (:meth:`with_executor`) a window of chunks at a
        time on its workers (the rows built here, in order; counted here). For a numpy ``x``
        (numpy mode) the indices, rows and outputs are numpy arrays."""
        executor = getattr(self, "executor", None)
        parts = list(chunks(total_rows, bs))
        array = isinstance(x, np.ndarray)
        index = _array_expansion_index if array else expansion_index
        device = None if array else x.device
        if executor is None:
            for part in parts:
                copy_idx, sample_idx = index(part, n, device)
                yield part, copy_idx, sample_idx, self.forward(make_rows(copy_idx, sample_idx))
            return
        window = max(1, int(executor.n_workers) * int(getattr(executor, "tasks_per_worker", 3)))
        plain = self._derive(executor=None, _parent=None)
        for start in range(0, len(parts), window):
            batch = []
            for part in parts[start : start + window]:
                copy_idx, sample_idx = index(part, n, device)
                rows = make_rows(copy_idx, sample_idx)
                batch.append((part, copy_idx, sample_idx, rows if array else rows.cpu()))
            outs = executor.map(_forward_array_rows if array else _forward_rows, [rows for *_, rows in batch],
                                shared=plain)
            for (part, copy_idx, sample_idx, rows), out in zip(batch, outs):
                self.count_calls(rows.shape[0])
                yield part, copy_idx, sample_idx, (np.asarray(out) if array else out.to(x.device))


def _array_expansion_index(rows: slice, n: int, device=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`featurelens._batching.expansion_index` in numpy: ``(copy_index, sample_index)``
    int64 arrays of the expanded rows ``rows`` of ``n`` samples."""
    r = np.arange(rows.start, rows.stop, dtype=np.int64)
    return r // n, r % n


def _forward_rows(model, rows: torch.Tensor) -> torch.Tensor:
    """One chunk of :meth:`Model.expanded_forward` on an executor's worker (not counted there)."""
    with model.evaluating(), torch.no_grad():
        return model.forward(rows.to(model.device), count=False).cpu()


def _forward_array_rows(model, rows: np.ndarray) -> np.ndarray:
    """One numpy-mode chunk of :meth:`Model.expanded_forward` on an executor's worker (not counted
    there): the numpy model on numpy rows, no torch."""
    return model.forward(rows, count=False)
