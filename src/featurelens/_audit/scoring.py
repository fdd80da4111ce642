"""The audit's scores, ranking, reasons and verdict (see :func:`featurelens.audit`)."""

from __future__ import annotations

import math
from typing import NamedTuple

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
#: higher is better, -1 when lower is better, 0 when neither. The first twelve are today's default
#: set (:data:`DEFAULT_METRICS`); the others come with ``metrics=`` (see :data:`METRICS`).
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
    ("road", "ROAD", -1),
    ("irof", "IROF", +1),
    ("selectivity", "selectivity", -1),
    ("region_perturbation", "AOPC", +1),
    ("sensitivity_n", "sens.-n", +1),
    ("monotonicity", "monoton.", +1),
    ("monotonicity_correlation", "monot. corr.", +1),
    ("sufficiency", "sufficiency", +1),
    ("continuity", "continuity", -1),
    ("consistency", "consistency", +1),
    ("relative_input_stability", "RIS", -1),
    ("relative_output_stability", "ROS", -1),
    ("efficient_mprt", "eMPRT", +1),
    ("smooth_mprt", "sMPRT sim.", -1),
    ("random_logit", "random logit", -1),
    ("effective_complexity", "eff. compl.", 0),
    ("completeness", "|compl. gap|", -1),
)
_LABEL = {key: (label, d) for key, label, d in COLUMNS}


class MetricSpec(NamedTuple):
    """One metric the audit can run: its family, the table columns it fills and the one-line
    reason shown in the report (what it measures, which direction is better)."""

    family: str
    columns: tuple
    reason: str


