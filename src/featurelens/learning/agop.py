"""The Average Gradient Outer Product (AGOP) of a model over data, and a tracker that accumulates
it during training.

    M = (1/n) sum_i g_i g_i^T,   g_i = d f_t(x_i) / d x   (flattened, d = prod of one input's shape)

With ``target="all"`` every output contributes: ``M = (1/n) sum_i J_i^T J_i`` with ``J_i`` the
(outputs x d) Jacobian at ``x_i``. No other normalisation is applied (power 1, scale 1/n).
Sums of outer products are accumulated in float64.

Radhakrishnan, Beaglehole, Pandit, Belkin, "Mechanism for feature learning in neural networks and
backpropagation-free machine learning models", Science 2024, arXiv 2212.13881.
"""

from __future__ import annotations

import copy

import numpy as np
from featurelens._optional import torch

from .._batching import chunks
from .._validation import (
    as_numpy,
    check_bool,
    check_device,
    check_floating,
    check_int,
    check_optional_bool,
)
from ..models import Model
from ._distributed import dist_agree, dist_device, dist_module

#: Above this many input dimensions a tracker keeps only the AGOP diagonal unless told otherwise.
FULL_AGOP_MAX_DIM = 4096


def jacobian_rows(model: Model, x: torch.Tensor) -> torch.Tensor:
    """Per-sample Jacobians of all outputs, shaped (rows, outputs, d), by one batched VJP.

    ``torch.func.vmap`` over the output basis vectors (``is_grads_batched``) computes every row of
    the Jacobian in one vectorised backward pass; in eval mode samples are independent, so the
    gradient of the batch sum is the per-sample Jacobian.
    """
    rows = x.detach().requires_grad_(True)
    with torch.enable_grad():
        out = model.forward(rows)
        n_out = out.shape[1]
        basis = torch.eye(n_out, device=out.device, dtype=out.dtype)[:, None, :].expand(n_out, *out.shape)
        try:
            (jac,) = torch.autograd.grad(out, rows, grad_outputs=basis, is_grads_batched=True)
        except RuntimeError:  # an op without a batching rule: one backward pass per output
            jac = torch.stack(
                [torch.autograd.grad(out[:, k].sum(), rows, retain_graph=True)[0] for k in range(n_out)]
            )
    return jac.flatten(2).transpose(0, 1)  # (rows, outputs, d)


class _AGOPSums:
    """Running float64 sums of g g^T (or of g^2 only) and the number of samples seen: the engine of
    :func:`agop`, :class:`AGOPTracker` and :class:`AGOPAccumulator`."""

    def __init__(self, model: Model, full: bool):
        self.model = model  # read only: rows per chunk follow its rule (Model.chunk_rows)
        self.full = full
        self.reset()

    def reset(self):
        self.sum_outer = None
        self.sum_diag = None
        self.count = 0

    def add(self, x: torch.Tensor, target) -> None:
        with self.model.evaluating():
            for s in chunks(x.shape[0], self.model.chunk_rows(x)):
                xb = x[s]
                if isinstance(target, str):  # "all": J^T J
                    g = jacobian_rows(self.model, xb).double()  # (b, outputs, d)
                    g = g.reshape(-1, g.shape[-1])
                else:
                    t = None if target is None else target[s]
                    g, _ = self.model.target_gradient(xb, t)
                    g = g.flatten(1).double()
                diag = (g * g).sum(0)
                self.sum_diag = diag if self.sum_diag is None else self.sum_diag + diag
                if self.full:
                    if self.sum_outer is None:
                        self.sum_outer = g.new_zeros((g.shape[1], g.shape[1]))
                    self.sum_outer.addmm_(g.T, g)  # in place: no d x d temporary per chunk
                self.count += xb.shape[0]


def _check_target(model: Model, target, x: torch.Tensor):
    """``"all"``, None (each row's predicted class, taken in the gradient pass) or one index per
    row through the one target resolver (:meth:`Model.resolve_target`)."""
    if isinstance(target, str):
        if target != "all":
            raise ValueError(f"target must be None, an int, one int per sample or 'all'; got {target!r}")
        return target
    if target is None:
        return None
    return model.resolve_target(target, x, model.predict(x[:1]))


