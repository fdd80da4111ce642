"""The one "run the methods that apply and score them" harness, shared by the audit
(:func:`featurelens.audit`) and the ground-truth benchmark (:func:`featurelens.groundtruth.run_benchmark`).

- :func:`applicable` chooses the methods that apply by reading each explainer's declared
  :attr:`~featurelens.explainers.Explainer.requires` (gradients, a convolutional layer, a channel
  axis, a player limit, an optional package), with the reason for each one left out.
- :func:`explainer_kwargs` builds the constructor arguments from each explainer's declared
  :attr:`~featurelens.explainers.Explainer.accepts` options (seed, baseline, groups, data,
  progress), never by inspecting signatures.
- :func:`run_method` builds and runs one explainer with timing and error capture.
- :func:`score` runs named per-sample scorers, each a float64 array per sample, recording a
  scorer that fails in ``notes`` (or raising when no notes list is given); :func:`stats` pools them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .explainers._base import explainer, explainer_class
from .models import Model

__all__ = ["applicable", "why_not", "explainer_kwargs", "run_method", "MethodRun", "score", "attempt", "stats"]

#: The options a harness may hand to an explainer's constructor (declared in ``Explainer.accepts``).
OPTIONS = ("seed", "baseline", "groups", "data", "progress", "executor")


def _as_model(model) -> Model:
    return model if isinstance(model, Model) else Model(model)


def why_not(name: str, model, input_shape: tuple, n_players: int | None = None) -> str | None:
    """Why the explainer ``name`` does not apply to ``model`` on inputs of one-sample shape
    ``input_shape`` with ``n_players`` players (default: every input element), or None."""
    return explainer_class(name).requires.why_not(_as_model(model), tuple(input_shape), n_players)


def applicable(names, model, input_shape: tuple, n_players: int | None = None) -> tuple[list, dict]:
    """``(chosen, skipped)``: the names (in the given order) that apply, and ``{name: reason}``
    for the others."""
    wrapped = _as_model(model)
    chosen, skipped = [], {}
    for name in names:
        reason = why_not(name, wrapped, input_shape, n_players)
        if reason is None:
            chosen.append(name)
        else:
            skipped[name] = reason
    return chosen, skipped


def explainer_kwargs(name: str, batch_size: int | None = None, **options) -> dict:
    """Constructor arguments of ``name``: each of ``options`` (seed, baseline, groups, data,
    progress, executor) that is not None and that the explainer declares in ``accepts``, plus
    ``batch_size`` when given (every explainer takes it)."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise TypeError(f"unknown harness option(s) {sorted(unknown)}; expected some of {OPTIONS}")
    accepts = explainer_class(name).accepts
    kwargs = {k: v for k, v in options.items() if v is not None and k in accepts}
    if batch_size is not None:
        kwargs["batch_size"] = batch_size
    return kwargs


@dataclass
class MethodRun:
    """One explainer run: ``status`` "ok" or "failed" (``error`` then holds "Type: message"),
    the explainer, its :class:`~featurelens.Explanation` and ``values`` as a numpy array, and the
    wall-clock seconds of building and explaining."""

    name: str
    status: str = "ok"
    error: str = ""
    explainer: object = None
    explanation: object = None
    values: np.ndarray | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def run_method(name: str, model, x, target, kwargs: dict, executor=None) -> MethodRun:
    """Build the explainer ``name`` for ``model`` with ``kwargs`` and explain ``x`` for ``target``
    (the rows in parts on ``executor`` when given: ``explain(x, executor=...)``); an exception
    becomes ``status="failed"`` with the error, so one method cannot stop a run."""
    t0 = time.perf_counter()
    try:
        ex = explainer(name, model, **kwargs)
        e = ex.explain(x, target=target) if executor is None else ex.explain(x, target=target, executor=executor)
    except Exception as err:  # reported per method, never fatal to the whole run
        return MethodRun(name, "failed", f"{type(err).__name__}: {err}", seconds=time.perf_counter() - t0)
    return MethodRun(name, "ok", "", ex, e, np.asarray(e.values), time.perf_counter() - t0)


def attempt(notes: list | None, label: str, fn):
    """``fn()``, or None with ``"label failed (Type: message)"`` appended to ``notes`` when it
    raises; with ``notes=None`` the exception propagates."""
    if notes is None:
        return fn()
    try:
        return fn()
    except Exception as err:  # a metric that fails is reported, not fatal
        notes.append(f"{label} failed ({type(err).__name__}: {err})")
    return None


def score(scorers: dict, notes: list | None = None, prefix: str = "") -> dict:
    """Run each ``scorers[key]()`` (no arguments; one value per sample) and return
    ``{key: float64 array}``; a scorer that fails is noted as ``"{prefix}{key} failed (...)"`` and
    left out (or raises when ``notes`` is None)."""
    out = {}
    for key, fn in scorers.items():
        res = attempt(notes, f"{prefix}{key}", fn)
        if res is not None:
            out[key] = np.asarray(res, dtype=np.float64).reshape(-1)
    return out


def stats(values) -> tuple[float, float, int]:
    """``(mean, std, n_undefined)`` over the finite values (NaN, NaN when none is finite)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan"), int(values.size)
    return float(finite.mean()), float(finite.std()), int(values.size - finite.size)
