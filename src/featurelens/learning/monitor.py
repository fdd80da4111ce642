"""A training monitor: per-layer feature-learning diagnostics recorded from any training loop, and
an eigengap detector on the spectrum of recent weight updates (announcing grokking;
:class:`~featurelens.learning.eigengap.EigengapDetector`).

Per monitored layer (every ``nn.Linear`` / ``nn.Conv2d`` with ``groups=1`` unless ``layers`` names
some):

- ``agop_trace``, ``agop_diag_erank``: the trace of the layer AGOP (1/n sum_i J_i^T J_i over the
  probe rows, :func:`featurelens.learning.layer_agops`) and the effective number of its diagonal
  coordinates, exp(entropy of diag/trace);
- ``nfa``: corr(W^T W, AGOP^power) (:func:`featurelens.learning.nfa`, with ``measure``), and
  ``nfa_offdiag``: the same Pearson correlation over the off-diagonal entries only;
- ``erank_weights``, ``erank_repr``: effective rank (Roy and Vetterli 2007) of the weight matrix
  and of the layer's pre-activation outputs on the probe rows
  (:func:`featurelens.learning.effective_rank`);
- ``nc1``, ``nc2``, ... (with ``y_probe``, on the input of the last monitored layer):
  :func:`featurelens.learning.neural_collapse`;
- ``manifold_radius``, ``manifold_dimension``, ``manifold_center_correlation`` and
  ``target_linearity`` (metric ``"manifold"``, with ``y_probe``; opt-in): the class manifolds'
  mean normalised radius and participation-ratio dimension, their centres' correlation (Chung, Lee
  & Sompolinsky 2018) and the R^2 of the least-squares map from the layer's input to the one-hot
  labels, per monitored layer (:func:`featurelens.learning.manifold_geometry`,
  :func:`featurelens.learning.target_linearity`);
  ``"target_linearity"`` records the last alone;
- ``manifold_capacity``, ``manifold_capacity_mean_field`` (metric ``"manifold_capacity"``, with
  ``y_probe``; opt-in, a few hundred small LPs per probe): the simulated capacity of the class
  manifolds (the load P/N where half the random dichotomies are separable, Cohen et al. 2020) on a
  fixed subsample, and its mean-field estimate (:func:`featurelens.learning.manifold_capacity`);
- ``gsnr`` per parameter tensor (its name as the layer), ``gsnr_mean`` and ``gsnr_infinite``
  (pseudo-layer ``"model"``) (metric ``"gsnr"``, with ``y_probe``; opt-in): the gradient
  signal-to-noise ratio mean_i(g)^2 / var_i(g) of the cross-entropy's per-sample gradients on the
  probe rows (Liu et al. 2020; :func:`featurelens.learning.gsnr`);
- ``jacobian_cosine``, ``jacobian_rank_one_share``, ``jacobian_centroid_cosine``,
  ``jacobian_top_singular_cosine`` (metric ``"jacobian_alignment"``, or ``"alignment"``; opt-in;
  pseudo-layer ``"model"``): over the probe rows, the mean cosine between each output's input
  gradient and the input, the rank-one share of the input-output Jacobian, GrokAlign's centroid
  alignment cos(J^T 1, x) and the top right singular vector's |cos| with x
  (:func:`featurelens.learning.jacobian_alignment`);
- ``update_sv1..``, ``update_gap``, ``update_kstar``: the singular values of the window of the last
  ``window`` weight updates (a window x P matrix, one flattened update dW per row), the eigengap
  ratio sigma_k / sigma_{k+1} and the spectral edge k* = argmax_j sigma_j / sigma_{j+1}; likewise
  ``grad_*`` for the window of the last gradients (when ``.grad`` is set). The pseudo-layer
  ``"all"`` concatenates every monitored layer's weights.

Rolling-window update spectrum and spectral edge: Y. Xu, arXiv 2603.15678 (2026); the sigma_2 /
sigma_3 gap of a two-layer quadratic network announcing grokking: arXiv 2605.08119 (2026).
NFA: Radhakrishnan, Beaglehole, Pandit, Belkin, Science 2024, arXiv 2212.13881.
"""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np
from featurelens._optional import is_tensor, torch

