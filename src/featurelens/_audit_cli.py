"""The ``featurelens audit`` command: load a model file and a data file safely, run
:func:`featurelens.audit` and write its HTML report.

The contract with featurelens.cli: HELP, DESCRIPTION, add_arguments(parser), run(args) -> int.
Exit codes: 0 success; 2 usage error (a missing option or flag, an unsupported file type, an
untrusted pickle without ``--trust-model-file``, a bad ``--target``); 1 failure (a corrupt,
mismatched or non-numeric file, or an audit that fails). Messages go to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys

HELP = "score every applicable explainer on a model and data and write a report"
DESCRIPTION = (
    "Load a model (TorchScript; a torch state dict with --architecture; a scikit-learn model "
    "from a skops file; a joblib/pickle file only with --trust-model-file, since unpickling runs "
    "code) and data (.npy, .npz, .csv, .parquet), run every applicable explainer, score the maps "
    "for faithfulness (deletion/insertion, faithfulness correlation), robustness (sensitivity), "
    "complexity and randomisation, rank them and write a self-contained HTML report with "
    "results.json and results.csv. Exit codes: 0 ok, 2 usage error, 1 failure."
)
DEFAULT_OUT = "featurelens-audit"


def _shape(text: str) -> tuple[int, ...]:
    parts = [p for p in text.replace("x", ",").split(",") if p.strip()]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a shape such as 1,8,8; got {text!r}") from None
    if not shape or any(s < 1 for s in shape):
        raise argparse.ArgumentTypeError(f"expected a shape of positive ints such as 1,8,8; got {text!r}")
    return shape


def _target(text: str):
    if text in ("predicted", "labels"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an output index (int >= 0), 'predicted' or 'labels'; got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an output index >= 0; got {text!r}")
    return value


def add_arguments(parser) -> None:
    from ._argtypes import non_negative_int, positive_int
    from .bench.models import MODELS
    from .cli import _Choices
    from .explainers import list_explainers

    parser.add_argument("--model", required=True, metavar="FILE",
                        help="TorchScript (.pt), torch state dict (with --architecture), skops (.skops), "
                             "or joblib/pickle (.joblib, .pkl; needs --trust-model-file)")
    parser.add_argument("--data", required=True, metavar="FILE", help="inputs: .npy, .npz, .csv or .parquet (rows = samples)")
    parser.add_argument("--labels", default=None, metavar="FILE|COLUMN",
                        help="labels: a column of the CSV/parquet data, an array name in the .npz, or a .npy/.csv file")
    parser.add_argument("--target", type=_target, default=None, metavar="INT|predicted|labels",
                        help="the explained output: an index, the predicted class, or the labels "
                             "(default: the labels when given, else the predicted class)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"report folder (default: {DEFAULT_OUT})")
    parser.add_argument("--trust-model-file", action="store_true",
                        help="allow a pickle/joblib model file (unpickling runs code from the file: only for files you trust)")
    parser.add_argument("--architecture", default=None, choices=tuple(MODELS), metavar="NAME",
                        help=f"built-in architecture of a state dict: {', '.join(MODELS)}")
    parser.add_argument("--image-size", type=int, choices=(8, 64), default=None,
                        help="input size of the built-in architecture (default: the one the weights fit)")
    parser.add_argument("--input-shape", type=_shape, default=None, metavar="SHAPE",
                        help="shape of one sample to reshape flat rows into, e.g. 1,8,8")
    parser.add_argument("--methods", nargs="+", action=_Choices, valid=list_explainers(), metavar="NAME",
                        help="explainer names (default: every applicable one, and random)")
    parser.add_argument("--n-explain", type=positive_int, default=32, metavar="N",
                        help="samples audited (a seeded subset; default 32)")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


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
                     f"  {r['status']}")
    if skipped:
        lines.append(f"not applicable (reasons in the report): {', '.join(skipped)}")
    return "\n".join(lines)


def run(args) -> int:
    import numpy as np

    from ._audit import audit
    from ._loading import LoadError, check_model_data, load_data, load_model

    try:
        model, description = load_model(
            args.model, architecture=args.architecture, image_size=args.image_size, trust=args.trust_model_file
        )
        X, y, names = load_data(args.data, labels=args.labels, input_shape=args.input_shape)
        check_model_data(model, X, args.data)
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
        from ._loading import as_callable
        from .models import Model

        n_out = int(Model(as_callable(model)).predict(X[:1]).shape[1])
        if target >= n_out:
            return _error(f"--target {target} is out of range: the model has {n_out} output(s)", 2)
    if y is not None and not hasattr(model, "classes_") and np.asarray(y).dtype.kind not in "iu":
        try:
            as_int = np.asarray(y).astype(np.int64)
            # float labels (a CSV column of 0.0/1.0) are fine; 1.5 would be truncated to class 1.
            integral = bool(np.all(as_int == np.asarray(y, dtype=np.float64)))
        except (TypeError, ValueError):
            integral = False
        if not integral:
            return _error(f"the labels must be integer class indices for this model; got values such as {y[0]!r}", 1)
        y = as_int

    try:
        table = audit(
            model, X, y, methods=args.methods, out=args.out, n_explain=args.n_explain, seed=args.seed,
            progress=False if args.no_progress else None, target=target,
            feature_names=names if names is not None and X.ndim == 2 else None,
        )
    except (ValueError, TypeError) as err:
        return _error(str(err), 1)
    attrs = table.attrs if hasattr(table, "attrs") else {"verdict": table.verdict, "report": table.report}
    print(f"model: {description}; data: {os.path.basename(args.data)} {X.shape}")
    print(_format(table))
    print()
    print(attrs["verdict"])
    print(f"report: {os.path.abspath(attrs['report'])}")
    return 0
