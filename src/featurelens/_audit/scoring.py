"""The audit's scores, ranking, reasons and verdict (see :func:`featurelens.audit`)."""

from __future__ import annotations

import math

import numpy as np

from ._torchscript import is_script

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

#: The ranking's column, derived from deletion and insertion: (key, label, direction).
RANKED_COLUMN = ("insertion_minus_deletion", "ins - del", +1)
#: The families in the order the default metrics run and fill the table: the order of the table
#: before ``metrics=`` existed (complexity before randomisation, unlike ``fl.metrics.FAMILIES``).
_DEFAULT_FAMILY_ORDER = ("faithfulness", "robustness", "complexity", "randomisation", "axiomatic", "localisation")

_SPECS: dict | None = None


def audit_specs() -> dict:
    """``{name: MetricSpec}`` of the metrics ``fl.audit(metrics=...)`` chooses from (those of
    :func:`featurelens.metrics.list_metrics` with an audit column), in their order (by family,
    then as declared): the order a selection runs in and its reasons are listed in."""
    global _SPECS
    if _SPECS is None:
        from ..metrics import list_metrics

        _SPECS = {s.name: s for s in list_metrics() if s.audited}
    return _SPECS


def default_metrics() -> tuple:
    """The metrics run when ``metrics=None`` (those whose spec says ``audit_default``), in the
    order of the table before ``metrics=`` existed."""
    chosen = [s for s in audit_specs().values() if s.audit_default]
    return tuple(s.name for s in sorted(chosen, key=lambda s: _DEFAULT_FAMILY_ORDER.index(s.family)))


def _table_order() -> tuple:
    """Every audit metric in the table's (and the scoring's) order: the default set first, as it
    ran before ``metrics=`` existed, then the others in :func:`audit_specs` order."""
    default = default_metrics()
    return default + tuple(m for m in audit_specs() if m not in default)


def audit_columns() -> tuple:
    """The table's metric columns, ``(key, label, direction)`` (direction +1 when higher is better,
    -1 when lower is, 0 when neither): :data:`RANKED_COLUMN`, then each metric's column in the
    table's order (:func:`default_metrics` first)."""
    specs = audit_specs()
    return (RANKED_COLUMN,) + tuple((specs[m].column, specs[m].label, specs[m].direction) for m in _table_order())


def resolve_metrics(metrics) -> tuple:
    """The metric names ``metrics`` selects, in :func:`audit_specs` order: None gives
    :func:`default_metrics`; ``"all"`` (alone or in a list) every metric; otherwise a name or a
    list of names of :func:`audit_specs`. An unknown name is a ValueError listing the valid ones."""
    if metrics is None:
        return default_metrics()
    specs = audit_specs()
    names = [metrics] if isinstance(metrics, str) else metrics
    try:
        names = list(names)
    except TypeError:
        raise TypeError(f"metrics must be None, 'all', a metric name or a list of names; got "
                        f"{type(metrics).__name__}") from None
    if not names:
        raise ValueError("metrics must name at least one metric (or be 'all' or None); got an empty list")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"metrics must hold metric names (str); got {name!r} ({type(name).__name__})")
        if name != "all" and name not in specs:
            raise ValueError(f"metrics: unknown metric {name!r}; valid names: {', '.join(specs)} (or 'all')")
    if "all" in names:
        return tuple(specs)
    return tuple(m for m in specs if m in names)


def metric_columns(names) -> tuple:
    """The table columns of the metrics ``names`` (:func:`audit_columns` order);
    ``insertion_minus_deletion`` comes with deletion and insertion together."""
    specs = audit_specs()
    keys = {specs[m].column for m in names}
    if "deletion" in names and "insertion" in names:
        keys.add(RANKED_COLUMN[0])
    return tuple(key for key, _, _ in audit_columns() if key in keys)


def _arrow(direction: int) -> str:
    return " ↑" if direction > 0 else " ↓" if direction < 0 else ""


def metric_reasons(names) -> dict:
    """``{name: one line}`` for the report: the metric's column with the better direction, and
    its reason."""
    specs = audit_specs()
    return {m: f"{specs[m].reason} ({specs[m].family}; column {specs[m].label}{_arrow(specs[m].direction)})"
            for m in names}


