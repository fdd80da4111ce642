"""The ``featurelens select`` command: choose the columns of a CSV file that predict a target column.

``featurelens select DATA.csv --target COLUMN -k K --method NAME [--out FILE] [--seed N]`` reads
the file (pandas), fits the selector on the numeric feature columns (every column but the target),
prints the selected columns with their scores (higher = more important) and ranks (and p-values for
MinShap), and writes them as a CSV (``column,score,rank[,pvalue]``) with ``--out``. Exit codes: 0 on success, 2 for a usage error (a
missing or unreadable file, an unknown target column, non-numeric or missing feature values, a bad
``k``, an unknown method), 1 when the selector itself fails.
"""

from __future__ import annotations

import os
import sys

from .._argtypes import non_negative_int as _non_negative_int
from .._argtypes import positive_int as _positive_int

HELP = "select the columns of a CSV file that predict a target column"
DESCRIPTION = (
    "Fit one of featurelens's feature selectors on the numeric columns of DATA.csv (all but the "
    "target column), print the selected columns with their scores (higher = more important) and "
    "ranks, and optionally write them to a CSV file."
)

#: method name -> (class name in featurelens.selection, whether it uses the target, whether it
#: needs k). Unsupervised selectors (nbse, minkowski) ignore the target column's values.
METHODS = {
    "sand": ("SAND", True, True),
    "minshap": ("MinShapSelector", True, False),
    "agop": ("AGOPSelector", True, False),
    "siofs": ("SIOFS", True, False),
    "nbse": ("NBSE", False, False),
    "minkowski": ("MinkowskiWeightedSelector", False, False),
}


def add_arguments(parser) -> None:
    parser.add_argument("data", metavar="DATA.csv", help="a CSV file with a header row")
    parser.add_argument("--target", required=True, metavar="COLUMN", help="the column to predict")
    parser.add_argument(
        "-k", type=_positive_int, default=None, metavar="K",
        help="number of columns to select (default: the method's own rule; sand needs K)",
    )
    parser.add_argument(
        "--method", required=True, choices=sorted(METHODS), metavar="NAME",
        help=f"the selector: {', '.join(sorted(METHODS))}",
    )
    parser.add_argument("--out", default=None, metavar="FILE", help="write column,score,rank of the selection here")
    parser.add_argument("--seed", type=_non_negative_int, default=0, metavar="N", help="random seed (default 0)")


def _usage_error(message: str) -> int:
    print(f"featurelens select: error: {message}", file=sys.stderr)
    return 2


def make_selector(method: str, k, seed: int = 0):
    """The selector named ``method`` with ``k`` (and ``seed`` where it takes one)."""
    from .. import selection

    cls_name, _, _ = METHODS[method]
    cls = getattr(selection, cls_name)
    params = {"k": k}
    if "seed" in cls().get_params():
        params["seed"] = seed
    return cls(**params)


def run(args) -> int:
    import numpy as np
    import pandas as pd

    path = args.data
    if not os.path.isfile(path):
        return _usage_error(f"DATA file {path!r} not found")
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

    selector = make_selector(args.method, args.k, args.seed)
    X = X.astype(np.float64)
    try:
        selector.fit(X, y.to_numpy() if supervised else None)
    except (ValueError, TypeError) as err:
        return _usage_error(f"{args.method}: {err}")
    except Exception as err:  # pragma: no cover - a failure of the method itself
        print(f"featurelens select: {args.method} failed: {type(err).__name__}: {err}", file=sys.stderr)
        return 1

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
    if args.out:
        out = pd.DataFrame({"column": [r[1] for r in rows], "score": [r[2] for r in rows], "rank": [r[0] for r in rows]})
        if pv:
            out["pvalue"] = [pv[r[1]] for r in rows]
        try:
            out.to_csv(args.out, index=False)
        except OSError as err:
            return _usage_error(f"cannot write --out {args.out!r}: {err}")
        print(f"written: {args.out}")
    return 0
