"""Jacobian (normal) alignment of a network with its inputs, and the GrokAlign regulariser.

Walker, Humayun, Balestriero, Baraniuk, "GrokAlign: Geometric Characterisation and Acceleration of
Grokking", 2025, arXiv 2506.12284. A network is *Jacobian aligned* at ``x`` when its input-output
Jacobian ``J_x = d f / d x`` (outputs x d) is rank one with every row parallel to ``x``,
``J_x = c x^T``; the paper shows such networks minimise the training objective under a norm
constraint (and groks once they do), introduces *centroid alignment* ``cos(J_x^T 1, x)`` as its
tractable proxy, and proposes GrokAlign, a Jacobian-norm regulariser that induces the alignment.

:func:`jacobian_alignment` measures how aligned a model is on a batch; :class:`GrokAlign` is the
regulariser, a differentiable penalty to add to any training loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from featurelens._optional import torch

from .._batching import chunks
from .._random import parse_seed, torch_generator
from .._validation import check_float
from .._budgets import check_budget
from ..models import Model
from .agop import jacobian_rows

__all__ = ["GrokAlign", "JacobianAlignment", "jacobian_alignment"]

# Model.forward refuses outputs that do not depend on the input through autograd with a ValueError;
# here a model without input gradients is the wrong *kind* of model, so it becomes a TypeError.
_NO_AUTOGRAD = "do not depend on the input through autograd"


def _gradient_model(model, method: str) -> Model:
    """The Model adapter around ``model``, refused (TypeError) unless it is differentiable: a
    ``torch.nn.Module``, a torch callable wrapped as ``Model(fn, accepts="torch")`` or such a Model.
    A plain callable is taken as a numpy function (the adapter's default), which has no gradients."""
    m = Model.wrap(model)
    m.require_gradients(method)
    return m


def _no_autograd(err: ValueError, m: Model, method: str) -> TypeError | None:
    """The TypeError for a model whose outputs carry no input gradient, else None."""
    if _NO_AUTOGRAD not in str(err):
        return None
    return TypeError(
        f"{method} needs input gradients, but model {m.display_name()} returned outputs that do not "
        "depend on the input through autograd (detached, computed under torch.no_grad(), "
        "through numpy, or constant)"
    )


def _forward(m: Model, x: torch.Tensor, method: str) -> torch.Tensor:
    try:
        return m.forward(x)
    except ValueError as err:
        type_error = _no_autograd(err, m, method)
        if type_error is not None:
            raise type_error from err
        raise


@dataclass(frozen=True)
class JacobianAlignment:
    """What :func:`jacobian_alignment` measured on ``n`` samples with ``k`` outputs (numpy arrays,
    float64). Every cosine is 0 where one of its two vectors is zero; the rank-one share is 0 where
    the whole Jacobian is zero.

    Attributes
    ----------
    cosine : (n, k)
        ``cos(grad_x f_k(x), x)`` per sample and output.
    rank_one_share : (n,)
        ``sigma_1(J_x)^2 / ||J_x||_F^2``, in ``[1/min(k, d), 1]``; 1 for a rank-one Jacobian.
    centroid_cosine : (n,)
        The paper's centroid alignment ``cos(J_x^T 1, x)``, ``J_x^T 1 = grad_x sum_k f_k(x)``.
    top_singular_cosine : (n,)
        ``|cos(v_1, x)|`` with ``v_1`` the top right singular vector of ``J_x`` (sign-free).
        ``J_x = c x^T`` (normal alignment) exactly when ``rank_one_share = 1`` and this is 1.
    mean_cosine : (k,)
        ``cosine`` averaged over the samples, per output.
    mean_rank_one_share, mean_centroid_cosine, mean_top_singular_cosine : float
        The sample means of the per-sample values.
    """

    cosine: np.ndarray
    rank_one_share: np.ndarray
    centroid_cosine: np.ndarray
    top_singular_cosine: np.ndarray
    mean_cosine: np.ndarray
    mean_rank_one_share: float
    mean_centroid_cosine: float
    mean_top_singular_cosine: float

    def as_dict(self) -> dict:
        """The fields as a plain dict (arrays stay numpy arrays)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine of the last axes of ``a`` and ``b`` (broadcast), 0 where either vector is zero."""
    num = (a * b).sum(-1)
    den = a.norm(dim=-1) * b.norm(dim=-1)
    return torch.where(den > 0, num / den.clamp_min(torch.finfo(den.dtype).tiny), torch.zeros_like(num))


def jacobian_alignment(model, X, batch_size: int | None = None) -> JacobianAlignment:
    """Normal (Jacobian) alignment of ``model`` at each sample of ``X``.

    For each sample ``x`` (flattened to ``d`` values) with Jacobian ``J = d f / d x`` (``k x d``):

        cosine_k           = <J_k, x> / (||J_k|| ||x||)          (J_k = grad_x f_k(x), row k of J)
        rank_one_share     = sigma_1(J)^2 / ||J||_F^2 = sigma_1^2 / sum_i sigma_i^2
        centroid_cosine    = cos(J^T 1, x)                        (the paper's centroid alignment)
        top_singular_cosine = |cos(v_1, x)|,  v_1 the top right singular vector of J

    Normal alignment ``J = c x^T`` (Walker, Humayun, Balestriero, Baraniuk 2025, arXiv 2506.12284)
    means ``rank_one_share = 1`` and ``|cosine_k| = 1`` for every output with a nonzero gradient.
    For a linear model ``f(x) = W x + b``: ``cosine_k = W_k.x / (||W_k|| ||x||)`` and
    ``rank_one_share = s_1(W)^2 / sum_i s_i(W)^2`` at every ``x``. For a positively homogeneous
    network (ReLU, no biases) Euler's theorem gives ``<grad f_k, x> = f_k(x)``.

    Parameters
    ----------
    model
        A ``torch.nn.Module``, a differentiable :class:`featurelens.models.Model` or a torch
        callable wrapped as ``Model(fn, accepts="torch")``; outputs ``(n,)`` or ``(n, k)``. It is
        evaluated in eval mode and left as it was (train flags, ``requires_grad`` of its parameters,
        no ``.grad`` written). Parameters need not require gradients; the input must reach the
        output through autograd (else a TypeError).
    X
        A batch ``(n, ...)`` (numpy or torch), finite floats.
    batch_size
        Rows per batched Jacobian pass (memory: ``batch_size * k`` input gradients at once); None:
        the Model's rule (``featurelens.models.Model.chunk_rows``).

    Returns
    -------
    JacobianAlignment
        Per-sample values and their means, float64 numpy arrays.
    """
    m = _gradient_model(model, "jacobian_alignment")
    x = m.to_tensor(X, "X")
    rows = m.chunk_rows(x, batch_size)
    parts = {"cosine": [], "share": [], "centroid": [], "top": []}

    with m.evaluating():
        for s in chunks(x.shape[0], rows):
            xb = x[s]
            try:
                jac = jacobian_rows(m, xb).double()  # (b, k, d)
            except ValueError as err:
                type_error = _no_autograd(err, m, "jacobian_alignment")
                if type_error is not None:
                    raise type_error from err
                raise
            xf = xb.detach().flatten(1).double()[:, None, :]  # (b, 1, d)
            parts["cosine"].append(_cosine(jac, xf))
            fro2 = (jac * jac).sum((1, 2))
            # sigma_1 and v_1 from the small (k x k or d x d) side: svd of the (b, k, d) stack.
            _, sv, vh = torch.linalg.svd(jac, full_matrices=False)
            share = torch.where(fro2 > 0, sv[:, 0] ** 2 / fro2.clamp_min(torch.finfo(fro2.dtype).tiny),
                                torch.zeros_like(fro2))
            parts["share"].append(share)
            parts["centroid"].append(_cosine(jac.sum(1), xf[:, 0]))
            top = _cosine(vh[:, 0, :], xf[:, 0]).abs()
            parts["top"].append(torch.where(sv[:, 0] > 0, top, torch.zeros_like(top)))
    cosine = torch.cat(parts["cosine"]).cpu().numpy()
    share = torch.cat(parts["share"]).cpu().numpy()
    centroid = torch.cat(parts["centroid"]).cpu().numpy()
    top = torch.cat(parts["top"]).cpu().numpy()
    return JacobianAlignment(
        cosine=cosine,
        rank_one_share=share,
        centroid_cosine=centroid,
        top_singular_cosine=top,
        mean_cosine=cosine.mean(0),
        mean_rank_one_share=float(share.mean()),
        mean_centroid_cosine=float(centroid.mean()),
        mean_top_singular_cosine=float(top.mean()),
    )


class GrokAlign:
    """The GrokAlign Jacobian regulariser: ``penalty(model, x)`` is a scalar tensor to add to a loss.

    Walker, Humayun, Balestriero, Baraniuk, "GrokAlign: Geometric Characterisation and Acceleration
    of Grokking", 2025, arXiv 2506.12284. The paper trains on ``L + lambda * mean_x ||J_x||_F``
    (the Frobenius norm of the input-output Jacobian at each training point, not squared), with the
    norm estimated from random projections as in Hoffman, Roberts, Yaida, "Robust Learning with
    Jacobian Regularization", 2019, arXiv 1908.02729: ``||J||_F^2 = C E_v ||J^T v||^2`` for ``v``
    uniform on the unit sphere of the ``C`` outputs. That is what is implemented, exactly:

        penalty(model, x) = weight * (1/n) sum_i sqrt( (C/p) sum_{j=1..p} ||J_i^T v_ij||^2 )

    with ``J_i`` the ``C x d`` Jacobian at row ``i``, ``p = n_projections`` and ``v_ij`` drawn
    afresh on each call, independently per row and projection, uniform on the unit sphere of R^C.
    ``J_i^T v_ij`` is one vector-Jacobian product (the backward pass of ``<v_ij, f(x_i)>``), all
    ``p`` of them in one batched backward pass; ``create_graph=True`` keeps the penalty
    differentiable with respect to the parameters (double backward). The inner sum is an unbiased
    estimate of ``||J_i||_F^2``; its square root, as in the paper, is slightly biased low.
    ``n_projections=None`` uses the ``C`` basis vectors instead (``(C/C) sum_c ||J^T e_c||^2 =
    ||J||_F^2``): the exact norm, at ``C`` VJPs per row.

    The rows of ``x`` must be independent through the model (no BatchNorm in training mode and no
    other batch-coupling layer): the VJP of the batch sum is then the per-row VJP. The model is
    called as it is (its train/eval mode is not changed), as in training. The square root is taken
    as 0 (with zero gradient) where the estimate is exactly 0, so that a zero Jacobian gives no NaN
    gradient.

    Parameters
    ----------
    weight
        ``lambda`` >= 0, the factor of the penalty.
    n_projections
        ``p`` >= 1 random projections per row, or None for the exact Frobenius norm.
    seed
        None, an int or a numpy Generator: the projections' stream (a torch Generator on the CPU,
        created at the first call and advanced by every call, so a run is reproducible).

    Attributes
    ----------
    projections_ : torch.Tensor of shape (p, n, C)
        The unit vectors of the last call (None before the first call and for the exact norm).
    """

    def __init__(self, weight: float, n_projections: int | None = 1, seed=0):
        self.weight = check_float(weight, "weight", low=0.0)
        self.n_projections = check_budget(n_projections, "n_projections", allow_none=True,
                                          unit="Jacobian-vector products", what="per row and step")
        self.seed = parse_seed(seed)
        self._generator = None
        self.projections_ = None

    def __repr__(self) -> str:
        return f"GrokAlign(weight={self.weight!r}, n_projections={self.n_projections!r}, seed={self.seed!r})"

    def _draw(self, p: int, n: int, c: int, like: torch.Tensor) -> torch.Tensor:
        if self._generator is None:
            self._generator = torch_generator(self.seed)
        v = torch.randn((p, n, c), generator=self._generator, dtype=torch.float64)
        v = v / v.norm(dim=-1, keepdim=True)
        return v.to(device=like.device, dtype=like.dtype)

    def jacobian_norm(self, model, x) -> torch.Tensor:
        """The per-row estimates ``sqrt((C/p) sum_j ||J_i^T v_ij||^2)`` of ``||J_i||_F``, shape (n,),
        differentiable with respect to the parameters (the penalty is ``weight`` times their mean)."""
        m = _gradient_model(model, "GrokAlign")
        xr = m.to_tensor(x, "x").requires_grad_(True)
        with torch.enable_grad():
            out = _forward(m, xr, "GrokAlign")  # (n, C)
            n, c = out.shape
            if self.n_projections is None:
                v = torch.eye(c, device=out.device, dtype=out.dtype)[:, None, :].expand(c, n, c)
                scale = 1.0
            else:
                v = self._draw(self.n_projections, n, c, out)
                self.projections_ = v
                scale = c / self.n_projections
            try:
                (vjp,) = torch.autograd.grad(out, xr, grad_outputs=v, is_grads_batched=True, create_graph=True)
            except RuntimeError:  # an op without a batching rule: one backward pass per projection
                vjp = torch.stack([
                    torch.autograd.grad(out, xr, grad_outputs=v[j], create_graph=True, retain_graph=True)[0]
                    for j in range(v.shape[0])
                ])
            sq = scale * vjp.flatten(2).pow(2).sum((0, 2))  # (n,)
            positive = sq > 0
            # sqrt'(0) is infinite: the masked-out branch is kept finite so no NaN reaches the gradient.
            return torch.where(positive, sq.clamp_min(torch.finfo(sq.dtype).tiny).sqrt(), torch.zeros_like(sq))

    def __call__(self, model, x) -> torch.Tensor:
        """``weight * mean_i ||J_i||_F`` (estimated) on the batch ``x``: a scalar tensor."""
        return self.weight * self.jacobian_norm(model, x).mean()
