"""Which explainers the ground-truth benchmark runs and how: the default methods (declared on the
explainer classes: :attr:`~featurelens.explainers.Explainer.benchmark_default` and
``benchmark_order``), their constructor arguments (seed, training data, background rows), the
row statuses and their pooling, and the metrics read from the specs
(:attr:`featurelens.metrics.MetricSpec.benchmark`). :mod:`featurelens.groundtruth.runner` runs them.
"""

from __future__ import annotations

import inspect

import numpy as np
from featurelens._optional import torch

from .. import _harness
from .._random import keyed_rng
from ..explainers import explainer_class, list_explainers
from ..metrics import list_metrics

__all__ = ["benchmark_metrics", "score_maps", "in_benchmark", "default_methods", "OK", "NOT_APPLICABLE", "FAILED",
           "STATUSES", "BACKGROUND_ROWS", "background_rows", "takes_background", "method_kwargs", "why_not_here",
           "run_quietly", "pooled_status", "score_row", "empty_row"]


def benchmark_metrics() -> dict:
    """``{key: MetricSpec}`` of the benchmark's metrics, those whose spec declares a ``benchmark``
    column (``precision`` -> ``precision_mean``), in the registry's order; each function takes
    ``(maps, masks)`` and returns one float per sample."""
    return {s.benchmark[0]: s for s in list_metrics() if s.benchmark is not None}


def score_maps(values, masks, pool: int) -> dict:
    """``{key: one value per sample}`` of every benchmark metric; a function that takes ``pool``
    (the EMD's pooling) gets the task's."""
    calls = {}
    for key, spec in benchmark_metrics().items():
        kw = {"pool": pool} if "pool" in inspect.signature(spec.function).parameters else {}
        calls[key] = lambda fn=spec.function, kw=kw: fn(values, masks, **kw)
    return _harness.score(calls)


def in_benchmark(cls) -> bool | str:
    """Whether the explainer class runs in the benchmark by default: its declared
    :attr:`~featurelens.explainers.Explainer.benchmark_default`, or, when that is None, True for
    the explainers that need gradients and the reason for the others."""
    declared = cls.benchmark_default
    if declared is not None:
        return declared
    if cls.requires.gradients:
        return True
    return "a black-box method: far slower on images, with its own benchmark settings; request it with methods="


def default_methods() -> list[str]:
    """The registered explainers whose class declares them benchmark defaults (:func:`in_benchmark`:
    the gradient and AGOP explainers), in their declared
    :attr:`~featurelens.explainers.Explainer.benchmark_order`, then by name, then ``random``."""
    registered = list_explainers()
    chosen = [m for m in registered if m != "random" and in_benchmark(explainer_class(m)) is True]
    chosen.sort(key=lambda m: (explainer_class(m).benchmark_order is None, explainer_class(m).benchmark_order or 0))
    if "random" in registered:
        chosen.append("random")
    return chosen


#: Row statuses: scores, an explainer that does not apply to the model (decided before running),
#: and one that raised (the exception is the reason).
OK, NOT_APPLICABLE, FAILED = "ok", "not applicable", "failed"
STATUSES = (OK, NOT_APPLICABLE, FAILED)

#: Reference rows handed to explainers that take ``background=`` (DeepLiftSHAP, GradientSHAP):
#: drawn without replacement from the data set's training split. DeepLiftSHAP's cost grows with
#: rows x background (one hooked pass per pair), and 16 references already average the DeepLift
#: maps well on 8x8 images (Lundberg & Lee 2017, arXiv 1705.07874, use a background sample too).
BACKGROUND_ROWS = 16


def background_rows(train_X: np.ndarray, seed: int) -> np.ndarray:
    """:data:`BACKGROUND_ROWS` training rows, a deterministic function of ``seed``."""
    n = min(BACKGROUND_ROWS, len(train_X))
    pick = np.sort(keyed_rng(seed, 1).choice(len(train_X), size=n, replace=False))
    return np.ascontiguousarray(train_X[pick])


def takes_background(name: str) -> bool:
    from ..explainers._base import constructor_parameters

    return "background" in constructor_parameters(explainer_class(name))


def method_kwargs(name: str, seed: int, train_X: np.ndarray, background: np.ndarray | None = None) -> dict:
    """Constructor arguments of a method in the benchmark: those it declares in ``accepts`` (the
    training inputs for explainers that summarise data, the AGOP diagonal; the run's seed), and
    ``background=`` reference rows for the explainers whose constructor takes them (DeepLiftSHAP
    cannot run without; GradientSHAP would otherwise use one all-zero baseline)."""
    kwargs = _harness.explainer_kwargs(name, seed=seed, data=train_X)
    if takes_background(name):
        kwargs["background"] = background_rows(train_X, seed) if background is None else background
    return kwargs


def why_not_here(name: str, module) -> str | None:
    """Why ``name`` does not apply to ``module`` beyond its declared requirements (None if it does):
    deconvolution and guided backpropagation change the backward rule of ``torch.nn.ReLU``
    modules, and without one their map is the plain gradient (saliency's), not their own."""
    from ..explainers.backprop import ReLUBackprop

    cls = explainer_class(name)
    if issubclass(cls, ReLUBackprop) and not any(isinstance(m, torch.nn.ReLU) for m in module.modules()):
        return ("the model has no ReLU (torch.nn.ReLU module), whose backward rule this method changes; "
                "its map would be the plain gradient (see saliency)")
    return None


def run_quietly(method: str, model, x, y, kwargs: dict):
    """``_harness.run_method`` with the method's warnings recorded instead of printed: returns the
    run and the distinct warning messages."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = _harness.run_method(method, model, x, y, kwargs)
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    return run, messages


def pooled_status(rows: list) -> tuple[str, str, str]:
    """``(status, reason, note)`` of a group of rows (one method on one scenario, pooled over
    backgrounds and models): "ok" when any row has scores (``note`` then lists the rows left out
    and why), else "failed" when any row failed, else "not applicable"; ``reason`` gathers the
    distinct reasons of the rows with that status."""
    if not rows:
        return NOT_APPLICABLE, "nothing was run (no data set of this scenario)", ""

    ok = [r for r in rows if r["status"] == OK]
    if ok:
        left_out: dict = {}  # (status, reason) -> where
        for r in rows:
            if r["status"] != OK:
                left_out.setdefault((r["status"], r["reason"]), []).append(f"{r['model']}/{r['background']}")
        note = "; ".join(f"{st} for {', '.join(w)}: {reason}" for (st, reason), w in left_out.items())
        return OK, "", note
    status = FAILED if any(r["status"] == FAILED for r in rows) else NOT_APPLICABLE
    reasons = list(dict.fromkeys(r["reason"] for r in rows if r["status"] == status))
    heads = {r.rpartition("; ")[0] for r in reasons}
    if len(reasons) > 1 and len(heads) == 1 and "" not in heads:  # "...; the model is a MLP" per model
        return status, f"{heads.pop()}; " + " / ".join(r.rpartition("; ")[2] for r in reasons), ""
    return status, "; ".join(reasons), ""


def score_row(base: dict, scores: dict) -> dict:
    row = dict(base)
    for metric in benchmark_metrics():
        mean, std, undefined = _harness.stats(scores[metric])
        row[f"{metric}_mean"] = mean
        row[f"{metric}_std"] = std
        if metric == "emd":
            row["emd_undefined"] = undefined
    return row


def empty_row(base: dict) -> dict:
    row = dict(base)
    for metric in benchmark_metrics():
        row[f"{metric}_mean"] = float("nan")
        row[f"{metric}_std"] = float("nan")
    row["emd_undefined"] = 0
    return row
