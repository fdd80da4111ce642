"""The array operations the numpy-mode consumers need (the perturbation metrics, the batched
perturbation explainers), for numpy arrays and torch tensors alike.

A metric on a numpy model (a scikit-learn estimator or a numpy callable) works in numpy mode
(:meth:`featurelens.models.Model.with_numpy`): its batch, maps, targets and the model's outputs are
numpy arrays, and torch is never imported. On a torch model they are tensors on the model's device,
as before. The metrics are written once, against :func:`ops`: ``xp = ops(xt)`` gives the namespace
of ``xt``'s kind (:data:`NUMPY` or :data:`TORCH`), whose functions take and return arrays of that
kind. Both namespaces compute the same numbers in the same order where the order matters (scatter
sums element by element, stable sorts), so a metric on a numpy model equals, to the last bits of
its float64 reductions, the same metric on a torch wrapper of that model.

Operations that read the same in numpy and torch (arithmetic, comparisons, ``reshape``, ``[None]``,
``.T``, ``.sum(axis)``, ``.mean(axis)``, fancy indexing) are written directly in the metrics.
"""

from __future__ import annotations

import numpy as np

from featurelens._optional import is_tensor, to_numpy, torch

__all__ = ["NUMPY", "TORCH", "ops", "host"]


#: ``x`` as a numpy array on the host (a tensor detached and copied to the CPU, a numpy array as it
#: is): the one conversion, :func:`featurelens._optional.to_numpy`.
host = to_numpy


class _NumpyOps:
    """The numpy namespace (numpy mode): every function returns numpy arrays."""

    name = "numpy"
    float32 = np.dtype(np.float32)
    float64 = np.dtype(np.float64)
    int64 = np.dtype(np.int64)
    bool = np.dtype(np.bool_)

    @staticmethod
    def asarray(values, like=None, dtype=None) -> np.ndarray:
        """``values`` (numpy or array-like) as an array; ``dtype`` a numpy dtype (None: kept)."""
        return np.asarray(values, dtype=dtype)

    @staticmethod
    def copy_as(values, dtype, like=None) -> np.ndarray:
        """A new, writable array (never a view) of ``values`` (numpy or array-like) in ``dtype``."""
        return np.array(values, dtype=dtype)

    @staticmethod
    def empty(shape, like=None, dtype=np.float64) -> np.ndarray:
        return np.empty(shape, dtype=dtype)

    @staticmethod
    def zeros(shape, like=None, dtype=np.float64) -> np.ndarray:
        return np.zeros(shape, dtype=dtype)

    @staticmethod
    def ones(shape, like=None, dtype=np.float64) -> np.ndarray:
        return np.ones(shape, dtype=dtype)

    @staticmethod
    def arange(start, stop=None, like=None) -> np.ndarray:
        return np.arange(start, stop, dtype=np.int64) if stop is not None else np.arange(start, dtype=np.int64)

    @staticmethod
    def full_like(x, value: float) -> np.ndarray:
        return np.full_like(x, value)

    @staticmethod
    def eye_bool(n: int, like=None) -> np.ndarray:
        return np.eye(n, dtype=bool)

    @staticmethod
    def where(cond, a, b) -> np.ndarray:
        return np.where(cond, a, b)

    @staticmethod
    def stack(arrays) -> np.ndarray:
        return np.stack(arrays)

    @staticmethod
    def cat(arrays) -> np.ndarray:
        return np.concatenate(arrays)

    @staticmethod
    def abs(x) -> np.ndarray:
        return np.abs(x)

    @staticmethod
    def to_float64(x) -> np.ndarray:
        return x.astype(np.float64, copy=False)

    @staticmethod
    def to_int64(x) -> np.ndarray:
        return x.astype(np.int64, copy=False)

    @staticmethod
    def astype(x, dtype) -> np.ndarray:
        return x.astype(dtype, copy=False)

    @staticmethod
    def amax(x, axis: int, keepdims: bool = False) -> np.ndarray:
        return x.max(axis=axis, keepdims=keepdims)

    @staticmethod
    def amin(x, axis: int, keepdims: bool = False) -> np.ndarray:
        return x.min(axis=axis, keepdims=keepdims)

    @staticmethod
    def clamp_min(x, low: float) -> np.ndarray:
        return np.maximum(x, low)

    @staticmethod
    def tiny(dtype) -> float:
        return float(np.finfo(dtype).tiny)

    @staticmethod
    def round_int(x) -> np.ndarray:
        """Round half to even (torch.round's rule too), as int64."""
        return np.round(x).astype(np.int64)

    @staticmethod
    def expand(x, shape) -> np.ndarray:
        """A read-only broadcast view of ``x`` with ``shape``."""
        return np.broadcast_to(x, tuple(shape))

    @staticmethod
    def norm(x, axis: int) -> np.ndarray:
        return np.linalg.norm(x, axis=axis)

    @staticmethod
    def tile(x, reps: int) -> np.ndarray:
        """A 1-d array repeated ``reps`` times end to end (torch's ``repeat``)."""
        return np.tile(x, reps)

    @staticmethod
    def stable_argsort(x, axis: int = 1) -> np.ndarray:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)

    @staticmethod
    def inverse_permutation(order) -> np.ndarray:
        """``ranks`` with ``ranks[i, order[i, j]] = j`` for each row (2-d)."""
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
        return ranks

    @staticmethod
    def index_add_columns(n: int, size: int, index, values) -> np.ndarray:
        """``(n, size)`` float64 zeros with column ``index[j]`` += ``values[:, j]``, j in order."""
        out = np.zeros((n, size), dtype=np.float64)
        np.add.at(out.T, np.asarray(index), np.asarray(values, dtype=np.float64).T)
        return out

    @staticmethod
    def scatter_add_rows(n: int, size: int, index, values) -> np.ndarray:
        """``(n, size)`` float64 zeros with ``out[i, index[i, j]] += values[i, j]``, row by row, j in
        order (torch's ``scatter_add_`` along dim 1)."""
        out = np.zeros((n, size), dtype=np.float64)
        rows = np.broadcast_to(np.arange(n)[:, None], index.shape)
        np.add.at(out, (rows, index), np.asarray(values, dtype=np.float64))
        return out

    @staticmethod
    def take_columns(x, index) -> np.ndarray:
        """``x[i, index[i, j]]`` (torch's ``gather`` along dim 1)."""
        return np.take_along_axis(x, index, axis=1)

    @staticmethod
    def pick(out, target) -> np.ndarray:
        """``out[i, target[i]]``: (rows,)."""
        return out[np.arange(out.shape[0]), target]

    @staticmethod
    def to_rows_device(values, like=None):
        return values


