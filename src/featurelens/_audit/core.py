"""Audit of explainers: which explanation should I believe for this model and these inputs?

:func:`audit` runs every applicable registered explainer on a sample of the data, scores each map
with the metrics of :mod:`featurelens.metrics` (faithfulness, robustness, complexity,
randomisation, and localisation when ground-truth masks are given), ranks the methods with a
stated rule and a reason per method, and optionally writes a self-contained HTML report.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from featurelens._optional import is_tensor, to_numpy, torch

from .. import _harness
from .._random import numpy_rng, parse_seed, seed_record
from .._validation import (
    as_numpy,
    baseline_record,
    check_bool,
    check_executor,
    check_float,
    check_floating,
    check_int,
    check_optional_bool,
    default_baseline,
    executor_param,
    resolve_baseline,
    resolve_target,
)
from ..explainers._base import explainer_class, list_explainers
from ..explainers._catalog import EXTRAS
from ..models import Model
from ..report import check_out
from ._torchscript import gradcam_reason, is_script
from .scoring import (
    RANKING_RULE, add_reasons, clean_rows, finite_mean, model_has_parameters, patch_groups, rank_rows, score_method,
    verdict_text, metric_columns, metric_reasons, resolve_metrics, row_keys, skip_reasons,
)

__all__ = ["audit", "AuditTable", "choose_methods", "RANKING_RULE"]

#: The audit's budget for explainers that evaluate all 2^n coalitions (``Requires.max_players``):
#: at most 10 players, whatever larger limit the explainer itself allows.
_MAX_EXACT_PLAYERS = 10
_AGOP_ROWS = 2048  # most rows of X used to compute the AGOP diagonal for explainers that take data=
#: The sampled Shapley explainers' budget on inputs the audit groups into patches (images and
#: signals of more than 64 elements): this many game evaluations per player and sample, at least
#: the method's minimum and at most its default (``2 n + 2048``), so that each costs
#: ``n_explain x budget`` model rows, e.g. 32 x 256 for the 64 patches of a 224 x 224 image.
_BUDGET_PER_PLAYER = 4


class AuditTable(list):
    """The ranked table as a list of dicts (one per method, best first) when pandas is absent or
    ``as_frame=False``; ``verdict``, ``ranking_rule`` and ``report`` (path of index.html or None)
    ride along as attributes, and ``explanations`` maps each method to its Explanation;
    ``metrics`` maps each metric run to its one-line reason and ``skipped_metrics`` each selected
    metric that could not apply to its reason."""

    def __init__(self, rows=()):
        super().__init__(rows)
        self.verdict: str = ""
        self.ranking_rule: str = RANKING_RULE
        self.report: str | None = None
        self.explanations: dict = {}
        self.notes: list = []
        self.metrics: dict = {}
        self.skipped_metrics: dict = {}


# ------------------------------------------------------------------------------------------------
# helpers


def _wrap_model(model, batch_size):
    """A Model for torch modules, featurelens Models, scikit-learn estimators and callables."""
    # estimators included: the adapter takes them, in numpy mode (no torch on their path)
    wrapped = Model.wrap(model, batch_size=batch_size).with_numpy()
    return wrapped, wrapped.module


def _players(shape: tuple, groups) -> int:
    return int(np.prod(shape)) if groups is None else int(groups.max()) + 1


def _gradient_based(name: str) -> bool:
    req = explainer_class(name).requires
    return req.gradients or req.data


def choose_methods(model: Model, x_shape: tuple, methods=None):
    """``(chosen, skipped)``: the explainers the audit runs on inputs of one-sample shape
    ``x_shape`` and ``{name: reason}`` for registered ones it leaves out.

    Applicability is each explainer's declared :class:`~featurelens.explainers.Requires` (read by
    :func:`featurelens._harness.applicable`). Differentiable models (torch modules, torch
    callables): every gradient explainer that applies (gradcam only with a convolutional layer,
    WAM only on 1-3-D inputs with a channel axis), AGOP-Weighted and AGOP-Global (diag(M) from the
    audited data). Other models: occlusion, KernelSHAP, permutation Shapley, exact Shapley when
    there are at most 10 players. Always the seeded ``random`` map as the floor.
    """
    # Explainers whose extra (torch) is not installed are listed, never imported: skipped with the
    # pip line that brings them.
    unavailable = {d["name"]: f"needs torch, which is not installed: {EXTRAS['torch']}"
                   for d in list_explainers(details=True) if not d["available"]}
    registered = [m for m in list_explainers() if m not in unavailable]
    if methods is not None:
        if isinstance(methods, str):
            methods = [methods]
        names = list(dict.fromkeys(methods))
        for name in names:
            if not isinstance(name, str) or (name not in registered and name not in unavailable):
                explainer_class(name)  # raises naming the registered explainers
        if not names:
            raise ValueError("methods must name at least one explainer; got an empty list")
        chosen, skipped = _applicable([n for n in names if n not in unavailable], model, x_shape)
        skipped.update({n: unavailable[n] for n in names if n in unavailable})
        return chosen, skipped
    # The defaults are those whose class says audit_default=True (the others give the reason they
    # are left out), gradient explainers on differentiable models and the others on models without
    # gradients, in their declared audit_order, then by name.
    gradient = model.differentiable
    order = sorted(
        (m for m in registered if m != "random" and explainer_class(m).audit_default is True
         and _gradient_based(m) == gradient),
        key=lambda m: (explainer_class(m).audit_order is None, explainer_class(m).audit_order or 0, m),
    )
    chosen, skipped = _applicable(order, model, x_shape)
    rest = [m for m in registered if m not in chosen and m not in skipped and m != "random"]
    _, why = _applicable(rest, model, x_shape)
    for name in rest:
        declared = explainer_class(name).audit_default
        skipped[name] = why.get(name) or (declared if isinstance(declared, str) else (
            "needs gradients, and the model is not differentiable" if _gradient_based(name)
            else "black-box; the model has gradients, so the gradient methods are audited (request it with methods=)"
        ))
    skipped.update(unavailable)
    if "random" in registered:
        chosen.append("random")
    return chosen, skipped


def _applicable(names, model: Model, x_shape: tuple):
    """The harness's choice by the declared requirements, with the audit's players (patches of
    at most 64) and its budget for exact methods."""
    n = _players(x_shape, patch_groups(x_shape))
    chosen, skipped = _harness.applicable(names, model, x_shape, n)
    if is_script(model.module):
        # Requires.why_not looks for torch.nn.Conv* instances; a TorchScript model's convolutions
        # are RecursiveScriptModules, and hooks (which Grad-CAM needs) do not run on them anyway.
        reason = gradcam_reason(model.module)
        for name in skipped:
            if reason is not None and explainer_class(name).requires.conv_layer:
                skipped[name] = reason
    for name in list(chosen):
        limit = explainer_class(name).requires.max_players
        if limit is not None and n > min(limit, _MAX_EXACT_PLAYERS):
            chosen.remove(name)
            skipped[name] = f"evaluates 2^n coalitions, and the inputs have {n} players (> {min(limit, _MAX_EXACT_PLAYERS)})"
    return chosen, skipped


def _explainer_kwargs(name: str, X: np.ndarray, baseline, seed, batch_size) -> dict:
    """The audit's options for ``name`` (those it declares in ``accepts``): the seed, the baseline,
    square-patch players, the AGOP data (a seeded subset of at most 2,048 rows of X bounds the
    cost), no progress bar, and ``batch_size``."""
    accepts = explainer_class(name).accepts
    data = None
    if "data" in accepts:
        data = X
        if X.shape[0] > _AGOP_ROWS:
            data = X[np.sort(numpy_rng(seed).choice(X.shape[0], _AGOP_ROWS, replace=False))]
    groups = patch_groups(X.shape[1:]) if "groups" in accepts else None
    kwargs = _harness.explainer_kwargs(name, batch_size=batch_size, seed=seed, baseline=baseline, groups=groups,
                                       data=data, progress=False)
    budget = _grouped_budget(name, X.shape[1:], groups)
    if budget is not None:
        kwargs["budget"] = budget
    return kwargs


def _grouped_budget(name: str, shape: tuple, groups) -> int | None:
    """The audit's budget for a sampled Shapley explainer on patch players (see
    :data:`_BUDGET_PER_PLAYER`), or None (its own default: ungrouped inputs, other methods)."""
    minimum = getattr(explainer_class(name), "minimum_budget", None)
    if groups is None or minimum is None:
        return None
    n = _players(shape, groups)
    return max(int(minimum(n)), min(_BUDGET_PER_PLAYER * n, 2 * n + 2048))


def _players_note(shape: tuple, groups, kwargs: dict, n_explain: int) -> dict:
    """What the audit's black-box players and budgets are, for ``settings["players"]`` and the
    notes: the grouping, the number of players and each method's budget and model rows."""
    n = _players(shape, groups)
    spatial = shape[1:] if len(shape) >= 3 else shape
    first = np.argwhere(groups.reshape(-1, *spatial)[0] == 0) if len(shape) >= 2 else None
    side = tuple(int(v) for v in (first.max(0) - first.min(0) + 1)) if first is not None and first.size else ()
    shared = f", shared over the {shape[0]} channels" if len(shape) >= 3 else ""
    grouping = (f"{n} square patches of {' x '.join(map(str, side))} elements{shared} (not the "
                f"{int(np.prod(shape)):,} input elements)")
    budgets = {m: int(kw["budget"]) for m, kw in kwargs.items() if "budget" in kw}
    text = f"Black-box methods play {grouping}"
    if budgets:
        text += "; budgets: " + ", ".join(f"{m} {b} game evaluations per sample ({b * n_explain:,} model rows)"
                                          for m, b in budgets.items())
    return {"grouping": "patches", "n_players": n, "patch": list(side), "budgets": budgets, "note": text + "."}