def _is_batch(x) -> bool:
    """One batch of inputs (an array, a tensor, a DataFrame), as opposed to a collection of shards."""
    return isinstance(x, (np.ndarray, torch.Tensor)) or callable(getattr(x, "to_numpy", None))


def _as_shards(X):
    """The shards of ``agop(model, X)`` as a list, or None when ``X`` is one batch.

    A list or tuple is a collection of shards when its items are batches or callables (a nested
    list of numbers stays one batch, as before); any other iterable (a generator, a DataLoader-like
    object) is a collection of shards."""
    if _is_batch(X) or isinstance(X, (str, bytes)):
        return None
    if isinstance(X, (list, tuple)):
        if X and all(_is_batch(s) or callable(s) for s in X):
            return list(X)
        return None
    if hasattr(X, "__iter__"):
        return list(X)
    return None


def agop(
    model,
    X=None,
    target=None,
    batch_size: int | None = None,
    diag: bool = False,
    *,
    shards=None,
    executor=None,
    device=None,
) -> np.ndarray:
    """The AGOP ``M = (1/n) sum_i g_i g_i^T`` of ``model`` over the rows of ``X``.

    Parameters
    ----------
    model
        A ``torch.nn.Module``, a torch callable or a featurelens ``Model``.
    X
        Inputs (numpy or torch), samples first; ``d = prod(X.shape[1:])``. Or a collection of
        shards (as ``shards=``): a list of batches or of callables returning batches, or any
        iterable of batches.
    target
        None (each sample's predicted class), an int, one int per sample, or ``"all"`` for
        ``J^T J`` summed over every output. With shards: None, an int or ``"all"``.
    batch_size
        Rows per batched backward pass (memory bound). None (default): the Model's rule
        (``featurelens.models.Model.chunk_rows``: a Model's own ``batch_size``, else automatic).
        A Model passed in is never changed.
    diag
        Return only ``diag(M)`` (shape ``(d,)``) without ever forming the ``d x d`` matrix.
    shards
        Data in parts, for data that does not fit in memory or that is spread over workers: a list
        of batches, or of callables returning a batch (loaded on the worker, so only the callable
        travels), or an iterable of batches. Each shard's float64 sums are computed by
        :class:`AGOPAccumulator` (one task per shard through ``executor.map``) and the sums are
        added by a pairwise tree in the shards' order, then divided once by the number of rows:
        the result equals the one-shot AGOP of the concatenated shards to rounding (about 1e-15
        relative), and is the same, bit for bit, whatever the executor.
    executor
        A :mod:`featurelens.parallel` executor (threads, processes, Ray, Dask) that runs the shards;
        None: one after the other in this process. A single batch ``X`` is then one shard. For
        executors outside this process the model must pickle (or be built on the worker:
        ``Model.from_factory``).
    device
        Where the inputs go (a torch model's parameters must be there); None: the Model's device.

    Returns
    -------
    numpy float64 array ``(d, d)``, or ``(d,)`` when ``diag=True``.
    """
    if shards is not None and X is not None:
        raise TypeError("agop takes the data as X or as shards=, not both")
    if X is None and shards is None:
        raise TypeError("agop needs the data: X (a batch) or shards= (a list of batches or callables)")
    if shards is not None:
        if isinstance(shards, (list, tuple)) and not shards:
            parts = []  # refused below, with the reason
        else:
            parts = [shards] if _is_batch(shards) else _as_shards(shards)
        if parts is None:
            raise TypeError(
                "shards must be a list of batches (arrays or tensors) or of callables returning a "
                f"batch, or an iterable of batches; got {type(shards).__name__}"
            )
    else:
        parts = _as_shards(X)
        if parts is None and executor is not None:
            parts = [X]  # one batch through the executor: one shard
    if parts is not None:
        return _agop_shards(model, parts, executor, target, diag, batch_size, device)
    m = _wrap_model(model, batch_size, device)
    m.require_gradients("agop")
    diag = check_bool(diag, "diag")
    x = m.to_tensor(X, "X")
    acc = _AGOPSums(m, full=not diag)
    acc.add(x, _check_target(m, target, x))
    result = acc.sum_diag if diag else acc.sum_outer
    return (result / acc.count).cpu().numpy()


