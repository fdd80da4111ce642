"""Sum-of-Parts (SOP): a model that explains itself through learned groups of input features, and
the ``"sop"`` explainer that reads those groups off it.

You, Qu, Gatti, Jain, Wong, "Sum-of-Parts: Self-Attributing Neural Networks with End-to-End
Learning of Feature Groups", ICML 2025, arXiv 2310.16316. A group generator maps the input to
``G`` soft masks ``m_1 .. m_G`` over the input features, every masked input ``x * m_g`` goes through
the same backbone ``f``, a group selector gives weights ``w_g >= 0`` with ``sum_g w_g = 1``, and the
prediction is

    y(x) = sum_g w_g(x) * f(x * m_g(x)).

The paper proves that self-attributing networks with one feature per term have an error floor on
correlated features, while group-based ones can reach zero error; the groups and their weights
are the explanation, with no post-hoc method in between.
"""

from __future__ import annotations

import contextlib
import threading
from collections import namedtuple

import numpy as np
from featurelens._optional import is_tensor, torch
from torch import nn

from .._random import parse_seed, root_seed, torch_seeded
from .._validation import check_int, check_labels, check_option
from ._base import Explainer, Requires, register

__all__ = ["ConfidenceSelector", "GroupGenerator", "PatchGroupGenerator", "SOPOutput", "SumOfParts", "SumOfPartsExplainer", "fit_sop",
           "sparsemax"]

#: What :meth:`SumOfParts.explain_forward` returns.
#:
#: - ``logits``: the prediction ``sum_g w_g f(x * m_g)``, shaped like the backbone's output
#:   (``(n, K)`` or ``(n,)``);
#: - ``masks``: ``(n, G, *x.shape[1:])``, the group masks ``m_g`` (broadcast over channels);
#: - ``weights``: ``(n, G)``, the group weights ``w_g`` (each row sums to 1);
#: - ``group_outputs``: ``(n, G, K)`` or ``(n, G)``, the backbone's outputs ``f(x * m_g)``.
SOPOutput = namedtuple("SOPOutput", ["logits", "masks", "weights", "group_outputs"])

_ACTIVATIONS = ("softmax", "sparsemax")