def _targets(model: Model, x: np.ndarray, y, target, classes) -> np.ndarray:
    """One output index per sample: ``target`` when given; else the label ``y`` (mapped through
    ``classes`` for scikit-learn classifiers) for classifiers; else the predicted class. Targets
    and labels are checked by :func:`featurelens._validation.resolve_target`."""
    xt = model.to_tensor(x)
    outputs = model.predict(xt)
    n, n_outputs = int(xt.shape[0]), int(outputs.shape[1])
    if target is not None:
        return resolve_target(target, n, n_outputs)
    if y is not None and n_outputs > 1:
        if classes is not None:
            lookup = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
            missing = [v for v in np.asarray(y).tolist() if v not in lookup]
            if missing:
                raise ValueError(
                    f"y holds label {missing[0]!r}, which is not one of the model's classes {list(lookup)}"
                )
            y = np.array([lookup[v] for v in np.asarray(y).tolist()], dtype=np.int64)
        elif np.asarray(y).dtype.kind not in "iu":
            raise TypeError(f"y must hold integer class indices (one per sample); got dtype {np.asarray(y).dtype}")
        return resolve_target(np.asarray(y), n, n_outputs, name="y")
    return to_numpy(model.resolve_target(None, xt, outputs))


def _input_dtype(wrapped: Model, X) -> type:
    """The precision the audit keeps ``X`` in: a torch model's own (its parameters' dtype, float32
    without parameters); for a scikit-learn estimator or numpy callable float64 when ``X`` is
    float64 (a CSV's columns: rounding them to float32 would move Unix timestamps by up to 64 s and
    turn 1e308 into inf), else float32."""
    if wrapped.accepts == "torch":
        return np.float64 if wrapped.dtype == torch.float64 else np.float32
    dtype = getattr(X, "dtype", None)
    try:
        return np.float64 if dtype is not None and np.dtype(dtype) == np.float64 else np.float32
    except TypeError:  # a DataFrame's dtypes, a torch dtype
        return np.float64 if str(dtype) == "torch.float64" else np.float32


