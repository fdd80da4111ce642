"""The ``featurelens select`` command: choose the columns of a CSV file that predict a target column.

``featurelens select DATA.csv --target COLUMN -k K --method NAME [--out FILE [--overwrite]] [--seed N]`` reads
the file (pandas), fits the selector on the numeric feature columns (every column but the target),
prints the selected columns with their scores (higher = more important) and ranks (and p-values for
MinShap), and writes them as a CSV (``column,score,rank[,pvalue]``) with ``--out``; a column name
that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, tab or carriage
return), or that starts with a single quote itself, is written with a leading single quote
(:func:`csv_text_cell`; :func:`csv_text_value` reads it back). Data with fewer than 2 rows are refused; a
selection the data cannot support (all columns constant, ...) is printed with a warning. Exit codes: 0 on success, 2 for a usage error (a
missing or unreadable file, an unknown target column, non-numeric or missing feature values, a bad
``k``, an unknown method, an unusable ``--out``, executor flags that do not fit together or a missing
engine), 1 when the selector itself fails (or a cluster does not start). ``--executor
threads|processes|ray|dask`` (``--workers N``, ``--address ADDR``; minshap only) evaluates MinShap's
coalitions on an executor (``MinShapSelector(executor=...)``: the serial selection, bitwise), built
after the data are read and closed at the end. :func:`add_parser` defines the options (no torch
import for ``--help``). ``--out`` is checked
before any work: an existing file is replaced only when its first line is a header this command
writes (an earlier selection), or with ``--overwrite``; the file is written aside and renamed
into place. ``-k`` is bounded by the columns, read from the file's header before its rows;
``--workers`` as for every command (:mod:`featurelens.cli.executor`).
"""

from __future__ import annotations

import os
import sys

from .executor import add_executor_flags
from .options import non_negative_int, positive_int

__all__ = ["add_parser", "run", "METHODS", "EXECUTOR_METHODS", "OUT_HEADERS", "csv_text_cell", "csv_text_value",
           "make_selector"]

#: The first line of a file ``--out`` wrote: an existing file that starts otherwise is not replaced
#: without ``--overwrite``.
OUT_HEADERS = ("column,score,rank", "column,score,rank,pvalue")

#: method name -> (class name in featurelens.selection, whether it uses the target, whether it
#: needs k). Unsupervised selectors (nbse, minkowski) ignore the target column's values.
METHODS = {
    "sand": ("SAND", True, True),
    "minshap": ("MinShapSelector", True, False),
    "agop": ("AGOPSelector", True, False),
    "siofs": ("SIOFS", True, False),
    "nbse": ("NBSE", False, False),
    "minkowski": ("MinkowskiWeightedSelector", False, False),
    "iif_learn": ("IIFLearn", False, False),
}


#: The methods that take ``--executor`` (their selectors have ``executor=``).
EXECUTOR_METHODS = ("minshap",)


#: First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text_cell(text: str) -> str:
    """A text cell safe to open in a spreadsheet, and reversible.

    A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
    single quote (the OWASP CSV-injection rule), so a column named ``=HYPERLINK(...)`` is shown as
    text, never run as a formula. A cell that starts with a single quote gets one more, so that
    ``=a`` (written ``'=a``) and ``'=a`` (written ``''=a``) stay distinct: reading a cell back is
    dropping one leading quote when there is one (:func:`csv_text_value`). Numbers are written as
    numbers and need no escaping.

    Parameters
    ----------
    text : str
        The cell (a column name); anything else is turned into ``str`` first.

    Returns
    -------
    str
        The cell as written to the CSV file.
    """
    text = str(text)
    return "'" + text if text.startswith(_FORMULA_START + ("'",)) else text