def _wrap_model(model, batch_size, device) -> Model:
    """``Model.wrap`` with an optional device (a Model keeps its own; asking another is refused)."""
    if device is None:
        return Model.wrap(model, batch_size=batch_size)
    dev = check_device(device)
    if isinstance(model, Model):
        if dev != model.device and not (dev.index is None and dev.type == model.device.type):
            raise ValueError(
                f"device={str(device)!r} differs from the device of the Model passed in "
                f"({model.device}); build the Model with Model(net, device=...) or pass device=None"
            )
        return Model.wrap(model, batch_size=batch_size)
    return Model(model, batch_size=batch_size, device=dev)


def _agop_shard(template: AGOPAccumulator, shard) -> dict:
    """One task of :func:`agop` over shards: the float64 sums of one shard, as a plain state."""
    batch = shard() if callable(shard) and not _is_batch(shard) else shard
    acc = template._fresh()
    acc.update(batch)
    return acc.state()


def _tree_sum(accs: list) -> AGOPAccumulator:
    """Pairwise sums in a fixed order ((0+1)+(2+3))+..., so results do not depend on scheduling,
    and rounding grows with log(k) rather than k."""
    while len(accs) > 1:
        nxt = [accs[i].merge(accs[i + 1]) for i in range(0, len(accs) - 1, 2)]
        if len(accs) % 2:
            nxt.append(accs[-1])
        accs = nxt
    return accs[0]


def _agop_shards(model, parts, executor, target, diag, batch_size, device) -> np.ndarray:
    if not parts:
        raise ValueError("shards is empty; expected at least one batch")
    template = AGOPAccumulator(model, target=target, diag=diag, batch_size=batch_size, device=device)
    m = template.model
    # The module is put in eval mode once, here: each task works on its own shallow copy of the
    # Model (its own eval-context counter), whose evaluating() then finds and restores eval flags,
    # so tasks on threads never see a module switched back to training mode by another task.
    with m.evaluating():
        if executor is None:
            states = [_agop_shard(template, s) for s in parts]
        else:
            if not callable(getattr(executor, "map", None)):
                raise TypeError(
                    "executor must be a featurelens.parallel executor (an object with "
                    f"map(fn, items, shared=None)) or None; got {type(executor).__name__}"
                )
            states = executor.map(_agop_shard, parts, shared=template)
    merged = _tree_sum([AGOPAccumulator.from_state(s) for s in states])
    m.count_calls(merged.count)  # gradient rows, counted in the caller (tasks count on private copies)
    return merged.result()


def _target_code(target) -> float:
    """The accumulator's target as one number for the cross-rank check (None -1, "all" -2)."""
    return -1.0 if target is None else (-2.0 if target == "all" else float(target))


