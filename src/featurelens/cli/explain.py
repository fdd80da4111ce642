"""The ``featurelens explain`` command: load a model file and a data file as safely as ``audit``
does, explain the first rows with one explainer and write a report folder:

- ``values.csv`` (``values.parquet`` with ``--format parquet``, which needs pyarrow or
  fastparquet): one row per explained row, one column per feature (the data's column names, or
  ``x0, x1, ...``), then ``base_value`` (what the attributions add up from, where the method has
  one), ``target`` (the explained output index) and ``output`` (the units of the explained output
  and so of the values: ``raw``, ``probability`` or ``log_odds``, as the explainer recorded them in
  the Explanation, e.g. ``log_odds`` for tree_shap on a binary gradient boosting classifier). A
  header cell that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab, carriage
  return at its start) or that starts with a single quote gets one more leading single quote, so
  ``=a`` is written ``'=a`` and ``'=a`` is written ``''=a``: drop one leading quote to read a name
  back (:func:`featurelens.cli.select.csv_text_value`);
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
:data:`~featurelens.cli.explain_report.EFFICIENCY_TOLERANCE` (relative to ``max(1, |f(x)|)``); a larger gap is stated as it is.
Data keep their precision: a CSV's float64 columns reach a scikit-learn or numpy model as float64,
a torch model gets its own dtype. Skops files load with
skops' default trusted types plus each ``--trust-type NAME``. :func:`add_parser` defines the options (no torch import for ``--help``); the report is written by
:mod:`featurelens.cli.explain_report`.

``--executor threads|processes|ray|dask`` (with ``--workers N``, ``--address ADDR``): the rows are
explained in parts on the executor (``explain(rows, executor=...)``: per-row random streams, so
the values are the serial run's, bitwise for the Shapley explainers and SPEX, up to the last bit for
gradient methods and occlusion, whose batches then hold other rows); with fewer rows than workers a
black-box method that takes ``executor=`` gets it for its coalitions instead. The executor is built
after loading and closed at the end (:mod:`featurelens.cli.executor`).

Exit codes: 0 success; 2 usage error (an unusable ``--out``, a missing flag, an untrusted pickle, an
unknown or inapplicable method, a bad ``--target`` or ``--background``, executor flags that do not
fit together or a missing engine); 1 failure (a corrupt, mismatched or non-numeric file, an
explainer that fails, a cluster that does not start). Messages go to stderr.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys

import numpy as np

from .executor import add_executor_flags
from .explain_report import (
    beeswarm_groups, efficiency_gap, efficiency_text, explained_outputs, explained_units, parquet_engine, target_text,
    write_report,
)
from .options import add_model_and_data, add_overwrite, explainer_names, non_negative_int, output_target, positive_int

__all__ = ["add_parser", "run", "background_spec", "DEFAULT_OUT", "MAX_ROWS", "DEFAULT_BACKGROUND", "ROW_OPTIONS"]

DEFAULT_OUT = "featurelens-explain"
#: Rows explained when ``--rows`` is not given: all of them, up to this many.
MAX_ROWS = 200
#: Background rows sampled from the data for black-box methods when ``--background`` is not given.
DEFAULT_BACKGROUND = 50

#: The row counts bounded before any work (attribute, option, what one unit costs at least): every
#: coalition of a background method averages the model over the background rows.
ROW_OPTIONS = (("rows", "--rows", "(at least one per explained row)"),
               ("background", "--background", "per coalition (the model on every background row)"))


def background_spec(text: str):
    """``--background``: a number of rows (int >= 1) or a data file."""
    if text.strip().lstrip("+-").isdigit():
        n = int(text)
        if n < 1:
            raise argparse.ArgumentTypeError(f"expected a number of rows >= 1 or a data file, got {text!r}")
        return n
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a number of rows or a data file, got ''")
    return text


def _explain_method(text: str) -> str:
    names = explainer_names()
    if text not in names:
        raise argparse.ArgumentTypeError(f"unknown value {text!r}; valid choices: {', '.join(names)}")
    return text


def add_parser(sub) -> None:
    """The ``explain`` subcommand and its options."""
    parser = sub.add_parser(
        "explain",
        help="explain a model's predictions on a data file and write values, plots and an HTML page",
        description="Load a model (as for audit: skops, a LightGBM text or XGBoost JSON/UBJ model file; a "
        "TorchScript or joblib/pickle file only with "
        "--trust-model-file, since they run code from the file) and data (.npy, .npz, .csv, .parquet), explain the first rows with one "
        "explainer and write into --out: values.csv or .parquet (one row per explained row, one column "
        "per feature, base_value, target, output units), explanation.npz, bar/beeswarm/waterfall PNGs "
        "and index.html. Exit codes: 0 ok, 2 usage error, 1 failure.",
    )
    add_model_and_data(parser, state_dicts=False, skops_trust=True)
    parser.add_argument("--method", type=_explain_method, default=None, metavar="NAME",
                        help="the explainer (default: kernel_shap for black-box models such as scikit-learn "
                             "estimators, integrated_gradients for torch models)")
    parser.add_argument("--background", type=background_spec, default=None, metavar="FILE|N",
                        help="rows that dropped features are averaged over (methods that take a background): "
                             "a data file, or N rows sampled from the data with --seed (default 50; at most 10^8, "
                             "the evaluation bound)")
    parser.add_argument("--rows", type=positive_int, default=None, metavar="N",
                        help="explain the first N rows (default: all, up to 200; at most 10^8, the evaluation "
                             "bound)")
    parser.add_argument("--target", type=output_target, default=None, metavar="INT|predicted",
                        help="the explained output: an index, or the predicted class (default); "
                             "'labels' explains each row's label (with --labels)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"report folder (default: {DEFAULT_OUT})")
    add_overwrite(parser, "an earlier explain report is always replaced")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--trust-type", action="append", default=[], metavar="NAME", dest="trust_type",
                        help="for a skops file: trust the type NAME (e.g. sklearn.tree._tree.Tree) on top of "
                             "skops' default trusted types; repeatable. A refused file prints the flags it needs")
    parser.add_argument("--output", choices=("raw", "probability", "log_odds"), default=None,
                        help="units of the explained output: raw (the model's own: predict_proba for "
                             "classifiers, logits for torch models; the default), probability (softmax / "
                             "predict_proba) or log_odds (log(p / (1 - p))); tree_shap: the trees' own sum by default (a binary booster's "
                             "log-odds), probability for a binary booster or a tree's class fractions")
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv", dest="format",
                        help="file format of the values table: csv (values.csv, default) or parquet "
                             "(values.parquet; needs pyarrow or fastparquet)")
    add_executor_flags(parser, "On it: the rows, in parts (with fewer rows than workers, a black-box method's "
                          "coalitions); the values are the serial run's (a gradient method's up to the last "
                          "bit: its batches differ)")


def _error(message: str, code: int) -> int:
    print(f"featurelens explain: error: {message}", file=sys.stderr)
    return code


class _Usage(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _background(spec, X, names, labels, seed, model=None):
    """The background rows: ``spec`` an int N (N rows of ``X`` drawn without replacement with
    ``seed``; all rows when N >= len(X)) or a data file (its label column dropped when present)."""
    from .._loading import load_data
    from .._random import numpy_rng

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

        from .._loading import LoadWarning

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
        from .._loading import whole_number_labels

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
    from .._loading import LoadError, check_model_data, load_data, load_model
    from .executor import ExecutorUsage, check_out_and_executor

    code = check_out_and_executor(args, "explain")
    if code is not None:
        return code
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
    from ..models._estimators import estimator_method

    return estimator_method(model)[0]


def _explain(args, model, description, X, y, names) -> int:
    from .._harness import why_not
    from ..explainers import explainer, list_explainers
    from ..explainers._base import explainer_class
    from ..models import Model

    output = getattr(args, "output", None)
    try:
        wrapped = (Model(model) if output is None else Model(model, output=output)).with_numpy()
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
    from .executor import command_executor

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
    write_report(args, e, values, base, targets, f_x, gap, feature_names, data, description, method,
           len(X), units, first_row=first, classes=classes)
    mean_abs = np.abs(values).mean(axis=0)
    order = np.argsort(-mean_abs, kind="stable")[:5]
    print(f"model: {description}; data: {os.path.basename(args.data)} {X.shape}")
    n_background = "" if "background" not in params else f" ({len(params['background'])} background rows)"
    print(f"explained {n_rows} of {len(X)} rows with {method}{n_background}, in {units} units")
    print("top features (mean |value|): " + ", ".join(f"{feature_names[i]} {mean_abs[i]:.4g}" for i in order))
    groups = beeswarm_groups(targets, classes)
    if len(groups) > 1:
        print(f"target: {target_text(args.target, targets, classes)}; one beeswarm per class: "
              + ", ".join(f"{title} ({file})" for file, _, title, _ in groups))
    if gap is not None:
        print(f"efficiency: {efficiency_text(gap, units)}")
        print(f"row 0: base value {base[0]:.6g} + sum of values {values[0].sum():.6g} = {base[0] + values[0].sum():.6g}; "
              f"f(x) = {f_x[0]:.6g} ({units})")
    print(f"report: {os.path.abspath(args.out)}")
    return 0