def sparsemax(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Sparsemax along ``dim``: the Euclidean projection of ``z`` onto the probability simplex,
    ``p = max(z - tau, 0)`` with ``tau`` chosen so that ``sum(p) = 1``; unlike softmax it gives
    exact zeros. Martins & Astudillo, "From Softmax to Sparsemax", ICML 2016, arXiv 1602.02068.

    With ``z_(1) >= z_(2) >= ...`` sorted, the support size is ``k = max{j : 1 + j z_(j) > sum_{i<=j}
    z_(i)}`` and ``tau = (sum_{i<=k} z_(i) - 1) / k``. Differentiable through autograd (the support
    is locally constant, so the closed form's derivative is the sparsemax Jacobian)."""
    z = z.movedim(dim, -1)
    z = z - z.max(dim=-1, keepdim=True).values  # shift-invariant; keeps the sums small
    zs = torch.sort(z, dim=-1, descending=True).values
    ranks = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    cumsum = zs.cumsum(-1)
    support = (1 + ranks * zs) > cumsum
    k = support.sum(-1, keepdim=True)  # >= 1: the largest entry is always in the support
    tau = (cumsum.gather(-1, k - 1) - 1) / k.to(z.dtype)
    return torch.clamp(z - tau, min=0).movedim(-1, dim)


def _normalise(scores: torch.Tensor, how: str, dim: int) -> torch.Tensor:
    return torch.softmax(scores, dim=dim) if how == "softmax" else sparsemax(scores, dim=dim)


def _check_shape(input_shape, name: str = "input_shape") -> tuple:
    if isinstance(input_shape, (int, np.integer)) and not isinstance(input_shape, bool):
        input_shape = (int(input_shape),)
    ok = isinstance(input_shape, (tuple, list, torch.Size)) and 1 <= len(input_shape) <= 3 and all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in input_shape)
    if not ok:
        raise ValueError(f"{name} must be the shape of one input without the batch axis, (d,), (C, L) or "
                         f"(C, H, W) with positive ints; got {input_shape!r}")
    return tuple(int(s) for s in input_shape)


class GroupGenerator(nn.Module):
    """The default group generator: a small learned net scores every (group, position) pair, and
    each group's mask is a sparse distribution over the positions rescaled to a largest value of 1,

        m_g(x) = p_g(x) / max_f p_g(x)_f,   p_g(x) = sparsemax_f(s_g(x) + b_g),

    so ``0 <= m_g <= 1``, every group has at least one feature with mask 1, and sparsemax gives most
    features exactly 0 (``activation="softmax"``: ``p_g = softmax_f``, dense masks in ``(0, 1]``).
    The scores ``s_g(x)`` come from

    - images ``(C, H, W)``: ``Conv2d(C, hidden, 3) -> ReLU -> Conv2d(hidden, G, 3)`` (padding 1), one
      score per pixel and group; a pixel's mask is shared by its channels;
    - signals ``(C, L)``: the same with ``Conv1d``;
    - vectors ``(d,)``: ``Linear(d, hidden) -> ReLU -> Linear(hidden, G * d)``;

    plus a learned per-position prior ``b_g`` (zeros at first), since a convolution alone cannot tell
    positions apart. This follows the paper's generator in spirit (its groups are sparsemax
    attention distributions of multi-head self-attention over patch embeddings with position
    embeddings, one head per group); a normalisation over the features of each group is what makes
    groups small: a normalisation over the groups at each feature (a partition) lets training put
    every feature into one group, a valid but useless explanation (seen on a planted task).
    """

    def __init__(self, input_shape, n_groups: int, hidden: int = 16, activation: str = "sparsemax"):
        super().__init__()
        self.input_shape = _check_shape(input_shape)
        self.n_groups = check_int(n_groups, "n_groups", low=1)
        self.hidden = check_int(hidden, "hidden", low=1)
        self.activation = check_option(activation, "mask_activation", _ACTIVATIONS)
        shape, g, h = self.input_shape, self.n_groups, self.hidden
        if len(shape) == 3:
            self.net = nn.Sequential(nn.Conv2d(shape[0], h, 3, padding=1), nn.ReLU(), nn.Conv2d(h, g, 3, padding=1))
        elif len(shape) == 2:
            self.net = nn.Sequential(nn.Conv1d(shape[0], h, 3, padding=1), nn.ReLU(), nn.Conv1d(h, g, 3, padding=1))
        else:
            self.net = nn.Sequential(nn.Linear(shape[0], h), nn.ReLU(), nn.Linear(h, g * shape[0]))
        self.positions = (shape[0],) if len(shape) == 1 else shape[1:]
        self.prior = nn.Parameter(torch.zeros(g, int(np.prod(self.positions))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        scores = self.net(x).reshape(n, self.n_groups, -1) + self.prior.to(x.dtype)
        p = _normalise(scores, self.activation, dim=-1)
        masks = p / p.max(dim=-1, keepdim=True).values  # the max is > 0: a distribution over positions
        masks = masks.reshape(n, self.n_groups, *self.positions)
        return masks if len(self.input_shape) == 1 else masks.unsqueeze(2)  # channels share a position's mask


class PatchGroupGenerator(nn.Module):
    """Groups made of image patches (``SumOfParts(..., patch_size=p)``; You et al., ICML 2025,
    arXiv 2310.16316, whose generator attends over patch tokens with sparsemax). On large images
    (64x64) the pixel-level ``GroupGenerator``'s sparsemax over every pixel did not learn in a
    few epochs (benchmarks/bench_sop.py); patches make the groups coarse enough to train.

    A patch embedding ``e = ReLU(Conv(C, hidden, patch, stride=patch)(x))`` is scored per group by
    a 1x1 convolution plus a learned per-patch prior ``b_g`` (zeros at first); each group is the
    sparsemax distribution over the ``P`` patches rescaled to a largest value of 1,

        m_g = p_g / max_j p_{g,j},   p_g = sparsemax_j(s_g(e)_j + b_{g,j}),

    upsampled to pixels (every pixel of a patch gets its patch's value, all channels share it).
    """

    def __init__(self, input_shape, n_groups: int, patch: int = 8, hidden: int = 16, seed=None):
        super().__init__()
        input_shape = _check_shape(input_shape)
        if len(input_shape) != 3:
            raise ValueError(f"patch groups need images, input_shape (C, H, W); got {input_shape}")
        c, h, w = input_shape
        patch = check_int(patch, "patch_size", low=1)
        if h % patch or w % patch:
            raise ValueError(f"patch must divide the image size {h}x{w}; got {patch}")
        self.n_groups, self.patch = check_int(n_groups, "n_groups", low=1), int(patch)
        hidden = check_int(hidden, "hidden", low=1)
        seed = parse_seed(seed)
        # A seed: weights from it, the global random state untouched; None: the global generator.
        with torch_seeded(None if seed is None else root_seed(seed)):
            self.embed = nn.Conv2d(c, hidden, patch, stride=patch)
            self.head = nn.Conv2d(hidden, self.n_groups, 1)
        self.prior = nn.Parameter(torch.zeros(n_groups, (h // patch) * (w // patch)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        scores = self.head(torch.relu(self.embed(x)))
        hp, wp = scores.shape[-2:]
        p = sparsemax(scores.reshape(n, self.n_groups, -1) + self.prior.to(x.dtype), dim=-1)
        m = (p / p.max(-1, keepdim=True).values).reshape(n, self.n_groups, hp, wp)
        m = m.repeat_interleave(self.patch, -2).repeat_interleave(self.patch, -1)
        return m.unsqueeze(2)


class ConfidenceSelector(nn.Module):
    """The default group selector: one score per group from the backbone's output on that group,

        s_g = a * logsumexp_k f(x * m_g)_k + b_g,

    (a single output ``z``: ``logaddexp(z, -z)``, a smooth ``|z|``), with a learned scale ``a``
    (initially 1) and a learned prior ``b_g`` per group (initially 0); the weights are the softmax
    (or sparsemax) of the scores over the groups. A group on which the backbone is confident gets
    more weight. The paper scores groups by sparse cross-attention between a learned query and the
    backbone's embeddings of the groups; the backbone here is any module, whose outputs are the
    only features every backbone has."""

    def __init__(self, n_groups: int):
        super().__init__()
        self.n_groups = check_int(n_groups, "n_groups", low=1)
        self.scale = nn.Parameter(torch.ones(()))
        self.bias = nn.Parameter(torch.zeros(self.n_groups))

    def forward(self, group_outputs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        if group_outputs.ndim == 2:
            conf = torch.logaddexp(group_outputs, -group_outputs)
        else:
            conf = torch.logsumexp(group_outputs, dim=-1)
        return self.scale.to(conf.dtype) * conf + self.bias.to(conf.dtype)


class SumOfParts(nn.Module):
    """Sum-of-Parts: turn any differentiable ``backbone`` into a self-attributing model over
    ``n_groups`` learned feature groups.

        y(x) = sum_g w_g(x) * backbone(x * m_g(x)),   w_g >= 0,  sum_g w_g = 1,

    You, Qu, Gatti, Jain, Wong, ICML 2025, arXiv 2310.16316 (see the module docstring).

    ``model(x)`` returns the prediction ``y(x)`` only, shaped like the backbone's output, so the
    model trains with any loss and any training loop (e.g.
    ``featurelens._training.train_model``, or :func:`fit_sop`) and is explained like any
    other model. ``explain_forward`` returns everything: a ``SOPOutput`` with the logits,
    the masks ``(n, G, *x.shape[1:])``, the weights ``(n, G)`` and the backbone's output on each
    group. All ``n * G`` masked inputs go through the backbone in one call, so a Model adapter
    with ``batch_size=b`` bounds a backbone call to ``b * G`` rows.

    Parameters
    ----------
    backbone
        A ``torch.nn.Module`` mapping a batch ``(m, *input_shape)`` to outputs ``(m, K)`` or ``(m,)``.
    n_groups
        ``G``, the number of groups (>= 1).
    group_generator
        A module (or callable) mapping ``x`` ``(n, *input_shape)`` to masks ``(n, G, ...)`` whose
        trailing axes equal those of ``x`` or are 1 (broadcast, e.g. one mask per pixel for all
        channels). None: a ``GroupGenerator`` (needs ``input_shape``), or with ``patch_size`` a
        ``PatchGroupGenerator`` of ``patch_size`` x ``patch_size`` image patches (what trains
        on large images, e.g. 64x64).
    group_selector
        A module (or callable) mapping ``(group_outputs (n, G, K) or (n, G), masks (n, G, ...))``
        to scores ``(n, G)``; the weights are their softmax (``weight_activation``). None: a
        ``ConfidenceSelector``.
    input_shape
        The shape of one input without the batch axis, ``(d,)``, ``(C, L)`` or ``(C, H, W)``: needed
        by the default generator, and then checked on every call.
    hidden
        Hidden channels (units) of the default generator.
    mask_activation, weight_activation
        ``"sparsemax"`` or ``"softmax"``: the normalisation of the default generator's scores over
        the positions of each group (``GroupGenerator``; default sparsemax, sparse groups), and
        of the selector's scores over the groups (default softmax).
    seed
        Seeds the initial weights of the default generator and selector (the caller's global torch
        random state is left as it was); None: drawn from torch's global generator.

    The default generator and selector take the dtype and device of the backbone's first parameter.
    With ``n_groups=1`` and a generator returning masks of ones, ``y(x)`` equals ``backbone(x)``
    exactly: the one weight is exactly 1 (the default generator's one group is a sparse mask,
    not all ones).
    """

    def __init__(self, backbone: nn.Module, n_groups: int, group_generator=None, *, group_selector=None,
                 input_shape=None, hidden: int = 16, mask_activation: str = "sparsemax",
                 weight_activation: str = "softmax", patch_size: int | None = None, seed=0):
        super().__init__()
        if not isinstance(backbone, nn.Module):
            raise TypeError(f"backbone must be a torch.nn.Module mapping a batch to outputs (m, K) or (m,); got "
                            f"{type(backbone).__name__}")
        self.n_groups = check_int(n_groups, "n_groups", low=1)
        self.input_shape = None if input_shape is None else _check_shape(input_shape)
        self.weight_activation = check_option(weight_activation, "weight_activation", _ACTIVATIONS)
        check_option(mask_activation, "mask_activation", _ACTIVATIONS)
        hidden = check_int(hidden, "hidden", low=1)
        for value, name in ((group_generator, "group_generator"), (group_selector, "group_selector")):
            if value is not None and not callable(value):
                raise TypeError(f"{name} must be a torch.nn.Module or a callable, or None for the default; got "
                                f"{type(value).__name__}")
        if group_generator is None and self.input_shape is None:
            raise ValueError("input_shape is needed by the default group generator: give the shape of one input "
                             "without the batch axis, e.g. input_shape=(1, 8, 8), or pass group_generator=")
        self.backbone = backbone
        param = next(iter(backbone.parameters()), None)
        dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
        device = param.device if param is not None else torch.device("cpu")
        seed = parse_seed(seed)
        # A seed: initial weights from it, the caller's global random state untouched. None: the
        # global generator draws them (and advances), as for any torch module.
        with torch_seeded(None if seed is None else root_seed(seed)):
            if group_generator is None and patch_size is not None:
                group_generator = PatchGroupGenerator(self.input_shape, self.n_groups, patch_size, hidden)
                group_generator = group_generator.to(device=device, dtype=dtype)
            elif group_generator is None:
                group_generator = GroupGenerator(self.input_shape, self.n_groups, hidden, mask_activation)
                group_generator = group_generator.to(device=device, dtype=dtype)
            elif patch_size is not None:
                raise ValueError("patch_size chooses the default patch generator; got a group_generator too")
            if group_selector is None:
                group_selector = ConfidenceSelector(self.n_groups).to(device=device, dtype=dtype)
        self.group_generator = group_generator
        self.group_selector = group_selector
        # Recorders of explain_forward results, per thread (SumOfPartsExplainer reads them while
        # the Model adapter chunks and counts the forward passes). A plain dict: it pickles.
        self._recorders: dict = {}

    def explain_forward(self, x: torch.Tensor) -> SOPOutput:
        """The prediction with its groups: a ``SOPOutput`` (logits, masks, weights,
        group_outputs); ``logits = sum_g weights[:, g] * group_outputs[:, g]``."""
        if not is_tensor(x):
            raise TypeError(f"x must be a torch.Tensor of shape (n, *input_shape); got {type(x).__name__}")
        if self.input_shape is not None and tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(f"x must have shape (n, {', '.join(map(str, self.input_shape))}) (input_shape "
                             f"{self.input_shape}); got {tuple(x.shape)}")
        n, g = x.shape[0], self.n_groups
        masks = self.group_generator(x)
        expected = (n, g, *x.shape[1:])
        if (not is_tensor(masks) or masks.ndim != x.ndim + 1 or tuple(masks.shape[:2]) != (n, g)
                or any(m not in (1, s) for m, s in zip(masks.shape[2:], x.shape[1:]))):
            got = tuple(masks.shape) if is_tensor(masks) else type(masks).__name__
            raise ValueError(f"group_generator must return masks of shape {expected} (trailing axes of size 1 "
                             f"broadcast); got {got}")
        masks = masks.to(x.dtype).expand(expected)
        rows = (x.unsqueeze(1) * masks).reshape(n * g, *x.shape[1:])
        out = self.backbone(rows)  # every group of every sample in one call
        if not is_tensor(out) or out.ndim not in (1, 2) or out.shape[0] != n * g:
            got = tuple(out.shape) if is_tensor(out) else type(out).__name__
            raise ValueError(f"backbone must map {n * g} masked rows to outputs ({n * g}, K) or ({n * g},); got {got}")
        group_outputs = out.reshape(n, g, *out.shape[1:])
        scores = self.group_selector(group_outputs, masks)
        if not is_tensor(scores) or tuple(scores.shape) != (n, g):
            got = tuple(scores.shape) if is_tensor(scores) else type(scores).__name__
            raise ValueError(f"group_selector must return scores of shape ({n}, {g}); got {got}")
        weights = _normalise(scores.to(group_outputs.dtype), self.weight_activation, dim=1)
        w = weights.reshape(n, g, *([1] * (group_outputs.ndim - 2)))
        logits = (w * group_outputs).sum(1)
        return SOPOutput(logits, masks, weights, group_outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The prediction ``sum_g w_g backbone(x * m_g)``, shaped like the backbone's output."""
        result = self.explain_forward(x)
        records = self._recorders.get(threading.get_ident())
        if records is not None:
            records.append(SOPOutput(*(t.detach() for t in result)))
        return result.logits

    @contextlib.contextmanager
    def recording(self):
        """Within ``with``, each forward pass of this thread appends its (detached)
        ``SOPOutput`` to the yielded list: how the explainer reads masks and weights from
        passes the Model adapter chunks and counts."""
        key = threading.get_ident()
        records: list = []
        previous = self._recorders.get(key)
        self._recorders[key] = records
        try:
            yield records
        finally:
            if previous is None:
                self._recorders.pop(key, None)
            else:
                self._recorders[key] = previous

    def extra_repr(self) -> str:
        return f"n_groups={self.n_groups}, input_shape={self.input_shape}, weight_activation={self.weight_activation!r}"



def fit_sop(model: SumOfParts, X, y, epochs: int = 20, lr: float = 1e-2, batch_size: int = 64, seed=0,
            progress: bool | None = None):
    """Train a :class:`SumOfParts` end to end (generator, selector and backbone together, with no
    group supervision) by Adam on the cross-entropy of its logits for integer labels ``y``.

    A thin call of ``featurelens._training.train_model``, the one training loop, with the
    training rows as validation rows and ``patience=epochs`` (no early stop): the weights of the
    epoch with the lowest training loss are kept. ``seed`` seeds the shuffling; ``progress`` shows a
    bar over epochs (None: only on a terminal). The model must be float32 (train_model's batches
    are). ``y`` must hold integer labels in ``0..K-1`` for the model's ``K`` outputs (checked before
    any training step: a ValueError names the first bad label). Returns ``(model, history)`` as
    ``train_model`` does, the model trained in place and left in eval mode."""
    from .._training import as_tensors, train_model

    if not isinstance(model, SumOfParts):
        raise TypeError(f"model must be a featurelens SumOfParts; got {type(model).__name__}")
    epochs = check_int(epochs, "epochs", low=1)
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    if dtypes - {torch.float32}:
        raise TypeError(f"model must have float32 parameters (fit_sop trains on float32 batches); got "
                        f"{', '.join(sorted(str(d) for d in dtypes))}: call model.float() first")
    Xt, _ = as_tensors((X, y), "the training data")
    # The classes are the model's outputs: one forward pass on one row, before any training step
    # (a label past them fails deep inside torch's cross-entropy, on the first batch that holds it).
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            out = model(Xt[:1])
    finally:
        for m, flag in flags:
            m.training = flag
    if out.ndim != 2:
        raise ValueError(f"fit_sop trains on the model's logits of shape (n, classes); the model returns shape "
                         f"{tuple(out.shape)} (give the backbone one output per class)")
    check_labels(y, "y", int(out.shape[1]))
    return train_model(model, (X, y), (X, y), epochs=epochs, lr=lr, batch_size=batch_size, patience=epochs,
                       seed=seed, progress=progress, description="sum-of-parts")


class _SumOfPartsRequires(Requires):
    """:class:`Requires` of the ``"sop"`` explainer: the model must be a :class:`SumOfParts` (the
    explanation is read off the model, so no other model can give it)."""

    def why_not(self, model, input_shape, n_players=None):
        if not isinstance(getattr(model, "module", None), SumOfParts):
            kind = type(model.module if getattr(model, "module", None) is not None else model.function).__name__
            return f"needs a featurelens.SumOfParts model, which explains itself; the model is a {kind}"
        return super().why_not(model, input_shape, n_players)


@register("sop")
class SumOfPartsExplainer(Explainer):
    """The attributions a :class:`~featurelens.SumOfParts` model gives itself (You et al., ICML
    2025, arXiv 2310.16316): no post-hoc computation, one forward pass of the model per sample.

    With masks ``m_g`` (``(n, G, *x.shape[1:])``, broadcast over channels) and weights ``w_g`` of the
    explained rows, feature ``f`` of a sample gets

    - ``attribution="weights"`` (default): ``a_f = sum_g w_g m_{g,f}``, the weight of the groups that
      hold ``f``. It does not depend on the target (the weights are shared by the outputs). The
      weights sum to 1, so ``sum_f a_f = sum_g w_g |m_g|`` with ``|m_g| = sum_f m_{g,f}`` (the
      weighted mean group size), and with masks in ``[0, 1]`` (the default generator's)
      ``0 <= a_f <= 1``.
    - ``attribution="contribution"``: ``a_f = sum_g w_g f_t(x * m_g) m_{g,f} / |m_g|``, each group's
      share ``w_g f_t(x * m_g)`` of the target logit spread over its features in proportion to their
      mask. Then ``sum_f a_f = y_t(x)`` exactly, the raw target logit (groups with ``|m_g| = 0``
      contribute nothing: their share is left out). Raw outputs only.

    ``Explanation.extra`` holds the ``weights`` ``(n, G)``, the ``masks`` ``(n, G, *x.shape[1:])``
    and the backbone's ``group_outputs`` ``(n, G, K)`` (raw). ``model_calls`` counts SumOfParts rows;
    each is ``G`` rows through the backbone. ``model`` must be a :class:`SumOfParts` (or a Model
    around one).
    """

    # A SumOfParts is a torch module: declaring gradients lets the audit pick "sop" among the
    # methods of a differentiable model (and refuse it, with the reason, for any other model).
    requires = _SumOfPartsRequires(gradients=True)

    def __init__(self, model, attribution: str = "weights", batch_size: int | None = None):
        super().__init__(model, batch_size)
        if not isinstance(self.model.module, SumOfParts):
            kind = type(self.model.module if self.model.module is not None else self.model.function).__name__
            raise TypeError(f"explainer 'sop' reads the groups of a featurelens.SumOfParts model; model is a {kind}. "
                            "Wrap the network as SumOfParts(backbone, n_groups, input_shape=...) and train it, "
                            "or explain it with a post-hoc explainer")
        self.attribution = check_option(attribution, "attribution", ("weights", "contribution"))
        if self.attribution == "contribution" and self.model.output != "raw":
            raise ValueError(f"attribution='contribution' splits the raw logits; got output={self.model.output!r} "
                             "(use attribution='weights', or output='raw')")

    def params(self):
        return {**super().params(), "attribution": self.attribution}

    def _attribute(self, x, target, outputs):
        sop = self.model.module
        with sop.recording() as records:
            self.model.predict(x)  # chunked and counted by the Model; NaN outputs refused there
        masks = torch.cat([r.masks for r in records]).to(torch.float64)
        weights = torch.cat([r.weights for r in records]).to(torch.float64)
        group_outputs = torch.cat([r.group_outputs for r in records]).to(torch.float64)
        n, g = weights.shape
        lead = (n, g) + (1,) * (masks.ndim - 2)
        if self.attribution == "weights":
            values = (weights.reshape(lead) * masks).sum(1)
        else:
            outs = group_outputs if group_outputs.ndim == 3 else group_outputs.unsqueeze(-1)
            picked = outs.gather(2, target.to(outs.device).reshape(n, 1, 1).expand(n, g, 1)).squeeze(2)  # (n, G)
            mass = masks.reshape(n, g, -1).sum(-1)
            share = torch.where(mass > 0, weights * picked / mass.clamp_min(torch.finfo(mass.dtype).tiny),
                                torch.zeros_like(mass))
            values = (share.reshape(lead) * masks).sum(1)
        arrays = {"weights": weights, "masks": masks, "group_outputs": group_outputs}
        return values, {"arrays": arrays}
