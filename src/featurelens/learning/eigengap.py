"""Spectral-change detection for training runs: :class:`EigengapDetector`, a robust z-score
change-point detector with patience on a positive series (e.g. the eigengap sigma_k / sigma_{k+1}
of recent weight updates), and the rolling window of flattened updates (its Gram matrix gives the
window's singular values) with the metric rows of one window spectrum, which the training
:class:`featurelens.learning.Monitor` records.

Rolling-window update spectrum and spectral edge: Y. Xu, arXiv 2603.15678 (2026); the sigma_2 /
sigma_3 gap of a two-layer quadratic network announcing grokking: arXiv 2605.08119 (2026);
slope/z-score change detectors with patience: arXiv 2603.15678 and 2605.08237.
"""

from __future__ import annotations

import math

import numpy as np
from featurelens._optional import torch

from .._validation import as_numpy, check_float, check_int, check_option

__all__ = ["EigengapDetector"]


class EigengapDetector:
    """Fires once when a (positive) series, e.g. the update eigengap sigma_k / sigma_{k+1}, leaves
    its running baseline.

    Rule, on ``x_t = log(value_t)``: after ``warmup`` values, compare ``x_t`` with the median ``m``
    and the median absolute deviation ``s`` of the ``baseline`` values that precede the last
    ``patience`` ones; the robust score is ``z_t = (x_t - m) / max(1.4826 s, min_scale)``. The
    detector fires at the step where ``z`` has exceeded ``threshold`` (``direction="up"``: z >
    threshold; ``"down"``: z < -threshold; ``"both"``: |z| > threshold) for ``patience``
    consecutive values. ``min_scale`` (in log units) keeps a nearly constant baseline from making
    every wiggle significant. Excluding the current run from the baseline keeps a sustained shift
    from being absorbed before it is confirmed.

    A robust z-score change-point with patience, in the spirit of the slope/z-score detectors of
    arXiv 2603.15678 and 2605.08237 (fire after m consecutive windows past a threshold).

    The defaults were chosen once, on the grokking setting of ``featurelens diagnose`` (seeds
    0-4, sigma_1/sigma_2 of the last 20 first-layer updates, every step): there the gap of the
    weight-decay runs rises after memorisation and stays up (z >= 4.2 held for 50 steps) while the
    controls without weight decay stay below z = 2.4. ``patience`` (50) exceeds the window (20),
    so one outlying update, which sits in the window for exactly ``window`` steps, cannot fire it.
    With other windows, keep ``patience > window`` (both count recorded values, not steps).

    ``rule="slope"`` (the slope rule of arXiv 2605.08119, whose detector watches the sigma_2 /
    sigma_3 gap, ``Monitor(k=2)``): instead of the z-score, the least-squares slope ``b_t`` of
    ``x`` over the last ``slope_window`` values (log units per recorded value) is compared with
    ``slope_threshold`` (``"up"``: b_t > slope_threshold, ``"down"``: b_t < -slope_threshold,
    ``"both"``: |b_t| > slope_threshold), held for ``patience`` consecutive values after
    ``warmup``. A gap that opens by a factor ``r`` over ``n`` values has slope about ``log(r) / n``;
    the default 0.01 is a 1 % rise per value sustained (a factor 1.2 over a window of 20). The
    paper's thresholds are not published (its code could not be found); this default was chosen on
    planted spectra (tests/learning/test_eigengap_rules.py), not on grokking runs. ``threshold``,
    ``baseline`` and ``min_scale`` are not used by the slope rule; ``scores`` then holds the slopes.

    The defaults do not transfer blindly: at p = 61 with a training fraction of 0.3 they fired
    before grokking in 1 of 5 weight-decay runs and in 2 of 5 controls
    (benchmarks/results/grokking_p61.md). There the early post-memorisation peak is as high in the
    controls, and what separates the arms is the later level of the gap (about 2.2-3.4 with weight
    decay against 1.2-1.7 without); check the detector on the setting at hand.
    """

    def __init__(
        self,
        threshold: float = 3.0,
        patience: int = 50,
        warmup: int = 50,
        baseline: int = 100,
        direction: str = "up",
        min_scale: float = 0.05,
        rule: str = "zscore",
        slope_window: int = 20,
        slope_threshold: float = 0.01,
    ):
        self.threshold = check_float(threshold, "threshold", low=0.0, low_inclusive=False)
        self.patience = check_int(patience, "patience", low=1)
        self.warmup = check_int(warmup, "warmup", low=2)
        self.baseline = check_int(baseline, "baseline", low=2)
        self.direction = check_option(direction, "direction", ("up", "down", "both"))
        self.min_scale = check_float(min_scale, "min_scale", low=0.0, low_inclusive=False)
        self.rule = check_option(rule, "rule", ("zscore", "slope"))
        self.slope_window = check_int(slope_window, "slope_window", low=2)
        self.slope_threshold = check_float(slope_threshold, "slope_threshold", low=0.0, low_inclusive=False)
        self.reset()

    def reset(self) -> None:
        self.values: list[float] = []
        self.steps: list[int] = []
        self.scores: list[float] = []
        self.fired_step: int | None = None
        self._run = 0

    @property
    def fired(self) -> bool:
        return self.fired_step is not None

    def update(self, step: int, value: float) -> bool:
        """Add one value; return True exactly when this value makes the detector fire."""
        value = check_float(value, "value (a ratio of singular values)", low=0.0, low_inclusive=False)
        x = math.log(value)
        self.values.append(x)
        self.steps.append(int(step))
        t = len(self.values)
        if self.rule == "slope":
            return self._update_slope(t, int(step))
        end = t - 1 - self.patience + 1  # baseline excludes the current value and the run before it
        if t <= self.warmup or end < 2:
            self.scores.append(float("nan"))
            return False
        base = np.asarray(self.values[max(0, end - self.baseline) : end])
        m = float(np.median(base))
        s = 1.4826 * float(np.median(np.abs(base - m)))
        z = (x - m) / max(s, self.min_scale)
        self.scores.append(z)
        hit = {"up": z > self.threshold, "down": z < -self.threshold, "both": abs(z) > self.threshold}[self.direction]
        self._run = self._run + 1 if hit else 0
        if self.fired_step is None and self._run >= self.patience:
            self.fired_step = int(step)
            return True
        return False

    def _update_slope(self, t: int, step: int) -> bool:
        w = self.slope_window
        if t <= self.warmup or t < w:
            self.scores.append(float("nan"))
            return False
        y = np.asarray(self.values[t - w :])
        u = np.arange(w) - (w - 1) / 2.0
        b = float(u @ (y - y.mean()) / (u @ u))  # least-squares slope, log units per value
        self.scores.append(b)
        c = self.slope_threshold
        hit = {"up": b > c, "down": b < -c, "both": abs(b) > c}[self.direction]
        self._run = self._run + 1 if hit else 0
        if self.fired_step is None and self._run >= self.patience:
            self.fired_step = step
            return True
        return False

    def run(self, values, steps=None) -> int | None:
        """Reset, feed a whole series (``steps`` default 0, 1, ...) and return ``fired_step``."""
        self.reset()
        values = np.asarray(as_numpy(values, "values"), dtype=np.float64).ravel()
        steps = np.arange(len(values)) if steps is None else np.asarray(steps).ravel()
        if steps.shape != values.shape:
            raise ValueError(f"steps must have one entry per value ({values.shape[0]}); got shape {steps.shape}")
        for s, v in zip(steps, values):
            self.update(int(s), float(v))
        return self.fired_step


