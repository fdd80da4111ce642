"""The ``featurelens audit`` command: load a model file and a data file safely, run
:func:`featurelens.audit` and write its HTML report. Its options are defined in
:mod:`featurelens.cli` (no torch import for ``--help``); :func:`run` does the work.

``--metrics NAME ...`` (or ``all``) chooses the metrics (:func:`featurelens.audit`'s ``metrics=``).

``--executor threads|processes|ray|dask`` (with ``--workers N``, ``--address ADDR``) runs the audit
on an executor (:func:`featurelens.audit`'s ``executor=``), built when the audit starts and closed
when it ends (:mod:`featurelens.cli.executor`).

Exit codes: 0 success; 2 usage error (a missing option or flag, an unsupported file type, an
untrusted pickle without ``--trust-model-file``, a bad ``--target``, an unusable ``--out``, executor
flags that do not fit together or a missing engine: ``pip install featurelens[ray]``); 1 failure (a
corrupt, mismatched or non-numeric file, an audit that fails, a cluster that does not start).
Messages go to stderr.
"""

from __future__ import annotations

import os
import sys

from ..groundtruth.settings import MODEL_NAMES
from .executor import add_executor_flags
from .options import Choices, add_model_and_data, add_overwrite, explainer_names, non_negative_int, output_target, positive_int, shape

__all__ = ["add_parser", "run", "DEFAULT_OUT", "ROW_OPTIONS"]

DEFAULT_OUT = "featurelens-audit"

#: The row counts bounded before any work (attribute, option, what one unit costs at least).
ROW_OPTIONS = (("n_explain", "--n-explain", "(at least one per audited row)"),)


def metric_names():
    """The audit's metric names and ``all`` (imports the metrics: called only when --metrics is given)."""
    from .._audit.scoring import audit_specs

    return (*audit_specs(), "all")


