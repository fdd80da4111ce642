"""The audit's scores, ranking, reasons and verdict (see :func:`featurelens.audit`)."""

from __future__ import annotations

import math

import numpy as np

from .._harness import attempt, score
from ._torchscript import ScriptLayers, is_script

RANKING_RULE = (
    "Methods are ranked by faithfulness first: each method gets its rank (1 = best) on "
    "insertion minus deletion AUC (higher is better) and on faithfulness correlation (higher is "
    "better), and the mean of those ranks orders the table. Ties, and methods with equal "
    "faithfulness, are ordered by robustness: the rank of the average sensitivity (lower is "
    "better); the verdict names the methods that tie and calls them indistinguishable when their "
    "average sensitivities differ by less than 1%. Complexity, randomisation and localisation are reported beside the ranking but do "
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
_RANDOMISATION_FLAG = 0.5
#: Relative difference of average sensitivity below which methods that tie on faithfulness are
#: called indistinguishable in the verdict (the sensitivity is a mean over a few noise draws).
ROBUSTNESS_TOLERANCE = 0.01

def _mean(v) -> float:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ------------------------------------------------------------------------------------------------
# scoring


def _score(name, ex, model, x, a, raw, t, masks, settings, notes, executor=None) -> tuple[dict, dict]:
    """Per-sample metric arrays of one method, and its mean deletion/insertion curves. A metric
    that fails is noted (``"{name}: {metric} failed (...)"``) and left out. ``executor``: the
    metrics' forward passes, and the rows of their re-explanations, on its workers."""
    from .. import metrics as M

    scores: dict[str, np.ndarray] = {}
    curves: dict[str, np.ndarray] = {}
    label = f"{name}: "
    steps, baseline, seed = settings["steps"], settings["baseline"], settings["seed"]
    for key, fn in (("deletion", M.deletion_curve), ("insertion", M.insertion_curve)):
        res = attempt(notes, f"{label}{key}_curve", lambda fn=fn: fn(model, x, a, target=t, steps=steps, baseline=baseline,
                                                                  executor=executor))
        if res is not None:
            c, auc = res
            scores[f"{key}_auc"] = np.asarray(auc, dtype=np.float64).reshape(-1)
            curves[key] = np.asarray(c, dtype=np.float64).reshape(len(x), -1).mean(0)
    if "deletion_auc" in scores and "insertion_auc" in scores:
        scores["insertion_minus_deletion"] = scores["insertion_auc"] - scores["deletion_auc"]
    d = int(np.prod(x.shape[1:]))
    subset = settings["subset_size"] or max(1, int(round(0.1 * d)))
    scorers = {"faithfulness_correlation": lambda: M.faithfulness_correlation(
        model, x, a, target=t, n_subsets=settings["n_subsets"], subset_size=min(subset, d), baseline=baseline,
        seed=seed, executor=executor)}
    scores.update(score(scorers, notes, label))
    if settings["robustness_samples"] > 0:
        # The explainer's own maps (e.g. gradcam's one channel), which its noisy re-explanations match.
        res = attempt(notes, f"{label}avg_sensitivity/max_sensitivity", lambda: _sensitivity_pair(
            ex, x, t, settings["radius"], settings["robustness_samples"], seed, raw, executor))
        if res is not None:
            scores["avg_sensitivity"], scores["max_sensitivity"] = res
    scorers = {"sparseness": lambda: M.sparseness(a), "complexity": lambda: M.complexity(a)}
    if settings["randomization"] and model.module is not None and any(True for _ in model.module.parameters()):
        kwargs = {k: v for k, v in settings["explainer_kwargs"][name].items() if k != "progress"}
        scorers["model_randomization"] = lambda: _randomization(
            M.model_randomization, name, model, x, t, seed, kwargs, raw, executor)
    scores.update(score(scorers, notes, label))
    if "model_randomization" in scores:
        scores["randomization_similarity"] = scores.pop("model_randomization")
    if masks is not None:
        a_loc, m_loc = _localisation_arrays(a, masks)
        scores.update(score({key: (lambda fn=fn: fn(a_loc, m_loc)) for key, fn in (
            ("relevance_mass", M.relevance_mass), ("relevance_rank_accuracy", M.relevance_rank_accuracy),
            ("precision_at_k", M.precision_at_k))}, notes, label))
    return scores, curves


def _sensitivity_pair(ex, x, t, radius, n_samples, seed, a, executor=None):
    """(avg_sensitivity, max_sensitivity) per sample from ONE set of re-explained noisy copies:
    both are the mean and the max over the same draws (relative noise, as the public metrics'
    default), so explaining the copies twice would only double the cost."""
    from ..metrics.robustness import _sensitivities

    s = _sensitivities(ex, x, t, radius, n_samples, seed, True, a, executor)  # (n_samples, n)
    return s.mean(0), s.max(0)


def _randomization(fn, name, model, x, t, seed, kwargs, a, executor=None):
    """The cascading randomisation check: Spearman similarity per sample after every layer is
    re-initialised (the last step of the top-down cascade)."""
    # The explainers of the randomised copies get the audited explainer's parameters, batch_size
    # included (it bounds their memory as it does the audited explainer's).
    # A TorchScript module's layers have no reset_parameters: the wrapper gives each layer that owns
    # parameters a handle that redraws it (torch.nn's default initialisation by original_name).
    module = ScriptLayers(model.module) if is_script(model.module) else model.module
    extra = {} if executor is None else {"executor": executor}
    res = fn(name, module, x, target=t, seed=seed, explainer_params=dict(kwargs), attributions=a, **extra)
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


def _names(names: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _tie_text(best: dict, real: list[dict]) -> tuple[str, str]:
    """``(lead, detail)`` of the verdict: who is trusted, and why (naming a tie on faithfulness
    and what broke it). ``real`` is ranked best first."""
    faith = (f"insertion - deletion {_fmt(best.get('insertion_minus_deletion'))}, faithfulness correlation "
             f"{_fmt(best.get('faithfulness_correlation'))}")
    f0 = best.get("faithfulness_rank")
    tied = [r for r in real if _finite(f0) and _finite(r.get("faithfulness_rank"))
            and math.isclose(r["faithfulness_rank"], f0, rel_tol=1e-9, abs_tol=1e-12)]
    if len(tied) < 2:
        return f"Trust {best['method']} most", f"it ranks first on faithfulness ({faith})"
    names = [r["method"] for r in tied]
    tie = f"{_names(names)} tie on faithfulness (mean rank {f0:g}; {best['method']}: {faith})"
    sens = [r.get("avg_sensitivity") for r in tied]
    if not all(_finite(v) for v in sens):
        return (f"Trust {_names(names)} equally",
                f"{tie}, and robustness was not measured for all of them, so nothing breaks the tie")
    a = float(sens[0])
    close = [r for r, v in zip(tied, sens) if abs(v - a) <= ROBUSTNESS_TOLERANCE * max(abs(v), abs(a))]
    if len(close) > 1:
        lo, hi = min(r["avg_sensitivity"] for r in close), max(r["avg_sensitivity"] for r in close)
        close_names = [r["method"] for r in close]
        text = (f"{tie}; {'they' if len(close) == len(tied) else _names(close_names)} are indistinguishable "
                f"on robustness too (average sensitivity {_fmt(lo)} to {_fmt(hi)}, less than "
                f"{ROBUSTNESS_TOLERANCE:.0%} apart)")
        rest = [r["method"] for r in tied if r not in close]
        if rest:
            text += f", and {_names(rest)} {'is' if len(rest) == 1 else 'are'} less robust"
        return f"Trust {_names(close_names)} equally", text
    second = tied[1]
    b = float(second["avg_sensitivity"])
    pct = (b - a) / abs(b) if b else float("nan")
    return (f"Trust {best['method']} most",
            f"{tie}; {best['method']} is the most robust (average sensitivity {_fmt(a)} against {_fmt(b)} "
            f"for {second['method']}, {pct:.1%} lower)")


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
    lead, detail = _tie_text(best, real)
    text = f"{lead} for this model and these inputs: {detail}."
    if any(r["method"] == "random" for r in ok):
        text += f" {len(beat)} of {len(real)} methods beat the random map on faithfulness"
        text += f"; {', '.join(lost)} {'does' if len(lost) == 1 else 'do'} not." if lost else "."
    return text


_ROW_KEYS = ("rank", "method", "status") + tuple(k for k, _, _ in COLUMNS) + (
    "faithfulness_rank", "robustness_rank", "seconds", "explain_seconds", "model_calls", "reason")


def _clean_rows(rows):
    out = []
    for r in rows:
        out.append({k: r.get(k, float("nan") if k not in ("rank", "method", "status", "reason") else None)
                    for k in _ROW_KEYS})
    return out