class SpectrumWindow:
    """The last ``size`` flattened vectors (rows of a size x P matrix R) and their Gram matrix
    G = R R^T, kept up to date with one matrix-vector product per new row (float64). The singular
    values of R are sqrt(eigvalsh(G)): a size x size eigenproblem instead of an SVD of the
    size x P matrix (about 5x faster at P = 24k, size 20). Going through the Gram squares the
    condition number: a singular value sigma_i is exact to about 1e-16 sigma_1^2 / sigma_i, ample
    for the leading gaps the detector reads."""

    def __init__(self, size: int):
        self.size = size
        self.rows: torch.Tensor | None = None
        self.gram = torch.zeros((size, size), dtype=torch.float64)
        self.count = 0

    def push(self, v: torch.Tensor) -> None:
        v = v.to(torch.float64)
        if self.rows is None or self.rows.shape[1] != v.shape[0]:
            self.rows = torch.zeros((self.size, v.shape[0]), dtype=torch.float64, device=v.device)
            self.gram = torch.zeros((self.size, self.size), dtype=torch.float64, device=v.device)
            self.count = 0
        i = self.count % self.size  # the oldest slot; row order does not change singular values
        self.rows[i] = v
        g = self.rows @ v
        self.gram[i, :] = g
        self.gram[:, i] = g
        self.count += 1

    @property
    def full(self) -> bool:
        return self.count >= self.size

    def singular_values(self) -> np.ndarray:
        """Descending singular values of the stacked window."""
        vals = torch.linalg.eigvalsh(self.gram).clamp_min(0.0).sqrt()
        return vals.flip(0).cpu().numpy()


def spectrum_record(sv: np.ndarray, k: int, prefix: str) -> dict:
    """The metric rows of one window spectrum: sigma_1..sigma_{k+1}, the gap sigma_k/sigma_{k+1}
    and the spectral edge k* = argmax_j sigma_j/sigma_{j+1} (1-based)."""
    out = {f"{prefix}_sv{i + 1}": float(sv[i]) for i in range(min(len(sv), k + 1))}
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = sv[:-1] / sv[1:]
    gap = float(ratios[k - 1]) if np.isfinite(ratios[k - 1]) else float("inf")
    out[f"{prefix}_gap"] = gap
    finite = np.where(np.isfinite(ratios), ratios, -np.inf)
    out[f"{prefix}_kstar"] = float(int(np.argmax(finite)) + 1)
    return out
