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

import numpy as np
import torch

from .._batching import chunks
from .._validation import check_bool, check_optional_bool
from ..models import Model

#: Above this many input dimensions a tracker keeps only the AGOP diagonal unless told otherwise.
FULL_AGOP_MAX_DIM = 4096


def _jacobian_rows(model: Model, x: torch.Tensor) -> torch.Tensor:
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


class _AGOPAccumulator:
    """Running float64 sums of g g^T (or of g^2 only) and the number of samples seen."""

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
                    g = _jacobian_rows(self.model, xb).double()  # (b, outputs, d)
                    g = g.reshape(-1, g.shape[-1])
                else:
                    t = None if target is None else target[s]
                    g, _ = self.model._target_gradient(xb, t)
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


def agop(model, X, target=None, batch_size: int | None = None, diag: bool = False) -> np.ndarray:
    """The AGOP ``M = (1/n) sum_i g_i g_i^T`` of ``model`` over the rows of ``X``.

    Parameters
    ----------
    model
        A ``torch.nn.Module``, a torch callable or a featurelens ``Model``.
    X
        Inputs (numpy or torch), samples first; ``d = prod(X.shape[1:])``.
    target
        None (each sample's predicted class), an int, one int per sample, or ``"all"`` for
        ``J^T J`` summed over every output.
    batch_size
        Rows per batched backward pass (memory bound). None (default): the Model's rule
        (:meth:`featurelens.models.Model.chunk_rows`: a Model's own ``batch_size``, else automatic).
        A Model passed in is never changed.
    diag
        Return only ``diag(M)`` (shape ``(d,)``) without ever forming the ``d x d`` matrix.

    Returns
    -------
    numpy float64 array ``(d, d)``, or ``(d,)`` when ``diag=True``.
    """
    m = Model.wrap(model, batch_size=batch_size)
    m.require_gradients("agop")
    diag = check_bool(diag, "diag")
    x = m.to_tensor(X, "X")
    acc = _AGOPAccumulator(m, full=not diag)
    acc.add(x, _check_target(m, target, x))
    result = acc.sum_diag if diag else acc.sum_outer
    return (result / acc.count).cpu().numpy()


class AGOPTracker:
    """Accumulates the AGOP during training from the batches passed to :meth:`update`.

    ``tracker.update(x_batch, target=None)`` adds the batch's per-sample gradient outer products
    (one extra batched forward/backward in eval mode; the model's train/eval flags are restored,
    and no gradient reaches the parameters' ``.grad``). ``agop()`` and ``diag()`` return the
    running means over all samples seen since the last ``reset()``; after updates with batches
    ``B_1..B_k`` they equal :func:`agop` on the union of the batches.

    ``full``: keep the ``d x d`` matrix (default: only when ``d <= 4096``; the diagonal is always
    kept). ``batch_size``: rows per backward pass; None (default) follows the Model's rule
    (:meth:`featurelens.models.Model.chunk_rows`), so ``AGOPTracker(Model(net, batch_size=8))``
    uses 8. A Model passed in is never changed.
    """

    def __init__(self, model, full: bool | None = None, batch_size: int | None = None):
        self.model = Model.wrap(model, batch_size=batch_size)
        self.model.require_gradients("AGOPTracker")
        self._full_requested = check_optional_bool(full, "full")
        self._acc: _AGOPAccumulator | None = None

    def update(self, x_batch, target=None) -> "AGOPTracker":
        x = self.model.to_tensor(x_batch, "x_batch")
        if self._acc is None:
            d = int(np.prod(x.shape[1:]))
            full = d <= FULL_AGOP_MAX_DIM if self._full_requested is None else bool(self._full_requested)
            self._acc = _AGOPAccumulator(self.model, full=full)
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
