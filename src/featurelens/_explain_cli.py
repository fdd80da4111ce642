"""The ``featurelens explain`` command: load a model file and a data file as safely as ``audit``
does, explain the first rows with one explainer and write a report folder:

- ``values.csv`` (``values.parquet`` with ``--format parquet``, which needs pyarrow or
  fastparquet): one row per explained row, one column per feature (the data's column names, or
  ``x0, x1, ...``), then ``base_value`` (what the attributions add up from, where the method has
  one), ``target`` (the explained output index) and ``output`` (the units of the explained output
  and so of the values: ``raw``, ``probability`` or ``log_odds``, as the explainer recorded them in
  the Explanation, e.g. ``log_odds`` for tree_shap on a binary gradient boosting classifier);
- ``explanation.npz``: the :class:`~featurelens.Explanation` (:meth:`~featurelens.Explanation.save`);
- ``bar.png``, ``beeswarm.png``, ``waterfall.png`` (the first row; only when the method has base
  values): :mod:`featurelens.plots` (shap-style summary plots, Lundberg & Lee 2017,
  arXiv 1705.07874);
- ``index.html``: a self-contained page (:class:`~featurelens.report.HTMLReport`) with the figures,
  links to the files and a table of the top features.

Default method: ``kernel_shap`` (KernelSHAP, Lundberg & Lee 2017) for black-box models (scikit-learn
estimators), averaging dropped features over ``--background`` rows (default 50 sampled from the
data with ``--seed``); ``integrated_gradients`` (Sundararajan, Taly & Yan 2017, arXiv 1703.01365)
for torch models. ``--output`` is passed to the explainer as ``output=`` (every explainer takes it;
``tree_shap`` without it explains the trees' own output, e.g. a binary boosting classifier's
log-odds margin, and with ``--output probability`` that classifier's ``predict_proba`` by
interventional TreeSHAP over the background rows, which the command always gives it; units the
trees do not sum to, such as the log-odds of a tree's class fractions or the probability of a
multi-class booster, are refused as a usage error naming ``--output``). The report's efficiency line compares ``base_value + sum(values)``
with the model's ``f(x)`` in the explanation's units and calls it "holds" only within
:data:`EFFICIENCY_TOLERANCE` (relative to ``max(1, |f(x)|)``); a larger gap is stated as it is.
Data keep their precision: a CSV's float64 columns reach a scikit-learn or numpy model as float64,
a torch model gets its own dtype. Skops files load with
skops' default trusted types plus each ``--trust-type NAME``. The options are defined in :mod:`featurelens.cli` (no torch import for ``--help``).

``--executor threads|processes|ray|dask`` (with ``--workers N``, ``--address ADDR``): the rows are
explained in parts on the executor (``explain(rows, executor=...)``: per-row random streams, so
the values are the serial run's, bitwise for the Shapley explainers and SPEX, up to the last bit for
gradient methods and occlusion, whose batches then hold other rows); with fewer rows than workers a
black-box method that takes ``executor=`` gets it for its coalitions instead. The executor is built
after loading and closed at the end (:mod:`featurelens._cli_executor`).

Exit codes: 0 success; 2 usage error (an unusable ``--out``, a missing flag, an untrusted pickle, an
unknown or inapplicable method, a bad ``--target`` or ``--background``, executor flags that do not
fit together or a missing engine); 1 failure (a corrupt, mismatched or non-numeric file, an
explainer that fails, a cluster that does not start). Messages go to stderr.
"""

from __future__ import annotations

import html
import inspect
import io
import os
import sys

import numpy as np

__all__ = ["run", "MAX_ROWS", "DEFAULT_BACKGROUND", "EFFICIENCY_TOLERANCE", "parquet_engine", "explained_units",
           "explained_outputs", "efficiency_gap", "efficiency_text"]

