"""Audit of explainers: which explanation should I believe for this model and these inputs?

:func:`audit` runs every applicable registered explainer on a sample of the data, scores each map
with the metrics of :mod:`featurelens.metrics` (faithfulness, robustness, complexity,
randomisation, and localisation when ground-truth masks are given), ranks the methods with a
stated rule and a reason per method, and optionally writes a self-contained HTML report.
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import math
import numbers
import os
import sys
import time

import numpy as np
import torch

from ._validation import as_numpy, check_floating
from .explainers._base import explainer as _make_explainer
from .explainers._base import explainer_class, list_explainers
from .models import Model

__all__ = ["audit", "AuditTable", "RANKING_RULE", "COLUMNS"]

#: Gradient-family explainers in the order they appear in the table (those registered).
_GRADIENT_ORDER = (
    "saliency", "input_x_gradient", "integrated_gradients", "smoothgrad", "gradcam",
    "agop_weighted", "agop_global", "wam", "wam_smoothgrad", "wam_ig",
)
#: Black-box explainers tried by default on models without gradients.
_BLACKBOX_ORDER = ("occlusion", "kernel_shap", "permutation_shap", "exact_shapley")
#: Registered names never chosen by default, with the reason shown in the report.
_NOT_BY_DEFAULT = {
    "agop_local": "identical to saliency (the signed per-sample gradient)",
    "spex": "made for games with hundreds of players; request it with methods=",
    "minshap": "a Shapley variant for feature selection; request it with methods=",
}
_AGOP_DATA = ("agop_global", "agop_weighted")
_CONV_TYPES = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
_MAX_EXACT_PLAYERS = 10  # exact Shapley evaluates 2^n coalitions per sample
_MAX_PLAYERS = 64  # black-box games on larger inputs use square patches as players
_AGOP_ROWS = 2048  # most rows of X used to compute the AGOP diagonal for agop_global/agop_weighted

RANKING_RULE = (
    "Methods are ranked by faithfulness first: each method gets its rank (1 = best) on "
    "insertion minus deletion AUC (higher is better) and on faithfulness correlation (higher is "
    "better), and the mean of those ranks orders the table. Ties, and methods with equal "
    "faithfulness, are ordered by robustness: the rank of the average sensitivity (lower is "
    "better). Complexity, randomisation and localisation are reported beside the ranking but do "
    "not change it; a method whose maps barely change when the model's weights are randomised "
    "(Spearman similarity above 0.5) is flagged, as is every method that does not beat the random "
    "map on faithfulness."
)

#: Table columns (besides rank/method/status/reason): (key, label, direction), direction +1 when
#: higher is better, -1 when lower is better, 0 when neither.
COLUMNS = (
    ("insertion_minus_deletion", "ins - del", +1),
    ("deletion_auc", "deletion AUC", -1),
    ("insertion_auc", "insertion AUC", +1),
    ("faithfulness_correlation", "faithf. corr.", +1),
    ("avg_sensitivity", "avg sens.", -1),
    ("max_sensitivity", "max sens.", -1),
    ("sparseness", "sparseness", 0),
    ("complexity", "complexity", 0),
    ("randomization_similarity", "random. sim.", -1),
    ("relevance_mass", "rel. mass", +1),
    ("relevance_rank_accuracy", "rank acc.", +1),
    ("precision_at_k", "prec@k", +1),
)
_LOCALISATION = ("relevance_mass", "relevance_rank_accuracy", "precision_at_k")
_RANDOMISATION_FLAG = 0.5


class AuditTable(list):
    """The ranked table as a list of dicts (one per method, best first) when pandas is absent or
    ``as_frame=False``; ``verdict``, ``ranking_rule`` and ``report`` (path of index.html or None)
    ride along as attributes, and ``explanations`` maps each method to its Explanation."""

    def __init__(self, rows=()):
        super().__init__(rows)
        self.verdict: str = ""
        self.ranking_rule: str = RANKING_RULE
        self.report: str | None = None
        self.explanations: dict = {}
        self.notes: list = []


# ------------------------------------------------------------------------------------------------
# helpers


def _accepts(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _has_conv(module) -> bool:
    return module is not None and any(isinstance(m, _CONV_TYPES) for m in module.modules())


def _check_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}")
    return int(value)


def _check_float(value, name: str, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")
    return float(value)


def _mean(v) -> float:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _wrap_model(model, batch_size):
    """A Model for torch modules, featurelens Models, scikit-learn estimators and callables."""
    if isinstance(model, Model):
        return Model.wrap(model, batch_size=batch_size), model.module
    from ._loading import as_callable

    fn = as_callable(model)
    wrapped = Model(fn, batch_size=batch_size)
    return wrapped, wrapped.module


def _patch_groups(shape: tuple) -> np.ndarray | None:
    """Square patches (shared over channels) so that a black-box game has at most 64 players;
    None when every element can be a player."""
    if int(np.prod(shape)) <= _MAX_PLAYERS or len(shape) < 2:
        return None
    spatial = shape[1:] if len(shape) >= 3 else shape
    p = int(math.ceil((int(np.prod(spatial)) / _MAX_PLAYERS) ** (1.0 / len(spatial))))
    # The estimate assumes square inputs; a thin axis (1 x 1024, 5 x 1000) holds fewer patches than
    # it, so grow the side until the patch count is within the bound.
    while math.prod(math.ceil(s / p) for s in spatial) > _MAX_PLAYERS:
        p += 1
    per_axis = [int(math.ceil(s / p)) for s in spatial]
    idx = np.zeros(spatial, dtype=np.int64)
    stride = 1
    for axis in reversed(range(len(spatial))):
        coord = (np.arange(spatial[axis]) // p).reshape([-1 if a == axis else 1 for a in range(len(spatial))])
        idx = idx + coord * stride
        stride *= per_axis[axis]
    _, idx = np.unique(idx, return_inverse=True)  # every label must occur
    idx = idx.reshape(spatial)
    return np.broadcast_to(idx, shape).copy() if len(shape) >= 3 else idx


def _players(shape: tuple, groups) -> int:
    return int(np.prod(shape)) if groups is None else int(groups.max()) + 1


def choose_methods(model: Model, x_shape: tuple, methods=None):
    """``(chosen, skipped)``: the explainers the audit runs on inputs of one-sample shape
    ``x_shape`` and ``{name: reason}`` for registered ones it leaves out.

    Differentiable models (torch modules, torch callables): every gradient explainer (gradcam only
    with a convolutional layer, WAM only on 1-3-D inputs with a channel axis), AGOP-Weighted and
    AGOP-Global (diag(M) from the audited data). Other models: occlusion, KernelSHAP, permutation
    Shapley, exact Shapley when there are at most 10 players. Always the seeded ``random`` map as the floor.
    """
    registered = list_explainers()
    skipped: dict[str, str] = {}
    if methods is not None:
        if isinstance(methods, str):
            methods = [methods]
        names = list(dict.fromkeys(methods))
        for name in names:
            if not isinstance(name, str) or name not in registered:
                explainer_class(name)  # raises ValueError naming the registered explainers
        if not names:
            raise ValueError("methods must name at least one explainer; got an empty list")
        chosen = []
        for name in names:
            why = _not_applicable(name, model, x_shape)
            if why:
                skipped[name] = why
            else:
                chosen.append(name)
        return chosen, skipped
    chosen = []
    if model.differentiable:
        order = [m for m in _GRADIENT_ORDER if m in registered]
        order += [m for m in registered if m not in order and m not in _NOT_BY_DEFAULT and m != "random"
                  and explainer_class(m).requires.gradients]
    else:
        order = [m for m in _BLACKBOX_ORDER if m in registered]
    for name in order:
        why = _not_applicable(name, model, x_shape)
        if why:
            skipped[name] = why
        else:
            chosen.append(name)
    for name in registered:
        if name not in chosen and name not in skipped and name != "random":
            why = _not_applicable(name, model, x_shape)
            skipped[name] = why or _NOT_BY_DEFAULT.get(
                name, "needs gradients, and the model is not differentiable" if explainer_class(name).requires.gradients
                else "black-box; the model has gradients, so the gradient methods are audited (request it with methods=)"
            )
    if "random" in registered:
        chosen.append("random")
    return chosen, skipped


def _not_applicable(name: str, model: Model, x_shape: tuple) -> str | None:
    cls = explainer_class(name)
    if (cls.requires.gradients or name in _AGOP_DATA) and not model.differentiable:
        return "needs gradients, and the model is not differentiable (a numpy callable or scikit-learn model)"
    if name == "gradcam" and not _has_conv(model.module):
        return "needs a convolutional layer, and the model has none"
    if name.startswith("wam") and not (2 <= len(x_shape) <= 4):
        return "needs 1-D, 2-D or 3-D inputs with a channel axis, (C, L), (C, H, W) or (C, D, H, W)"
    if name == "exact_shapley":
        n = _players(x_shape, _patch_groups(x_shape))
        if n > _MAX_EXACT_PLAYERS:
            return f"evaluates 2^n coalitions, and the inputs have {n} players (> {_MAX_EXACT_PLAYERS})"
    return None


def _explainer_kwargs(name: str, X: np.ndarray, baseline, seed: int, batch_size) -> dict:
    cls = explainer_class(name)
    init = cls.__init__
    kwargs = {}
    if _accepts(init, "seed"):
        kwargs["seed"] = seed
    if name in _AGOP_DATA and _accepts(init, "data"):
        # diag(M) from the audited data; a seeded subset of at most _AGOP_ROWS rows bounds the cost.
        if X.shape[0] > _AGOP_ROWS:
            X = X[np.sort(np.random.default_rng(seed).choice(X.shape[0], _AGOP_ROWS, replace=False))]
        kwargs["data"] = X
    if _accepts(init, "baseline") and baseline is not None:
        kwargs["baseline"] = baseline
    if _accepts(init, "groups"):
        groups = _patch_groups(X.shape[1:])
        if groups is not None:
            kwargs["groups"] = groups
    if _accepts(init, "progress"):
        kwargs["progress"] = False
    if batch_size is not None and _accepts(init, "batch_size"):
        kwargs["batch_size"] = batch_size
    return kwargs


def _targets(model: Model, x: np.ndarray, y, target, classes) -> np.ndarray:
    """One output index per sample: ``target`` when given; else the label ``y`` (mapped through
    ``classes`` for scikit-learn classifiers) for classifiers; else the predicted class."""
    xt = model.to_tensor(x)
    outputs = model.predict(xt)
    if target is not None:
        return model.resolve_target(target, xt, outputs).cpu().numpy()
    if y is not None and outputs.shape[1] > 1:
        if classes is not None:
            lookup = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
            missing = [v for v in np.asarray(y).tolist() if v not in lookup]
            if missing:
                raise ValueError(
                    f"y holds label {missing[0]!r}, which is not one of the model's classes {list(lookup)}"
                )
            t = np.array([lookup[v] for v in np.asarray(y).tolist()], dtype=np.int64)
        else:
            t = np.asarray(y)
            if t.dtype.kind not in "iu":
                raise TypeError(f"y must hold integer class indices (one per sample); got dtype {t.dtype}")
        return model.resolve_target(t.astype(np.int64), xt, outputs).cpu().numpy()
    return model.resolve_target(None, xt, outputs).cpu().numpy()


def _check_inputs(X, y, ground_truth, n_explain, seed):
    X = as_numpy(X, "X")
    if X.dtype.kind in "iub":
        X = X.astype(np.float32)
    check_floating(X, "X")
    if X.ndim < 2:
        raise ValueError(f"X must be a batch with the samples along the first axis, shape (n, ...); got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"X is empty (shape {X.shape}); expected at least one sample")
    X = np.ascontiguousarray(X, dtype=np.float32)
    n = X.shape[0]
    if y is not None:
        y = np.asarray(as_numpy(y, "y"))
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must hold one label per sample of X ({n}); got shape {y.shape}")
    if ground_truth is not None:
        ground_truth = np.asarray(as_numpy(ground_truth, "ground_truth"))
        if ground_truth.shape[0] != n:
            raise ValueError(
                f"ground_truth must hold one mask per sample of X ({n}); got shape {ground_truth.shape}"
            )
        if ground_truth.dtype != bool and not np.isin(ground_truth, (0, 1)).all():
            raise ValueError("ground_truth must be boolean masks (or 0/1); got other values")
        ground_truth = ground_truth.astype(bool)
    n_explain = _check_int(n_explain, "n_explain")
    _check_int(seed, "seed", 0)
    if n > n_explain:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=n_explain, replace=False))
    else:
        idx = np.arange(n)
    return X, y, ground_truth, idx


def _default_baseline(X: np.ndarray):
    """0 for images/signals (the usual black fill); the feature means for tabular rows, where a
    zero may lie far outside the data."""
    if X.ndim == 2:
        return X.mean(axis=0).astype(np.float32)
    return 0.0


# ------------------------------------------------------------------------------------------------
# scoring


def _score(name, ex, model, x, a, raw, t, masks, settings, notes) -> tuple[dict, dict]:
    """Per-sample metric arrays of one method, and its mean deletion/insertion curves."""
    from . import metrics as M

    scores: dict[str, np.ndarray] = {}
    curves: dict[str, np.ndarray] = {}

    def attempt(key, fn):
        try:
            return fn()
        except Exception as err:  # a metric that fails is reported, not fatal
            notes.append(f"{name}: {key} failed ({type(err).__name__}: {err})")
        return None

    steps, baseline, seed = settings["steps"], settings["baseline"], settings["seed"]
    for key, fn in (("deletion", M.deletion_curve), ("insertion", M.insertion_curve)):
        res = attempt(f"{key}_curve", lambda fn=fn: fn(model, x, a, target=t, steps=steps, baseline=baseline))
        if res is not None:
            c, auc = res
            scores[f"{key}_auc"] = np.asarray(auc, dtype=np.float64).reshape(-1)
            curves[key] = np.asarray(c, dtype=np.float64).reshape(len(x), -1).mean(0)
    if "deletion_auc" in scores and "insertion_auc" in scores:
        scores["insertion_minus_deletion"] = scores["insertion_auc"] - scores["deletion_auc"]
    d = int(np.prod(x.shape[1:]))
    subset = settings["subset_size"] or max(1, int(round(0.1 * d)))
    res = attempt("faithfulness_correlation", lambda: M.faithfulness_correlation(
        model, x, a, target=t, n_subsets=settings["n_subsets"],
        subset_size=min(subset, d), baseline=baseline, seed=seed))
    if res is not None:
        scores["faithfulness_correlation"] = np.asarray(res, dtype=np.float64).reshape(-1)
    if settings["robustness_samples"] > 0:
        # The explainer's own maps (e.g. gradcam's one channel), which its noisy re-explanations match.
        res = attempt("avg_sensitivity/max_sensitivity", lambda: _sensitivity_pair(
            ex, x, t, settings["radius"], settings["robustness_samples"], seed, raw))
        if res is not None:
            scores["avg_sensitivity"], scores["max_sensitivity"] = res
    for key, fn in (("sparseness", M.sparseness), ("complexity", M.complexity)):
        res = attempt(key, lambda fn=fn: fn(a))
        if res is not None:
            scores[key] = np.asarray(res, dtype=np.float64).reshape(-1)
    if settings["randomization"] and model.module is not None and any(True for _ in model.module.parameters()):
        kwargs = {k: v for k, v in settings["explainer_kwargs"][name].items() if k != "progress"}
        res = attempt("model_randomization", lambda: _randomization(M.model_randomization, name, model, x, t, seed, kwargs, raw))
        if res is not None:
            scores["randomization_similarity"] = res
    if masks is not None:
        a_loc, m_loc = _localisation_arrays(a, masks)
        for key, fn in (("relevance_mass", M.relevance_mass), ("relevance_rank_accuracy", M.relevance_rank_accuracy),
                        ("precision_at_k", M.precision_at_k)):
            res = attempt(key, lambda fn=fn: fn(a_loc, m_loc))
            if res is not None:
                scores[key] = np.asarray(res, dtype=np.float64).reshape(-1)
    return scores, curves


def _sensitivity_pair(ex, x, t, radius, n_samples, seed, a):
    """(avg_sensitivity, max_sensitivity) per sample from ONE set of re-explained noisy copies:
    both are the mean and the max over the same draws (relative noise, as the public metrics'
    default), so explaining the copies twice would only double the cost."""
    from .metrics.robustness import _sensitivities

    s = _sensitivities(ex, x, t, radius, n_samples, seed, True, a)  # (n_samples, n)
    return s.mean(0), s.max(0)


def _randomization(fn, name, model, x, t, seed, kwargs, a):
    """The cascading randomisation check: Spearman similarity per sample after every layer is
    re-initialised (the last step of the top-down cascade)."""
    # The explainers of the randomised copies get the audited explainer's parameters, batch_size
    # included (it bounds their memory as it does the audited explainer's).
    res = fn(name, model.module, x, target=t, seed=seed, explainer_params=dict(kwargs), attributions=a)
    return np.asarray(res["last"], dtype=np.float64).reshape(-1)


def _localisation_arrays(a: np.ndarray, masks: np.ndarray):
    """Bring attributions and masks to the (n, H, W) layout of the localisation metrics; tabular
    rows become 1 x d images; a mask over the length of (n, C, L) signals holds for every channel."""
    a = np.asarray(a)
    if masks.ndim == 2 and a.ndim == 3 and masks.shape[1] == a.shape[2]:
        masks = np.broadcast_to(masks[:, None, :], a.shape)
    if masks.ndim == 2:
        return a.reshape(a.shape[0], 1, -1), masks.reshape(masks.shape[0], 1, -1)
    if masks.ndim == a.ndim and masks.shape[1:] == a.shape[1:] and a.ndim == 4:
        return a, masks[:, :1] if masks.shape[1] > 1 else masks
    return a, masks


# ------------------------------------------------------------------------------------------------
# ranking


def _ranks(values: list[float], direction: int) -> list[float]:
    """Average ranks (1 = best) of the finite values; NaN for the others."""
    out = [float("nan")] * len(values)
    idx = [i for i, v in enumerate(values) if _finite(v)]
    if not idx:
        return out
    keyed = sorted(idx, key=lambda i: -direction * values[i])
    pos = 0
    while pos < len(keyed):
        end = pos
        while end + 1 < len(keyed) and math.isclose(values[keyed[end + 1]], values[keyed[pos]], rel_tol=1e-9, abs_tol=1e-12):
            end += 1
        for k in keyed[pos : end + 1]:
            out[k] = (pos + end) / 2.0 + 1.0
        pos = end + 1
    return out


def _rank_rows(rows: list[dict]) -> list[dict]:
    ok = [r for r in rows if r["status"] == "ok"]
    ins = _ranks([r.get("insertion_minus_deletion", float("nan")) for r in ok], +1)
    cor = _ranks([r.get("faithfulness_correlation", float("nan")) for r in ok], +1)
    sens = [r.get("avg_sensitivity", float("nan")) for r in ok]
    if not any(_finite(v) for v in sens):
        sens = [r.get("max_sensitivity", float("nan")) for r in ok]
    rob = _ranks(sens, -1)
    for r, a, b, c in zip(ok, ins, cor, rob):
        parts = [v for v in (a, b) if _finite(v)]
        r["faithfulness_rank"] = float(np.mean(parts)) if parts else float("nan")
        r["robustness_rank"] = c

    def key(r):
        f = r.get("faithfulness_rank", float("nan"))
        b = r.get("robustness_rank", float("nan"))
        return (r["status"] != "ok", not _finite(f), f if _finite(f) else 0.0, b if _finite(b) else math.inf, r["method"])

    ranked = sorted(rows, key=key)
    for i, r in enumerate(ranked):
        r["rank"] = i + 1 if r["status"] == "ok" else None
    return ranked


def _fmt(v, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if _finite(v) else "n/a"


def _reasons(rows: list[dict]) -> None:
    ok = [r for r in rows if r["status"] == "ok"]
    floor = next((r for r in ok if r["method"] == "random"), None)
    for r in rows:
        if r["status"] != "ok":
            r["reason"] = r.get("reason") or "not run"
            continue
        faith = (f"insertion - deletion {_fmt(r.get('insertion_minus_deletion'))}, "
                 f"faithfulness correlation {_fmt(r.get('faithfulness_correlation'))}")
        parts = [f"rank {r['rank']} of {len(ok)}: {faith}"]
        if _finite(r.get("avg_sensitivity")):
            parts.append(f"average sensitivity {_fmt(r['avg_sensitivity'])}")
        text = "; ".join(parts) + "."
        if r["method"] == "random":
            text += " The random map is the floor every method must beat."
        elif floor is not None and _finite(r.get("faithfulness_rank")) and _finite(floor.get("faithfulness_rank")):
            if r["faithfulness_rank"] >= floor["faithfulness_rank"]:
                text += " Not more faithful than the random map: do not trust it for this model."
                r["beats_random"] = False
            else:
                r["beats_random"] = True
        sim = r.get("randomization_similarity")
        if _finite(sim) and sim > _RANDOMISATION_FLAG and r["method"] != "random":
            text += (f" Fails the randomisation check: its maps barely change when the weights are "
                     f"randomised (Spearman {_fmt(sim, 2)}), so they may show the input more than the model.")
        r["reason"] = text


def _verdict(rows: list[dict]) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return "No explainer could be run on this model and data (see the notes)."
    real = [r for r in ok if r["method"] != "random"]
    if not real:
        return "Only the random map was run; there is nothing to compare."
    best = real[0]
    if best.get("beats_random") is False:
        return ("No method beats the random map on faithfulness: do not trust any of these "
                "explanations for this model and these inputs.")
    beat = [r["method"] for r in real if r.get("beats_random", True)]
    lost = [r["method"] for r in real if r.get("beats_random") is False]
    text = (f"Trust {best['method']} most for this model and these inputs: it ranks first on faithfulness "
            f"(insertion - deletion {_fmt(best.get('insertion_minus_deletion'))}, faithfulness correlation "
            f"{_fmt(best.get('faithfulness_correlation'))}).")
    if any(r["method"] == "random" for r in ok):
        text += f" {len(beat)} of {len(real)} methods beat the random map on faithfulness"
        text += f"; {', '.join(lost)} do not." if lost else "."
    return text


# ------------------------------------------------------------------------------------------------
# the audit


def audit(
    model,
    X,
    y=None,
    methods=None,
    ground_truth=None,
    out=None,
    n_explain: int = 32,
    seed: int = 0,
    progress: bool | None = None,
    target=None,
    baseline=None,
    steps: int = 20,
    n_subsets: int = 50,
    subset_size: int | None = None,
    radius: float = 0.1,
    robustness_samples: int = 5,
    randomization: bool = True,
    batch_size: int | None = None,
    as_frame: bool | None = None,
    feature_names=None,
):
    """Run every applicable explainer on ``X``, score and rank the maps, optionally write a report.

    Which explainers (see :func:`choose_methods`): for a differentiable model every gradient and
    AGOP explainer that applies (gradcam only with a convolutional layer); for a scikit-learn
    estimator or numpy callable occlusion, KernelSHAP, permutation Shapley and, up to 10 players,
    exact Shapley (inputs with more than 64 elements use patches as players, at most 64, shared over
    the channels of images); always the seeded
    ``random`` map as the floor. ``methods`` overrides the choice. AGOP-Global/Weighted compute
    diag(M) from X (a seeded subset of 2,048 rows when X has more).

    Scores per method, averaged over the ``n_explain`` audited samples (a seeded subset of X):

    - faithfulness: deletion and insertion AUC (most relevant first, ``steps`` steps, filled with
      ``baseline``), their difference ``AUC_ins - AUC_del`` (Petsiuk et al. 2018, arXiv
      1806.07421), and the faithfulness correlation ``corr_S(sum_{i in S} a_i, f(x) - f(x_{S <-
      baseline}))`` over ``n_subsets`` random subsets of ``subset_size`` features (Bhatt et al. 2020,
      arXiv 2005.00631);
    - robustness: average and max sensitivity ``||a(x + eps) - a(x)|| / ||a(x)||`` over
      ``robustness_samples`` draws in a ball of ``radius`` (Yeh et al. 2019, arXiv 1901.09392);
    - complexity: sparseness (Gini index of |a|, Chalasani et al. 2020, arXiv 1810.06583) and
      complexity (entropy of |a| / sum |a|, Bhatt et al. 2020);
    - randomisation (torch modules): Spearman similarity between the maps of the trained model and
      of the model with all layers re-initialised (Adebayo et al. 2018, arXiv 1810.03292);
    - localisation when ``ground_truth`` masks (one per sample, shaped like a sample or its spatial
      part) are given: relevance mass, relevance rank accuracy (Arras et al. 2022, arXiv
      2003.07258) and top-k precision (Clark et al. 2024, arXiv 2306.12816).

    Ranking: see :data:`RANKING_RULE` (faithfulness ranks first, robustness breaks ties). A metric
    that fails is reported in the notes and left out, never fatal; an explainer that fails gets
    status "failed" with the error as its reason.

    Parameters
    ----------
    model
        A torch module, a featurelens Model, a scikit-learn estimator (``predict_proba`` for
        classifiers, ``predict`` for regressors) or a callable on numpy batches.
    X
        Inputs, samples first (numpy, torch or pandas).
    y
        Labels (optional): the explained output of a classifier is the label (class index, or a
        class of a scikit-learn classifier's ``classes_``); without it the predicted class.
    target
        Overrides ``y``: an int or one int per sample of X.
    baseline
        The value removed features take (deletion/insertion, faithfulness correlation, IG and
        Shapley fills); None: 0 for images and signals, the feature means for tabular (n, d) X.
    out
        A folder for ``index.html`` (self-contained), ``results.json``, ``results.csv`` and the
        figures; None writes nothing.
    n_explain, seed, progress
        Samples audited (a seeded subset when X has more), the seed of every stochastic part, a
        progress bar over methods (None: only on a terminal).
    feature_names
        Names of the columns of tabular X for the report (default: a DataFrame's columns).
    as_frame
        True: a pandas DataFrame; False: an :class:`AuditTable` (list of dicts); None (default): a
        DataFrame when pandas can be imported. Either way best first, one row per method, with
        ``rank``, ``method``, ``status``, the metric means, ``faithfulness_rank``,
        ``robustness_rank``, ``seconds``, ``model_calls`` and ``reason``; the DataFrame's
        ``attrs`` (the list's attributes) hold ``verdict``, ``ranking_rule``, ``report`` and
        ``notes`` (metrics that failed or did not apply, warnings); the list also has
        ``explanations`` (method -> Explanation).
    """
    start = time.perf_counter()
    if feature_names is None and hasattr(X, "columns"):
        feature_names = [str(c) for c in X.columns]
    X, y, masks_all, idx = _check_inputs(X, y, ground_truth, n_explain, seed)
    if feature_names is not None:
        feature_names = [str(f) for f in feature_names]
        if X.ndim != 2 or len(feature_names) != X.shape[1]:
            raise ValueError(
                f"feature_names must name the {X.shape[1] if X.ndim == 2 else 'columns'} columns of a tabular "
                f"X (shape {X.shape}); got {len(feature_names)} names"
            )
    steps = _check_int(steps, "steps")
    n_subsets = _check_int(n_subsets, "n_subsets", 2)
    if subset_size is not None:
        subset_size = _check_int(subset_size, "subset_size")
    radius = _check_float(radius, "radius")
    robustness_samples = _check_int(robustness_samples, "robustness_samples", 0)
    if as_frame not in (None, True, False):
        raise TypeError(f"as_frame must be None, True or False; got {as_frame!r}")
    wrapped, module = _wrap_model(model, batch_size)
    classes = getattr(model, "classes_", None)
    x = X[idx]
    try:
        wrapped.predict(x[:1])
    except (ValueError, TypeError) as err:
        raise ValueError(f"X has samples of shape {X.shape[1:]}, and the model cannot take them: {err}") from err
    t = _targets(wrapped, x, None if y is None else y[idx], target, classes)
    masks = None if masks_all is None else masks_all[idx]
    if baseline is None:
        baseline = _default_baseline(X)
    elif isinstance(baseline, str):
        raise TypeError(f"baseline must be None, a number or an array shaped like one sample; got {baseline!r}")
    elif isinstance(baseline, numbers.Real):  # numpy scalars too (X.mean() of float32 X is one)
        baseline = _check_float(baseline, "baseline", positive=False)
    else:
        baseline = as_numpy(baseline, "baseline").astype(np.float32)
        check_floating(baseline, "baseline")
        if baseline.shape != X.shape[1:]:
            raise ValueError(f"baseline must be a number or shaped like one sample {X.shape[1:]}; got {baseline.shape}")
    chosen, skipped = choose_methods(wrapped, X.shape[1:], methods)
    notes: list[str] = []
    if X.ndim == 2 and X.shape[1] > 1 and robustness_samples > 0:
        sd = X.std(axis=0)
        sd = sd[sd > 0]
        if sd.size and sd.max() > 10 * sd.min():
            notes.append(
                "The features have very different scales (standard deviations from "
                f"{sd.min():.3g} to {sd.max():.3g}); the robustness noise is relative to each "
                "sample's value range over all its features, so the sensitivities are large. "
                "Standardise X (and put the scaler inside the model) for comparable sensitivities."
            )

    settings = {
        "n_explain": int(len(idx)), "n_samples_in_X": int(X.shape[0]), "seed": int(seed), "steps": steps,
        "n_subsets": n_subsets, "subset_size": subset_size, "radius": radius,
        "robustness_samples": robustness_samples, "randomization": bool(randomization),
        "baseline": baseline, "explainer_kwargs": {},
    }
    rows, curves, explanations, per_sample = [], {}, {}, {}
    from tqdm.auto import tqdm

    show = sys.stderr.isatty() if progress is None else bool(progress)
    for name in tqdm(chosen, desc="audit", disable=not show, leave=False, unit="method"):
        row = {"method": name, "status": "ok", "reason": ""}
        kwargs = _explainer_kwargs(name, X, baseline, seed, batch_size)
        settings["explainer_kwargs"][name] = kwargs
        t0 = time.perf_counter()
        try:
            ex = _make_explainer(name, wrapped, **kwargs)
            e = ex.explain(x, target=t)
        except Exception as err:
            row.update(status="failed", reason=f"{type(err).__name__}: {err}")
            rows.append(row)
            continue
        a = np.asarray(e.values)
        if a.shape != x.shape and a.ndim == x.ndim and a.shape[0] == x.shape[0]:
            a = np.broadcast_to(a, x.shape).copy()  # a one-channel map (gradcam) for every channel
        explanations[name] = e
        row["explain_seconds"] = float(e.seconds)
        row["model_calls"] = int(e.model_calls)
        scores, c = _score(name, ex, wrapped, x, a, np.asarray(e.values), t, masks, settings, notes)
        row["seconds"] = time.perf_counter() - t0
        for key, _, _ in COLUMNS:
            if key in scores:
                row[key] = _mean(scores[key])
        per_sample[name] = {k: v.tolist() for k, v in scores.items()}
        curves[name] = c
        rows.append(row)
    for name, why in skipped.items():
        rows.append({"method": name, "status": "n/a", "reason": why})

    ranked = _rank_rows(rows)
    _reasons(ranked)
    verdict = _verdict(ranked)
    settings["baseline"] = baseline if isinstance(baseline, float) else "feature means" if X.ndim == 2 else "array"
    total = time.perf_counter() - start
    report_path = None
    if out is not None:
        report_path = _write_report(
            os.fspath(out), ranked, verdict, notes, settings, curves, explanations, x, masks, t,
            per_sample, total, model, feature_names,
        )
    return _as_table(ranked, verdict, report_path, explanations, as_frame, notes)


_ROW_KEYS = ("rank", "method", "status") + tuple(k for k, _, _ in COLUMNS) + (
    "faithfulness_rank", "robustness_rank", "seconds", "explain_seconds", "model_calls", "reason")


def _clean_rows(rows):
    out = []
    for r in rows:
        out.append({k: r.get(k, float("nan") if k not in ("rank", "method", "status", "reason") else None)
                    for k in _ROW_KEYS})
    return out


def _as_table(rows, verdict, report_path, explanations, as_frame, notes):
    rows = _clean_rows(rows)
    if as_frame is not False:
        try:
            import pandas as pd
        except ImportError:
            if as_frame:
                raise ImportError("as_frame=True needs pandas: pip install pandas") from None
        else:
            frame = pd.DataFrame(rows, columns=list(_ROW_KEYS))
            frame["rank"] = frame["rank"].astype("Int64")
            frame.attrs.update({"verdict": verdict, "ranking_rule": RANKING_RULE, "report": report_path,
                                "notes": list(notes)})
            return frame
    table = AuditTable(rows)
    table.verdict = verdict
    table.report = report_path
    table.explanations = explanations
    table.notes = list(notes)
    return table


# ------------------------------------------------------------------------------------------------
# the report


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _maps_figure(x, masks, explanations, methods, feature_names=None) -> bytes:
    from matplotlib.figure import Figure

    from .plot import show_map

    if x.ndim == 2:  # tabular: mean |a| per feature, the top 15
        ncols = len(methods)
        fig = Figure(figsize=(3.0 * ncols, 3.2))
        axes = fig.subplots(1, ncols, squeeze=False)[0]
        for ax, m in zip(axes, methods):
            imp = np.abs(np.asarray(explanations[m].values, dtype=np.float64)).reshape(len(x), -1).mean(0)
            order = np.argsort(-imp)[:15][::-1]
            labels = [feature_names[i] if feature_names else str(i) for i in order]
            ax.barh(range(len(order)), imp[order], color="#c0392b")
            ax.set_yticks(range(len(order)))
            ax.set_yticklabels(labels, fontsize=6)
            ax.set_title(m, fontsize=8)
            ax.tick_params(axis="x", labelsize=6)
        fig.suptitle("mean |attribution| per feature (top 15)", fontsize=9)
        fig.tight_layout()
        return _png(fig)

    def to2d(arr):
        arr = np.asarray(arr, dtype=np.float64)
        if arr.ndim == 1:
            return arr[None]
        if arr.ndim == 3:  # (C, H, W): channels summed
            return arr.sum(0)
        if arr.ndim == 4:  # (C, D, H, W): channels summed, middle slice
            return arr.sum(0)[arr.shape[1] // 2]
        return arr

    k = min(3, len(x))
    panels = ["input"] + (["ground truth"] if masks is not None else []) + list(methods)
    fig = Figure(figsize=(1.6 * len(panels), 1.8 * k + 0.4))
    axes = fig.subplots(k, len(panels), squeeze=False)
    for i in range(k):
        for c, title in enumerate(panels):
            ax = axes[i, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if title == "input":
                ax.imshow(to2d(x[i]), cmap="gray", interpolation="nearest")
                ax.set_title(title, fontsize=7)
            elif title == "ground truth":
                ax.imshow(to2d(masks[i].astype(float)), cmap="gray", interpolation="nearest")
                ax.set_title(title, fontsize=7)
            else:
                show_map(ax, to2d(np.asarray(explanations[title].values)[i]), title=title)
                ax.title.set_fontsize(7)
        axes[i, 0].set_ylabel(f"sample {i}", fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _curves_figure(curves: dict) -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.4))
    axes = fig.subplots(1, 2)
    for ax, key, label in ((axes[0], "deletion", "deletion (lower is better)"),
                           (axes[1], "insertion", "insertion (higher is better)")):
        for m, c in curves.items():
            if key in c:
                frac = np.linspace(0.0, 1.0, len(c[key]))
                ax.plot(frac, c[key], label=m, lw=1.8 if m != "random" else 1.2, ls="--" if m == "random" else "-")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(f"fraction of features {'removed' if key == 'deletion' else 'inserted'}, most relevant first", fontsize=8)
        ax.set_ylabel("target output (mean over samples)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _png(fig)


def _json_ready(v):
    if isinstance(v, dict):
        return {str(k): _json_ready(u) for k, u in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_ready(u) for u in v]
    if isinstance(v, np.ndarray):
        return _json_ready(v.tolist()) if v.size <= 64 else f"array{tuple(v.shape)}"
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return repr(v)


def _write_report(out, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample, total, model,
                  feature_names=None):
    from . import __version__
    from .report import Cell, HTMLReport

    os.makedirs(out, exist_ok=True)
    clean = _clean_rows(rows)
    with open(os.path.join(out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(_ROW_KEYS)
        for r in clean:
            writer.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) and math.isfinite(v)
                                                    else "" if isinstance(v, float) else v) for v in r.values()])
    settings_json = {k: v for k, v in settings.items() if k != "explainer_kwargs"}
    settings_json["explainer_params"] = {m: {k: v for k, v in kw.items() if k not in ("data", "groups")}
                                         for m, kw in settings["explainer_kwargs"].items()}
    doc = {
        "verdict": verdict, "ranking_rule": RANKING_RULE, "table": clean, "per_sample": per_sample,
        "curves": {m: {k: v.tolist() for k, v in c.items()} for m, c in curves.items()},
        "targets": np.asarray(t).tolist(), "settings": settings_json, "notes": notes,
        "seconds": total, "versions": {"featurelens": __version__, "torch": torch.__version__},
        "model": type(model).__name__,
    }
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(_json_ready(doc), f, indent=1, allow_nan=False)

    page = HTMLReport(
        "featurelens audit: which explanation to trust",
        f"model {type(model).__name__}, {settings['n_explain']} audited samples of shape "
        f"{tuple(x.shape[1:])}, seed {settings['seed']}; featurelens {__version__}, torch "
        f"{torch.__version__}; {total:.1f} s",
    )
    page.add_heading("Verdict")
    page.add_paragraph(verdict)
    page.add_heading("Ranking")
    page.add_paragraph(RANKING_RULE, "small")
    present = [c for c in COLUMNS if any(_finite(r.get(c[0])) for r in clean)]
    header = [Cell("rank"), Cell("method", "text")] + [
        Cell(label + (" ↑" if d > 0 else " ↓" if d < 0 else "")) for _, label, d in present
    ] + [Cell("seconds")]
    best = {}
    for key, _, d in present:
        vals = [r[key] for r in clean if r["status"] == "ok" and r["method"] != "random" and _finite(r.get(key))]
        if vals and d:
            best[key] = max(vals) if d > 0 else min(vals)
    body = []
    for r in clean:
        if r["status"] == "n/a":
            continue  # listed with the reason below the table
        row = [Cell("" if r["rank"] is None else str(r["rank"])), Cell(r["method"], "text")]
        for key, _, d in present:
            v = r.get(key)
            if r["status"] != "ok" or not _finite(v):
                row.append(Cell("n/a" if r["status"] == "ok" else r["status"], "na"))
            else:
                row.append(Cell(_fmt(v), "best" if key in best and v == best[key] and r["method"] != "random" else ""))
        row.append(Cell(_fmt(r.get("seconds"), 2) if r["status"] == "ok" else "", ""))
        body.append(row)
    page.add_table([header], body)
    page.add_paragraph(
        "↑ higher is better, ↓ lower is better; sparseness (Gini of |a|) and complexity (entropy of "
        "|a|) describe the maps and are not better or worse by themselves. Best value per column "
        "highlighted. Deletion/insertion AUC: the target output averaged over the curve; random. "
        "sim.: Spearman similarity of the maps before and after randomising the model's weights.",
        "small",
    )
    page.add_heading("Why each method ranks where it does")
    page.add_list([f"{r['method']}: {r['reason']}" for r in clean if r["status"] != "n/a"])
    not_run = [f"{r['method']}: {r['reason']}" for r in clean if r["status"] == "n/a"]
    if not_run:
        page.add_heading("Registered explainers not run", 3)
        page.add_list(not_run)
    ok = [r["method"] for r in clean if r["status"] == "ok" and r["method"] in explanations]
    figures = {}
    if ok:
        try:
            figures["maps.png"] = _maps_figure(x, masks, explanations, ok, feature_names)
        except Exception as err:  # a figure that cannot be drawn must not lose the report
            notes.append(f"example maps figure failed ({type(err).__name__}: {err})")
    if any(curves.values()):
        figures["curves.png"] = _curves_figure(curves)
    if "maps.png" in figures:
        page.add_heading("Example maps")
        page.add_paragraph("The first audited samples (rows): the input"
                           + (", the ground truth" if masks is not None else "")
                           + " and each method's map (red positive, blue negative).", "small")
        page.add_image(figures["maps.png"], alt="example maps per method", caption="example maps")
    if "curves.png" in figures:
        page.add_heading("Deletion and insertion curves")
        page.add_paragraph("The target output as features are removed from the input (deletion) "
                           "or inserted into the baseline (insertion) in order of decreasing "
                           "attribution, averaged over the audited samples.", "small")
        page.add_image(figures["curves.png"], alt="deletion and insertion curves", caption="deletion and insertion curves")
    for name, png in figures.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(png)
    if notes:
        page.add_heading("Notes")
        page.add_list(notes)
    page.add_heading("Settings")
    page.add_definitions([(k, v) for k, v in settings_json.items() if k != "explainer_params"])
    page.add_paragraph("Files next to this page: results.csv (the table), results.json (table, "
                       "per-sample scores, curves, settings, notes) and the figures as PNG.", "small")
    return page.save(os.path.join(out, "index.html"))
