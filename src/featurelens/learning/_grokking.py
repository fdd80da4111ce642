"""Modular addition and the two-layer quadratic-activation network used by ``featurelens diagnose``
and benchmarks/bench_grokking.py.

Data: every pair (a, b) in Z_p x Z_p, input = [onehot_p(a), onehot_p(b)] (2p features), label
(a + b) mod p. Model: f(x) = V (W x)^2, no biases (Gromov 2023, arXiv 2301.02679; the neural
baseline of Mallinar et al. 2024, arXiv 2407.20199; the sigma(x) = x^2 setting in which the
update eigengap announces grokking, arXiv 2605.08119).

``activation="relu"`` swaps the x^2 for a ReLU, the contrast of arXiv 2605.08119 (the sigma_2 /
sigma_3 gap announces grokking with x^2 and not with ReLU). ``sign_rule=ETA`` records the B-matrix
sign rule of Tian's feature repulsion (:func:`repulsion_sign_rule`).

With ``grokalign=WEIGHT`` the training loss gains the GrokAlign penalty (Walker, Humayun,
Balestriero, Baraniuk 2025, arXiv 2506.12284), ``L + lambda * mean_x ||J_f(x)||_F`` over the
training rows (:class:`featurelens.learning.GrokAlign`; the one-hot inputs are floats, so the
input-output Jacobian ``J_f(x) = d f / d x`` is defined), and the Jacobian alignment is recorded.
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import torch

from .._random import numpy_rng, parse_seed, root_seed, seed_record, torch_generator, torch_seeded
from .._validation import check_float, check_int, check_option
from .._budgets import check_budget, check_memory, format_count


def modular_addition(p: int, train_fraction: float, seed: int = 0):
    """All p^2 pairs, shuffled with ``seed`` and split; returns float32 tensors
    ``(X_train, y_train, X_test, y_test)``, X rows ``[onehot(a), onehot(b)]``, y = (a + b) mod p."""
    p = check_int(p, "p", low=2)
    train_fraction = check_float(train_fraction, "train_fraction", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    X = np.zeros((p * p, 2 * p), dtype=np.float32)
    X[np.arange(p * p), a] = 1.0
    X[np.arange(p * p), p + b] = 1.0
    y = (a + b) % p
    order = numpy_rng(seed).permutation(p * p)
    n_train = max(1, min(p * p - 1, int(round(train_fraction * p * p))))
    tr, te = order[:n_train], order[n_train:]
    t = torch.from_numpy
    return t(X[tr]), t(y[tr]).long(), t(X[te]), t(y[te]).long()


ACTIVATIONS = ("quadratic", "relu")


class Quadratic(torch.nn.Module):
    """Elementwise x^2: the activation under which modular addition groks with a Fourier solution."""

    def forward(self, x):
        return x * x


def quadratic_network(p: int, width: int, seed: int = 0, init_scale: float = 1.0,
                      activation: str = "quadratic") -> torch.nn.Sequential:
    """``Sequential(Linear(2p, width, bias=False), Quadratic(), Linear(width, p, bias=False))``,
    initialised from ``seed`` (None, an int or a numpy Generator; PyTorch's default uniform init
    times ``init_scale``). ``activation="relu"`` puts ``torch.nn.ReLU()`` in the middle instead
    (the same draws: the weights do not depend on the activation)."""
    activation = check_option(activation, "activation", ACTIVATIONS)
    gen = torch_generator(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(2 * p, width, bias=False), Quadratic() if activation == "quadratic" else torch.nn.ReLU(),
        torch.nn.Linear(width, p, bias=False)
    )
    with torch.no_grad():
        for layer in (net[0], net[2]):
            bound = init_scale / np.sqrt(layer.in_features)
            layer.weight.copy_((torch.rand(layer.weight.shape, generator=gen) * 2 - 1) * bound)
    return net


#: The defaults of ``featurelens diagnose`` and benchmarks/bench_grokking.py.
DEFAULTS = dict(p=31, width=256, train_fraction=0.5, lr=3e-3, weight_decay=1.0, steps=3000)


def run_grokking(
    p: int = DEFAULTS["p"],
    width: int = DEFAULTS["width"],
    train_fraction: float = DEFAULTS["train_fraction"],
    lr: float = DEFAULTS["lr"],
    weight_decay: float = DEFAULTS["weight_decay"],
    steps: int = DEFAULTS["steps"],
    seed: int = 0,
    metrics=None,
    probe_every: int = 50,
    eval_every: int = 10,
    grok_threshold: float = 0.9,
    extra_steps: int = 300,
    progress: bool | None = False,
    monitor_kwargs: dict | None = None,
    grokalign: float | None = None,
    grokalign_projections: int | None = 1,
    activation: str = "quadratic",
    sign_rule: float | None = None,
    sign_rule_every: int | None = None,
    sign_rule_pairs: int = 200,
):
    """Full-batch AdamW training of the quadratic network on modular addition (MSE on one-hot
    labels), with a :class:`featurelens.learning.Monitor` recording every step, until the test
    accuracy has stayed at or above 0.99 for ``extra_steps`` steps or ``steps`` run out.

    ``grokalign``: None (default: plain training, as before) or a weight ``lambda >= 0``: every step
    then minimises ``MSE + lambda * mean_x ||J_f(x)||_F`` over all training rows, the GrokAlign
    objective of Walker, Humayun, Balestriero, Baraniuk 2025 (arXiv 2506.12284), with the Frobenius
    norm estimated from ``grokalign_projections`` random unit projections per row (the paper's
    estimator; None: the exact norm) drawn from ``seed``; the penalty value is logged as
    ``grokalign_penalty`` (``loss`` stays the MSE alone; the Monitor's gradient window sees the
    whole gradient) and the Monitor's ``"jacobian_alignment"`` metric is switched on: it logs the
    paper's centroid alignment ``mean_x cos(J_f(x)^T 1, x)`` (``jacobian_centroid_cosine``), the
    mean cosine of each output's gradient with x, the rank-one share and the top singular
    direction's ``|cos(v_1, x)|`` (:func:`featurelens.learning.jacobian_alignment`) every
    ``probe_every`` steps.

    ``activation``: "quadratic" (default, x^2) or "relu" (:func:`quadratic_network`).

    ``sign_rule``: None (default) or Tian's top-layer weight decay ``eta > 0``: the B-matrix sign
    rule (:func:`repulsion_sign_rule`, on the hidden features of the training rows and the
    ``sign_rule_pairs`` most cosine-similar feature pairs) is logged every ``sign_rule_every`` steps
    (None: once, at the end) as ``sign_rule_agreement`` and ``sign_rule_negative_share``, and the
    final values go into the summary.

    Budgets, checked before any work (``featurelens._budgets.check_budget``): the data set
    (``p^2`` rows of ``2 p`` float32 features), the network's activations on it and their gradients
    (about ``8 p^2 (4 p + 3 width)`` bytes) must fit in the available memory, and ``steps`` times the
    ``train_fraction p^2`` training rows of each full-batch step must stay within
    ``featurelens._budgets.MAX_EVALUATIONS`` (10^8) model evaluations.

    Returns ``(monitor, model, data, summary)``; ``summary`` holds the grok step (first logged step
    with test accuracy >= ``grok_threshold``), the detector's firing step and the final accuracies
    (and, with alignment recorded, the final alignment values), and the seed as every seeded API
    records it (:func:`featurelens._random.seed_record`): ``summary["seed"]`` the int, None or
    ``"generator"``, and for the latter two ``summary["seed_root"]``, the int drawn from it, which
    as ``seed=`` repeats the run.
    """
    import time

    from .alignment import GrokAlign
    from .monitor import DEFAULT_METRICS, Monitor, train_with_monitor

    grokalign = check_float(grokalign, "grokalign", low=0.0, allow_none=True)
    grokalign_projections = check_int(grokalign_projections, "grokalign_projections", low=1, allow_none=True)
    activation = check_option(activation, "activation", ACTIVATIONS)
    sign_rule = check_float(sign_rule, "sign_rule", low=0.0, low_inclusive=False, allow_none=True)
    sign_rule_every = check_int(sign_rule_every, "sign_rule_every", low=1, allow_none=True)
    sign_rule_pairs = check_int(sign_rule_pairs, "sign_rule_pairs", low=1)
    if sign_rule is None and sign_rule_every is not None:
        raise ValueError(f"sign_rule_every is only used with sign_rule (the weight decay eta of the B matrix); got "
                         f"sign_rule_every={sign_rule_every!r} with sign_rule=None")
    p = check_int(p, "p", low=2)
    width = check_int(width, "width", low=1)
    train_fraction = check_float(train_fraction, "train_fraction", low=0.0, high=1.0, low_inclusive=False,
                                 high_inclusive=False)
    check_memory(
        8 * p * p * (4 * p + 3 * width),
        f"p={p} (the modulus: {format_count(p * p)} rows of {format_count(2 * p)} features) with width={width}",
        "lower p (--p on the command line) or width.",
    )
    check_budget(steps, "steps", per=max(1, round(train_fraction * p * p)), unit="model evaluations",
                 what=f"({format_count(max(1, round(train_fraction * p * p)))} training rows per step at p={p})",
                 hint="lower steps or p (--steps, --p on the command line)")
    # One int seeds the data split, the initialisation, the minibatches and torch's global
    # generator alike; from a Generator (or None) it is drawn once, and recorded in the summary.
    given = parse_seed(seed)
    seed = root_seed(given, high=2**31 - 1)
    with torch_seeded(seed):  # the caller's global generator is restored afterwards
        Xtr, ytr, Xte, yte = modular_addition(p, train_fraction, seed)
        model = quadratic_network(p, width, seed, activation=activation)
        kwargs = dict(every=1, window=20, k=1, probe_every=probe_every, detect_layer="0")
        kwargs.update(monitor_kwargs or {})
        metrics = tuple((metrics,) if isinstance(metrics, str) else (metrics or DEFAULT_METRICS))
        if grokalign is not None and not {"alignment", "jacobian_alignment"} & set(metrics):
            metrics = metrics + ("jacobian_alignment",)
        monitor = Monitor(model, Xtr, ytr.numpy(), metrics=metrics, **kwargs)
        optimizer = None
        if grokalign is not None:
            lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
            weight_decay = check_float(weight_decay, "weight_decay", low=0.0)
            optimizer = _PenalisedAdamW(
                model, Xtr, GrokAlign(grokalign, n_projections=grokalign_projections, seed=seed),
                torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay),
            )
        solved_at = []

        def stop_when(mon, t):
            if optimizer is not None:
                mon.log(t, "grokalign_penalty", optimizer.last_penalty)
            if sign_rule_every is not None and t % sign_rule_every == 0:
                _log_sign_rule(mon, t, model, Xtr, sign_rule, sign_rule_pairs)
            if not solved_at and mon.records and _last(mon, "test_accuracy") >= 0.99:
                solved_at.append(t)
            return bool(solved_at) and t - solved_at[0] >= extra_steps

        start = time.perf_counter()
        threads = torch.get_num_threads()
        # The tensors are tiny: one thread avoids thread hand-offs that made each step ~10x slower on a
        # busy 2-core machine (54 s against 5 s for the default run).
        torch.set_num_threads(1)
        try:
            train_with_monitor(
                model, Xtr, ytr, steps, X_test=Xte, y_test=yte, loss="mse", lr=lr, weight_decay=weight_decay,
                optimizer=optimizer, monitor=monitor, eval_every=eval_every, seed=seed, progress=progress, stop_when=stop_when,
            )
        finally:
            torch.set_num_threads(threads)
        seconds = time.perf_counter() - start
        steps_, test = monitor.series("test_accuracy")
        if sign_rule is not None:
            if sign_rule_every is None or int(steps_[-1]) % sign_rule_every:
                _log_sign_rule(monitor, int(steps_[-1]), model, Xtr, sign_rule, sign_rule_pairs)
        _, train = monitor.series("train_accuracy")
        hit = np.flatnonzero(test >= grok_threshold)
        summary = {
            "p": p, "width": width, "train_fraction": train_fraction, "lr": lr, "weight_decay": weight_decay,
            **seed_record(given, seed), "steps_run": int(steps_[-1]), "budget": steps,
            "grok_step": int(steps_[hit[0]]) if hit.size else None,
            "fired_step": monitor.fired_step,
            "final_train_accuracy": float(train[-1]), "final_test_accuracy": float(test[-1]),
            "seconds": seconds,
        }
        g, f = summary["grok_step"], summary["fired_step"]
        summary["fired_before_grok"] = bool(f is not None and g is not None and f < g)
        summary["lead_steps"] = (g - f) if (f is not None and g is not None) else None
        summary["activation"] = activation
        if sign_rule is not None:
            summary["sign_rule_eta"] = sign_rule
            summary["final_sign_rule_agreement"] = _last(monitor, "sign_rule_agreement")
            summary["final_sign_rule_negative_share"] = _last(monitor, "sign_rule_negative_share")
        if grokalign is not None:
            summary["grokalign"] = grokalign
            summary["grokalign_projections"] = grokalign_projections
            value = _last(monitor, "grokalign_penalty")
            summary["final_grokalign_penalty"] = None if np.isnan(value) else value
        if "jacobian_alignment" in monitor.metrics:
            for name in ALIGNMENT_SERIES:
                value = _last(monitor, name)
                summary[f"final_{name}"] = None if np.isnan(value) else value
        return monitor, model, (Xtr, ytr, Xte, yte), summary


def hidden_features(model, X) -> np.ndarray:
    """The hidden features ``F = sigma(W X)`` (n, width) of the two-layer network on the rows X."""
    with torch.no_grad():
        return model[1](model[0](X)).double().cpu().numpy()


def repulsion_sign_rule(F, eta: float, pairs: int = 200) -> dict:
    """Tian's B-matrix sign rule (feature repulsion; Tian, arXiv 2509.21519, Theorem 6, as tested
    in arXiv 2605.08119) on hidden features F (n, K): ``B = (F^T F + eta I)^-1`` (the top layer at
    its weight-decay optimum is ``V* = B F^T Y``) and, for the ``pairs`` most cosine-similar feature
    pairs (j, l), the prediction ``sign(B_jl) = -sign(f_j^T P_{eta,-jl} f_l)`` with the projector
    ``P_{eta,-jl} = I - F_{-jl} (F_{-jl}^T F_{-jl} + eta I)^-1 F_{-jl}^T`` built without features j
    and l.

    Derived (block inversion): the (j, l) block of ``B`` is the inverse of the Schur complement
    ``S = F_jl^T P_{eta,-jl} F_jl + eta I`` (2 x 2, positive definite), whose off-diagonal is
    ``f_j^T P_{eta,-jl} f_l``; so ``B_jl = -S_12 / det S`` and the rule holds exactly whenever
    ``S_12 != 0``: agreement below 1 measures numerics (or another projector), not training. The
    substantive part of the repulsion claim is the sign itself: similar features (positive
    ``f_j^T P f_l``) get negative coupling ``B_jl < 0``, reported as ``negative_share``.

    Here ``P`` is computed directly for each pair (one K x K solve each; the rule is checked, not
    assumed). Returns ``agreement`` (share of pairs where the rule holds), ``negative_share`` (share
    of pairs with ``B_jl < 0``), ``pairs`` (the pairs used, (n_pairs, 2)), ``B_pairs`` and
    ``projected`` (the two sides per pair), and ``cosine`` (their feature cosines).
    """
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[1] < 3:
        raise ValueError(f"F must be a (n_samples, n_features) matrix with at least 3 features; got shape {F.shape}")
    if not np.isfinite(F).all():
        raise ValueError("F must be finite; it has NaN or inf entries")
    eta = check_float(eta, "eta", low=0.0, low_inclusive=False)
    pairs = check_int(pairs, "pairs", low=1)
    K = F.shape[1]
    G = F.T @ F
    B = np.linalg.inv(G + eta * np.eye(K))
    norms = np.sqrt(np.diag(G))
    C = G / np.outer(np.where(norms > 0, norms, 1.0), np.where(norms > 0, norms, 1.0))
    iu = np.triu_indices(K, 1)
    order = np.argsort(-C[iu], kind="stable")[: min(pairs, iu[0].size)]
    J, L = iu[0][order], iu[1][order]
    b = B[J, L]
    proj = np.empty(J.size)
    for i, (j, m) in enumerate(zip(J, L)):
        keep = np.ones(K, dtype=bool)
        keep[[j, m]] = False
        Fk = F[:, keep]
        Pm = F[:, m] - Fk @ np.linalg.solve(G[np.ix_(keep, keep)] + eta * np.eye(K - 2), Fk.T @ F[:, m])
        proj[i] = F[:, j] @ Pm
    agree = np.sign(b) == -np.sign(proj)
    return {"agreement": float(agree.mean()), "negative_share": float((b < 0).mean()),
            "pairs": np.stack([J, L], axis=1), "B_pairs": b, "projected": proj, "cosine": C[J, L]}


def _log_sign_rule(monitor, t, model, X, eta, pairs):
    r = repulsion_sign_rule(hidden_features(model, X), eta, pairs)
    monitor.log(t, "sign_rule_agreement", r["agreement"])
    monitor.log(t, "sign_rule_negative_share", r["negative_share"])


#: The alignment series the Monitor's "jacobian_alignment" metric records.
ALIGNMENT_SERIES = ("jacobian_cosine", "jacobian_rank_one_share", "jacobian_centroid_cosine",
                    "jacobian_top_singular_cosine")


class _PenalisedAdamW:
    """The optimiser handed to :func:`featurelens.learning.train_with_monitor` for a GrokAlign run:
    ``step()`` adds the gradient of ``penalty(model, X)`` (over all training rows, the full batch)
    to the data-loss gradient that the training loop has just written into ``.grad``, then takes
    the AdamW step, so the step minimises ``loss + penalty``. The loop itself, its monitor calls and
    its logging are those of the run without the penalty."""

    def __init__(self, model, X, penalty, optimizer):
        self.model, self.X, self.penalty, self.optimizer = model, X, penalty, optimizer
        self.last_penalty = float("nan")

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        if self.penalty.weight > 0:  # a zero weight adds a zero gradient: nothing to compute
            value = self.penalty(self.model, self.X)
            value.backward()
            self.last_penalty = float(value.detach())
        else:
            self.last_penalty = 0.0
        self.optimizer.step()


def _last(monitor, metric):
    for r in reversed(monitor.records):
        if r["metric"] == metric:
            return r["value"]
    return float("nan")