#: The metrics ``fl.audit(metrics=...)`` chooses from, by name, in the order they run.
METRICS = {
    # faithfulness
    "deletion": MetricSpec("faithfulness", ("deletion_auc",),
        "the target output as the most relevant features are replaced by the baseline, "
        "averaged over the curve (Petsiuk et al. 2018); lower is better"),
    "insertion": MetricSpec("faithfulness", ("insertion_auc",),
        "the target output as the most relevant features are put back into the baseline "
        "(Petsiuk et al. 2018); higher is better; with deletion, ins - del ranks the methods"),
    "faithfulness_correlation": MetricSpec("faithfulness", ("faithfulness_correlation",),
        "Pearson correlation of the attribution summed over random subsets with the output drop when "
        "they are removed (Bhatt et al. 2020); higher is better"),
    "road": MetricSpec("faithfulness", ("road",),
        "accuracy on the target as the most relevant pixels are removed by noisy linear imputation, "
        "mean over the removal fractions (Rong et al. 2022); lower is better"),
    "irof": MetricSpec("faithfulness", ("irof",),
        "area over the curve of the target probability (relative to the clean input) as the most "
        "relevant segments are removed (Rieger & Hansen 2020); higher is better"),
    "selectivity": MetricSpec("faithfulness", ("selectivity",),
        "area under the target output as the most relevant regions are removed one by one "
        "(Montavon et al. 2018); lower is better"),
    "region_perturbation": MetricSpec("faithfulness", ("region_perturbation",),
        "AOPC, the mean output drop as the most relevant regions are removed "
        "(Samek et al. 2017); higher is better"),
    "sensitivity_n": MetricSpec("faithfulness", ("sensitivity_n",),
        "correlation of the summed attribution of random n-region subsets with the output "
        "drop when they are removed, mean over three sizes n (Ancona et al. 2018); higher is better"),
    "monotonicity": MetricSpec("faithfulness", ("monotonicity",),
        "share of samples whose output rises with every region inserted into the baseline, "
        "least relevant first (Arya et al. 2019); higher is better"),
    "monotonicity_correlation": MetricSpec("faithfulness", ("monotonicity_correlation",),
        "Spearman correlation of each region's |attribution| with the squared "
        "output change when it is removed (Nguyen & Martinez 2020); higher is better"),
    "sufficiency": MetricSpec("faithfulness", ("sufficiency",),
        "share of the audited samples with a similar map that get the same prediction "
        "(Dasgupta et al. 2022); higher is better"),
    # robustness
    "avg_sensitivity": MetricSpec("robustness", ("avg_sensitivity",),
        "relative change of the map under small input noise, mean over the draws "
        "(Yeh et al. 2019); lower is better; breaks faithfulness ties"),
    "max_sensitivity": MetricSpec("robustness", ("max_sensitivity",),
        "the largest relative change of the map under small input noise (Yeh et al. "
        "2019); lower is better"),
    "continuity": MetricSpec("robustness", ("continuity",),
        "largest change of the normalised map per unit input change over translations of "
        "the input (Montavon et al. 2018); lower is better"),
    "consistency": MetricSpec("robustness", ("consistency",),
        "share of the samples with the same discretised map (top-5 features) that get the "
        "same prediction (Dasgupta et al. 2022); higher is better"),
    "relative_input_stability": MetricSpec("robustness", ("relative_input_stability",),
        "largest relative map change over the relative input change under "
        "noise that keeps the prediction (Agarwal et al. 2022); lower is better"),
    "relative_output_stability": MetricSpec("robustness", ("relative_output_stability",),
        "largest relative map change over the relative change of the outputs "
        "under noise that keeps the prediction (Agarwal et al. 2022); lower is better"),
    # randomisation
    "model_randomization": MetricSpec("randomisation", ("randomization_similarity",),
        "Spearman similarity of the maps before and after every layer is "
        "re-initialised (Adebayo et al. 2018); lower is better, above 0.5 flagged"),
    "efficient_mprt": MetricSpec("randomisation", ("efficient_mprt",),
        "relative rise of the map's entropy once every layer is re-initialised "
        "(Hedstroem et al. 2023); higher is better"),
    "smooth_mprt": MetricSpec("randomisation", ("smooth_mprt",),
        "Spearman similarity of noise-averaged maps before and after every layer is "
        "re-initialised (Hedstroem et al. 2023); lower is better"),
    "random_logit": MetricSpec("randomisation", ("random_logit",),
        "structural similarity of the map of the target with that of a random other class "
        "(Sixt et al. 2020); lower is better"),
    # complexity
    "sparseness": MetricSpec("complexity", ("sparseness",),
        "Gini index of |a| (Chalasani et al. 2020); higher is a more concentrated map, not "
        "better or worse by itself"),
    "complexity": MetricSpec("complexity", ("complexity",),
        "entropy of |a| / sum |a| (Bhatt et al. 2020); lower is a simpler map, not better or "
        "worse by itself"),
    "effective_complexity": MetricSpec("complexity", ("effective_complexity",),
        "number of features above 1e-5 of the largest |a| (Nguyen & Martinez 2020); "
        "lower is a simpler map, not better or worse by itself"),
    # axiomatic
    "completeness": MetricSpec("axiomatic", ("completeness",),
        "|sum of the map - (f(x) - f(baseline))| (Sundararajan et al. 2017); lower is "
        "better, 0 for a complete method (IG up to quadrature); other methods need not be complete"),
    # localisation (with ground_truth masks)
    "relevance_mass": MetricSpec("localisation", ("relevance_mass",),
        "share of |a| inside the ground-truth mask (Arras et al. 2022); higher is better"),
    "relevance_rank_accuracy": MetricSpec("localisation", ("relevance_rank_accuracy",),
        "share of the top-|mask| features inside the mask (Arras et al. 2022); "
        "higher is better"),
    "precision_at_k": MetricSpec("localisation", ("precision_at_k",),
        "share of the k most relevant features inside the mask (Clark et al. 2024); "
        "higher is better"),
}

#: The metrics run when ``metrics=None``: the audit's set before ``metrics=`` existed.
DEFAULT_METRICS = (
    "deletion", "insertion", "faithfulness_correlation", "avg_sensitivity", "max_sensitivity", "sparseness",
    "complexity", "model_randomization", "relevance_mass", "relevance_rank_accuracy", "precision_at_k",
)


