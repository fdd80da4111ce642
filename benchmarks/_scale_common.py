"""Shared by the sections of ``bench_scale.py``: one row schema, alternating best-of-N timing with
the peak memory of each call, and the model-call floor.

Every section module (``_scale_vision``, ``_scale_text``, ``_scale_trees``) exposes
``run(quick: bool) -> list[dict]`` returning rows built by :func:`row`.

Peak memory is measured in-process: a sampling thread reads the resident set (``/proc/self/statm``)
every millisecond while one call runs; a call's peak is the highest reading minus the reading
just before the call (what that call added on top of the loaded model and data). torch's CPU
allocator hands large blocks back to the OS, so consecutive calls do not inherit each other's
peaks; the first (warm-up) call of each configuration is not counted.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Callable

import numpy as np

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mb() -> float:
    """The process's resident set now, in MB (``/proc/self/statm``; psutil elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE / 2**20
    except OSError:  # pragma: no cover - not Linux
        import psutil

        return psutil.Process().memory_info().rss / 2**20


class PeakSampler:
    """``with PeakSampler() as s: work()`` then ``s.peak_mb``: the highest resident set seen while
    ``work`` ran, minus the resident set at entry (sampled every ``interval`` seconds)."""

    def __init__(self, interval: float = 0.001):
        self.interval = interval
        self.peak_mb = 0.0

    def __enter__(self):
        gc.collect()
        self._start = rss_mb()
        self._high = self._start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.is_set():
            self._high = max(self._high, rss_mb())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._high = max(self._high, rss_mb())
        self._stop.set()
        self._thread.join()
        self.peak_mb = self._high - self._start
        return False


def time_alternating(configs: dict[str, Callable[[], object]], repeats: int = 3) -> dict:
    """Warm every configuration up once, then ``repeats`` rounds calling each in turn.

    Returns ``{"best_s": {name: s}, "peak_mb": {name: MB}, "times": {name: [s, ...]},
    "last": {name: result}}``: a configuration's time is its best call (least disturbed by other
    work), its memory the largest peak over the timed calls.
    """
    last, times, peaks = {}, {n: [] for n in configs}, {n: 0.0 for n in configs}
    for name, fn in configs.items():
        last[name] = fn()
    for _ in range(repeats):
        for name, fn in configs.items():
            with PeakSampler() as sampler:
                start = time.perf_counter()
                last[name] = fn()
                times[name].append(time.perf_counter() - start)
            peaks[name] = max(peaks[name], sampler.peak_mb)
    return {"best_s": {n: float(min(t)) for n, t in times.items()}, "peak_mb": peaks, "times": times,
            "last": last}


def warm_small(small, full):
    """A callable whose first call runs ``small`` (the warm-up of :func:`time_alternating`) and
    every later call ``full``: a slow method warms up on a few rows only."""
    state = {"warm": False}

    def call():
        if not state["warm"]:
            state["warm"] = True
            return small()
        return full()

    return call


def max_abs_diff(a, b) -> float:
    """Largest absolute difference of two arrays or tensors (any shapes that broadcast equal)."""
    a, b = _np(a), _np(b)
    return float(np.max(np.abs(a.reshape(b.shape) - b))) if a.size else 0.0


def _np(a) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a, dtype=np.float64)


def row(section: str, model: str, method: str, peer: str, timing: dict, fl_key: str, peer_key: str,
        max_diff: float, tolerance: float, floor_s: float | None = None, floor: str = "",
        note: str = "", **extra) -> dict:
    """One result row. ``timing`` is :func:`time_alternating`'s output holding the featurelens
    configuration ``fl_key`` and the reference ``peer_key``; ``floor_s`` the measured model-call
    floor (the method's forward/backward passes done by plain torch / the booster itself) and
    ``floor`` how it was counted, e.g. ``"32 x fwd+bwd of 8 images"``."""
    fl_s, peer_s = timing["best_s"][fl_key], timing["best_s"][peer_key]
    out = {
        "section": section, "model": model, "method": method, "peer": peer,
        "fl_s": round(fl_s, 4), "peer_s": round(peer_s, 4), "ratio": round(fl_s / peer_s, 3),
        "fl_peak_mb": round(timing["peak_mb"][fl_key], 1), "peer_peak_mb": round(timing["peak_mb"][peer_key], 1),
        "max_abs_diff": float(f"{max_diff:.3g}"), "tolerance": tolerance,
        "within_tolerance": bool(max_diff <= tolerance),
        "floor_s": None if floor_s is None else round(floor_s, 4), "floor": floor,
        "fl_over_floor": None if not floor_s else round(fl_s / floor_s, 3), "note": note,
    }
    out.update(extra)
    return out