def add_parser(sub) -> None:
    """The ``audit`` subcommand and its options."""
    parser = sub.add_parser(
        "audit",
        help="score every applicable explainer on a model and data and write a report",
        description="Load a model (a torch state dict with --architecture or a scikit-learn model from a "
        "skops file or a LightGBM/XGBoost booster file, which load without running code; a TorchScript or joblib/pickle file only with "
        "--trust-model-file, since they contain code that runs at load) and data (.npy, .npz, .csv, .parquet), run every applicable explainer, score the "
        "maps for faithfulness (deletion/insertion, faithfulness correlation), robustness "
        "(sensitivity), complexity and randomisation, rank them and write a self-contained HTML "
        "report with results.json and results.csv. Exit codes: 0 ok, 2 usage error, 1 failure.",
    )
    add_model_and_data(parser, state_dicts=True, skops_trust=False)
    parser.add_argument("--target", type=output_target, default=None, metavar="INT|predicted|labels",
                        help="the explained output: an index, the predicted class, or the labels "
                             "(default: the labels when given, else the predicted class)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"report folder (default: {DEFAULT_OUT})")
    add_overwrite(parser, "an earlier audit report is always replaced")
    parser.add_argument("--architecture", default=None, choices=MODEL_NAMES, metavar="NAME",
                        help=f"built-in architecture of a state dict: {', '.join(MODEL_NAMES)}")
    parser.add_argument("--image-size", type=int, choices=(8, 64), default=None,
                        help="input size of the built-in architecture (default: the one the weights fit)")
    parser.add_argument("--input-shape", type=shape, default=None, metavar="SHAPE",
                        help="shape of one sample to reshape flat rows into, e.g. 1,8,8")
    parser.add_argument("--methods", nargs="+", action=Choices, valid=explainer_names, metavar="NAME",
                        help="explainer names (default: every applicable one, and random)")
    parser.add_argument("--metrics", nargs="+", action=Choices, valid=metric_names, metavar="NAME",
                        help="metric names, or all (default: deletion, insertion, faithfulness_correlation, "
                             "avg/max_sensitivity, sparseness, complexity, model_randomization); also road, irof, "
                             "selectivity, region_perturbation, sensitivity_n, monotonicity, continuity, "
                             "random_logit, efficient_mprt, completeness, ... (a wrong name lists them all)")
    parser.add_argument("--n-explain", type=positive_int, default=32, metavar="N",
                        help="samples audited (a seeded subset; default 32; at most 10^8, the evaluation bound)")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_executor_flags(parser, "On it: each method's explanation of the audited rows (in parts), their noisy and "
                          "randomised re-explanations, and the metrics' forward passes; the scores are the serial "
                          "run's (a gradient method's maps up to the last bit: its batches differ)")


def _error(message: str, code: int) -> int:
    print(f"featurelens audit: error: {message}", file=sys.stderr)
    return code


def _format(table) -> str:
    rows = table.to_dict("records") if hasattr(table, "to_dict") else list(table)
    head = f"{'rank':>4}  {'method':<22} {'ins-del':>8} {'faithf.':>8} {'avg sens':>9}  status"
    lines = [head]
    skipped = [r["method"] for r in rows if r["status"] == "n/a"]
    for r in rows:
        if r["status"] == "n/a":
            continue
        def f(key):
            v = r.get(key)
            try:
                return f"{float(v):8.3f}" if v is not None and float(v) == float(v) else "     n/a"
            except (TypeError, ValueError):
                return "     n/a"
        rank = "" if r.get("rank") is None or str(r.get("rank")) == "<NA>" else str(r["rank"])
        lines.append(f"{rank:>4}  {r['method']:<22} {f('insertion_minus_deletion')} "
                     f"{f('faithfulness_correlation')} {f('avg_sensitivity')} "
                     f"  {r['status']}" + (f": {r.get('reason')}" if r["status"] != "ok" and r.get("reason") else ""))
    if skipped:
        lines.append(f"not applicable (reasons in the report): {', '.join(skipped)}")
    return "\n".join(lines)


def run(args) -> int:
    """Load the model and data the options name, audit them and print the ranking; the exit code."""
    import numpy as np

    from .._audit.core import audit
    from .._loading import LoadError, check_model_data, load_data, load_model
    from .executor import ExecutorUsage, check_out_and_executor, command_executor

    code = check_out_and_executor(args, "audit")
    if code is not None:
        return code

    try:
        model, description = load_model(
            args.model, architecture=args.architecture, image_size=args.image_size, trust=args.trust_model_file
        )
        X, y, names = load_data(args.data, labels=args.labels, input_shape=args.input_shape)
        check_model_data(model, X, args.data, names)
    except LoadError as err:
        return _error(str(err), err.exit_code)

    target = args.target
    if target == "labels":
        if y is None:
            return _error("--target labels needs --labels", 2)
        target = None
    elif target == "predicted":
        target, y = None, None  # explain the predicted class even when labels are given
    if isinstance(target, int):
        from ..models import Model

        n_out = int(Model(model).predict(X[:1]).shape[1])
        if target >= n_out:
            return _error(f"--target {target} is out of range: the model has {n_out} output(s)", 2)
    if y is not None and not hasattr(model, "classes_") and np.asarray(y).dtype.kind not in "iu":
        from .._loading import whole_number_labels

        as_int = whole_number_labels(y)
        if as_int is None:
            return _error(f"the labels must be integer class indices for this model; got values such as {y[0]!r}", 1)
        y = as_int

    try:
        with command_executor(args) as executor:
            table = audit(
                model, X, y, methods=args.methods, metrics=getattr(args, "metrics", None), out=args.out, n_explain=args.n_explain, seed=args.seed,
                progress=False if args.no_progress else None, target=target,
                feature_names=names if names is not None and X.ndim == 2 else None, overwrite=args.overwrite,
                executor=executor,
            )
    except ExecutorUsage as err:
        return _error(str(err), err.code)
    except (ValueError, TypeError) as err:
        return _error(str(err), 1)
    attrs = table.attrs if hasattr(table, "attrs") else {"verdict": table.verdict, "report": table.report}
    print(f"model: {description}; data: {os.path.basename(args.data)} {X.shape}")
    print(_format(table))
    print()
    print(attrs["verdict"])
    print(f"report: {os.path.abspath(attrs['report'])}")
    return 0