def resolve_metrics(metrics) -> tuple:
    """The metric names ``metrics`` selects, in :data:`METRICS` order: None gives
    :data:`DEFAULT_METRICS`; ``"all"`` (alone or in a list) every metric; otherwise a name or a
    list of names of :data:`METRICS`. An unknown name is a ValueError listing the valid ones."""
    if metrics is None:
        return DEFAULT_METRICS
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
        if name != "all" and name not in METRICS:
            raise ValueError(f"metrics: unknown metric {name!r}; valid names: {', '.join(METRICS)} (or 'all')")
    if "all" in names:
        return tuple(METRICS)
    return tuple(m for m in METRICS if m in names)


def metric_columns(names) -> tuple:
    """The table columns of the metrics ``names`` (COLUMNS order); ``insertion_minus_deletion``
    comes with deletion and insertion together."""
    keys = {c for m in names for c in METRICS[m].columns}
    if "deletion" in names and "insertion" in names:
        keys.add("insertion_minus_deletion")
    return tuple(key for key, _, _ in COLUMNS if key in keys)


def metric_reasons(names) -> dict:
    """``{name: one line}`` for the report: the metric's column(s) with the better direction, and
    its reason."""
    out = {}
    for m in names:
        spec = METRICS[m]
        cols = ", ".join(_LABEL[c][0] + (" ↑" if _LABEL[c][1] > 0 else " ↓" if _LABEL[c][1] < 0 else "")
                         for c in spec.columns)
        out[m] = f"{spec.reason} ({spec.family}; column {cols})"
    return out


def inapplicable(names, x_shape: tuple, n_outputs: int, has_parameters: bool, masks: bool,
                 robustness_samples: int, randomization: bool) -> dict:
    """``{name: why}`` for the selected metrics that cannot apply to this audit (data, model or
    settings); the others run per method. ``x_shape``: the audited batch's shape."""
    why = {}
    ndim, n = len(x_shape), int(x_shape[0])
    d = int(np.prod(x_shape[1:]))
    for m in names:
        family = METRICS[m].family
        if m == "road" and ndim not in (3, 4):
            why[m] = (f"needs images (n, h, w) or (n, c, h, w): it imputes removed pixels from their neighbours; "
                      f"the audited inputs have shape {tuple(x_shape)}")
        elif m == "continuity" and ndim not in (3, 4):
            why[m] = (f"needs images or signals (n, c, h, w) / (n, c, length): it translates the input; the "
                      f"audited inputs have shape {tuple(x_shape)}")
        elif m in ("random_logit", "sufficiency") and n_outputs < 2:
            why[m] = f"needs a model with at least 2 outputs (classes); this one has {n_outputs}"
        elif m == "random_logit" and d < 7:
            why[m] = f"compares maps by structural similarity over windows of 7 values; the maps have {d}"
        elif m in ("sufficiency", "consistency") and n < 2:
            why[m] = f"compares the audited samples with each other; only {n} is audited"
        elif family == "randomisation" and m != "random_logit" and not randomization:
            why[m] = "randomization=False"
        elif family == "randomisation" and m != "random_logit" and not has_parameters:
            why[m] = "needs a torch module with parameters to re-initialise; the model has none"
        elif m in ("avg_sensitivity", "max_sensitivity", "relative_input_stability",
                   "relative_output_stability") and robustness_samples < 1:
            why[m] = "robustness_samples=0 (no noisy copies)"
        elif family == "localisation" and not masks:
            why[m] = "needs ground_truth masks"
    return why


_RANDOMISATION_FLAG = 0.5
#: Relative difference of average sensitivity below which methods that tie on faithfulness are
#: called indistinguishable in the verdict (the sensitivity is a mean over a few noise draws).
ROBUSTNESS_TOLERANCE = 0.01

_MAX_PLAYERS = 64  # black-box games on larger inputs use square patches as players


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


def _mean(v) -> float:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ------------------------------------------------------------------------------------------------
# scoring


