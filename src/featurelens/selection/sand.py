"""SAND: one-shot selection of exactly ``k`` features with an additive-noise input layer.

Pad, Hammoud, Dia, Maamari & Dunbar, "SAND: One-Shot Feature Selection with Additive Noise
Distortion", ICML 2025, arXiv 2505.03923.

During training every input passes through the noise-gain layer

    x~_i = a_i x_i + (1 - a_i) z_i,   z_i ~ N(0, sigma^2) i.i.d. per sample and feature,

with the gains kept on the sphere ``sum_i a_i^2 = k`` by normalisation inside the forward pass
(no penalty term). A feature whose gain grows gets less noise and becomes more useful, so the
network pushes its gain further up; the constraint pushes the others down. The gains polarise:
``k`` of them end near 1 and the rest near 0. At inference the layer is the elementwise scale
``a * x`` (no noise).
"""

from __future__ import annotations

import math

import numpy as np
from featurelens._optional import torch
from sklearn.utils.multiclass import type_of_target

from .._random import parse_seed, torch_generator, torch_seeded
from .._validation import check_device, check_float, check_int, check_option, check_optional_bool
from .._budgets import check_budget, check_sizes, training_bytes
from ._base import ScoreSelector

__all__ = ["NoiseGainLayer", "SAND"]


class NoiseGainLayer(torch.nn.Module):
    """The SAND input layer: ``x~ = a * x + (1 - a) * z``, ``z ~ N(0, sigma^2)`` (training only).

    The gains are a function of free parameters ``w`` (initialised to ``sqrt(k / n)``, which is
    already on the constraint):

        a = sqrt(k) * c / ||c||_2,   c = min(|w|, 1)

    so ``sum_i a_i^2 = k`` holds by construction in every forward pass (Pad et al. 2025, arXiv
    2505.03923, eq. 3 with alpha = 2; clip-then-normalise as in the authors' code, so a gain may
    exceed 1 slightly). The authors also write ``a`` back into ``w`` after each step, which keeps the
    clip at 1 meaningful; call ``project_`` after ``optimizer.step()`` to do the same (SAND's
    trainer does). In ``eval()`` mode the layer is the elementwise scale ``a * x``.

    Parameters
    ----------
    n_features
        Width of the input (the last axis of ``x``).
    k
        The number of features to keep, ``1 <= k <= n_features``.
    sigma
        Standard deviation of the noise (inputs are expected to be standardised; default 1.5 as in
        the paper, which found accuracy insensitive to sigma in [1, 3]).
    """

    def __init__(self, n_features: int, k: int, sigma: float = 1.5):
        super().__init__()
        self.n_features = check_int(n_features, "n_features", low=1)
        self.k = check_int(k, "k", low=1, high=self.n_features)
        self.sigma = check_float(sigma, "sigma", low=0.0)
        self.w = torch.nn.Parameter(torch.full((self.n_features,), math.sqrt(self.k / self.n_features)))

    def gains(self) -> torch.Tensor:
        """The gains ``a`` (differentiable in ``w``), ``sum(a**2) == k``."""
        c = self.w.abs().clamp(max=1.0)
        # A tiny floor keeps the gradient finite if every w collapsed to 0 (never seen in practice).
        return math.sqrt(self.k) * c / c.norm().clamp_min(1e-12)

    @torch.no_grad()
    def project_(self) -> None:
        """Write the normalised gains back into ``w`` (the authors' projection step)."""
        self.w.copy_(self.gains())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.n_features:
            raise ValueError(f"x has {x.shape[-1]} features on its last axis; expected {self.n_features}")
        a = self.gains().to(x.dtype)
        if not self.training or self.sigma == 0:
            return x * a
        return x * a + (1 - a) * (self.sigma * torch.randn_like(x))

    def extra_repr(self) -> str:
        return f"n_features={self.n_features}, k={self.k}, sigma={self.sigma}"


def _mlp_size(d: int, hidden: tuple, n_out: int, rows: int) -> tuple[int, int]:
    """``(parameters, bytes)`` of training SAND's MLP ``d -> hidden... -> n_out`` on ``rows`` rows a
    step (ints, exact for any size)."""
    widths = (d, *hidden, n_out)
    params = d + sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))  # the gains and the layers
    return params, training_bytes(params, rows * sum(widths))