def csv_text_value(cell: str) -> str:
    """The text that :func:`csv_text_cell` escaped into ``cell``: one leading single quote dropped.

    Parameters
    ----------
    cell : str
        A text cell as read from a CSV file written by ``featurelens select`` or ``featurelens
        explain`` (``values.csv``'s header).

    Returns
    -------
    str
        The original text: ``csv_text_value(csv_text_cell(t)) == t`` for every ``t``.
    """
    cell = str(cell)
    return cell[1:] if cell.startswith("'") else cell


def add_parser(sub) -> None:
    """The ``select`` subcommand and its options."""
    methods = tuple(sorted(METHODS))
    parser = sub.add_parser(
        "select",
        help="select the columns of a CSV file that predict a target column",
        description="Fit one of featurelens's feature selectors on the numeric columns of DATA.csv (all "
        "but the target column), print the selected columns with their scores (higher = more "
        "important) and ranks, and optionally write them to a CSV file.",
    )
    parser.add_argument("data", metavar="DATA.csv", help="a CSV file with a header row")
    parser.add_argument("--target", required=True, metavar="COLUMN", help="the column to predict")
    parser.add_argument("-k", type=positive_int, default=None, metavar="K",
                        help="number of columns to select (default: the method's own rule; sand needs K)")
    parser.add_argument("--method", required=True, choices=methods, metavar="NAME",
                        help=f"the selector: {', '.join(methods)}")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="write column,score,rank of the selection here (an existing file is replaced only "
                             "when an earlier select wrote it, or with --overwrite)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out even when it is a file select did not write")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    add_executor_flags(parser, "On it: minshap's coalitions (the fitted model's held-out predictions; --method "
                          "minshap only); the selection and scores are the serial run's, bitwise")


def _usage_error(message: str) -> int:
    print(f"featurelens select: error: {message}", file=sys.stderr)
    return 2


def make_selector(method: str, k, seed: int = 0, executor=None):
    """The selector named ``method`` with ``k`` (and ``seed`` and ``executor`` where it takes them;
    an executor for a selector without one is a ValueError)."""
    from .. import selection

    cls_name, _, _ = METHODS[method]
    cls = getattr(selection, cls_name)
    params = {"k": k}
    names = cls().get_params()
    if "seed" in names:
        params["seed"] = seed
    if executor is not None:
        if "executor" not in names:
            raise ValueError(f"{method} runs in this process only (no executor); an executor applies to "
                             f"{', '.join(EXECUTOR_METHODS)}")
        params["executor"] = executor
    return cls(**params)