def _requirement_checks(x_shape: tuple, n_outputs: int, has_parameters: bool, masks: bool,
                        robustness_samples: int, randomization: bool) -> tuple:
    """``(requirement, why or None)`` for this audit, in the order a metric's first unmet
    requirement is reported (:data:`featurelens.metrics.REQUIREMENTS`)."""
    ndim, n = len(x_shape), int(x_shape[0])
    d = int(np.prod(x_shape[1:]))
    shape = tuple(x_shape)
    return (
        ("images", None if ndim in (3, 4) else
         f"needs images (n, h, w) or (n, c, h, w): it imputes removed pixels from their neighbours; "
         f"the audited inputs have shape {shape}"),
        ("translations", None if ndim in (3, 4) else
         f"needs images or signals (n, c, h, w) / (n, c, length): it translates the input; the "
         f"audited inputs have shape {shape}"),
        ("classes", None if n_outputs >= 2 else
         f"needs a model with at least 2 outputs (classes); this one has {n_outputs}"),
        ("windows", None if d >= 7 else
         f"compares maps by structural similarity over windows of 7 values; the maps have {d}"),
        ("samples", None if n >= 2 else f"compares the audited samples with each other; only {n} is audited"),
        ("parameters", "randomization=False" if not randomization else None if has_parameters else
         "needs a torch module with parameters to re-initialise; the model has none"),
        ("noise", None if robustness_samples >= 1 else "robustness_samples=0 (no noisy copies)"),
        ("masks", None if masks else "needs ground_truth masks"),
        # What the audit never has: a metric that needs one is listed, and always skipped.
        ("layer", "needs a layer of the model, which the audit does not choose"),
        ("labels", "needs class labels of its own inputs (focus: the mosaics' layout), which the audit does not build"),
        ("background", "needs background rows, which the audit does not pass to metrics"),
    )


def skip_reasons(names, x_shape: tuple, n_outputs: int, has_parameters: bool, masks: bool,
                 robustness_samples: int, randomization: bool) -> dict:
    """``{name: why}`` for the selected metrics that cannot apply to this audit (data, model or
    settings): the first of each metric's declared requirements
    (:attr:`featurelens.metrics.MetricSpec.requires`) that this audit does not meet. The others
    run per method. ``x_shape``: the audited batch's shape."""
    checks = _requirement_checks(x_shape, n_outputs, has_parameters, masks, robustness_samples, randomization)
    specs = audit_specs()
    why = {}
    for m in names:
        unmet = [reason for req, reason in checks if reason is not None and req in specs[m].requires]
        if unmet:
            why[m] = unmet[0]
    return why


_RANDOMISATION_FLAG = 0.5
#: Relative difference of average sensitivity below which methods that tie on faithfulness are
#: called indistinguishable in the verdict (the sensitivity is a mean over a few noise draws).
ROBUSTNESS_TOLERANCE = 0.01

_MAX_PLAYERS = 64  # black-box games on larger inputs use square patches as players


def patch_groups(shape: tuple) -> np.ndarray | None:
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


def finite_mean(v) -> float:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def is_finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ------------------------------------------------------------------------------------------------
# scoring


def score_method(name, ex, model, x, a, raw, t, masks, settings, notes, executor=None, run=None,
           seed=None) -> tuple[dict, dict]:
    """Per-sample metric arrays of one method, and its mean deletion/insertion curves. ``run``: the
    metric names to compute (those selected that apply, :func:`skip_reasons`; None: the default
    set). Each is its spec's :attr:`~featurelens.metrics.MetricSpec.score` on one
    :class:`~featurelens.metrics.ScoreContext` of the audit's settings: region metrics remove the
    audit's regions (:func:`_regions`) filled with the audit's baseline; the re-explaining ones take
    the method's own explainer and maps (``raw``); the noisy ones the audit's ``radius`` and
    ``robustness_samples``. They run in the table's order, the default metrics first, in the order
    (and with the random streams) they had before ``metrics=`` existed. A metric that fails is
    noted (``"{name}: {metric} failed (...)"``, the metric function's name) and left out.
    ``executor``: the metrics' forward passes, and the rows of their re-explanations, on its
    workers."""
    from ..metrics._spec import ScoreContext, SharedFailure

    run = set(default_metrics() if run is None else run)
    specs = audit_specs()
    module = getattr(model, "module", None)
    if module is not None and is_script(module):
        # A TorchScript module's layers have no reset_parameters: the wrapper gives each layer that
        # owns parameters a handle that redraws it (torch.nn's default initialisation by original_name).
        from ._script_layers import ScriptLayers

        module = ScriptLayers(module)
    ctx = ScoreContext(
        model=model, x=x, a=a, raw=raw, target=t, explainer=ex, explainer_name=name,
        # The explainers of the randomised copies get the audited explainer's parameters, batch_size
        # included (it bounds their memory as it does the audited explainer's).
        explainer_params={k: v for k, v in settings["explainer_kwargs"][name].items() if k != "progress"},
        module=module, masks=masks, baseline=settings["baseline"], seed=settings["seed"] if seed is None else seed,
        steps=settings["steps"],
        n_subsets=settings["n_subsets"], subset_size=settings["subset_size"], radius=settings["radius"],
        n_noise=settings["robustness_samples"], regions=_regions(tuple(x.shape[1:])), executor=executor,
    )
    scores: dict[str, np.ndarray] = {}
    for m in _table_order():
        if m not in run:
            continue
        spec = specs[m]
        together = [spec.function.__name__] + [o for o in _table_order() if o in spec.computed_with and o in run]
        try:
            res = spec.score(ctx)
        except SharedFailure:  # noted by the metric it was computed for
            continue
        except Exception as err:  # a metric that fails is reported, not fatal
            notes.append(f"{name}: {'/'.join(together)} failed ({type(err).__name__}: {err})")
            continue
        if res is None:
            continue
        scores[spec.column] = np.asarray(res, dtype=np.float64).reshape(-1)
        if m in ("deletion", "insertion") and "deletion_auc" in scores and "insertion_auc" in scores:
            scores[RANKED_COLUMN[0]] = scores["insertion_auc"] - scores["deletion_auc"]
    return scores, ctx.curves