#: Rows explained when ``--rows`` is not given: all of them, up to this many.
MAX_ROWS = 200
#: Background rows sampled from the data for black-box methods when ``--background`` is not given.
DEFAULT_BACKGROUND = 50
#: Features listed in the report's table and the printed summary.
TOP = 10
#: How the report names each output unit.
_UNITS = {"raw": "raw (the model's own outputs)", "probability": "probability",
          "log_odds": "log_odds (log(p / (1 - p)))",
          "margin": "margin (the classifier's per-class scores, its decision_function)",
          "expected_path_length": "expected path length E[h(x)] (the mean depth of x over the trees; "
                                  "decision_function = -2^(-E[h(x)] / c) - offset)"}


#: The largest gap between ``base + sum(values)`` and ``f(x)``, relative to ``max(1, |f(x)|)``,
#: that the report calls "efficiency holds"; a larger gap is printed as it is.
EFFICIENCY_TOLERANCE = 1e-6


def explained_units(e) -> str:
    """The units of an explanation's values, as the explainer recorded them: ``e.output``, or a
    unit in ``e.params["output"]`` (or ``"units"``) when the explainer recorded another one there
    (tree_shap explains a binary gradient boosting classifier's log-odds margin while the Model it
    was given returns predict_proba). Never assumed from the command line's ``--output``."""
    from .explanation import OUTPUTS

    units = getattr(e, "output", "raw") or "raw"
    params = getattr(e, "params", None) or {}
    for key in ("units", "output"):
        recorded = params.get(key)
        if isinstance(recorded, str) and recorded in OUTPUTS and recorded != units and units == "raw":
            return recorded
    return units


def _margins(model, rows) -> np.ndarray | None:
    """The classifier's own margins, float64: class 1's log-odds ``(n,)`` for a binary one, the
    per-class scores ``(n, k)`` otherwise, computed by the estimator itself (``decision_function``;
    LightGBM's ``predict(raw_score=True)``, XGBoost's ``predict(output_margin=True)``); None when it
    has none (the log-odds read back from predict_proba lose digits where p is near 0 or 1)."""
    est = model.estimator
    classes = getattr(est, "classes_", None)
    if est is None or classes is None or len(classes) < 2:
        return None
    try:
        inputs = model.decode(model.to_tensor(rows))
        package = type(est).__module__.split(".")[0]
        if package == "lightgbm":
            out = est.predict(inputs, raw_score=True)
        elif package == "xgboost":
            out = est.predict(inputs, output_margin=True)
        elif callable(getattr(est, "decision_function", None)):
            out = est.decision_function(inputs)
        else:
            return None
    except Exception:  # a model that cannot give its margin: the probabilities' log-odds instead
        return None
    out = np.asarray(out, dtype=np.float64)
    return out.reshape(-1) if out.ndim == 1 or out.shape[1:] == (1,) else out


def explained_outputs(model, rows, targets, units: str) -> np.ndarray:
    """``f(x)`` of each row's target in ``units`` (float64): the Model's outputs when it is in those
    units already; for log-odds of a binary classifier and for ``"margin"`` (a multi-class
    booster's per-class scores) the classifier's own margins (class 1's log-odds, negated for class
    0); else the Model in those units (:meth:`~featurelens.models.Model.with_output`)."""
    targets = np.asarray(targets, dtype=np.int64).reshape(-1)
    n = len(targets)
    if hasattr(model, "with_missing_values"):  # NaN cells: the model's own routing, as explained
        model = model.with_missing_values()
    if units != model.output and units in ("log_odds", "margin"):
        margin = _margins(model, rows)
        if margin is not None and margin.shape == (n,):
            return np.where(targets == 1, margin, -margin)
        if margin is not None and units == "margin" and margin.ndim == 2 and margin.shape[0] == n:
            return margin[np.arange(n), targets]
    wrapped = model if units == model.output else model.with_output(units)
    outputs = wrapped.predict(rows).detach().cpu().numpy().astype(np.float64)
    return outputs[np.arange(n), targets]