def run(args) -> int:
    """Fit the selector the options name on the CSV, print (and write) the selection; the exit code."""
    import numpy as np
    import pandas as pd

    from ..report import OutError, check_out_file, replace_file
    from .executor import ExecutorUsage, check_executor_flags, command_executor

    if args.out is not None:  # before reading and fitting: a bad --out costs nothing
        try:
            check_out_file(args.out, OUT_HEADERS, args.overwrite, name="--out")
        except OutError as err:
            return _usage_error(str(err))
    try:
        check_executor_flags(args)
    except ExecutorUsage as err:
        return _usage_error(str(err))
    if getattr(args, "executor", None) is not None and args.method not in EXECUTOR_METHODS:
        return _usage_error(f"--executor applies to --method {' or '.join(EXECUTOR_METHODS)}; {args.method} runs "
                            "in this process only")
    path = args.data
    if not os.path.isfile(path):
        return _usage_error(f"DATA file {path!r} not found")
    if args.k is not None:  # bounded by the columns, read from the header before the rows
        try:
            header = pd.read_csv(path, nrows=0).columns
        except Exception as err:  # pandas raises several parser/encoding errors
            return _usage_error(f"cannot read {path!r} as CSV: {err}")
        n_header = len(header) - int(args.target in header)
        if args.k > n_header:
            return _usage_error(f"-k {args.k} is larger than the number of feature columns ({n_header})")
    try:
        frame = pd.read_csv(path)
    except Exception as err:  # pandas raises several parser/encoding errors
        return _usage_error(f"cannot read {path!r} as CSV: {err}")
    if args.target not in frame.columns:
        cols = ", ".join(map(str, frame.columns[:20])) + (" ..." if frame.shape[1] > 20 else "")
        return _usage_error(f"--target {args.target!r} is not a column of {path}; columns: {cols}")
    X = frame.drop(columns=[args.target])
    if X.shape[1] == 0:
        return _usage_error(f"{path} has no feature columns besides the target {args.target!r}")
    non_numeric = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    if non_numeric:
        return _usage_error(
            f"non-numeric feature columns: {', '.join(non_numeric[:10])}"
            f"{' ...' if len(non_numeric) > 10 else ''}; encode them as numbers or drop them"
        )
    missing = [str(c) for c in X.columns if X[c].isna().any()]
    if missing:
        return _usage_error(f"missing values in feature columns: {', '.join(missing[:10])}; impute or drop them first")
    y = frame[args.target]
    if y.isna().any():
        return _usage_error(f"the target column {args.target!r} has {int(y.isna().sum())} missing values")
    n_features = X.shape[1]
    if args.k is not None and args.k > n_features:
        return _usage_error(f"-k {args.k} is larger than the number of feature columns ({n_features})")
    _, supervised, needs_k = METHODS[args.method]
    if needs_k and args.k is None:
        return _usage_error(f"--method {args.method} needs -k (it selects exactly k columns)")

    if X.shape[0] < 2:
        return _usage_error(
            f"{path} has {X.shape[0]} data row(s); selecting columns needs at least 2 rows (one row has "
            "no spread, so no column can be told from another)"
        )

    import warnings

    from ..selection._base import DegenerateDataWarning

    X = X.astype(np.float64)
    try:
        with command_executor(args) as executor, warnings.catch_warnings(record=True) as caught:
            selector = make_selector(args.method, args.k, args.seed, executor=executor)
            warnings.simplefilter("always")
            selector.fit(X, y.to_numpy() if supervised else None)
    except ExecutorUsage as err:
        print(f"featurelens select: error: {err}", file=sys.stderr)
        return err.code
    except (ValueError, TypeError) as err:
        return _usage_error(f"{args.method}: {err}")
    except Exception as err:  # pragma: no cover - a failure of the method itself
        print(f"featurelens select: {args.method} failed: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    for w in caught:
        if issubclass(w.category, DegenerateDataWarning):
            print(f"featurelens select: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)

    support = np.asarray(selector.get_support())
    names = np.asarray(X.columns.astype(str))
    rows = sorted(
        ((int(selector.ranking_[j]), names[j], float(selector.scores_[j])) for j in np.flatnonzero(support))
    )
    # Selectors with a test (MinShap) also report each selected column's combined p-value.
    pvalues = getattr(selector, "pvalues_", None)
    pv = {} if pvalues is None else {names[j]: float(pvalues[j]) for j in range(n_features)}
    k_text = args.k if args.k is not None else "auto"
    print(f"{args.method}: {len(rows)} of {n_features} columns selected (k={k_text}) to predict {args.target!r} "
          f"from {X.shape[0]} rows; score: higher = more important")
    width = max([len("column")] + [len(r[1]) for r in rows])
    print(f"{'rank':>4}  {'column':<{width}}  {'score':<12}" + ("  p-value" if pv else ""))
    for rank, name, score in rows:
        print(f"{rank:>4}  {name:<{width}}  {score:<12.6g}" + (f"  {pv[name]:.3g}" if pv else ""))
    if args.out is not None:
        out = pd.DataFrame(
            {"column": [csv_text_cell(r[1]) for r in rows], "score": [r[2] for r in rows], "rank": [r[0] for r in rows]}
        )
        if pv:
            out["pvalue"] = [pv[r[1]] for r in rows]
        try:
            replace_file(args.out, out.to_csv(index=False))  # built aside, renamed into place
        except OSError as err:
            return _usage_error(f"cannot write --out {args.out!r}: {err}")
        print(f"written: {args.out}")
    return 0