class _TorchOps:
    """The torch namespace: every function returns tensors on the device of ``like``."""

    name = "torch"

    @property
    def float32(self):
        return torch.float32

    @property
    def float64(self):
        return torch.float64

    @property
    def int64(self):
        return torch.long

    @property
    def bool(self):
        return torch.bool

    @staticmethod
    def _device(like):
        return None if like is None else like.device

    def asarray(self, values, like=None, dtype=None):
        t = torch.as_tensor(values, device=self._device(like))
        return t if dtype is None else t.to(dtype)

    def copy_as(self, values, dtype, like=None):
        if is_tensor(values):
            return values.to(dtype=dtype, copy=True)
        # torch.tensor copies (a read-only numpy broadcast included), on like's device
        return torch.tensor(np.asarray(values), device=self._device(like)).to(dtype)

    def empty(self, shape, like=None, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.float64, device=self._device(like))

    def zeros(self, shape, like=None, dtype=None):
        return torch.zeros(shape, dtype=dtype or torch.float64, device=self._device(like))

    def ones(self, shape, like=None, dtype=None):
        return torch.ones(shape, dtype=dtype or torch.float64, device=self._device(like))

    def arange(self, start, stop=None, like=None):
        if stop is None:
            return torch.arange(start, device=self._device(like))
        return torch.arange(start, stop, device=self._device(like))

    @staticmethod
    def full_like(x, value: float):
        return torch.full_like(x, value)

    def eye_bool(self, n: int, like=None):
        return torch.eye(n, dtype=torch.bool, device=self._device(like))

    @staticmethod
    def where(cond, a, b):
        return torch.where(cond, a, b)

    @staticmethod
    def stack(arrays):
        return torch.stack(list(arrays))

    @staticmethod
    def cat(arrays):
        return torch.cat(list(arrays))

    @staticmethod
    def abs(x):
        return x.abs()

    @staticmethod
    def to_float64(x):
        return x.double()

    @staticmethod
    def to_int64(x):
        return x.long()

    @staticmethod
    def astype(x, dtype):
        return x.to(dtype)

    @staticmethod
    def amax(x, axis: int, keepdims: bool = False):
        return x.max(axis, keepdim=keepdims).values

    @staticmethod
    def amin(x, axis: int, keepdims: bool = False):
        return x.min(axis, keepdim=keepdims).values

    @staticmethod
    def clamp_min(x, low: float):
        return x.clamp_min(low)

    @staticmethod
    def tiny(dtype) -> float:
        return float(torch.finfo(dtype).tiny)

    @staticmethod
    def round_int(x):
        return torch.round(x).long()

    @staticmethod
    def expand(x, shape):
        return x.expand(*shape)

    @staticmethod
    def norm(x, axis: int):
        return torch.linalg.vector_norm(x, dim=axis)

    @staticmethod
    def tile(x, reps: int):
        return x.repeat(reps)

    @staticmethod
    def stable_argsort(x, axis: int = 1):
        return torch.sort(x, dim=axis, stable=True).indices

    @staticmethod
    def inverse_permutation(order):
        ranks = torch.empty_like(order)
        ranks.scatter_(1, order, torch.arange(order.shape[1], device=order.device).expand_as(order))
        return ranks

    @staticmethod
    def index_add_columns(n: int, size: int, index, values):
        idx = torch.as_tensor(index, device=values.device)
        return torch.zeros(n, size, dtype=torch.float64, device=values.device).index_add_(1, idx, values.double())

    @staticmethod
    def scatter_add_rows(n: int, size: int, index, values):
        idx = torch.as_tensor(index, device=values.device)
        return torch.zeros(n, size, dtype=torch.float64, device=values.device).scatter_add_(1, idx, values.double())

    @staticmethod
    def take_columns(x, index):
        return x.gather(1, torch.as_tensor(index, device=x.device))

    @staticmethod
    def pick(out, target):
        return out.gather(1, target[:, None])[:, 0]


#: The numpy namespace (numpy mode).
NUMPY = _NumpyOps()
#: The torch namespace (tensors; torch is imported on the first use of one of its functions).
TORCH = _TorchOps()


def ops(x):
    """The namespace for arrays of ``x``'s kind: :data:`TORCH` for a tensor, :data:`NUMPY` for
    anything else (never imports torch).

    Parameters
    ----------
    x
        A numpy array or a torch tensor (the metric's validated batch).

    Returns
    -------
    namespace
        :data:`NUMPY` or :data:`TORCH`.
    """
    return TORCH if is_tensor(x) else NUMPY