class AGOPAccumulator:
    """Mergeable float64 sums for the AGOP ``M = (1/n) sum_i g_i g_i^T`` over data seen in parts.

    ``update(X)`` adds a batch's per-sample gradient outer products (``sum_i g_i g_i^T`` in
    float64, or only ``sum_i g_i^2`` with ``diag=True``) and its number of rows; ``merge(other)``
    adds another accumulator's sums (other batches, another worker, another process);
    ``result()`` divides once: ``M = S / n``. Because only sums and a count are kept, any
    partition of the rows gives the one-shot :func:`agop` of their union to rounding. The state
    travels as a plain dict of numpy arrays and numbers (``state``, ``from_state``), and
    ``all_reduce`` sums it across the ranks of a ``torch.distributed`` group (torchrun).

    Radhakrishnan, Beaglehole, Pandit, Belkin, "Mechanism for feature learning in neural networks
    and backpropagation-free machine learning models", Science 2024, arXiv 2212.13881.

    Parameters
    ----------
    model
        A ``torch.nn.Module``, a torch callable or a featurelens ``Model`` (never changed).
    target
        None (each row's predicted class), an int, or ``"all"`` (``J^T J`` over every output).
        Per-row targets go with each batch: ``update(X, target=labels)``.
    diag
        Keep only the diagonal ``sum_i g_i^2`` (d numbers instead of d^2).
    batch_size
        Rows per batched backward pass; None: the Model's rule (``Model.chunk_rows``).
    device
        Where inputs go (and the sums are kept); None: the Model's device.

    Merging requires the same ``target``, ``diag`` and input dimension ``d``; ``batch_size`` and
    ``device`` only decide how the sums are computed.
    """

    _KIND = "featurelens.AGOPAccumulator"

    def __init__(self, model, target=None, diag: bool = False, batch_size: int | None = None, device=None):
        self.model = _wrap_model(model, batch_size, device)
        self.model.require_gradients("AGOPAccumulator")
        self.target = self._check_setting_target(target)
        self.diag = check_bool(diag, "diag")
        self._sums = _AGOPSums(self.model, full=not self.diag)
        self.d: int | None = None

    @staticmethod
    def _check_setting_target(target):
        if target is None or (isinstance(target, str) and target == "all"):
            return target
        if isinstance(target, str):
            raise ValueError(f"target must be None, an int or 'all'; got {target!r}")  # noqa: TRY004
        if isinstance(target, (np.ndarray, torch.Tensor, list, tuple)) and np.ndim(target) > 0:
            raise TypeError(
                "target must be None, an int or 'all' for the whole accumulator; got one value per "
                "row: pass per-row targets with each batch, update(X, target=...)"
            )
        return check_int(target, "target", low=0)

    # -- data -------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Rows seen (over every update and merge)."""
        return self._sums.count

    n_samples = count

    def update(self, X, target=None) -> AGOPAccumulator:
        """Add the rows of the batch ``X`` (samples first). ``target``: this batch's targets (an int
        or one per row); None: the accumulator's ``target``."""
        if self.model is None:
            raise RuntimeError(
                "this AGOPAccumulator was rebuilt from a state without a model; "
                "pass model= to AGOPAccumulator.from_state to add batches"
            )
        x = self.model.to_tensor(X, "X")
        d = int(np.prod(x.shape[1:]))
        if self.d is not None and d != self.d:
            raise ValueError(
                f"X must keep the input dimension across batches; expected d = {self.d} elements per "
                f"row, got {d} (shape {tuple(x.shape)})"
            )
        self._sums.add(x, _check_target(self.model, self.target if target is None else target, x))
        self.d = d
        return self

    def _fresh(self) -> AGOPAccumulator:
        """An empty accumulator with these settings, over a private shallow copy of the Model (its
        own eval-context counter and call counter, so tasks on threads do not share them)."""
        new = copy.copy(self)
        m = copy.copy(self.model)
        m.calls, m._eval_depth, m._eval_flags, m._parent = 0, 0, None, None
        new.model = m
        new._sums = _AGOPSums(m, full=not self.diag)
        new.d = None
        return new

    # -- merging ----------------------------------------------------------------------------
    def _settings(self) -> dict:
        return {"target": self.target, "diag": self.diag}

    def merge(self, other: AGOPAccumulator) -> AGOPAccumulator:
        """Add ``other``'s sums and count to this accumulator (in place); returns ``self``.
        ``other`` is left as it is. Settings (``target``, ``diag``, ``d``) must agree."""
        if not isinstance(other, AGOPAccumulator):
            raise TypeError(f"other must be an AGOPAccumulator; got {type(other).__name__}")
        if other is self:
            raise ValueError("cannot merge an accumulator into itself (its rows would count twice)")
        mine, theirs = self._settings(), other._settings()
        if self.d is not None and other.d is not None:
            mine["d"], theirs["d"] = self.d, other.d
        diff = [k for k in mine if mine[k] != theirs[k]]
        if diff:
            raise ValueError(
                "cannot merge AGOP accumulators with different settings: "
                + ", ".join(f"{k}={mine[k]!r} here, {k}={theirs[k]!r} in other" for k in diff)
            )
        if other.count == 0:
            return self
        s, o = self._sums, other._sums
        dev = s.sum_diag.device if s.sum_diag is not None else self._device()
        if s.sum_diag is None:
            s.sum_diag = o.sum_diag.to(dev, copy=True)
            if s.full:
                s.sum_outer = o.sum_outer.to(dev, copy=True)
        else:
            s.sum_diag += o.sum_diag.to(dev)
            if s.full:
                s.sum_outer += o.sum_outer.to(dev)
        s.count += o.count
        self.d = other.d
        return self

    def _device(self) -> torch.device:
        return self.model.device if self.model is not None else torch.device("cpu")

    # -- state ------------------------------------------------------------------------------
    def state(self) -> dict:
        """The accumulator as a plain dict (picklable; every value a number, a string, None, a
        bool or a float64 numpy array): ``kind``, ``version``, ``target``, ``diag``, ``d``,
        ``count``, ``sum_diag`` ((d,) or None before any row) and ``sum_outer`` ((d, d), or None
        with ``diag=True``). Arrays are copies."""
        s = self._sums
        return {
            "kind": self._KIND,
            "version": 1,
            "target": self.target,
            "diag": self.diag,
            "d": self.d,
            "count": int(s.count),
            "sum_diag": None if s.sum_diag is None else s.sum_diag.detach().cpu().numpy().copy(),
            "sum_outer": None if (s.sum_outer is None or not s.full) else s.sum_outer.detach().cpu().numpy().copy(),
        }

    @classmethod
    def from_state(cls, state: dict, model=None, batch_size: int | None = None, device=None) -> AGOPAccumulator:
        """The accumulator a ``state`` describes. With ``model`` it can take more batches;
        without, it can still be merged, reduced and read (its sums are kept on the CPU)."""
        if not isinstance(state, dict):
            raise TypeError(f"state must be the dict returned by AGOPAccumulator.state(); got {type(state).__name__}")
        missing = {"kind", "version", "target", "diag", "d", "count", "sum_diag", "sum_outer"} - set(state)
        if missing or state.get("kind") != cls._KIND:
            raise ValueError(
                "state must be the dict returned by AGOPAccumulator.state(); "
                + (f"missing keys {sorted(missing)}" if missing else f"got kind={state.get('kind')!r}")
            )
        if state["version"] != 1:
            raise ValueError(f"state has version {state['version']!r}; this featurelens reads version 1")
        new = cls.__new__(cls)
        if model is None:
            new.model = None
        else:
            new.model = _wrap_model(model, batch_size, device)
            new.model.require_gradients("AGOPAccumulator")
        new.target = cls._check_setting_target(state["target"])
        new.diag = check_bool(state["diag"], "state['diag']")
        new._sums = _AGOPSums(new.model, full=not new.diag)
        count = check_int(state["count"], "state['count']", low=0)
        d = check_int(state["d"], "state['d']", low=1, allow_none=True)
        new.d = d
        if count == 0:
            return new
        if d is None:
            raise ValueError(f"state has count={count} but d=None; expected the input dimension")
        dev = new._device()
        new._sums.sum_diag = _state_array(state["sum_diag"], "state['sum_diag']", (d,), dev)
        if not new.diag:
            new._sums.sum_outer = _state_array(state["sum_outer"], "state['sum_outer']", (d, d), dev)
        new._sums.count = count
        return new

    # -- results ----------------------------------------------------------------------------
    def result(self) -> np.ndarray:
        """``M = S / n``: the (d, d) AGOP, or its diagonal (d,) with ``diag=True`` (float64)."""
        if self.count == 0:
            raise ValueError("the accumulator has seen no rows yet; call update(X) or merge(other) first")
        s = self._sums
        return ((s.sum_diag if self.diag else s.sum_outer) / s.count).cpu().numpy()

    def all_reduce(self, group=None) -> AGOPAccumulator:
        """Sum the sums and counts of every rank of a ``torch.distributed`` process group, in place
        (one ``dist.all_reduce`` of a float64 tensor, after a check that every rank has the same
        ``target``, ``diag`` and ``d``; ranks without rows take part too). Every rank then holds
        the global accumulator, so ``result()`` gives the AGOP over all ranks' rows. Call it on
        every rank of ``group`` (default: the whole world). Raises RuntimeError when
        torch.distributed is not initialised."""
        dist = dist_module("AGOPAccumulator.all_reduce")
        dev = dist_device(dist, group)
        header = np.array([float(self.diag), _target_code(self.target)])
        dist_agree(dist, header, True, group, dev, "target and diag", "AGOP accumulators")
        d = dist_agree(dist, np.array([float(self.d or 0)]), self.count > 0, group, dev, "d (input dimension)",
                        "AGOP accumulators")
        if d is None:
            return self  # no rank has rows
        d = int(d[0])
        s = self._sums
        parts = [torch.tensor([float(s.count)], dtype=torch.float64, device=dev)]
        if self.count > 0:
            parts.append(s.sum_diag.to(dev, torch.float64).reshape(-1))
            if s.full:
                parts.append(s.sum_outer.to(dev, torch.float64).reshape(-1))
        else:
            parts.append(torch.zeros(d + (d * d if s.full else 0), dtype=torch.float64, device=dev))
        flat = torch.cat(parts)
        dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
        home = self._device()
        s.count = round(float(flat[0]))
        s.sum_diag = flat[1 : 1 + d].to(home).clone()
        if s.full:
            s.sum_outer = flat[1 + d :].reshape(d, d).to(home).clone()
        self.d = d
        return self

    def __repr__(self) -> str:
        return (f"AGOPAccumulator(target={self.target!r}, diag={self.diag}, d={self.d}, "
                f"count={self.count})")