class SAND(ScoreSelector):
    """Select exactly ``k`` features by training a network behind a :class:`NoiseGainLayer`.

    The inputs are standardised (zero mean, unit variance per feature; a constant feature is only
    centred, so it stays 0 and carries no information), then a small MLP (or ``module``) is trained
    behind the noise-gain layer ``x~ = a * x + (1 - a) * z``, ``z ~ N(0, sigma^2)``, ``sum a_i^2 = k``
    with Adam (cross-entropy for classification, mean squared error on the standardised target for
    regression). ``scores_`` are the final gains ``a`` (higher = more important; the gains of the
    ``k`` selected features end near 1, the others near 0), and the ``k`` largest are selected.

    Pad, Hammoud, Dia, Maamari & Dunbar, "SAND: One-Shot Feature Selection with Additive Noise
    Distortion", ICML 2025, arXiv 2505.03923. As in the paper, the selection is the top-k gains (the
    authors' code ranks by gain times the norm of the first-layer weights; once the gains have
    polarised, the top-k gains are the features the network keeps).

    Parameters
    ----------
    k
        The number of features to select (required: SAND trains for exactly ``k``).
    sigma
        Noise standard deviation in units of the standardised features (paper default 1.5).
    hidden
        Widths of the hidden ReLU layers of the default MLP.
    epochs, lr, batch_size
        Adam training schedule: full passes over the data, the initial learning rate (annealed to 0
        by a cosine schedule) and rows per step.
    weight_decay
        L2 weight decay of the network behind the layer (not of the gains); it stops the network
        from fitting chance correlations of noise features, which otherwise keeps a few of their
        gains at 0.1-0.3 instead of near 0.
    module
        Optional torch module placed after the noise-gain layer instead of the default MLP; it maps
        ``(batch, d)`` float32 inputs to ``(batch, n_classes)`` logits or ``(batch, 1)`` / ``(batch,)``
        regression outputs. It is deep-copied, so the given module is not trained in place.
    task
        "auto" (classification for binary/multiclass targets, regression for continuous ones),
        "classification" or "regression".
    seed
        None, an int or a ``numpy.random.Generator``; seeds the network initialisation, the noise
        and the batch order.
    device
        Torch device for training.
    progress
        Show a progress bar over epochs.

    Attributes
    ----------
    gains_ : ndarray (d,)
        The final gains (``sum gains_**2 == k``); equal to ``scores_``.
    history_ : dict
        ``"loss"``: mean training loss per epoch; ``"gains"``: gains after each epoch, (epochs, d).
    network_ : torch.nn.Sequential
        The trained ``NoiseGainLayer`` followed by the network (in eval mode, for standardised
        inputs ``(X - mean_) / scale_``).
    mean_, scale_ : ndarray (d,)
        The standardisation.
    classes_ : ndarray
        The class labels (classification only).
    """

    def __init__(
        self,
        k: int = 10,
        sigma: float = 1.5,
        hidden=(64,),
        epochs: int = 150,
        lr: float = 1e-2,
        weight_decay: float = 3e-3,
        batch_size: int = 128,
        module=None,
        task: str = "auto",
        seed: int = 0,
        device="cpu",
        progress: bool = False,
    ):
        self.k = k
        self.sigma = sigma
        self.hidden = hidden
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.module = module
        self.task = task
        self.seed = seed
        self.device = device
        self.progress = progress

    def _check_params(self):
        if self.k is None:
            raise ValueError("k must be a positive integer for SAND (it trains for exactly k features); got None")
        epochs = check_int(self.epochs, "epochs", low=1)
        batch_size = check_int(self.batch_size, "batch_size", low=1)
        lr = check_float(self.lr, "lr", low=0.0, low_inclusive=False)
        sigma = check_float(self.sigma, "sigma", low=0.0)
        hidden = tuple(self.hidden) if self.hidden is not None else ()
        for h in hidden:
            check_int(h, "each width in hidden", low=1)
        check_option(self.task, "task", ("auto", "classification", "regression"))
        parse_seed(self.seed)
        check_optional_bool(self.progress, "progress")
        check_device(self.device)
        if self.module is not None and not isinstance(self.module, torch.nn.Module):
            raise TypeError(f"module must be a torch.nn.Module or None; got {type(self.module).__name__}")
        wd = check_float(self.weight_decay, "weight_decay", low=0.0)
        return epochs, batch_size, lr, sigma, hidden, wd

    def _check_module_output(self, net, d: int, n_out: int, device) -> None:
        with torch.no_grad():
            shape = tuple(net.eval()(torch.zeros(2, d, device=device)).shape)
        net.train()
        ok = shape == (2, n_out) if self.task_ == "classification" else shape in ((2,), (2, 1))
        if not ok:
            expected = f"(batch, {n_out}) class logits" if self.task_ == "classification" else "(batch,) or (batch, 1)"
            raise ValueError(f"module maps a (2, {d}) input to shape {shape}; expected {expected} for this {self.task_} task")

    def _resolve_task(self, y) -> str:
        if self.task != "auto":
            return self.task
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind in ("binary", "multiclass"):
            return "classification"
        if kind == "continuous":
            return "regression"
        raise ValueError(f"y must be a 1-D vector of class labels or of real values; got type_of_target(y)={kind!r}")

    def _compute_scores(self, X, y):
        epochs, batch_size, lr, sigma, hidden, weight_decay = self._check_params()
        n, d = X.shape
        check_budget(epochs, "epochs", per=n, unit="rows through the model", what=f"({n} rows per epoch)")
        self.task_ = self._resolve_task(y)
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        # A constant column is only centred: it is then all zeros and can never earn a gain.
        self.scale_ = np.where(std > 0, std, 1.0)
        Xs = (X - self.mean_) / self.scale_

        if self.task_ == "classification":
            self.classes_, yi = np.unique(y, return_inverse=True)
            n_out = len(self.classes_)
            target = torch.as_tensor(yi, dtype=torch.long)
            loss_fn = torch.nn.CrossEntropyLoss()
        else:
            yf = np.asarray(y, dtype=np.float64).ravel()
            y_std = yf.std()
            # The regression target is standardised so that lr and the loss scale do not depend on units.
            target = torch.as_tensor((yf - yf.mean()) / (y_std if y_std > 0 else 1.0), dtype=torch.float32)
            n_out = 1
            loss_fn = torch.nn.MSELoss()

        if self.module is None:  # before any allocation: the MLP of ``hidden`` must fit in memory
            check_sizes({"hidden": hidden}, lambda hidden: _mlp_size(d, hidden, n_out, min(batch_size, n)),
                        f"SAND's MLP on {d} features")
        device = check_device(self.device)
        # An int seed seeds both streams with itself; a numpy Generator (or None) gives one drawn int.
        gen = torch_generator(self.seed)
        # Network initialisation and noise use the global RNG; fork it so fitting does not disturb
        # the caller's random state and the same seed gives the same gains.
        with torch_seeded(gen.initial_seed(), device):
            layer = NoiseGainLayer(d, int(self.k), sigma)
            if self.module is not None:
                import copy

                body = copy.deepcopy(self.module)
            else:
                layers, width = [], d
                for h in hidden:
                    layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
                    width = h
                layers.append(torch.nn.Linear(width, n_out))
                body = torch.nn.Sequential(*layers)
            net = torch.nn.Sequential(layer, body).to(device=device, dtype=torch.float32)
            if self.module is not None:
                self._check_module_output(net, d, n_out, device)
            # Weight decay on the network only (never on the gains, whose scale the constraint
            # fixes): an unregularised MLP fits chance correlations of the noise features, which
            # keeps some of their gains near 0.1-0.3. The cosine schedule lets the gains settle
            # (Adam's steps on noise features are a random walk of size ~lr).
            opt = torch.optim.Adam(
                [{"params": layer.parameters()}, {"params": body.parameters(), "weight_decay": weight_decay}], lr=lr
            )
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
            xt = torch.as_tensor(Xs, dtype=torch.float32, device=device)
            target = target.to(device)
            losses, gains = [], []
            epoch_iter = range(epochs)
            if self.progress:
                from tqdm.auto import tqdm

                epoch_iter = tqdm(epoch_iter, desc="SAND", leave=False)
            net.train()
            for _ in epoch_iter:
                order = torch.randperm(n, generator=gen).to(device)
                total = 0.0
                for start in range(0, n, batch_size):
                    idx = order[start : start + batch_size]
                    out = net(xt[idx])
                    if self.task_ == "regression":
                        out = out.reshape(-1)
                    loss = loss_fn(out, target[idx])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    layer.project_()
                    total += float(loss.detach()) * idx.numel()
                losses.append(total / n)
                sched.step()
                gains.append(layer.gains().detach().cpu().double().numpy())
            net.eval()
        self.network_ = net
        self.history_ = {"loss": np.asarray(losses), "gains": np.stack(gains)}
        self.gains_ = gains[-1].copy()
        return self.gains_