from .._random import numpy_rng, parse_seed, torch_generator
from .._validation import as_numpy, check_float, check_int, check_option, check_optional_bool, progress_bar
from .._budgets import check_budget
from .alignment import jacobian_alignment
from .collapse import neural_collapse
from .eigengap import EigengapDetector, SpectrumWindow, spectrum_record
from .gsnr import gsnr_monitor_metric
from .manifolds import manifold_capacity, target_linearity
from .manifolds import monitor_metrics as manifold_metrics
from .nfa import (
    MEASURES,
    layer_stats,
    resolve_module,
    select_layers,
    correlation,
    layer_weight,
    matrix_power_psd,
)
from .representation_stats import effective_rank

__all__ = ["DEFAULT_METRICS", "METRICS", "Monitor", "train_with_monitor"]

#: What a Monitor records by default. "updates" and "gradients" are cheap (a window x P SVD); the
#: others need one batched forward/backward over the probe rows.
DEFAULT_METRICS = ("agop", "nfa", "rank", "collapse", "updates", "gradients")
#: Everything a Monitor can record: the defaults plus the opt-in "manifold" (class manifolds and
#: target linearity per layer, with y_probe), "target_linearity" (that alone) and
#: "jacobian_alignment" (the input-output Jacobian's alignment with x; "alignment" for short).
METRICS = DEFAULT_METRICS + ("manifold", "target_linearity", "manifold_capacity", "jacobian_alignment", "gsnr")
#: The simulated capacity inside the Monitor: points per class, dichotomies per projection size,
#: and the loads P/N tried (a coarse grid around Cover's 2: a probe costs a few hundred LPs).
CAPACITY_POINTS, CAPACITY_DICHOTOMIES, CAPACITY_LOADS = 20, 16, (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
_METRIC_ALIASES = {"alignment": "jacobian_alignment"}


class Monitor:
    """Records feature-learning diagnostics per layer from any training loop.

    Call ``step`` once per optimiser step (after ``optimizer.step()``; gradients are read from
    ``.grad`` before the next ``zero_grad``). Every ``every``-th call records: the update of each
    monitored weight since the previous record (pushed into a rolling window of the last
    ``window`` updates), the current gradient (likewise), their singular values and the eigengap
    ``sigma_k / sigma_{k+1}``, and - every ``probe_every``-th call - the AGOP/NFA, effective ranks
    and neural-collapse statistics on ``X_probe`` (see the module docstring for the formulas).
    The :class:`EigengapDetector` watches ``update_gap`` of ``detect_layer``.

    Parameters
    ----------
    model
        The ``torch.nn.Module`` being trained (read only; its train/eval flags are restored).
    X_probe, y_probe
        Probe rows for the AGOP/NFA/representations and optional int labels for neural collapse.
    every
        Record every ``every``-th call of ``step`` (>= 1).
    metrics
        Any of ``METRICS``.
    window
        Number of recent updates/gradients in the rolling window (>= k + 1).
    k
        The eigengap index: ``gap = sigma_k / sigma_{k+1}`` (1-based).
    layers
        Layer names (``model.named_modules()``), default every Linear/Conv2d.
    probe_every
        Record the probe metrics every ``probe_every``-th call (a multiple of ``every``; default
        ``every``). They cost one forward/backward over the probe rows per output chunk.
    detector
        An :class:`EigengapDetector` (default ``EigengapDetector()``) or None for none.
    detect_layer
        Which layer's update gap the detector watches: a layer name, ``"all"`` (every monitored
        layer's weights side by side) or None (default: the first monitored layer, the setting the
        detector's defaults were chosen on).
    power, measure
        Passed to the NFA correlation.
    """

    def __init__(
        self,
        model,
        X_probe,
        y_probe=None,
        every: int = 1,
        metrics=DEFAULT_METRICS,
        window: int = 20,
        k: int = 1,
        layers=None,
        probe_every: int | None = None,
        detector: EigengapDetector | None | str = "default",
        detect_layer: str | None = None,
        power: float = 0.5,
        measure: str = "pearson",
        batch_size: int | None = None,
    ):
        self._model, self.module = resolve_module(model)
        self._model.require_gradients("Monitor")
        every = check_int(every, "every", low=1)
        probe_every = every if probe_every is None else check_int(probe_every, "probe_every", low=1)
        if probe_every % every:
            raise ValueError(f"probe_every must be a positive multiple of every ({every}); got {probe_every!r}")
        if isinstance(metrics, str):
            metrics = (metrics,)
        metrics = tuple(metrics)
        if not metrics:
            raise ValueError(f"metrics is empty; expected some of {', '.join(map(repr, METRICS))}")
        metrics = tuple(check_option(_METRIC_ALIASES.get(m, m), "each entry of metrics", METRICS) for m in metrics)
        k = check_int(k, "k", low=1)  # the eigengap index: sigma_k / sigma_(k+1)
        window = check_int(window, "window", low=1)
        if window < k + 1:
            raise ValueError(f"window must be an int >= k + 1 = {k + 1}; got {window!r}")
        power = check_float(power, "power", low=0.0, low_inclusive=False)
        measure = check_option(measure, "measure", MEASURES)
        batch_size = check_int(batch_size, "batch_size", low=1, allow_none=True)
        self.X_probe = self._model.to_tensor(X_probe, "X_probe")
        self.y_probe = None
        if y_probe is not None:
            y = np.asarray(as_numpy(y_probe, "y_probe"))
            if y.ndim != 1 or y.shape[0] != self.X_probe.shape[0]:
                raise ValueError(
                    f"y_probe must hold one label per row of X_probe ({self.X_probe.shape[0]}); got shape {y.shape}"
                )
            if y.dtype.kind not in "iu":
                raise TypeError(f"y_probe must hold integer class labels; got dtype {y.dtype}")
            self.y_probe = y
        elif "collapse" in metrics and metrics != DEFAULT_METRICS:
            raise ValueError("metrics includes 'collapse', which needs y_probe; pass y_probe or drop it")
        for needs_labels in ("manifold", "target_linearity", "manifold_capacity", "gsnr"):
            if needs_labels in metrics and y_probe is None:
                raise ValueError(f"metrics includes {needs_labels!r}, which needs class labels; pass y_probe or drop it")
        self.layers = select_layers(self.module, layers)
        names = list(self.layers)
        if detect_layer is None:
            detect_layer = names[0]
        detect_layer = check_option(detect_layer, "detect_layer", names + (["all"] if len(names) > 1 else []))
        self.metrics = metrics
        self.every = int(every)
        self.probe_every = int(probe_every)
        self.window = int(window)
        self.k = int(k)
        self.power = power
        self.measure = measure
        self.batch_size = batch_size
        self.detect_layer = detect_layer
        self.detector = EigengapDetector() if isinstance(detector, str) and detector == "default" else detector
        if self.detector is not None and not isinstance(self.detector, EigengapDetector):
            raise TypeError(f"detector must be an EigengapDetector or None; got {type(detector).__name__}")
        self.records: list[dict] = []
        # "update:<layer>" / "grad:<layer>" -> [(step, descending singular values), ...]
        self.spectra: dict[str, list] = collections.defaultdict(list)
        self.last_agop: dict[str, np.ndarray] = {}
        self.n_calls = 0
        self._keys = names + (["all"] if len(names) > 1 else [])
        self._updates = {k_: SpectrumWindow(self.window) for k_ in self._keys}
        self._grads = {k_: SpectrumWindow(self.window) for k_ in self._keys}
        self._previous = self._weights()
        self._warned: set[str] = set()

    # -- reading the model -------------------------------------------------------------------
    def _weights(self) -> dict[str, torch.Tensor]:
        return {name: mod.weight.detach().flatten().to(torch.float64, copy=True) for name, mod in self.layers.items()}

    def _push(self, store, per_layer: dict[str, torch.Tensor]):
        for name, v in per_layer.items():
            store[name].push(v)
        if "all" in store:
            store["all"].push(torch.cat([per_layer[name] for name in self.layers]))

    @property
    def fired_step(self) -> int | None:
        """The step at which the eigengap detector fired (None if it has not)."""
        return None if self.detector is None else self.detector.fired_step

    def log(self, step: int, metric: str, value: float, layer: str = "model") -> None:
        """Add one row to the history (e.g. the training loss or a test accuracy)."""
        self.records.append({"step": int(step), "layer": layer, "metric": metric, "value": float(value)})

    def step(self, loss=None) -> bool:
        """Count one training step and record when due; returns True when it recorded."""
        self.n_calls += 1
        if self.n_calls % self.every:
            return False
        t = self.n_calls
        if loss is not None:
            self.log(t, "loss", float(loss.detach() if is_tensor(loss) else loss))
        current = self._weights()
        if "updates" in self.metrics:
            self._push(self._updates, {n: current[n] - self._previous[n] for n in self.layers})
            self._spectrum(t, self._updates, "update")
        self._previous = current
        if "gradients" in self.metrics:
            grads = {n: mod.weight.grad for n, mod in self.layers.items()}
            if all(g is not None for g in grads.values()):
                self._push(self._grads, {n: g.detach().flatten().to(torch.float64, copy=True) for n, g in grads.items()})
                self._spectrum(t, self._grads, "grad")
        if t % self.probe_every == 0 and any(m in self.metrics for m in ("agop", "nfa", "rank", "collapse", "manifold",
                                                                         "target_linearity", "manifold_capacity",
                                                                         "jacobian_alignment", "gsnr")):
            self._probe(t)
        return True

    def _spectrum(self, t: int, store, prefix: str):
        for name in self._keys:
            if not store[name].full:
                continue
            sv = store[name].singular_values()
            rows = spectrum_record(sv, self.k, prefix)
            self.spectra[f"{prefix}:{name}"].append((t, sv))
            for metric, value in rows.items():
                self.log(t, metric, value, name)
            if prefix == "update" and name == self.detect_key() and self.detector is not None:
                gap = rows["update_gap"]
                if math.isfinite(gap) and gap > 0:
                    self.detector.update(t, gap)

    def detect_key(self) -> str:
        return self.detect_layer

    def _probe(self, t: int):
        # One BLAS thread for the numpy/scipy linear algebra of the probe (effective rank, neural
        # collapse): a multithreaded OpenBLAS beside a training loop on a busy CPU spun 20x slower.
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            return self._probe_metrics(t)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._probe_metrics(t)

    def _probe_metrics(self, t: int):
        want_rank = "rank" in self.metrics
        want_nc = "collapse" in self.metrics and self.y_probe is not None
        want_manifold = "manifold" in self.metrics
        want_linearity = "target_linearity" in self.metrics and not want_manifold
        if "gsnr" in self.metrics:
            values = gsnr_monitor_metric(self.module, self.X_probe, torch.as_tensor(self.y_probe),
                                         batch_size=self.batch_size)
            for key, value in values.items():
                if key.startswith("gsnr/"):
                    self.log(t, "gsnr", float(value), key[len("gsnr/"):])
                else:
                    self.log(t, key, float(value), "model")
        if "jacobian_alignment" in self.metrics:
            aligned = jacobian_alignment(self._model, self.X_probe, batch_size=self.batch_size)
            self.log(t, "jacobian_cosine", float(np.mean(aligned.mean_cosine)), "model")
            self.log(t, "jacobian_rank_one_share", float(aligned.mean_rank_one_share), "model")
            self.log(t, "jacobian_centroid_cosine", float(aligned.mean_centroid_cosine), "model")
            self.log(t, "jacobian_top_singular_cosine", float(aligned.mean_top_singular_cosine), "model")
        want_capacity = "manifold_capacity" in self.metrics
        if not any(m in self.metrics for m in ("agop", "nfa", "rank", "collapse", "manifold", "target_linearity",
                                               "manifold_capacity")):
            return
        agops, reps, _ = layer_stats(
            self._model, self.X_probe, list(self.layers), self.batch_size,
            representations=want_rank or want_nc or want_manifold or want_linearity or want_capacity,
        )
        if want_capacity and len(np.unique(self.y_probe)) >= 2:
            self._log_capacity(t, reps)
        if want_manifold or want_linearity:
            if len(np.unique(self.y_probe)) < 2:
                self._warn("manifold", "manifold and target-linearity metrics skipped: y_probe has a single class")
            else:
                onehot = np.eye(int(self.y_probe.max()) + 1)[self.y_probe]
                for name in self.layers:
                    if want_manifold:
                        values = manifold_metrics(reps[name][0], self.y_probe)
                    else:
                        values = {"target_linearity": target_linearity(reps[name][0], onehot)}
                    for key, value in values.items():
                        self.log(t, key, float(value), name)
        for name, mod in self.layers.items():
            A = agops[name]
            if "agop" in self.metrics:
                d = np.clip(np.diag(A), 0.0, None)
                tr = float(d.sum())
                self.last_agop[name] = A
                self.log(t, "agop_trace", tr, name)
                if tr > 0:
                    p = d[d > 0] / tr
                    self.log(t, "agop_diag_erank", float(np.exp(-(p * np.log(p)).sum())), name)
            if "nfa" in self.metrics:
                w = layer_weight(mod).double().cpu().numpy()
                G, P = w.T @ w, matrix_power_psd(A, self.power)
                self.log(t, "nfa", correlation(G, P, self.measure), name)
                # with one-hot or whitened inputs both matrices are diagonal-heavy from the start,
                # so the off-diagonal correlation is the one that shows features being learned
                self.log(t, "nfa_offdiag", correlation(G, P, "pearson_offdiag"), name)
            if want_rank:
                self.log(t, "erank_weights", effective_rank(layer_weight(mod).double().cpu().numpy()), name)
                self.log(t, "erank_repr", effective_rank(reps[name][1]), name)
        if want_nc:
            last = list(self.layers)[-1]
            H = reps[last][0]
            mod = self.layers[last]
            W = layer_weight(mod).double().cpu().numpy()
            present = np.unique(self.y_probe)
            if len(present) < 2:
                self._warn("collapse", "neural-collapse metrics skipped: y_probe has a single class")
                return
            # neural_collapse maps W's rows to the sorted labels present in y_probe, so W (and the
            # bias, which is part of the network's decision in NC4) is only usable when the labels
            # are exactly 0..rows-1; otherwise (a probe missing a class, a non-classifier last layer)
            # only the W-free statistics are recorded.
            usable = W.shape[1] == H.shape[1] and np.array_equal(present, np.arange(W.shape[0]))
            fit_w = W if usable else None
            fit_b = mod.bias.detach().double().cpu().numpy() if usable and mod.bias is not None else None
            for key, value in neural_collapse(H, self.y_probe, W=fit_w, b=fit_b).items():
                if np.ndim(value) == 0 and value is not None and math.isfinite(float(value)):
                    self.log(t, key, float(value), last)

    def _log_capacity(self, t: int, reps) -> None:
        """``manifold_capacity`` (simulated: the load P/N where half the random class dichotomies
        are linearly separable, on :data:`CAPACITY_POINTS` probe rows per class, projected to the
        N of each load in :data:`CAPACITY_LOADS`) and ``manifold_capacity_mean_field`` per layer
        (:func:`featurelens.learning.manifold_capacity`). The same rows and draws at every step, so
        the series moves with the features only."""
        rng = numpy_rng(0)
        rows = np.concatenate([rng.permutation(np.flatnonzero(self.y_probe == c))[:CAPACITY_POINTS]
                               for c in np.unique(self.y_probe)])
        n_classes = len(np.unique(self.y_probe))
        for name in self.layers:
            H = reps[name][0][rows]
            dims = sorted({min(H.shape[1], max(1, round(n_classes / a))) for a in CAPACITY_LOADS})
            cap = manifold_capacity(H, self.y_probe[rows], n_dichotomies=CAPACITY_DICHOTOMIES,
                                    n_projections=dims, seed=0)
            if math.isfinite(cap.critical_load):
                self.log(t, "manifold_capacity", float(cap.critical_load), name)
            if math.isfinite(cap.mean_field_capacity):
                self.log(t, "manifold_capacity_mean_field", float(cap.mean_field_capacity), name)

    def _warn(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    # -- results -----------------------------------------------------------------------------
    @property
    def history(self):
        """The tidy table of everything recorded: columns step, layer, metric, value (a pandas
        DataFrame when pandas is installed, else a list of dicts)."""
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is optional
            return list(self.records)
        return pd.DataFrame(self.records, columns=["step", "layer", "metric", "value"])

    def series(self, metric: str, layer: str | None = None):
        """``(steps, values)`` numpy arrays of one metric (of one layer; default the first layer
        that has it)."""
        rows = [r for r in self.records if r["metric"] == metric]
        if not rows:
            known = sorted({r["metric"] for r in self.records})
            raise ValueError(f"metric {metric!r} has not been recorded; recorded metrics: {known}")
        if layer is None:
            layer = rows[0]["layer"]
        rows = [r for r in rows if r["layer"] == layer]
        if not rows:
            raise ValueError(f"metric {metric!r} has no rows for layer {layer!r}")
        return np.array([r["step"] for r in rows]), np.array([r["value"] for r in rows])

    def plot(self, metrics=None, fig=None):
        """One matplotlib figure: a panel per metric (every layer a line), the detector's firing
        step as a dashed vertical line. Returns the figure."""
        default = ["loss", "train_accuracy", "test_accuracy", "nfa", "nfa_offdiag", "erank_weights", "erank_repr",
                   "agop_trace", "update_gap", "grad_gap", "nc1"]
        present = {r["metric"] for r in self.records}
        metrics = [m for m in (metrics or default) if m in present]
        if not metrics:
            raise ValueError("nothing to plot yet: call step() until something is recorded")
        from matplotlib.figure import Figure

        from ..plots._text import plain_text

        ncols = min(3, len(metrics))
        nrows = math.ceil(len(metrics) / ncols)
        if fig is None:
            # a fixed grid instead of constrained layout: drawing stays cheap for long histories
            fig = Figure(figsize=(4.2 * ncols, 2.9 * nrows))
            fig.subplots_adjust(left=0.07, right=0.98, bottom=0.1, top=0.93, wspace=0.28, hspace=0.45)
        for i, metric in enumerate(metrics):
            ax = fig.add_subplot(nrows, ncols, i + 1)
            layers = list(dict.fromkeys(r["layer"] for r in self.records if r["metric"] == metric))
            for layer in layers:
                s, v = self.series(metric, layer)
                ax.plot(s, v, label=plain_text(layer), lw=1.2)  # layer names are user data
            if metric.endswith("_gap") or metric in ("loss", "agop_trace"):
                ax.set_yscale("log")
            if self.fired_step is not None:
                ax.axvline(self.fired_step, color="k", ls="--", lw=1, label=f"detector ({self.fired_step})")
            ax.set_title(plain_text(metric), fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.tick_params(labelsize=7)
            if len(layers) > 1 or (self.fired_step is not None and i == 0):
                ax.legend(fontsize=6)
        return fig


def train_with_monitor(
    model,
    X,
    y,
    steps: int,
    X_test=None,
    y_test=None,
    loss: str = "cross_entropy",
    optimizer=None,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    monitor: Monitor | None = None,
    eval_every: int | None = None,
    seed: int = 0,
    progress: bool | None = None,
    stop_when=None,
):
    """Train ``model`` on (X, y) with a plain torch loop and the monitor on.

    ``loss``: ``"cross_entropy"`` (int labels) or ``"mse"`` (against one-hot labels, summed over
    classes and averaged over rows). ``optimizer``: a torch optimiser, default AdamW(lr,
    weight_decay). ``batch_size`` None = full batch; minibatches are drawn with ``seed`` (None, an
    int or a numpy Generator; ``featurelens._random.torch_generator``).
    ``monitor`` default: ``Monitor(model, X[:512], y[:512])``. Every ``eval_every`` steps (default
    the monitor's ``every``) the train loss, train accuracy and (with X_test) test accuracy are
    logged into ``monitor.history``. ``stop_when(monitor, step) -> bool`` ends training early.

    ``steps`` times the rows of a step (``batch_size``, or all of X) is refused before training
    above ``featurelens._budgets.MAX_EVALUATIONS`` (10^8) model evaluations.

    Returns the monitor.
    """
    m, module = resolve_module(model)
    steps = check_int(steps, "steps", low=1)
    loss = check_option(loss, "loss", ("cross_entropy", "mse"))
    batch_size = check_int(batch_size, "batch_size", low=1, allow_none=True)
    eval_every = check_int(eval_every, "eval_every", low=1, allow_none=True)
    progress = check_optional_bool(progress, "progress")
    seed = parse_seed(seed)
    if optimizer is None:
        lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
        weight_decay = check_float(weight_decay, "weight_decay", low=0.0)
    Xt = m.to_tensor(X, "X")
    yt = torch.as_tensor(np.asarray(as_numpy(y, "y")), device=Xt.device)
    if yt.ndim != 1 or yt.shape[0] != Xt.shape[0]:
        raise ValueError(f"y must hold one label per row of X ({Xt.shape[0]}); got shape {tuple(yt.shape)}")
    rows_per_step = Xt.shape[0] if batch_size is None else min(batch_size, Xt.shape[0])
    check_budget(steps, "steps", per=max(1, rows_per_step), unit="model evaluations",
                 what=f"({rows_per_step} rows per step)", hint="lower steps (or batch_size)")
    yt = yt.long()
    if X_test is not None:
        Xte = m.to_tensor(X_test, "X_test")
        yte = torch.as_tensor(np.asarray(as_numpy(y_test, "y_test")), device=Xt.device).long()
        if yte.shape != (Xte.shape[0],):
            raise ValueError(f"y_test must hold one label per row of X_test ({Xte.shape[0]}); got shape {tuple(yte.shape)}")
    if monitor is None:
        monitor = Monitor(module, Xt[:512], yt[:512].cpu().numpy())
    eval_every = eval_every or monitor.every
    optimizer = optimizer or torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch_generator(seed)
    n = Xt.shape[0]
    n_classes = None
    bar = progress_bar(steps, progress, "training")

    def accuracy(Xa, ya):
        with torch.no_grad():
            return float((m.predict(Xa).argmax(1) == ya).float().mean())

    module.train()
    try:
        for t in range(1, steps + 1):
            idx = None if batch_size is None or batch_size >= n else torch.randperm(n, generator=gen)[:batch_size]
            xb, yb = (Xt, yt) if idx is None else (Xt[idx], yt[idx])
            optimizer.zero_grad()
            out = module(xb)
            if loss == "mse":
                n_classes = n_classes or out.shape[1]
                value = torch.nn.functional.mse_loss(out, torch.nn.functional.one_hot(yb, n_classes).to(out.dtype)) * n_classes
            else:
                value = torch.nn.functional.cross_entropy(out, yb)
            value.backward()
            optimizer.step()
            monitor.step()
            if t % eval_every == 0 or t == steps:
                monitor.log(t, "loss", float(value.detach()))
                monitor.log(t, "train_accuracy", accuracy(Xt, yt))
                if X_test is not None:
                    monitor.log(t, "test_accuracy", accuracy(Xte, yte))
                if stop_when is not None and stop_when(monitor, t):
                    break
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return monitor