def efficiency_gap(base, values, f_x) -> dict:
    """``{"max": max_i |base_i + sum(values_i) - f(x_i)|, "relative": the same over max(1, |f(x_i)|)}``
    (float64 sums; scaled so that a model whose outputs are 1e308 is judged like one of outputs 1)."""
    base = np.asarray(base, dtype=np.float64)
    f_x = np.asarray(f_x, dtype=np.float64)
    scale = np.maximum(1.0, np.abs(f_x))
    total = base / scale + (np.asarray(values, dtype=np.float64) / scale[:, None]).sum(axis=1)
    rel = np.abs(total - f_x / scale)
    return {"max": float(np.max(rel * scale)), "relative": float(np.max(rel))}


def efficiency_text(gap: dict, units: str) -> str:
    """How the report states the efficiency check: "holds" only for a relative gap of at most
    :data:`EFFICIENCY_TOLERANCE`; otherwise the gap itself, never called efficiency."""
    if gap["relative"] <= EFFICIENCY_TOLERANCE:
        return (f"holds: base_value + sum(values) = f(x) ({units}) to {gap['max']:.3g} "
                f"(max over the rows; relative {gap['relative']:.3g})")
    return (f"does NOT hold: base_value + sum(values) differs from f(x) ({units}) by up to {gap['max']:.6g} "
            f"(relative {gap['relative']:.3g}, more than {EFFICIENCY_TOLERANCE:g})")


def _error(message: str, code: int) -> int:
    print(f"featurelens explain: error: {message}", file=sys.stderr)
    return code