def _state_array(value, name: str, shape: tuple, device) -> torch.Tensor:
    arr = as_numpy(value, name) if value is not None else None
    if arr is None or arr.shape != shape:
        raise ValueError(f"{name} must be a float64 array of shape {shape}; got "
                         + ("None" if arr is None else f"shape {arr.shape}"))
    check_floating(arr, name)
    return torch.from_numpy(np.array(arr, dtype=np.float64)).to(device)


class AGOPTracker:
    """Accumulates the AGOP during training from the batches passed to ``update``.

    ``tracker.update(x_batch, target=None)`` adds the batch's per-sample gradient outer products
    (one extra batched forward/backward in eval mode; the model's train/eval flags are restored,
    and no gradient reaches the parameters' ``.grad``). ``agop()`` and ``diag()`` return the
    running means over all samples seen since the last ``reset()``; after updates with batches
    ``B_1..B_k`` they equal :func:`agop` on the union of the batches.

    ``full``: keep the ``d x d`` matrix (default: only when ``d <= 4096``; the diagonal is always
    kept). ``batch_size``: rows per backward pass; None (default) follows the Model's rule
    (``featurelens.models.Model.chunk_rows``), so ``AGOPTracker(Model(net, batch_size=8))``
    uses 8. A Model passed in is never changed.
    """

    def __init__(self, model, full: bool | None = None, batch_size: int | None = None):
        self.model = Model.wrap(model, batch_size=batch_size)
        self.model.require_gradients("AGOPTracker")
        self._full_requested = check_optional_bool(full, "full")
        self._acc: _AGOPSums | None = None

    def update(self, x_batch, target=None) -> AGOPTracker:
        x = self.model.to_tensor(x_batch, "x_batch")
        if self._acc is None:
            d = int(np.prod(x.shape[1:]))
            full = d <= FULL_AGOP_MAX_DIM if self._full_requested is None else bool(self._full_requested)
            self._acc = _AGOPSums(self.model, full=full)
        self._acc.add(x, _check_target(self.model, target, x))
        return self

    @property
    def n_samples(self) -> int:
        return 0 if self._acc is None else self._acc.count

    def _require_data(self):
        if self._acc is None or self._acc.count == 0:
            raise ValueError("the tracker has seen no samples yet; call update(x_batch) first")

    def agop(self) -> np.ndarray:
        """The running AGOP, a (d, d) float64 array."""
        self._require_data()
        if not self._acc.full:
            raise ValueError(
                "this tracker keeps only the AGOP diagonal (input dimension above "
                f"{FULL_AGOP_MAX_DIM} or full=False); use diag(), or AGOPTracker(model, full=True)"
            )
        return (self._acc.sum_outer / self._acc.count).cpu().numpy()

    def diag(self) -> np.ndarray:
        """The running AGOP diagonal, a (d,) float64 array."""
        self._require_data()
        return (self._acc.sum_diag / self._acc.count).cpu().numpy()

    def reset(self) -> None:
        """Forget every sample seen so far."""
        if self._acc is not None:
            self._acc.reset()