def _score(name, ex, model, x, a, raw, t, masks, settings, notes, executor=None, run=DEFAULT_METRICS) -> tuple[dict, dict]:
    """Per-sample metric arrays of one method, and its mean deletion/insertion curves. ``run``: the
    metric names to compute (those selected that apply, :func:`inapplicable`). A metric that fails
    is noted (``"{name}: {metric} failed (...)"``) and left out. ``executor``: the metrics' forward
    passes, and the rows of their re-explanations, on its workers. The default metrics run first, in
    the order (and with the random streams) they had before ``metrics=`` existed."""
    from .. import metrics as M

    run = set(run)
    scores: dict[str, np.ndarray] = {}
    curves: dict[str, np.ndarray] = {}
    label = f"{name}: "
    steps, baseline, seed = settings["steps"], settings["baseline"], settings["seed"]
    for key, fn in (("deletion", M.deletion_curve), ("insertion", M.insertion_curve)):
        if key not in run:
            continue
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
    if "faithfulness_correlation" in run:
        scorers = {"faithfulness_correlation": lambda: M.faithfulness_correlation(
            model, x, a, target=t, n_subsets=settings["n_subsets"], subset_size=min(subset, d), baseline=baseline,
            seed=seed, executor=executor)}
        scores.update(score(scorers, notes, label))
    if settings["robustness_samples"] > 0 and run & {"avg_sensitivity", "max_sensitivity"}:
        # The explainer's own maps (e.g. gradcam's one channel), which its noisy re-explanations match.
        keys = [k for k in ("avg_sensitivity", "max_sensitivity") if k in run]
        res = attempt(notes, f"{label}{'/'.join(keys)}", lambda: _sensitivity_pair(
            ex, x, t, settings["radius"], settings["robustness_samples"], seed, raw, executor))
        if res is not None:
            pair = dict(zip(("avg_sensitivity", "max_sensitivity"), res))
            scores.update({k: pair[k] for k in keys})
    scorers = {k: fn for k, fn in (("sparseness", lambda: M.sparseness(a)), ("complexity", lambda: M.complexity(a)))
               if k in run}
    kwargs = {k: v for k, v in settings["explainer_kwargs"][name].items() if k != "progress"}
    if "model_randomization" in run and _has_parameters(model, settings):
        scorers["model_randomization"] = lambda: _randomization(
            M.model_randomization, name, model, x, t, seed, kwargs, raw, executor)
    scores.update(score(scorers, notes, label))
    if "model_randomization" in scores:
        scores["randomization_similarity"] = scores.pop("model_randomization")
    loc = [k for k in ("relevance_mass", "relevance_rank_accuracy", "precision_at_k") if k in run]
    if masks is not None and loc:
        a_loc, m_loc = _localisation_arrays(a, masks)
        scores.update(score({key: (lambda key=key: getattr(M, key)(a_loc, m_loc)) for key in loc}, notes, label))
    new = [m for m in METRICS if m in run and m not in DEFAULT_METRICS]
    if new:
        scorers = _new_scorers(name, ex, model, x, a, raw, t, settings, executor, kwargs)
        scores.update(score({m: scorers[m] for m in new}, notes, label))
    return scores, curves


def _has_parameters(model, settings) -> bool:
    return bool(settings["randomization"]) and model.module is not None and any(True for _ in model.module.parameters())


def _regions(shape: tuple):
    """The regions the region metrics remove whole: the audit's square patches (at most 64, shared
    over channels) on inputs of more than 64 elements, else every element."""

    g = _patch_groups(shape)
    return np.arange(int(np.prod(shape))).reshape(shape) if g is None else g


def _sizes(n_regions: int) -> list:
    """Sensitivity-n's subset sizes: about 10 %, 30 % and 50 % of the regions (at least one)."""
    return sorted({max(1, int(round(f * n_regions))) for f in (0.1, 0.3, 0.5)})