def model_has_parameters(model, settings) -> bool:
    return bool(settings["randomization"]) and model.module is not None and any(True for _ in model.module.parameters())


def _regions(shape: tuple):
    """The regions the region metrics remove whole: the audit's square patches (at most 64, shared
    over channels) on inputs of more than 64 elements, else every element."""

    g = patch_groups(shape)
    return np.arange(int(np.prod(shape))).reshape(shape) if g is None else g


# ------------------------------------------------------------------------------------------------
# ranking


def _ranks(values: list[float], direction: int) -> list[float]:
    """Average ranks (1 = best) of the finite values; NaN for the others."""
    out = [float("nan")] * len(values)
    idx = [i for i, v in enumerate(values) if is_finite(v)]
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


def rank_rows(rows: list[dict]) -> list[dict]:
    ok = [r for r in rows if r["status"] == "ok"]
    ins = _ranks([r.get("insertion_minus_deletion", float("nan")) for r in ok], +1)
    cor = _ranks([r.get("faithfulness_correlation", float("nan")) for r in ok], +1)
    sens = [r.get("avg_sensitivity", float("nan")) for r in ok]
    if not any(is_finite(v) for v in sens):
        sens = [r.get("max_sensitivity", float("nan")) for r in ok]
    rob = _ranks(sens, -1)
    for r, a, b, c in zip(ok, ins, cor, rob):
        parts = [v for v in (a, b) if is_finite(v)]
        r["faithfulness_rank"] = float(np.mean(parts)) if parts else float("nan")
        r["robustness_rank"] = c

    def key(r):
        f = r.get("faithfulness_rank", float("nan"))
        b = r.get("robustness_rank", float("nan"))
        return (r["status"] != "ok", not is_finite(f), f if is_finite(f) else 0.0, b if is_finite(b) else math.inf, r["method"])

    ranked = sorted(rows, key=key)
    for i, r in enumerate(ranked):
        r["rank"] = i + 1 if r["status"] == "ok" else None
    return ranked


