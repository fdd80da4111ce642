"""Occlusion: attributions from the output drop when a patch (or a group) of the input is replaced.

Registered name: ``occlusion``.

For a window ``W`` (a box of input elements at one position of a sliding grid), the drop is
``d_W = f_t(x) - f_t(x with W set to the baseline)``; an element's attribution is the mean of the
drops of the windows that cover it::

    a_i = (1 / |{W : i in W}|) sum_{W containing i} d_W

(Zeiler & Fergus, "Visualizing and Understanding Convolutional Networks", ECCV 2014,
arXiv 1311.2901). Windows start at 0 and move by ``strides`` along each axis; the last position is
the first one that reaches the end of the axis, so a window there may be cut by the border (the
layout Captum's ``Occlusion`` uses, which the tests check against). With ``groups`` instead of a
window, each group is occluded once and all its elements carry its drop (leave-one-group-out).

All occluded copies of all samples are built chunk by chunk and sent through the Model adapter in
forward-only batches, so memory stays bounded however many windows there are. With ``executor=``
the same chunks are evaluated on an executor's workers (:mod:`featurelens.parallel`, through the
game hook ``executor(evaluate_chunk, pairs, chunk_size)`` over the (sample, window) pairs), so the
values are those of the serial path.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from featurelens._optional import torch

from .._batching import DEFAULT_CHUNK_ELEMENTS, chunks
from .._budgets import check_memory, format_count
from .._validation import as_numpy, check_executor, check_int, executor_param
from ._base import Explainer, Requires, register
from ._image_groups import grouping_hint, resolve_groups

__all__ = ["Occlusion"]


def _as_shape(value, ndim: int | None, name: str) -> tuple[int, ...] | None:
    """A window or stride: one positive int for every axis, or one per axis (``ndim`` of them;
    None: any number, the check at construction before the input's shape is known)."""
    if not isinstance(value, (tuple, list, np.ndarray)) and not type(value).__name__ == "Size":
        size = check_int(value, name, low=1)
        return None if ndim is None else (size,) * ndim
    shape = tuple(check_int(v, f"{name}[{i}]", low=1) for i, v in enumerate(value))
    if ndim is not None and len(shape) != ndim:
        raise ValueError(f"{name} must be {ndim} positive ints (one per input axis) or one int; got {value!r}")
    return shape


@register("occlusion")
class Occlusion(Explainer):
    """Occlusion with a sliding window, or leave-one-group-out with ``groups``.

    Parameters
    ----------
    model
        A torch module or callable (only forward passes are made).
    window
        The sliding window's shape over one input (an int for every axis, or one int per axis of
        ``x.shape[1:]``); None: one element (each feature occluded alone).
    strides
        The window's step per axis (an int or one per axis); None: the window's shape (tiles
        without overlap). A stride larger than the window would leave elements uncovered and is
        refused.
    groups
        Instead of a window: an int array shaped like one input assigning elements to groups
        (any int labels); or for images ``(C, H, W)`` / ``(H, W)`` ``"patches"`` (square patches
        shared over the channels, 196 of 16 px on a 224 x 224 image; ``"patches:N"`` for ``N``
        px), ``"slic"`` / ``"superpixels"`` (SLIC superpixels of each image, ``"slic:N"``; needs
        scikit-image) or a callable ``image -> int labels`` called once per image (see
        :class:`~featurelens.explainers.GameExplainer`). Each group is occluded once. Per-image
        groups: ``params["n_windows"]`` one per row, ``Explanation.extra["groups"]`` the label
        maps. An occlusion of single elements (no window, no groups) whose masks cannot fit in
        memory is refused before any model call, naming ``groups="patches"``.
    baseline
        The replacement value: a scalar (default 0), an array shaped like one input or like the
        batch. It can also be passed to ``explain`` for one call.
    batch_size
        Rows per forward pass (None: automatic).
    executor
        Where the chunks of occluded rows are evaluated: a :mod:`featurelens.parallel` executor
        or any callable of the game hook; None: in this process. Recorded in ``params`` by its
        repr. To spread the rows of a batch instead, pass ``explain(x, executor=...)``.
    """

    audit_order = 0
    name = "occlusion"
    requires = Requires(gradients=False)
    numpy_inputs = True  # numpy models are occluded in numpy (no torch)

    accepts = frozenset({"baseline", "groups", "executor"})  # the harness options it takes (see Explainer.accepts)

    def __init__(self, model, window=None, strides=None, groups=None, baseline=None, batch_size: int | None = None,
                 executor=None):
        super().__init__(model, batch_size)
        self.executor = check_executor(executor)
        if groups is not None and (window is not None or strides is not None):
            raise ValueError("give either window/strides (a sliding window) or groups, not both")
        for value, name in ((window, "window"), (strides, "strides")):
            if value is not None:
                _as_shape(value, None, name)  # ints >= 1; their number is checked against x
        self.window = window
        self.strides = strides
        self.grouping = resolve_groups(groups)
        self.groups = self.grouping.array if self.grouping.kind == "array" else groups
        self.baseline = baseline

    def params(self) -> dict:
        p = dict(super().params())
        if self.grouping.kind == "array":
            # The number of groups occluded (masks() takes the distinct labels, which need not be 0..g-1).
            p["groups"] = int(np.unique(self.groups).size)
        elif self.groups is not None:
            p["grouping"] = self.grouping.describe()
        else:
            p["window"] = self.window
            p["strides"] = self.strides
        p["executor"] = executor_param(self.executor)
        return p

    per_image_params = frozenset({"n_windows"})

    def _prepare_call(self, data, n_rows: int, part, first_row: int, repeat: int) -> None:
        super()._prepare_call(data, n_rows, part, first_row, repeat)
        shape = tuple(data.shape[1:])
        if part is None and self.groups is None:
            # The (windows, *input) masks, refused before any model call when they cannot fit.
            ndim = len(shape)
            window = _as_shape(1 if self.window is None else self.window, ndim, "window")
            strides = window if self.strides is None else _as_shape(self.strides, ndim, "strides")
            n_windows = math.prod(max(1, math.ceil((size - w) / st) + 1) for size, w, st in zip(shape, window, strides))
            check_memory(n_windows * math.prod(shape),
                         f"occlusion of inputs of shape {shape} with window {window} ({format_count(n_windows)} "
                         "windows, one boolean mask each)",
                         f"{grouping_hint(shape)}; or a larger window=")

    def masks(self, input_shape: tuple[int, ...], labels=None) -> np.ndarray:
        """The occlusion masks over one input, ``(n_windows, *input_shape)`` bool (``labels``: the
        groups of one row, for per-image groups). The explainer itself makes them a few windows
        at a time (:class:`WindowMasks`), never all at once."""
        masks = self._window_masks(tuple(input_shape), labels)
        return masks.take(np.arange(masks.n_windows))

    def _window_masks(self, input_shape: tuple[int, ...], labels=None) -> "WindowMasks":
        """The windows (or groups) over one input as a :class:`WindowMasks`; the window and the
        strides are checked against ``input_shape`` here."""
        ndim = len(input_shape)
        if labels is None and self.groups is not None:
            labels = self.grouping.shared(tuple(input_shape))
        if labels is not None:
            return WindowMasks(input_shape, labels=np.asarray(labels))
        window = _as_shape(1 if self.window is None else self.window, ndim, "window")
        strides = window if self.strides is None else _as_shape(self.strides, ndim, "strides")
        for axis, (size, w, s) in enumerate(zip(input_shape, window, strides)):
            if w > size:
                raise ValueError(f"window {window} is larger than the input {tuple(input_shape)} on axis {axis}")
            if s > w and size > w:
                raise ValueError(
                    f"strides {strides} would skip elements: the stride on axis {axis} ({s}) exceeds the window ({w})"
                )
        starts = [np.arange(math.ceil((size - w) / s) + 1) * s for size, w, s in zip(input_shape, window, strides)]
        grids = np.stack(np.meshgrid(*starts, indexing="ij"), axis=-1).reshape(-1, ndim)
        return WindowMasks(input_shape, starts=grids, window=window)

    def _attribute(self, x, target, outputs=None, baseline=None):
        labels = self._sample_groups
        if isinstance(labels, list):  # per-image groups: each row its own masks
            base = self._shared_baseline(x, baseline)
            parts = [self._occlude(x[i : i + 1], target[i : i + 1], None if outputs is None else outputs[i : i + 1],
                                   base[i : i + 1], self._window_masks(tuple(x.shape[1:]), labels[i // self._row_repeat]))
                     for i in range(x.shape[0])]
            cat = np.concatenate if isinstance(x, np.ndarray) else torch.cat
            return cat([v for v, _ in parts]), {"n_windows": [e["n_windows"] for _, e in parts]}
        return self._occlude(x, target, outputs, self._shared_baseline(x, baseline), self._window_masks(tuple(x.shape[1:])))

    def _shared_baseline(self, x, baseline=None):
        """The baseline of this call shaped like ``x``; a number (or None, zeros) as one row
        broadcast over the batch rather than a filled copy of it (the occluded rows only read it)."""
        given = getattr(self, "baseline", None) if baseline is None else baseline
        if x.shape[0] > 1 and (given is None or isinstance(given, numbers.Real)):
            one = self._resolve_baseline(x[:1], baseline)
            return one.expand_as(x) if not isinstance(x, np.ndarray) else np.broadcast_to(one, x.shape)
        return self._resolve_baseline(x, baseline)

    def _occlude(self, x, target, outputs, base, masks: "WindowMasks"):
        """The occlusion values of the rows ``x`` for the windows ``masks``."""
        if isinstance(x, np.ndarray):  # a numpy model (numpy mode): the same windows in numpy
            return self._attribute_array(x, target, outputs, base, masks)
        n, n_windows = x.shape[0], masks.n_windows
        f_x = outputs if outputs is not None else self.model.predict(x)
        start_values = f_x.gather(1, target[:, None]).squeeze(1)
        rows = self.model.chunk_rows(x, forward_only=True)
        task = _OcclusionChunk(self.model, x, base, masks, target, start_values)
        if self.executor is None:
            # float64: the drops are differences of nearby outputs, and each element's mean sums many.
            drops = torch.empty(n * n_windows, dtype=torch.float64, device=x.device)
            for part in chunks(n * n_windows, rows):
                drops[part] = task.drops(torch.arange(part.start, part.stop, device=x.device), part=part)
        else:
            # The same chunks on the executor's workers; the rows are counted here, not there.
            pairs = np.arange(n * n_windows, dtype=np.int64)[:, None]
            drops = torch.as_tensor(np.asarray(self.executor(task, pairs, rows), dtype=np.float64), device=x.device)
            self.model.count_calls(n * n_windows)
        drops = drops.reshape(n, n_windows)
        values = _mean_drop(drops, masks, x.device)
        return values.to(x.dtype).reshape(x.shape), {"n_windows": int(n_windows)}


    def _attribute_array(self, x: np.ndarray, target: np.ndarray, outputs, base, masks):
        """:meth:`_occlude` for numpy rows of a numpy model: the same chunks and sums."""
        n, n_windows = x.shape[0], masks.n_windows
        f_x = outputs if outputs is not None else self.model.predict(x)
        start_values = np.asarray(f_x)[np.arange(n), target]
        rows = self.model.chunk_rows(x, forward_only=True)
        task = _OcclusionChunk(self.model, x, base, masks, target, start_values)
        if self.executor is None:
            drops = np.empty(n * n_windows, dtype=np.float64)
            for part in chunks(n * n_windows, rows):
                drops[part] = task.drops(np.arange(part.start, part.stop), part=part)
        else:
            pairs = np.arange(n * n_windows, dtype=np.int64)[:, None]
            drops = np.asarray(self.executor(task, pairs, rows), dtype=np.float64)
            self.model.count_calls(n * n_windows)
        drops = drops.reshape(n, n_windows)
        values = _mean_drop(drops, masks, None)
        return values.astype(x.dtype).reshape(x.shape), {"n_windows": int(n_windows)}


def _mean_drop(drops, masks: "WindowMasks", device):
    """Each element's mean drop over the windows covering it: ``(drops @ M) / counts``, with
    ``drops`` (n, windows) float64 (numpy, or torch on ``device``), ``M`` the (windows, elements)
    masks and counts the windows covering each element (at least 1; none cannot happen with the
    strides allowed). The masks are made a block of windows at a time (about
    :data:`~featurelens._batching.DEFAULT_CHUNK_ELEMENTS` elements each), never all at once: on a
    224 x 224 image with 49 windows they would be 7 MB as bool, 59 MB as float64."""
    n_windows, n_elements = masks.n_windows, math.prod(masks.shape)
    if device is None:
        values, counts = np.zeros((drops.shape[0], n_elements)), np.zeros(n_elements)
    else:
        values = torch.zeros((drops.shape[0], n_elements), dtype=torch.float64, device=device)
        counts = torch.zeros(n_elements, dtype=torch.float64, device=device)
    block = max(1, DEFAULT_CHUNK_ELEMENTS // max(n_elements, 1))
    for part in chunks(n_windows, block):
        if device is None:
            m = masks.take(np.arange(part.start, part.stop)).reshape(-1, n_elements).astype(np.float64)
        else:
            m = masks.take(torch.arange(part.start, part.stop, device=device), device).reshape(-1, n_elements)
            m = m.to(torch.float64)
        values += drops[:, part] @ m
        counts += m.sum(0)
    counts[counts < 1] = 1
    return values / counts


class WindowMasks:
    """The occlusion masks over one input shape, made for a few windows at a time.

    Either sliding windows (``starts``: (n_windows, ndim) first index of each window per axis,
    ``window``: its extent per axis; a window at the border is cut by it) or groups (``labels``:
    an int array shaped like the input; window k is the k-th distinct label, in sorted order).

    Parameters
    ----------
    shape : tuple of int
        One input's shape.
    starts : ndarray of int, (n_windows, len(shape)), optional
        The windows' first indices.
    window : tuple of int, optional
        The windows' extent per axis (with ``starts``).
    labels : ndarray of int, optional
        The groups, instead of windows.

    Examples
    --------
    >>> import numpy as np
    >>> m = WindowMasks((4,), starts=np.array([[0], [2]]), window=(2,))
    >>> m.take(np.array([1])).astype(int).tolist()
    [[0, 0, 1, 1]]
    """

    def __init__(self, shape, starts=None, window=None, labels=None):
        self.shape = tuple(int(s) for s in shape)
        self.starts, self.window, self.labels = starts, window, labels
        if labels is not None:
            self.label_values = np.unique(labels)
            self.n_windows = int(self.label_values.size)
        else:
            self.n_windows = int(starts.shape[0])
        self._on_device = {}  # torch copies of the arrays, per device

    def _tensors(self, device):
        key = str(device)
        if key not in self._on_device:
            if self.labels is not None:
                self._on_device[key] = (torch.as_tensor(self.labels, device=device),
                                        torch.as_tensor(self.label_values, device=device))
            else:
                self._on_device[key] = (torch.as_tensor(self.starts, device=device),)
        return self._on_device[key]

    def take(self, index, device=None):
        """The masks of the windows ``index`` (a numpy int array, or a torch one with ``device``):
        ``(len(index), *shape)`` bool, numpy or torch alike."""
        ndim = len(self.shape)
        if device is None:
            if self.labels is not None:
                return self.labels[None] == self.label_values[index].reshape(-1, *([1] * ndim))
            starts, arange = self.starts, np.arange
        else:
            tensors = self._tensors(device)
            if self.labels is not None:
                labels, values = tensors
                return labels[None] == values[index].reshape(-1, *([1] * ndim))
            starts, arange = tensors[0], (lambda size: torch.arange(size, device=device))
        out = None
        for axis, size in enumerate(self.shape):
            lo = starts[index, axis][:, None]
            pos = arange(size)[None]
            inside = (pos >= lo) & (pos < lo + self.window[axis])  # (k, size)
            inside = inside.reshape(-1, *([1] * axis), size, *([1] * (ndim - axis - 1)))
            out = inside if out is None else out & inside
        return out


class _OcclusionChunk:
    """One chunk of occluded rows: ``drops(index)`` for flat (sample, window) indices, the serial
    loop's body. As an executor's ``evaluate_chunk`` it takes an ``(m, 1)`` int array of indices
    and returns the ``m`` drops as float64 numpy (its forward passes are not counted: the caller
    counts them, wherever the chunks ran)."""

    def __init__(self, model, x, base, masks, target, start_values):
        self.model, self.x, self.base, self.masks = model, x, base, masks
        self.target, self.start_values = target, start_values
        self.n_windows = masks.n_windows

    def drops(self, index, count: bool = True, part: slice | None = None):
        """The drops of the flat (sample, window) indices ``index``; ``part``: the same indices as
        a slice, when they are one (the serial loop), so that a chunk within one sample reads that
        sample's row and baseline by broadcasting rather than copying them once per window."""
        sample, window = index // self.n_windows, index % self.n_windows
        if part is not None and part.start // self.n_windows == (part.stop - 1) // self.n_windows:
            one = part.start // self.n_windows
            x_rows, base_rows = self.x[one : one + 1], self.base[one : one + 1]
        else:
            x_rows, base_rows = self.x[sample], self.base[sample]
        if isinstance(self.x, np.ndarray):  # numpy mode
            occluded = np.where(self.masks.take(window), base_rows, x_rows)
            out = self.model.forward(occluded, count=count)
            picked = out[np.arange(out.shape[0]), self.target[sample]].astype(np.float64)
            return self.start_values[sample].astype(np.float64) - picked
        occluded = torch.where(self.masks.take(window, self.x.device), base_rows, x_rows)
        with torch.no_grad():  # grad mode is per thread: set here, where the pass runs
            out = self.model.forward(occluded, count=count)
        picked = out.gather(1, self.target[sample][:, None]).squeeze(1).double()
        return self.start_values[sample].double() - picked

    def __call__(self, pairs: np.ndarray) -> np.ndarray:
        if isinstance(self.x, np.ndarray):
            return self.drops(np.asarray(pairs).reshape(-1), count=False)
        index = torch.as_tensor(np.asarray(pairs).reshape(-1), device=self.x.device)
        return self.drops(index, count=False).cpu().numpy()