def _continuity_steps(length: int, most: int = 8) -> int:
    """The most translations (at most ``most``) whose grid ``s_k = -L + (k + 1) ((2L + 1) // k_max)``
    leaves out the zero shift: a zero shift divides the map change of a stochastic explainer by
    ``0 + 1e-9``."""
    for k in range(min(most, 2 * length + 1), 0, -1):
        dx = (2 * length + 1) // k
        if not (length % dx == 0 and length // dx <= k):
            return k
    return 1


def _new_scorers(name, ex, model, x, a, raw, t, settings, executor, kwargs) -> dict:
    """``{metric: zero-argument callable -> one value per sample}`` for the metrics beyond the
    default set. Region metrics remove the audit's regions (:func:`_regions`) filled with the
    audit's baseline; the re-explaining ones take the method's own explainer and maps (``raw``);
    the noisy ones take the audit's ``radius`` and ``robustness_samples``."""
    from .. import metrics as M

    steps, baseline, seed = settings["steps"], settings["baseline"], settings["seed"]
    radius, n_noise = settings["radius"], settings["robustness_samples"]
    groups = _regions(tuple(x.shape[1:]))
    n_regions = int(np.unique(groups).size)
    extra = {} if executor is None else {"executor": executor}

    def road():
        g = None
        if int(np.prod(x.shape[1:])) > 64:  # the audit's patches, one map of the pixels
            g = groups[0] if x.ndim == 4 else groups
        pct = 100.0 * (np.arange(steps) + 0.5) / steps
        return M.road(model, x, a, target=t, percentages=pct, seed=seed, groups=g, **extra)[1]

    def sens_n():
        vals = M.sensitivity_n(model, x, a, target=t, ns=_sizes(n_regions), n_subsets=settings["n_subsets"],
                               seed=seed, baseline=baseline, groups=groups, **extra)
        vals = np.asarray(vals, dtype=np.float64).reshape(len(x), -1)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(vals)
            return np.where(ok.any(1), np.where(ok, vals, 0.0).sum(1) / np.maximum(ok.sum(1), 1), np.nan)

    def continuity():
        return M.continuity(ex, x, target=t, n_steps=_continuity_steps(x.shape[-1]), **extra)

    def mprt(fn, key, **kw):
        return lambda: _randomization(fn, name, model, x, t, seed, kwargs, raw, executor, key=key, **kw)

    return {
        "road": road,
        "irof": lambda: M.irof(model, x, a, target=t, baseline=baseline, groups=groups, **extra)[1],
        "selectivity": lambda: M.selectivity(model, x, a, target=t, baseline=baseline, groups=groups, **extra)[1],
        "region_perturbation": lambda: M.region_perturbation(
            model, x, a, target=t, steps=steps, baseline=baseline, seed=seed, groups=groups, **extra)[1],
        "sensitivity_n": sens_n,
        "monotonicity": lambda: M.monotonicity(model, x, a, target=t, steps=min(steps, n_regions), baseline=baseline,
                                               groups=groups, **extra),
        "monotonicity_correlation": lambda: M.monotonicity_correlation(
            model, x, a, target=t, baseline=baseline, groups=groups, **extra),
        "sufficiency": lambda: M.sufficiency(model, x, a),
        "continuity": continuity,
        "consistency": lambda: M.consistency(ex, x, target=t, attributions=raw, **extra),
        "relative_input_stability": lambda: M.relative_input_stability(
            ex, x, target=t, radius=radius, n_samples=n_noise, seed=seed, attributions=raw, **extra),
        "relative_output_stability": lambda: M.relative_output_stability(
            ex, x, target=t, radius=radius, n_samples=n_noise, seed=seed, attributions=raw, **extra),
        "efficient_mprt": mprt(M.efficient_mprt, "score"),
        "smooth_mprt": mprt(M.smooth_mprt, "last", n_samples=max(2, n_noise), attributions=False),
        "random_logit": lambda: M.random_logit(ex, x, target=t, seed=seed, attributions=raw, **extra),
        "effective_complexity": lambda: M.effective_complexity(a),
        "completeness": lambda: np.abs(M.completeness(model, x, a, target=t, baseline=baseline, **extra)),
    }


def _sensitivity_pair(ex, x, t, radius, n_samples, seed, a, executor=None):
    """(avg_sensitivity, max_sensitivity) per sample from ONE set of re-explained noisy copies:
    both are the mean and the max over the same draws (relative noise, as the public metrics'
    default), so explaining the copies twice would only double the cost."""
    from ..metrics.robustness import _sensitivities

    s = _sensitivities(ex, x, t, radius, n_samples, seed, True, a, executor)  # (n_samples, n)
    return s.mean(0), s.max(0)


def _randomization(fn, name, model, x, t, seed, kwargs, a, executor=None, key="last", attributions=True, **kw):
    """A randomisation test ``fn`` (:func:`featurelens.metrics.model_randomization` and the MPRT
    variants) of the audited explainer, ``res[key]`` per sample: by default the Spearman similarity
    after every layer is re-initialised (the last step of the cascade). ``attributions=False`` for
    tests that do not take the trained maps (smooth MPRT explains noisy copies itself)."""
    # The explainers of the randomised copies get the audited explainer's parameters, batch_size
    # included (it bounds their memory as it does the audited explainer's).
    # A TorchScript module's layers have no reset_parameters: the wrapper gives each layer that owns
    # parameters a handle that redraws it (torch.nn's default initialisation by original_name).
    module = ScriptLayers(model.module) if is_script(model.module) else model.module
    extra = {} if executor is None else {"executor": executor}
    if attributions:
        extra["attributions"] = a
    res = fn(name, module, x, target=t, seed=seed, explainer_params=dict(kwargs), **extra, **kw)
    return np.asarray(res[key], dtype=np.float64).reshape(-1)


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
        if _fails_randomisation(r):
            text += (f" Fails the randomisation check: its maps barely change when the weights are "
                     f"randomised (Spearman {_fmt(sim, 2)}), so they may show the input more than the model.")
        r["reason"] = text


def _fails_randomisation(r: dict) -> bool:
    """The maps of ``r``'s method barely change when the weights are randomised (Adebayo et al.
    2018's sanity check; Spearman similarity above the flag)."""
    sim = r.get("randomization_similarity")
    return r["method"] != "random" and _finite(sim) and sim > _RANDOMISATION_FLAG


def _randomisation_caveat(best: dict, real: list[dict]) -> str:
    """The verdict's warning when the most trusted method fails the randomisation check, naming
    the best-ranked method that passes it (and beats the random map), if any."""
    if not _fails_randomisation(best):
        return ""
    text = (f" Caveat: the maps of {best['method']} barely change when the weights are randomised "
            f"(Spearman {_fmt(best['randomization_similarity'], 2)}), so they may show the input more "
            "than the model")
    passing = [r for r in real if _finite(r.get("randomization_similarity")) and not _fails_randomisation(r)
               and r.get("beats_random", True)]
    if passing:
        alt = passing[0]
        text += (f"; the best-ranked method that passes that check is {alt['method']} (rank {alt['rank']}, "
                 f"insertion - deletion {_fmt(alt.get('insertion_minus_deletion'))}, Spearman "
                 f"{_fmt(alt['randomization_similarity'], 2)})")
    else:
        text += "; no method that beats the random map passes that check"
    return text + "."


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
    return text + _randomisation_caveat(best, real)


def row_keys(columns=None) -> tuple:
    """The table's keys with the metric ``columns`` (default: :func:`metric_columns` of
    :data:`DEFAULT_METRICS`, the table before ``metrics=`` existed)."""
    columns = metric_columns(DEFAULT_METRICS) if columns is None else tuple(columns)
    return ("rank", "method", "status") + columns + (
        "faithfulness_rank", "robustness_rank", "seconds", "explain_seconds", "model_calls", "reason")


_ROW_KEYS = row_keys()


def _clean_rows(rows, keys=_ROW_KEYS):
    out = []
    for r in rows:
        out.append({k: r.get(k, float("nan") if k not in ("rank", "method", "status", "reason") else None)
                    for k in keys})
    return out