def _check_inputs(X, y, ground_truth, n_explain, seed, dtype=np.float32):
    if hasattr(X, "columns") and hasattr(X, "dtypes"):  # a DataFrame: name non-numeric columns
        other = [str(c) for c, dt in X.dtypes.items() if getattr(dt, "kind", "O") not in "biuf"]
        if other:
            raise ValueError(
                f"X has non-numeric columns {other[:10]}; the audit needs numbers (its deletion and "
                "insertion curves and robustness metrics replace and perturb feature values). "
                "Explain a pipeline with categorical columns with fl.explainer('kernel_shap' | "
                "'permutation_shap' | 'exact_shapley', pipeline, background=rows), or with "
                "`featurelens explain`"
            )
    X = as_numpy(X, "X")
    if X.dtype.kind in "iub":
        X = X.astype(dtype)
    check_floating(X, "X")
    if X.ndim < 2:
        raise ValueError(f"X must be a batch with the samples along the first axis, shape (n, ...); got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"X is empty (shape {X.shape}); expected at least one sample")
    X = np.ascontiguousarray(X, dtype=dtype)
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
    n_explain = check_int(n_explain, "n_explain", low=1)
    if n > n_explain:
        idx = np.sort(numpy_rng(seed).choice(n, size=n_explain, replace=False))
    else:
        idx = np.arange(n)
    return X, y, ground_truth, idx


def _baseline(baseline, X: np.ndarray):
    """The fill of removed features: None is the policy ``"feature_means"`` of
    :func:`featurelens._validation.default_baseline` (0 for images/signals, the usual black fill,
    and the feature means for tabular rows, where a zero may lie far outside the data); a number stays a
    float; an array shaped like one sample takes X's dtype. Checked by
    :func:`featurelens._validation.resolve_baseline`."""
    if baseline is None:
        return default_baseline("feature_means", X)
    full = to_numpy(resolve_baseline(baseline, X[:1]))
    if np.ndim(baseline) == 0 and not is_tensor(baseline):
        return float(full.reshape(-1)[0])
    return full[0].astype(X.dtype)


# ------------------------------------------------------------------------------------------------
# the audit


def audit(
    model,
    X,
    y=None,
    methods=None,
    metrics=None,
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
    overwrite: bool = False,
    executor=None,
):
    """Run every applicable explainer on ``X``, score and rank the maps, optionally write a report.

    Which explainers (see ``choose_methods``): for a differentiable model every gradient and
    AGOP explainer that applies (gradcam only with a convolutional layer); for a scikit-learn
    estimator or numpy callable occlusion, KernelSHAP, permutation Shapley and, up to 10 players,
    exact Shapley (inputs with more than 64 elements use patches as players, at most 64, shared over
    the channels of images: 64 patches of 28 x 28 px on a 224 x 224 image, never the 150,528
    pixels; the sampled Shapley methods then get a budget of ``4 n`` game evaluations per sample,
    at least their minimum and at most their default, 256 for 64 patches); the grouping, the
    players and the budgets are stated in the notes and in ``settings["players"]`` of the report;
    always the seeded
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

    Ranking: see ``RANKING_RULE`` (faithfulness ranks first, robustness breaks ties). A metric
    that fails is reported in the notes and left out, never fatal; an explainer that fails gets
    status "failed" with the error as its reason.

    ``metrics`` chooses the metrics (the table's metric columns are exactly theirs): None (default)
    the set above (the metrics whose spec says ``audit_default``); ``"all"`` every metric of
    :func:`featurelens.metrics.list_metrics` with an audit column; or a list of
    its names. Beyond the default set, on the same audited samples, targets and ``baseline``:

    - faithfulness: ``road`` (Rong et al. 2022, arXiv 2202.00449; accuracy on the target after
      noisy linear imputation of the most relevant pixels at ``steps`` fractions, images only),
      ``irof`` (Rieger & Hansen 2020, arXiv 2003.08747), ``selectivity`` (Montavon et al. 2018,
      arXiv 1706.07979), ``region_perturbation`` (AOPC over ``steps`` regions, Samek et al. 2017,
      arXiv 1509.06321), ``sensitivity_n`` (Ancona et al. 2018, arXiv 1711.06104; ``n_subsets``
      subsets of about 10, 30 and 50 % of the regions, the per-sample mean of the three
      correlations), ``monotonicity`` (Arya et al. 2019, arXiv 1909.03012), ``monotonicity_correlation``
      (Nguyen & Martinez 2020, arXiv 2007.07584; each region replaced by the baseline) and
      ``sufficiency`` (Dasgupta et al. 2022, arXiv 2202.00734; the audited samples are the pool).
      The region metrics remove the black-box players: square patches (at most 64) on inputs of
      more than 64 elements, else every element;
    - robustness: ``continuity`` (Montavon et al. 2018; at most 8 translations, images and
      signals), ``consistency`` (Dasgupta et al. 2022; top-5 discretisation),
      ``relative_input_stability`` and ``relative_output_stability`` (Agarwal et al. 2022, arXiv
      2203.06877; ``robustness_samples`` draws of ``radius``);
    - randomisation: ``efficient_mprt`` (the relative entropy rise) and ``smooth_mprt``
      (``max(2, robustness_samples)`` noisy copies; both Hedstroem et al. 2023, arXiv 2401.06465)
      and ``random_logit`` (Sixt et al. 2020, arXiv 1912.09818; at least two outputs);
    - complexity: ``effective_complexity`` (Nguyen & Martinez 2020);
    - axiomatic: ``completeness``, ``|sum_i a_i - (f(x) - f(baseline))|`` (Sundararajan et al. 2017,
      arXiv 1703.01365).

    A selected metric that cannot apply (``road`` or ``continuity`` on tabular rows,
    ``random_logit`` or ``sufficiency`` on a single-output model, randomisation without a torch
    module or with ``randomization=False``, noise metrics with ``robustness_samples=0``,
    localisation without ``ground_truth``) is skipped with its reason in the notes (for the
    default set, silently, as before ``metrics=`` existed); its column stays, n/a. Each metric run
    gets a one-line reason (what it measures, which direction is better) in the report and in the
    table's ``metrics``. The ranking does not change: it reads the deletion/insertion, faithfulness
    correlation and sensitivity columns, and without any of them the table is in name order.

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
        figures (tabular X: the methods' feature rankings side by side and per method the bar,
        beeswarm and waterfall plots of :mod:`featurelens.plots`, with the feature names; other X:
        example maps); None writes nothing. Checked before any work; the report is built beside it and
        moved into place at the end (``featurelens.report.report_folder``).
    overwrite
        Write into ``out`` even when it holds files and is not an earlier audit report (otherwise
        refused with a ValueError before any work).
    n_explain, seed, progress
        Samples audited (a seeded subset when X has more); the seed of every stochastic part (None,
        an int or a numpy Generator, whose stream the parts then draw from in turn); a progress bar
        over methods (None: only on a terminal).
    feature_names
        Names of the columns of tabular X for the report (default: a DataFrame's columns).
    executor
        None (this process), or a :mod:`featurelens.parallel` executor (``ThreadExecutor(4)``,
        ``ProcessExecutor``, ``RayExecutor``, ``DaskExecutor``): each method explains the audited rows
        in parts on its workers (``explain(x, executor=...)``), as do the robustness metrics' noisy
        copies and the randomisation test's randomised models, and the deletion/insertion curves
        and the faithfulness correlation run their forward passes on it. Rows, not coalitions, are
        split: the audit explains ``n_explain`` rows (32 by default, many more than workers) with
        every method, gradient and black-box alike, so one task per part of the rows balances the
        workers with one round trip per method, whereas the games of the audit's black-box methods
        are small (exact Shapley's 2^n <= 1,024 coalitions fit in one chunk) and splitting them would
        cost a round trip per row. Every random stream is per row, so the scores equal the serial
        ones bitwise for the Shapley explainers; the gradient explainers and occlusion batch rows
        together, and a part's batches may change the last bit of a map (about 1e-7 relative in
        float32: see ``featurelens.explainers.Explainer.explain``). The executor is used, not
        closed; ``settings`` in the report name it.
    metrics
        None (the default set), ``"all"``, a metric name or a list of names (``fl.metrics.list_metrics()``,
        those with an audit ``column``); an
        unknown name is a ValueError listing the valid ones.
    as_frame
        True: a pandas DataFrame; False: an ``AuditTable`` (list of dicts); None (default): a
        DataFrame when pandas can be imported. Either way best first, one row per method, with
        ``rank``, ``method``, ``status``, the metric means, ``faithfulness_rank``,
        ``robustness_rank``, ``seconds``, ``model_calls`` and ``reason``; the DataFrame's
        ``attrs`` (the list's attributes) hold ``verdict``, ``ranking_rule``, ``report``,
        ``notes`` (metrics that failed or did not apply, warnings), ``metrics`` (metric -> its
        one-line reason) and ``skipped_metrics`` (metric -> why it could not apply); the list also
        has ``explanations`` (method -> Explanation).
    """
    start = time.perf_counter()
    seed = parse_seed(seed)
    selected = resolve_metrics(metrics)
    if out is not None:
        check_out(out, "audit", check_bool(overwrite, "overwrite"))
    if feature_names is None and hasattr(X, "columns"):
        feature_names = [str(c) for c in X.columns]
    executor = check_executor(executor, "executor", rows=True)
    wrapped, module = _wrap_model(model, batch_size)
    X, y, masks_all, idx = _check_inputs(X, y, ground_truth, n_explain, seed, _input_dtype(wrapped, X))
    if feature_names is not None:
        feature_names = [str(f) for f in feature_names]
        if X.ndim != 2 or len(feature_names) != X.shape[1]:
            raise ValueError(
                f"feature_names must name the {X.shape[1] if X.ndim == 2 else 'columns'} columns of a tabular "
                f"X (shape {X.shape}); got {len(feature_names)} names"
            )
    steps = check_int(steps, "steps", low=1)
    n_subsets = check_int(n_subsets, "n_subsets", low=2)
    subset_size = check_int(subset_size, "subset_size", low=1, allow_none=True)
    radius = check_float(radius, "radius", low=0.0, low_inclusive=False)
    robustness_samples = check_int(robustness_samples, "robustness_samples", low=0)
    randomization = check_bool(randomization, "randomization")
    progress = check_optional_bool(progress, "progress")
    as_frame = check_optional_bool(as_frame, "as_frame")
    classes = getattr(model, "classes_", None)
    x = X[idx]
    try:
        probe = wrapped.predict(x[:1])
    except (ValueError, TypeError) as err:
        raise ValueError(f"X has samples of shape {X.shape[1:]}, and the model cannot take them: {err}") from err
    t = _targets(wrapped, x, None if y is None else y[idx], target, classes)
    masks = None if masks_all is None else masks_all[idx]
    given_baseline, baseline = baseline, _baseline(baseline, X)
    chosen, skipped = choose_methods(wrapped, X.shape[1:], methods)
    notes: list[str] = []
    n_outputs = int(probe.shape[1])
    skipped_metrics = skip_reasons(selected, x.shape, n_outputs, model_has_parameters(wrapped, {"randomization": randomization}),
                                   masks is not None, robustness_samples, randomization)
    if metrics is not None:  # the default set skips silently, as it did before metrics= existed
        notes.extend(f"{m}: not applicable ({why})" for m, why in skipped_metrics.items())
    run_metrics = tuple(m for m in selected if m not in skipped_metrics)
    columns = metric_columns(selected)
    reasons = metric_reasons(run_metrics)
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
        "n_explain": int(len(idx)), "n_samples_in_X": int(X.shape[0]), **seed_record(seed), "steps": steps,
        "n_subsets": n_subsets, "subset_size": subset_size, "radius": radius,
        "robustness_samples": robustness_samples, "randomization": bool(randomization),
        "baseline": baseline, "explainer_kwargs": {}, "executor": executor_param(executor),
        "metrics": list(selected),
    }
    rows, curves, explanations, per_sample = [], {}, {}, {}
    from tqdm.auto import tqdm

    show = sys.stderr.isatty() if progress is None else bool(progress)
    for name in tqdm(chosen, desc="audit", disable=not show, leave=False, unit="method"):
        row = {"method": name, "status": "ok", "reason": ""}
        kwargs = _explainer_kwargs(name, X, baseline, seed, batch_size)
        settings["explainer_kwargs"][name] = kwargs
        t0 = time.perf_counter()
        run = _harness.run_method(name, wrapped, x, t, kwargs, executor=executor)
        if run.status != "ok":
            row.update(status=run.status, reason=run.error)
            rows.append(row)
            continue
        ex, e, a = run.explainer, run.explanation, run.values
        if a.shape != x.shape and a.ndim == x.ndim and a.shape[0] == x.shape[0]:
            a = np.broadcast_to(a, x.shape).copy()  # a one-channel map (gradcam) for every channel
        explanations[name] = e
        if getattr(e, "output", "raw") != getattr(wrapped, "output", "raw"):
            from .report import describe_units

            # e.g. tree_shap on a boosted classifier explains the log-odds margin, while the
            # metrics perturb the model and read its own outputs (predict_proba): say so.
            notes.append(
                f"{name}: its values are in {e.output} units, while the metrics read the model's "
                f"{getattr(wrapped, 'output', 'raw')} outputs ({describe_units(wrapped)}); its scores compare "
                "attributions and output changes in different units"
            )
        row["explain_seconds"] = float(e.seconds)
        row["model_calls"] = int(e.model_calls)
        # the seed itself (a Generator is recorded as "generator" in settings, and drawn from here)
        scores, c = score_method(name, ex, wrapped, x, a, np.asarray(e.values), t, masks, settings, notes, executor,
                           run=run_metrics, seed=seed)
        row["seconds"] = time.perf_counter() - t0
        for key in columns:
            if key in scores:
                row[key] = finite_mean(scores[key])
        per_sample[name] = {k: v.tolist() for k, v in scores.items()}
        curves[name] = c
        rows.append(row)
    for name, why in skipped.items():
        rows.append({"method": name, "status": "n/a", "reason": why})
    grouped = {m: kw for m, kw in settings["explainer_kwargs"].items() if kw.get("groups") is not None}
    if grouped:
        players = _players_note(X.shape[1:], next(iter(grouped.values()))["groups"], grouped, len(idx))
        settings["players"] = {k: v for k, v in players.items() if k != "note"}
        notes.append(players["note"])

    ranked = rank_rows(rows)
    if not ({"deletion", "insertion"} <= set(run_metrics) or "faithfulness_correlation" in run_metrics):
        notes.append("The ranking reads insertion - deletion and the faithfulness correlation, and neither was "
                     "run (metrics=): the table is in name order, the columns reported beside it.")
    add_reasons(ranked)
    verdict = verdict_text(ranked)
    settings["baseline"] = baseline_record(given_baseline, "feature_means", X)
    total = time.perf_counter() - start
    report_path = None
    if out is not None:
        from .report import describe_units, write_report

        f_x = None
        if x.ndim == 2 and explanations:  # the explained outputs, for the report's waterfall check
            try:
                f_x = to_numpy(wrapped.predict(x)).astype(np.float64)[np.arange(len(x)), t]
            except Exception as err:  # the check is a caption; it must not lose the report
                notes.append(f"the model's outputs for the waterfall caption failed ({type(err).__name__}: {err})")
        report_path = write_report(
            out, overwrite, ranked, verdict, notes, settings, curves, explanations, x, masks, t,
            per_sample, total, model, feature_names, units=describe_units(wrapped), f_x=f_x, rows_in_x=idx,
            columns=columns, metrics=reasons, skipped_metrics=skipped_metrics,
        )
    return _as_table(ranked, verdict, report_path, explanations, as_frame, notes, columns, reasons, skipped_metrics)


def _as_table(rows, verdict, report_path, explanations, as_frame, notes, columns=None, reasons=None, skipped=None):
    keys = row_keys(columns)
    rows = clean_rows(rows, keys)
    if as_frame is not False:
        try:
            import pandas as pd
        except ImportError:
            if as_frame:
                raise ImportError("as_frame=True needs pandas: pip install pandas") from None
        else:
            frame = pd.DataFrame(rows, columns=list(keys))
            frame["rank"] = frame["rank"].astype("Int64")
            frame.attrs.update({"verdict": verdict, "ranking_rule": RANKING_RULE, "report": report_path,
                                "notes": list(notes), "metrics": dict(reasons or {}),
                                "skipped_metrics": dict(skipped or {})})
            return frame
    table = AuditTable(rows)
    table.verdict = verdict
    table.report = report_path
    table.explanations = explanations
    table.notes = list(notes)
    table.metrics = dict(reasons or {})
    table.skipped_metrics = dict(skipped or {})
    return table