class _Usage(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


def _figure(draw) -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    draw(ax)
    return _png(fig)


def parquet_engine() -> str | None:
    """The installed parquet writer pandas can use: "pyarrow", else "fastparquet", else None."""
    import importlib.util

    for name in ("pyarrow", "fastparquet"):
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def _unique_column(name: str, taken: set) -> str:
    while name in taken:
        name = "_" + name
    return name


def _background(spec, X, names, labels, seed, model=None):
    """The background rows: ``spec`` an int N (N rows of ``X`` drawn without replacement with
    ``seed``; all rows when N >= len(X)) or a data file (its label column dropped when present)."""
    from ._loading import load_data
    from ._random import numpy_rng

    frame = _is_frame(X)
    if isinstance(spec, int):
        if spec >= len(X):
            return X
        index = np.sort(numpy_rng(seed).choice(len(X), size=spec, replace=False))
        return X.iloc[index] if frame else X[index]
    with _printed_warnings():
        B, _, bnames = load_data(spec, keep_text=frame, allow_missing=True, model=model)
    if frame:
        if labels is not None and labels in B.columns and labels not in X.columns:
            B = B.drop(columns=[labels])
        if list(B.columns) != list(X.columns):
            raise _Usage(f"--background {spec} has columns {list(B.columns)[:5]}..., expected the data's "
                         f"columns {list(X.columns)[:5]}... in the same order", 1)
        return B
    if bnames is not None and labels is not None and labels in bnames and B.shape[1:] != X.shape[1:]:
        B = np.delete(B, bnames.index(labels), axis=1)
        bnames = [n for n in bnames if n != labels]
    if int(np.prod(B.shape[1:])) != int(np.prod(X.shape[1:])):
        raise _Usage(f"--background {spec} has {int(np.prod(B.shape[1:]))} values per row, the data "
                     f"{int(np.prod(X.shape[1:]))}; expected rows like the data's", 1)
    if names is not None and bnames is not None and bnames != names:
        raise _Usage(f"--background {spec} has columns {bnames[:5]}..., expected the data's columns "
                     f"{names[:5]}... in the same order", 1)
    return B.reshape((B.shape[0],) + X.shape[1:])


class _printed_warnings:
    """Print each :class:`~featurelens._loading.LoadWarning` raised inside as one line on stderr
    ("featurelens explain: warning: ..."), not as Python's file:line warning text."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings(record=True)
        self._seen = self._catch.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        import warnings

        from ._loading import LoadWarning

        self._catch.__exit__(*exc)
        for w in self._seen:
            if issubclass(w.category, LoadWarning):
                print(f"featurelens explain: warning: {w.message}", file=sys.stderr)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return False


def _is_frame(X) -> bool:
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _target(target, y, model, X):
    """The ``target=`` for the explainer: None (predicted class), an int, or the labels."""
    if target in (None, "predicted"):
        return None
    if target == "labels":
        if y is None:
            raise _Usage("--target labels needs --labels")
        from ._loading import whole_number_labels

        as_int = whole_number_labels(y)
        if as_int is None:
            raise _Usage(f"--target labels needs integer class indices; got values such as {y[0]!r}", 1)
        classes = getattr(model, "classes_", None)
        if classes is not None:  # labels are class values; outputs are indexed by position
            lookup = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
            missing = sorted({v for v in as_int.tolist() if v not in lookup})
            if missing:
                raise _Usage(f"--target labels: label(s) {missing[:5]} are not among the model's classes "
                             f"{list(lookup)[:10]}", 1)
            as_int = np.array([lookup[v] for v in as_int.tolist()], dtype=np.int64)
        return as_int
    return int(target)


def run(args) -> int:
    from ._cli_executor import ExecutorUsage, check_executor_flags
    from ._loading import LoadError, check_model_data, load_data, load_model
    from .report import OutError, check_out

    try:  # before loading anything: a bad --out or executor flag costs nothing
        check_out(args.out, "explain", args.overwrite, name="--out")
        check_executor_flags(args)
    except OutError as err:
        return _error(str(err), 2)
    except ExecutorUsage as err:
        return _error(str(err), err.code)
    if getattr(args, "format", "csv") == "parquet" and parquet_engine() is None:
        return _error("--format parquet needs a parquet writer: pip install pyarrow (or fastparquet)", 2)
    try:
        model, description = load_model(args.model, trust=args.trust_model_file,
                                        trusted_types=getattr(args, "trust_type", None) or ())
        with _printed_warnings():
            X, y, names = load_data(args.data, labels=args.labels, keep_text=True, allow_missing=True,
                                    model=model)
        if _is_frame(X) and _estimator_of(model) is None:
            raise LoadError(
                f"{args.data} has non-numeric column(s) "
                f"{[c for c, dt in X.dtypes.items() if dt.kind not in 'biuf'][:5]}; only a scikit-learn "
                "pipeline that encodes them (e.g. with a OneHotEncoder) takes them; encode them first "
                "for this model, or name the label column with --labels")
        check_model_data(model, X, args.data, names)
    except LoadError as err:
        return _error(str(err), err.exit_code)
    try:
        return _explain(args, model, description, X, y, names)
    except (_Usage, ExecutorUsage) as err:
        return _error(str(err), err.code)
    except LoadError as err:
        return _error(str(err), err.exit_code)


def _build_explainer(explainer, method, model, params, output):
    """The explainer; one that refuses the asked ``--output`` for this model (tree_shap: the
    log-odds of a tree's class fractions, the probability of a softmax booster) is a usage error
    (exit 2) naming ``--output``, told apart from other failures (exit 1) by building it once more
    without ``output=``, which costs no model call."""
    try:
        return explainer(method, model, **params)
    except (ValueError, TypeError, RuntimeError) as err:
        if output is not None:
            try:
                explainer(method, model, **{k: v for k, v in params.items() if k != "output"})
            except (ValueError, TypeError, RuntimeError):
                pass
            else:
                raise _Usage(f"--output {output} does not apply to {method} for this model: {err}", 2) from err
        raise _Usage(f"{method} failed: {err}", 1) from err


def _estimator_of(model):
    from .models._estimators import estimator_method

    return estimator_method(model)[0]


def _explain(args, model, description, X, y, names) -> int:
    from ._harness import why_not
    from .explainers import explainer, list_explainers
    from .explainers._base import explainer_class
    from .models import Model

    output = getattr(args, "output", None)
    try:
        wrapped = Model(model) if output is None else Model(model, output=output)
    except (ValueError, TypeError) as err:
        raise _Usage(f"--output {output}: {err}") from err
    method = args.method or ("integrated_gradients" if wrapped.differentiable else "kernel_shap")
    if method not in list_explainers():
        raise _Usage(f"--method {method!r} is not an explainer; expected one of {', '.join(list_explainers())}")
    cls = explainer_class(method)
    allowed = tuple(getattr(cls, "outputs", ("raw", "probability", "log_odds")))
    if wrapped.output not in allowed:
        raise _Usage(f"--output {wrapped.output} does not apply to {method}: it explains in "
                     f"{', '.join(allowed)} units only (its values come from the model's own structure, "
                     "not from calls in other units)")
    n_rows = min(len(X), MAX_ROWS) if args.rows is None else min(args.rows, len(X))
    frame = _is_frame(X)  # a table with categorical columns, for a pipeline that encodes them
    rows = X.iloc[:n_rows] if frame else X[:n_rows]
    if not wrapped.differentiable and not frame:
        rows = rows.astype(np.float64)  # estimators then run in float64: base + sum = f(x) to 1e-12
    reason = why_not(method, wrapped, rows.shape[1:])
    if reason is not None:
        raise _Usage(f"--method {method} does not apply to this model: it {reason}")

    takes = inspect.signature(cls.__init__).parameters
    params = {} if output is None else {"output": output}
    if "background" in takes:
        spec = DEFAULT_BACKGROUND if args.background is None else args.background
        background = _background(spec, X, names, args.labels, args.seed, model)
        params["background"] = background if frame else background.astype(rows.dtype)
    elif args.background is not None:
        raise _Usage(f"--background applies to methods that average over background rows "
                     f"(kernel_shap, permutation_shap, exact_shapley, ...); {method} does not take one")
    if "seed" in takes:
        params["seed"] = args.seed
    if "progress" in takes:
        params["progress"] = False
    probe = wrapped.with_missing_values() if hasattr(wrapped, "with_missing_values") else wrapped
    n_out = int(probe.predict(rows[:1]).shape[1])
    if isinstance(args.target, int) and args.target >= n_out:
        raise _Usage(f"--target {args.target} is out of range: the model has {n_out} output(s)")
    target = _target(args.target, None if y is None else y[:n_rows], model, X)

    d = int(np.prod(rows.shape[1:]))
    feature_names = names if names is not None and rows.ndim == 2 else [f"x{i}" for i in range(d)]
    from ._cli_executor import command_executor

    with command_executor(args) as executor:
        row_executor = executor
        if executor is not None and n_rows < int(executor.n_workers) and "executor" in cls.accepts:
            # Too few rows to keep the workers busy: split each row's coalitions instead.
            params["executor"], row_executor = executor, None
        ex = _build_explainer(explainer, method, model, params, output)
        try:
            e = ex.explain(rows, target=target, feature_names=feature_names, executor=row_executor)
        except (ValueError, TypeError, RuntimeError) as err:
            raise _Usage(f"{method} failed: {err}", 1) from err

    values = e.values.reshape(n_rows, d).astype(np.float64)
    base = None if e.base_values is None else np.asarray(e.base_values, dtype=np.float64).reshape(n_rows)
    targets = np.asarray(e.target).reshape(n_rows)
    units = explained_units(e)
    f_x = explained_outputs(wrapped, rows, targets, units)
    if (e.params or {}).get("explained") == "expected_path_length":
        # tree_shap of an IsolationForest explains E[h(x)]; read it back from the model's own
        # decision_function = -2 ** (-E[h(x)] / c_max_samples) - offset
        f_x = -e.params["c_max_samples"] * np.log2(-(f_x + e.params["offset"]))
        units = "expected_path_length"  # what the values add up to, not the model's raw score
    gap = None if base is None else efficiency_gap(base, values, f_x)

    # feature values for the plots: numbers (category codes for categorical columns: e.data), and
    # the first row as it is for the waterfall's labels
    data = np.asarray(e.data, dtype=np.float64).reshape(n_rows, d) if frame else rows.reshape(n_rows, d)
    first = rows.iloc[0].astype(object) if frame else data[0]
    classes = getattr(wrapped.estimator, "classes_", None)
    _write(args, e, values, base, targets, f_x, gap, feature_names, data, description, method,
           len(X), units, first_row=first, classes=classes)
    mean_abs = np.abs(values).mean(axis=0)
    order = np.argsort(-mean_abs, kind="stable")[:5]
    print(f"model: {description}; data: {os.path.basename(args.data)} {X.shape}")
    n_background = "" if "background" not in params else f" ({len(params['background'])} background rows)"
    print(f"explained {n_rows} of {len(X)} rows with {method}{n_background}, in {units} units")
    print("top features (mean |value|): " + ", ".join(f"{feature_names[i]} {mean_abs[i]:.4g}" for i in order))
    groups = beeswarm_groups(targets, classes)
    if len(groups) > 1:
        print(f"target: {_target_text(args.target, targets, classes)}; one beeswarm per class: "
              + ", ".join(f"{title} ({file})" for file, _, title, _ in groups))
    if gap is not None:
        print(f"efficiency: {efficiency_text(gap, units)}")
        print(f"row 0: base value {base[0]:.6g} + sum of values {values[0].sum():.6g} = {base[0] + values[0].sum():.6g}; "
              f"f(x) = {f_x[0]:.6g} ({units})")
    print(f"report: {os.path.abspath(args.out)}")
    return 0


def class_label(t: int, classes) -> str:
    """How the report names output ``t``: ``class <label>`` (the estimator's ``classes_[t]``), else
    ``output <t>``."""
    if classes is not None and 0 <= int(t) < len(classes):
        return f"class {np.asarray(classes).tolist()[int(t)]}"
    return f"output {int(t)}"


def beeswarm_groups(targets, classes=None) -> list:
    """The beeswarm figures: ``[(file, row indices, title, caption)]``. One beeswarm of every row
    when they all explain the same output; else one per output present (``--target predicted`` on
    a classifier explains each row's predicted class, and a class's values, e.g. class 0's
    log-odds, the negatives of class 1's, must not share one plot), titled with the class, files
    ``beeswarm_target_<t>.png``."""
    targets = np.asarray(targets).reshape(-1)
    present = np.unique(targets)
    caption = "each explained row's value per feature, coloured by the feature's value"
    if len(present) <= 1:
        title = None if not len(present) else f"{class_label(present[0], classes)} (output {int(present[0])})"
        return [("beeswarm.png", np.arange(len(targets)), title, caption)]
    groups = []
    for t in present:
        rows = np.flatnonzero(targets == t)
        name = class_label(t, classes)
        groups.append((f"beeswarm_target_{int(t)}.png", rows, f"{name} (output {int(t)}): {len(rows)} rows",
                       f"{name}: the {len(rows)} explained row(s) whose target is output {int(t)}; {caption}"))
    return groups


def _target_text(asked, targets, classes) -> str:
    """The report's target line: what was asked and, per output explained, its class and rows."""
    present, counts = np.unique(np.asarray(targets).reshape(-1), return_counts=True)
    per = ", ".join(f"{class_label(t, classes)}: {int(c)} row{'s' if c > 1 else ''}" for t, c in zip(present, counts))
    what = "predicted class" if asked in (None, "predicted") else str(asked)
    return f"{what} ({per})"


def _write(args, e, values, base, targets, f_x, gap, names, data, description, method, n_data, units,
           first_row=None, classes=None) -> None:
    import pandas as pd

    from . import plots
    from .report import HTMLReport, report_folder

    taken = set(names)
    base_col = _unique_column("base_value", taken)
    target_col = _unique_column("target", taken | {base_col})
    output_col = _unique_column("output", taken | {base_col, target_col})
    table = pd.DataFrame(values, columns=names)
    if base is not None:
        table[base_col] = base
    table[target_col] = targets
    table[output_col] = units
    values_file = "values.parquet" if getattr(args, "format", "csv") == "parquet" else "values.csv"

    figures = {
        "bar.png": (_figure(lambda ax: plots.bar(values, feature_names=names, ax=ax)),
                    "mean |value| per feature over the explained rows"),
    }
    for file, rows, title, caption in beeswarm_groups(targets, classes):
        def draw_beeswarm(ax, rows=rows, title=title):
            plots.beeswarm(values[rows], data=data[rows], feature_names=names, ax=ax)
            if title:
                ax.set_title(title, fontsize=10)

        figures[file] = (_figure(draw_beeswarm), caption)
    if base is not None:
        end = float(base[0] + values[0].sum())
        if abs(end - f_x[0]) <= EFFICIENCY_TOLERANCE * max(1.0, abs(f_x[0])):
            ends = f"to f(x) = {f_x[0]:.4g}, the model's own output ({_UNITS.get(units, units)})"
        else:
            ends = (f"to base + sum = {end:.6g}, while the model's own output is f(x) = {f_x[0]:.6g} "
                    f"({_UNITS.get(units, units)}): a gap of {abs(end - f_x[0]):.3g}, efficiency does not hold")

        def draw_waterfall(ax):
            plots.waterfall(values[0], base_value=base[0], data_row=data[0] if first_row is None else first_row,
                            feature_names=names, ax=ax)
            ax.set_xlabel(f"{class_label(targets[0], classes)} (output {targets[0]}), "
                          f"{_UNITS.get(units, units)}", fontsize=8)

        figures["waterfall.png"] = (_figure(draw_waterfall),
                                    f"row 0: from the base value {base[0]:.4g} {ends} "
                                    f"({class_label(targets[0], classes)}, output {targets[0]})")

    mean_abs = np.abs(values).mean(axis=0)
    order = np.argsort(-mean_abs, kind="stable")[:TOP]
    page = HTMLReport(f"featurelens explain: {method}",
                      f"{description}; data {os.path.basename(args.data)}; {len(values)} of {n_data} rows")
    settings = [("model", description), ("data", args.data), ("method", method), ("rows explained", len(values)),
                ("target", _target_text(args.target, targets, classes)),
                ("output units", _UNITS.get(units, units)), ("seed", args.seed)]
    if "n_background" in e.params:
        settings.append(("background rows", e.params["n_background"]))
    if gap is not None:
        settings.append(("efficiency", efficiency_text(gap, units)))
        settings.append(("row 0", f"base {base[0]:.6g} + sum of values {values[0].sum():.6g} = "
                                  f"{base[0] + values[0].sum():.6g}; f(x) = {f_x[0]:.6g}"))
    page.add_definitions(settings)
    page.add_heading("Top features")
    page.add_table([["rank", "feature", "mean |value|", "mean value"]],
                   [[str(r + 1), names[i], f"{mean_abs[i]:.4g}", f"{values[:, i].mean():.4g}"]
                    for r, i in enumerate(order)])
    page.add_heading("Figures")
    for file, (png, caption) in figures.items():
        page.add_image(png, alt=file, caption=caption)
    page.add_heading("Files")
    links = [values_file, "explanation.npz"] + list(figures)
    page.add_html("<ul>" + "".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>' for f in links)
                  + "</ul>")

    with report_folder(args.out, "explain", args.overwrite) as tmp:
        if values_file == "values.csv":
            from .selection._cli import csv_text_cell

            # a header cell such as "=HYPERLINK(...)" (a column name from the user's data) must be
            # shown as text by a spreadsheet, never run as a formula: the same escaping as select's
            table.to_csv(os.path.join(tmp, values_file), index=False,
                         header=[csv_text_cell(c) for c in table.columns])
        else:
            table.to_parquet(os.path.join(tmp, values_file), index=False, engine=parquet_engine())
        e.save(os.path.join(tmp, "explanation.npz"))
        for file, (png, _) in figures.items():
            with open(os.path.join(tmp, file), "wb") as f:
                f.write(png)
        page.save(os.path.join(tmp, "index.html"))
