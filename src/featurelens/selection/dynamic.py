"""Dynamic (per-sample, sequential, budgeted) feature selection with a hypernetwork classifier.

A static selector picks one subset of features for every row. A *dynamic* one acquires features
one at a time, row by row, choosing the next feature from the values acquired so far, and stops at
a budget: different rows may end with different subsets. :class:`HyperDFS` follows the design of
"Hypernetworks for Dynamic Feature Selection" (arXiv 2605.12278, 2026), reconstructed from its
abstract (no code or full text was available):

* the acquired subset ``S`` of a row is a set of tokens, one per feature ``j``: a feature identity
  embedding ``e_j`` and, for an acquired feature, its value, ``t_j = MLP([e_j, x_j])``; an absent
  feature contributes ``t_j = e_j + a`` with one learned *feature-absence embedding* ``a``, so the set
  always has ``d`` tokens and its encoding does not drift in scale with ``|S|`` (the abstract's
  variance drift);
* a Set-Transformer encoder (one self-attention block and attention pooling with a learned seed;
  Lee et al., "Set Transformer", ICML 2019, arXiv 1810.00825) maps the tokens to a context ``c(S)``;
* a **hypernetwork** maps ``c(S)`` to the parameters ``theta(S) = theta_0 + H(c(S))`` of a small
  classifier (an MLP with ``classifier_hidden`` ReLU units, or a linear one) applied to the
  acquired values ``x * m`` (``m`` the 0/1 mask of ``S``), instead of one classifier fed
  ``(x * m, m)`` (the "mask-embedding" approach);
* the classifier is trained on random subsets whose sizes are drawn uniformly from ``0 .. d`` in
  every batch (the abstract's control of the mask distribution; the exact distribution is ours).

The acquisition policy is ours (the abstract does not give one). What the method needs from it is
that it conditions on the features acquired so far: a row's next feature depends on the values it
has already seen. A value head ``v(c(S))`` in ``R^d`` scores each candidate feature from the
context, the acquired values and the mask, and the next feature is ``argmax_j v_j(S)`` over the
features not yet acquired. The head is trained, with the classifier frozen, to regress the drop in
cross-entropy from ``S`` to the end of the budget when ``j`` is acquired next and the policy
chooses the rest,

    v_j(S) ~ E[ CE(y, p(. | x_S)) - CE(y, p(. | x_{S + j + pi(S + j)})) | x_S ],

(``pi(S + j)`` the ``budget - |S| - 1`` features the policy adds after ``j``), by approximate policy
iteration: in every epoch the head as it was at the epoch's start is the policy, which grows the
training states (sizes ``0 .. budget - 1``; each step a random free feature with probability 0.3)
and is rolled out from every ``S + j`` to give the target. With one step left the target is the
one-step drop of DIME's greedy policy (Gadgil, Covert & Lee, "Estimating conditional mutual
information for dynamic feature selection", ICLR 2024, arXiv 2306.03301), which for a calibrated
classifier is the conditional mutual information ``I(y; x_j | x_S)``. Looking to the end of the
budget is what lets the policy acquire a context feature that says nothing about ``y`` on its own
but tells which feature to acquire next (a one-step greedy policy never takes it): on a planted
task where ``x_0`` decides whether ``x_1`` or ``x_2`` carries the label (budget 2), the default
settings acquire ``x_0`` and then the right one of the two on 98-100% of held-out rows (seeds 0-2;
the greedy policy: 0-50%, the same feature for every row). The values are those of the fitted
``budget``: with another budget at inference the policy is still a sensible order but no longer
the one it was trained for.
"""

from __future__ import annotations

import copy

import numpy as np
from featurelens._optional import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._random import parse_seed, torch_generator, torch_seeded
from .._training import limited_threads
from .._validation import check_device, check_float, check_int
from .._budgets import check_budget, check_sizes, training_bytes

__all__ = ["HyperDFS"]