def format_score(v, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if is_finite(v) else "n/a"


def add_reasons(rows: list[dict]) -> None:
    ok = [r for r in rows if r["status"] == "ok"]
    floor = next((r for r in ok if r["method"] == "random"), None)
    for r in rows:
        if r["status"] != "ok":
            r["reason"] = r.get("reason") or "not run"
            continue
        faith = (f"insertion - deletion {format_score(r.get('insertion_minus_deletion'))}, "
                 f"faithfulness correlation {format_score(r.get('faithfulness_correlation'))}")
        parts = [f"rank {r['rank']} of {len(ok)}: {faith}"]
        if is_finite(r.get("avg_sensitivity")):
            parts.append(f"average sensitivity {format_score(r['avg_sensitivity'])}")
        text = "; ".join(parts) + "."
        if r["method"] == "random":
            text += " The random map is the floor every method must beat."
        elif floor is not None and is_finite(r.get("faithfulness_rank")) and is_finite(floor.get("faithfulness_rank")):
            if r["faithfulness_rank"] >= floor["faithfulness_rank"]:
                text += " Not more faithful than the random map: do not trust it for this model."
                r["beats_random"] = False
            else:
                r["beats_random"] = True
        sim = r.get("randomization_similarity")
        if _fails_randomisation(r):
            text += (f" Fails the randomisation check: its maps barely change when the weights are "
                     f"randomised (Spearman {format_score(sim, 2)}), so they may show the input more than the model.")
        r["reason"] = text


def _fails_randomisation(r: dict) -> bool:
    """The maps of ``r``'s method barely change when the weights are randomised (Adebayo et al.
    2018's sanity check; Spearman similarity above the flag)."""
    sim = r.get("randomization_similarity")
    return r["method"] != "random" and is_finite(sim) and sim > _RANDOMISATION_FLAG


def _randomisation_caveat(best: dict, real: list[dict]) -> str:
    """The verdict's warning when the most trusted method fails the randomisation check, naming
    the best-ranked method that passes it (and beats the random map), if any."""
    if not _fails_randomisation(best):
        return ""
    text = (f" Caveat: the maps of {best['method']} barely change when the weights are randomised "
            f"(Spearman {format_score(best['randomization_similarity'], 2)}), so they may show the input more "
            "than the model")
    passing = [r for r in real if is_finite(r.get("randomization_similarity")) and not _fails_randomisation(r)
               and r.get("beats_random", True)]
    if passing:
        alt = passing[0]
        text += (f"; the best-ranked method that passes that check is {alt['method']} (rank {alt['rank']}, "
                 f"insertion - deletion {format_score(alt.get('insertion_minus_deletion'))}, Spearman "
                 f"{format_score(alt['randomization_similarity'], 2)})")
    else:
        text += "; no method that beats the random map passes that check"
    return text + "."


def _names(names: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _tie_text(best: dict, real: list[dict]) -> tuple[str, str]:
    """``(lead, detail)`` of the verdict: who is trusted, and why (naming a tie on faithfulness
    and what broke it). ``real`` is ranked best first."""
    faith = (f"insertion - deletion {format_score(best.get('insertion_minus_deletion'))}, faithfulness correlation "
             f"{format_score(best.get('faithfulness_correlation'))}")
    f0 = best.get("faithfulness_rank")
    tied = [r for r in real if is_finite(f0) and is_finite(r.get("faithfulness_rank"))
            and math.isclose(r["faithfulness_rank"], f0, rel_tol=1e-9, abs_tol=1e-12)]
    if len(tied) < 2:
        return f"Trust {best['method']} most", f"it ranks first on faithfulness ({faith})"
    names = [r["method"] for r in tied]
    tie = f"{_names(names)} tie on faithfulness (mean rank {f0:g}; {best['method']}: {faith})"
    sens = [r.get("avg_sensitivity") for r in tied]
    if not all(is_finite(v) for v in sens):
        return (f"Trust {_names(names)} equally",
                f"{tie}, and robustness was not measured for all of them, so nothing breaks the tie")
    a = float(sens[0])
    close = [r for r, v in zip(tied, sens) if abs(v - a) <= ROBUSTNESS_TOLERANCE * max(abs(v), abs(a))]
    if len(close) > 1:
        lo, hi = min(r["avg_sensitivity"] for r in close), max(r["avg_sensitivity"] for r in close)
        close_names = [r["method"] for r in close]
        text = (f"{tie}; {'they' if len(close) == len(tied) else _names(close_names)} are indistinguishable "
                f"on robustness too (average sensitivity {format_score(lo)} to {format_score(hi)}, less than "
                f"{ROBUSTNESS_TOLERANCE:.0%} apart)")
        rest = [r["method"] for r in tied if r not in close]
        if rest:
            text += f", and {_names(rest)} {'is' if len(rest) == 1 else 'are'} less robust"
        return f"Trust {_names(close_names)} equally", text
    second = tied[1]
    b = float(second["avg_sensitivity"])
    pct = (b - a) / abs(b) if b else float("nan")
    return (f"Trust {best['method']} most",
            f"{tie}; {best['method']} is the most robust (average sensitivity {format_score(a)} against {format_score(b)} "
            f"for {second['method']}, {pct:.1%} lower)")


def verdict_text(rows: list[dict]) -> str:
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
    return text + _randomisation_caveat(best, real)


def row_keys(columns=None) -> tuple:
    """The table's keys with the metric ``columns`` (default: :func:`metric_columns` of
    :func:`default_metrics`, the table before ``metrics=`` existed)."""
    columns = metric_columns(default_metrics()) if columns is None else tuple(columns)
    return ("rank", "method", "status") + columns + (
        "faithfulness_rank", "robustness_rank", "seconds", "explain_seconds", "model_calls", "reason")


_ROW_KEYS = row_keys()


def clean_rows(rows, keys=_ROW_KEYS):
    out = []
    for r in rows:
        out.append({k: r.get(k, float("nan") if k not in ("rank", "method", "status", "reason") else None)
                    for k in keys})
    return out