class _HyperDFSNet(torch.nn.Module):
    """Tokens -> set encoder -> context; hypernetwork -> classifier parameters; value head."""

    def __init__(self, d: int, n_classes: int, width: int, heads: int, hyper_hidden: int, clf_hidden: int):
        super().__init__()
        self.d, self.C, self.h = d, n_classes, clf_hidden
        self.feature_id = torch.nn.Parameter(0.5 * torch.randn(d, width))
        self.absent = torch.nn.Parameter(torch.zeros(width))
        self.token = torch.nn.Sequential(torch.nn.Linear(width + 1, width), torch.nn.ReLU(),
                                         torch.nn.Linear(width, width))
        self.attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.ff = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width))
        self.pool_seed = torch.nn.Parameter(0.1 * torch.randn(1, 1, width))
        self.pool = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        if clf_hidden:
            shapes = [(d, clf_hidden), (clf_hidden,), (clf_hidden, n_classes), (n_classes,)]
        else:
            shapes = [(d, n_classes), (n_classes,)]
        self.shapes = shapes
        n_params = sum(int(np.prod(s)) for s in shapes)
        # theta_0: a standard initialisation of the classifier; the hypernetwork adds to it.
        base = []
        for s in shapes:
            fan_in = s[0] if len(s) == 2 else 1
            base.append((torch.randn(*s) / np.sqrt(fan_in)).ravel() if len(s) == 2 else torch.zeros(s))
        self.theta0 = torch.nn.Parameter(torch.cat(base))
        self.hyper = torch.nn.Sequential(torch.nn.Linear(width, hyper_hidden), torch.nn.ReLU(),
                                         torch.nn.Linear(hyper_hidden, n_params))
        with torch.no_grad():
            self.hyper[-1].weight.mul_(0.1)
            self.hyper[-1].bias.zero_()
        # the value head reads the context and the acquired values themselves
        self.value_net = torch.nn.Sequential(torch.nn.Linear(width + 2 * d, hyper_hidden), torch.nn.ReLU(),
                                             torch.nn.Linear(hyper_hidden, hyper_hidden), torch.nn.ReLU(),
                                             torch.nn.Linear(hyper_hidden, d))

    def encode(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """The context ``c(S)`` (B, width) of rows ``x`` (B, d) with acquired mask ``m`` (B, d)."""
        B = x.shape[0]
        E = self.feature_id.unsqueeze(0).expand(B, -1, -1)
        mm = m.unsqueeze(-1)
        present = self.token(torch.cat([E, (x * m).unsqueeze(-1)], dim=-1))
        T = mm * present + (1 - mm) * (E + self.absent)
        H = self.ln1(T + self.attn(T, T, T, need_weights=False)[0])
        H = self.ln2(H + self.ff(H))
        return self.pool(self.pool_seed.expand(B, -1, -1), H, H, need_weights=False)[0].squeeze(1)

    def classify(self, c: torch.Tensor, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) of the classifier whose parameters the hypernetwork generated from ``c``."""
        theta = self.theta0 + self.hyper(c)
        parts, start = [], 0
        for s in self.shapes:
            size = int(np.prod(s))
            parts.append(theta[:, start:start + size].reshape(-1, *s))
            start += size
        z = (x * m).unsqueeze(1)
        if self.h:
            W1, b1, W2, b2 = parts
            z = torch.relu(torch.bmm(z, W1) + b1.unsqueeze(1))
            return (torch.bmm(z, W2) + b2.unsqueeze(1)).squeeze(1)
        W, b = parts
        return (torch.bmm(z, W) + b.unsqueeze(1)).squeeze(1)

    def value(self, c: torch.Tensor, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """The value head: the predicted drop in cross-entropy from acquiring each feature (B, d)."""
        return self.value_net(torch.cat([c, x * m, m], dim=1))

    def forward(self, x, m):
        return self.classify(self.encode(x, m), x, m)


def _random_masks(n: int, d: int, low: int, high: int, gen: torch.Generator, dtype) -> torch.Tensor:
    """0/1 masks (n, d), each with a size drawn uniformly from ``low .. high`` and a uniformly random
    subset of that size."""
    k = torch.randint(low, high + 1, (n, 1), generator=gen)
    ranks = torch.rand(n, d, generator=gen).argsort(dim=1).argsort(dim=1)
    return (ranks < k).to(dtype)


#: The share of the value head's training states grown by a random step instead of the policy's.
_EXPLORE = 0.3


def _policy_masks(net, head, x, budget, eps, gen, dtype):
    """The states the policy visits, with exploration: 0/1 masks (n, d) whose sizes are drawn
    uniformly from ``0 .. budget - 1``, each grown one feature at a time by the greedy choice of the
    value head ``head`` or, with probability ``eps`` per step, a uniformly random free feature."""
    n, d = x.shape
    k = torch.randint(0, budget, (n,), generator=gen).to(x.device)
    m = torch.zeros(n, d, dtype=dtype, device=x.device)
    for t in range(budget - 1):
        rows = torch.nonzero(k > t).squeeze(1)
        if not len(rows):
            break
        xr, mr = x[rows], m[rows]
        q = head(torch.cat([net.encode(xr, mr), xr * mr, mr], dim=1))
        noise = torch.rand(len(rows), d, generator=gen).to(x.device, q.dtype)
        explore = (torch.rand(len(rows), generator=gen) < eps).to(x.device)
        score = torch.where(explore[:, None], noise, q).masked_fill(mr > 0, -torch.inf)
        m[rows, score.argmax(dim=1)] = 1.0
    return m


def _network_size(d: int, n_classes: int, heads: int, batch_size: int, width: int, hyper_hidden: int,
                  classifier_hidden: int) -> tuple[int, int]:
    """``(parameters, bytes)`` of training :class:`_HyperDFSNet` (ints, exact for any size): the
    parameters with their gradients and Adam's moments, the float64 copy kept after the fit, and the
    activations of the largest pass (a batch, or a chunk of the value head's candidate subsets)."""
    w, H, h, C = width, hyper_hidden, classifier_hidden, n_classes
    theta = d * h + h + h * C + C if h else d * C + C  # the generated classifier's parameters
    encoder = d * w + w + (w + 1) * w + w + w * w + w + 2 * (4 * w * w + 4 * w) + 4 * w + 2 * w * w + 2 * w + w
    hyper = w * H + H + H * theta + theta + theta  # the hypernetwork and theta_0
    value = (w + 2 * d) * H + H + H * H + H + H * d + d
    params = encoder + hyper + value
    rows = max(batch_size, _rows_per_chunk(d, w, theta))
    activations = rows * (12 * d * w + heads * d * d + 3 * theta + 4 * H)
    return params, training_bytes(params, activations) + 8 * params + 4 * value


def _rows_per_chunk(d: int, width: int, theta: int = 0) -> int:
    """Rows per forward pass so that one pass holds about 2^22 token entries (rows x d x width) and
    at most 2^22 generated classifier parameters (rows x theta)."""
    return max(1, min(4096, 2**22 // max(1, d * width, theta)))


class HyperDFS(ClassifierMixin, BaseEstimator):
    """Dynamic feature selection: each row acquires up to ``budget`` features, one at a time, and a
    hypernetwork-generated classifier predicts from the features it acquired.

    Hypernetworks for Dynamic Feature Selection, arXiv 2605.12278 (2026), reconstructed from the
    abstract; the value-head policy extends DIME's greedy one (Gadgil, Covert & Lee, ICLR 2024) to
    the whole budget. See the module docstring for the model, the training and what is
    reconstructed.

    ``fit`` standardises the features (a constant one is only centred), trains the set encoder,
    the hypernetwork and ``theta_0`` on random subsets (``epochs`` of Adam on the cross-entropy),
    then the value head with the classifier frozen (``value_epochs``), on the states its own
    policy visits, to predict the drop in cross-entropy to the end of the budget (the policy
    looks ahead: it acquires a context feature that only tells which feature to acquire next).
    ``acquire(X)`` runs the policy (the best-valued feature at each step) and returns, per row,
    the features it acquired in order; ``predict`` / ``predict_proba`` predict from them.
    Inference is float64 and row by row independent (a row's acquisition and prediction do not
    depend on the other rows).

    Cost: every pass attends over all ``d`` tokens (``O(d^2 width)`` per row), the value head's
    targets need ``d + 1`` subsets per row, each rolled out to the budget (up to ``budget``
    passes), and acquiring ``budget`` features takes ``budget`` passes; the method is meant for
    tabular data with up to a few dozen features (a fit on 1200 rows of 7 features with
    ``epochs=25, value_epochs=12`` and budget 3 takes about 10 CPU seconds, on 600 rows of 4
    features with the defaults about 5; 300 features take about 100 times longer per epoch).

    Parameters
    ----------
    budget : int >= 1
        Features each row acquires (at most the number of features of ``X``); ``acquire``,
        ``predict`` and ``predict_proba`` take another budget (0 .. d) as ``budget=``.
    width : int >= 1
        Width of the tokens and of the context ``c(S)``.
    n_heads : int >= 1
        Attention heads (must divide ``width``).
    hyper_hidden : int >= 1
        Hidden width of the hypernetwork and of the value head.
    classifier_hidden : int >= 0
        Hidden ReLU units of the generated classifier (0: a linear classifier).
    epochs, value_epochs : int >= 1
        Passes over the data for the classifier and for the value head.
    lr : float > 0
        Adam's learning rate.
    weight_decay : float >= 0
        Adam's L2 weight decay.
    batch_size : int >= 1
        Rows per step.
    seed : None, int or numpy Generator
        Seeds the initialisation, the batch order and the random subsets.
    device : torch device for training (inference runs on the CPU in float64).

    Attributes
    ----------
    classes_ : ndarray, the class labels.
    n_features_in_ : int; ``feature_names_in_`` for DataFrames.
    mean_, scale_ : ndarray (d,), the standardisation.
    network_ : torch.nn.Module, the trained encoder, hypernetwork and value head (float64, eval mode).
    history_ : dict, ``"loss"`` (classifier cross-entropy per epoch) and ``"value_loss"`` (the value
        head's mean squared error per epoch).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4))
    >>> y = np.where(X[:, 0] > 0, X[:, 1] > 0, X[:, 2] > 0).astype(int)
    >>> model = HyperDFS(budget=2, epochs=5, value_epochs=2).fit(X, y)
    >>> model.acquire(X[:3]).shape
    (3, 2)
    """

    def __init__(self, budget: int = 3, width: int = 32, n_heads: int = 2, hyper_hidden: int = 64,
                 classifier_hidden: int = 16, epochs: int = 60, value_epochs: int = 30, lr: float = 3e-3,
                 weight_decay: float = 1e-5, batch_size: int = 128, seed=0, device="cpu"):
        self.budget = budget
        self.width = width
        self.n_heads = n_heads
        self.hyper_hidden = hyper_hidden
        self.classifier_hidden = classifier_hidden
        self.epochs = epochs
        self.value_epochs = value_epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.seed = seed
        self.device = device

    # -- checks -------------------------------------------------------------------------------
    def _check_params(self):
        check_int(self.budget, "budget", low=1)
        width = check_int(self.width, "width", low=1)
        heads = check_int(self.n_heads, "n_heads", low=1)
        if width % heads:
            raise ValueError(f"n_heads={heads} must divide width={width} (each head gets width / n_heads dimensions)")
        check_int(self.hyper_hidden, "hyper_hidden", low=1)
        check_int(self.classifier_hidden, "classifier_hidden", low=0)
        check_int(self.epochs, "epochs", low=1)
        check_int(self.value_epochs, "value_epochs", low=1)
        check_float(self.lr, "lr", low=0.0, low_inclusive=False)
        check_float(self.weight_decay, "weight_decay", low=0.0)
        check_int(self.batch_size, "batch_size", low=1)
        parse_seed(self.seed)
        return check_device(self.device)

    @staticmethod
    def _check_budget_vs(budget, d: int, name: str = "budget", low: int = 1) -> int:
        budget = check_int(budget, name, low=low)
        if budget > d:
            raise ValueError(f"{name}={budget} is larger than the number of features of X ({d} feature(s)); "
                             f"expected {low} <= {name} <= {d}")
        return budget

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X, y):
        """Train the encoder, hypernetwork and value head on ``X`` (n, d) and class labels ``y``."""
        # The tensors are tiny: one torch thread avoids thread hand-offs that made a fit ~10x slower
        # on a busy 2-core machine (the thread count is restored after).
        with limited_threads(1):
            return self._fit(X, y)

    def _fit(self, X, y):
        device = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, yi = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y holds a single class ({self.classes_[0]!r}); HyperDFS needs at least 2 classes")
        n, d = X.shape
        budget = self._check_budget_vs(self.budget, d)
        # Before any allocation: the network the sizes build must fit in memory (issue: width=2**20
        # ended in an allocator error, classifier_hidden=2**24 in a 5.6 GB run that failed later).
        check_sizes(
            {"width": int(self.width), "hyper_hidden": int(self.hyper_hidden),
             "classifier_hidden": int(self.classifier_hidden)},
            lambda **sizes: _network_size(d, len(self.classes_), int(self.n_heads), int(self.batch_size), **sizes),
            f"HyperDFS on {d} features, {len(self.classes_)} classes",
        )
        check_budget(self.epochs, "epochs", per=n, unit="rows through the model", what=f"({n} rows per epoch)")
        check_budget(self.value_epochs, "value_epochs", per=n * (d + 1), unit="rows through the model",
                     what=f"({n} rows, each with {d} + 1 subsets, per epoch)")
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        Xs = (X - self.mean_) / self.scale_
        gen = torch_generator(self.seed)
        dtype = torch.float32
        bs = int(self.batch_size)
        with torch_seeded(gen.initial_seed(), device):
            net = _HyperDFSNet(d, len(self.classes_), int(self.width), int(self.n_heads), int(self.hyper_hidden),
                               int(self.classifier_hidden)).to(device=device, dtype=dtype)
        xt = torch.as_tensor(Xs, dtype=dtype, device=device)
        yt = torch.as_tensor(yi, dtype=torch.long, device=device)
        ce = torch.nn.CrossEntropyLoss()

        # 1. the classifier (encoder, hypernetwork, theta_0) on random subsets of sizes 0 .. d
        clf_params = [p for name, p in net.named_parameters() if not name.startswith("value_net.")]
        opt = torch.optim.Adam(clf_params, lr=float(self.lr), weight_decay=float(self.weight_decay))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=int(self.epochs))
        losses = []
        net.train()
        for _ in range(int(self.epochs)):
            order = torch.randperm(n, generator=gen).to(device)
            total = 0.0
            for s in range(0, n, bs):
                idx = order[s:s + bs]
                m = _random_masks(len(idx), d, 0, d, gen, dtype).to(device)
                loss = ce(net(xt[idx], m), yt[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            sched.step()
            losses.append(total / n)

        # 2. the value head, classifier frozen: v_j(S) ~ CE(S) - CE(end of the budget | j, then the
        # policy), on the states the policy visits (sizes 0 .. budget - 1)
        for p in clf_params:
            p.requires_grad_(False)
        vopt = torch.optim.Adam(net.value_net.parameters(), lr=float(self.lr))
        vsched = torch.optim.lr_scheduler.CosineAnnealingLR(vopt, T_max=int(self.value_epochs))
        eye = torch.eye(d, dtype=dtype, device=device)
        chunk = _rows_per_chunk(d, int(self.width), net.theta0.numel())
        value_losses = []
        for _ in range(int(self.value_epochs)):
            # the policy of this epoch (its states and its roll-outs): the head as it was at the
            # start of the epoch, frozen (approximate policy iteration)
            policy_head = copy.deepcopy(net.value_net).requires_grad_(False)
            order = torch.randperm(n, generator=gen).to(device)
            total = 0.0
            for s in range(0, n, bs):
                idx = order[s:s + bs]
                B = len(idx)
                xb, yb = xt[idx], yt[idx]
                with torch.no_grad():
                    m = _policy_masks(net, policy_head, xb, budget, _EXPLORE, gen, dtype)
                    c = net.encode(xb, m)
                    ce_s = torch.nn.functional.cross_entropy(net.classify(c, xb, m), yb, reduction="none")
                    m_j = torch.clamp(m.unsqueeze(1) + eye.unsqueeze(0), max=1.0).reshape(B * d, d)
                    x_j = xb.repeat_interleave(d, dim=0)
                    y_j = yb.repeat_interleave(d)
                    # one subset per row and candidate: chunks of about 2^22 token entries bound the memory
                    ce_j = []
                    for r in range(0, B * d, chunk):
                        xr, mr, yr = x_j[r:r + chunk], m_j[r:r + chunk], y_j[r:r + chunk]
                        # roll the policy of the frozen head on from S + j to the budget, then score
                        for _ in range(budget - 1):
                            left = torch.nonzero(mr.sum(dim=1) < budget).squeeze(1)
                            if not len(left):
                                break
                            xl, ml = xr[left], mr[left]
                            q = policy_head(torch.cat([net.encode(xl, ml), xl * ml, ml], dim=1))
                            mr = mr.clone()
                            mr[left, q.masked_fill(ml > 0, -torch.inf).argmax(dim=1)] = 1.0
                        ce_j.append(torch.nn.functional.cross_entropy(net(xr, mr), yr, reduction="none"))
                    target = ce_s.unsqueeze(1) - torch.cat(ce_j).reshape(B, d)
                free = 1 - m
                vloss = ((net.value(c, xb, m) - target) ** 2 * free).sum() / free.sum().clamp_min(1.0)
                vopt.zero_grad(set_to_none=True)
                vloss.backward()
                vopt.step()
                total += float(vloss.detach()) * B
            vsched.step()
            value_losses.append(total / n)
        for p in clf_params:
            p.requires_grad_(True)
        self.network_ = net.to("cpu", torch.float64).eval()
        self.history_ = {"loss": np.asarray(losses), "value_loss": np.asarray(value_losses)}
        return self

    # -- inference ----------------------------------------------------------------------------
    def _prepare(self, X, budget):
        check_is_fitted(self, "network_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        d = self.n_features_in_
        budget = self.budget if budget is None else budget
        budget = self._check_budget_vs(budget, d, low=0)
        return torch.as_tensor((X - self.mean_) / self.scale_, dtype=torch.float64), budget

    @torch.no_grad()
    def _run(self, xt: torch.Tensor, budget: int):
        """The greedy policy on standardised rows: (order (n, budget), final mask, logits)."""
        net, (n, d) = self.network_, xt.shape
        m = torch.zeros(n, d, dtype=torch.float64)
        order = torch.empty(n, budget, dtype=torch.long)
        rows = torch.arange(n)
        for t in range(budget):
            v = net.value(net.encode(xt, m), xt, m).masked_fill(m > 0, -torch.inf)
            j = v.argmax(dim=1)
            order[:, t] = j
            m[rows, j] = 1.0
        return order, m, net(xt, m)

    def _chunks(self, X, budget):
        xt, budget = self._prepare(X, budget)
        orders, logits = [], []
        with limited_threads(1):
            step = _rows_per_chunk(xt.shape[1], int(self.width), self.network_.theta0.numel())
            for s in range(0, xt.shape[0], step):
                o, _, lg = self._run(xt[s:s + step], budget)
                orders.append(o)
                logits.append(lg)
        if not orders:
            return np.zeros((0, budget), dtype=np.int64), np.zeros((0, len(self.classes_)))
        return torch.cat(orders).numpy(), torch.cat(logits).numpy()

    def acquire(self, X, budget=None) -> np.ndarray:
        """The features each row acquires, in order: an int array (n_samples, budget) of column indices.

        ``budget`` defaults to the fitted ``budget``; any value ``0 .. n_features`` is accepted (the
        value head was trained on subsets of sizes below the fitted budget)."""
        return self._chunks(X, budget)[0]

    def acquisition_mask(self, X, budget=None) -> np.ndarray:
        """The acquired features as a boolean mask (n_samples, n_features)."""
        order = self.acquire(X, budget)
        mask = np.zeros((order.shape[0], self.n_features_in_), dtype=bool)
        np.put_along_axis(mask, order, True, axis=1)
        return mask

    def predict_proba(self, X, budget=None) -> np.ndarray:
        """Class probabilities (n_samples, n_classes) from each row's acquired features."""
        logits = self._chunks(X, budget)[1]
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X, budget=None) -> np.ndarray:
        """Class labels from each row's acquired features."""
        logits = self._chunks(X, budget)[1]
        return self.classes_[np.argmax(logits, axis=1)]

    @torch.no_grad()
    def predict_proba_subset(self, X, features) -> np.ndarray:
        """Class probabilities when every row is given the same fixed ``features`` (a static subset;
        column indices), for comparing the dynamic policy with static selections on one model."""
        xt, _ = self._prepare(X, 0)
        d = self.n_features_in_
        idx = np.asarray(features)
        if idx.ndim != 1 or (idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= d)):
            raise ValueError(f"features must be a 1-D sequence of column indices in 0 .. {d - 1}; got {features!r}")
        m = torch.zeros(xt.shape[0], d, dtype=torch.float64)
        m[:, torch.as_tensor(idx, dtype=torch.long)] = 1.0
        logits = self.network_(xt, m).numpy()
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)
