"""Feature selection: featurelens's selectors side by side with scikit-learn's and Boruta.

Data (all generated or bundled with scikit-learn; nothing downloads):

- planted: ``make_classification(n_samples=1000, n_features=50, n_informative=5, n_redundant=0,
  shuffle=False, random_state=0)`` (truth: columns 0-4), k = 5;
- friedman1: ``make_friedman1(n_samples=1000, n_features=20, random_state=0)`` (regression; truth:
  columns 0-4), k = 5;
- xor: 1000 standard normal rows x 20 columns, ``y = [x_0 x_1 > 0]`` (truth: columns 0-1; no
  marginal signal), k = 2;
- the columns of these three are then shuffled (seeded), so that ties broken by column index
  cannot favour the informative columns;
- breast_cancer (569 x 30), wine (178 x 13), digits (1797 x 64; the constant pixels are kept), k = 5,
  5 and 10.

Every method sees the same standardised X (z-scores over all rows). Methods:

- featurelens: SAND, MinShapSelector (``n_permutations=10`` instead of the default 20, for time),
  AGOPSelector (default RFM), SIOFS (classification only), and the unsupervised NBSE and
  MinkowskiWeightedSelector (they ignore y), otherwise with their defaults and ``k``;
- scikit-learn 1.9: ``SelectKBest`` with ``f_classif`` / ``f_regression`` and with
  ``mutual_info_classif`` / ``mutual_info_regression`` (random_state=0), ``RFE`` with logistic
  regression / linear regression (``step=0.1``: 10% of the remaining features dropped per round), ``SelectFromModel`` with a 100-tree random forest
  (``max_features=k``, ``threshold=-inf``);
- Boruta (``boruta`` 0.4.x, ``BorutaPy`` with a depth-5 random forest, ``n_estimators="auto"``,
  ``max_iter=30`` instead of 100 to keep the run short, seeded): it chooses its own number of
  features (the confirmed ones; if none, the tentative ones); ``k`` in its row is that number.
  mrmr-selection is run when installed (``mrmr_classif`` / ``mrmr_regression``), skipped otherwise.

Measured, per data set and method:

- ``truth``: |selected & informative| / |informative| on the planted data sets;
- ``score``: 3-fold cross-validated accuracy (R^2 for friedman1) of a fixed 100-tree random forest
  (random_state=0) on the selected columns. The selection itself used all rows (the same
  optimistic bias for every method); ``all columns`` gives the forest on every column;
- ``nogueira`` / ``jaccard``: ``featurelens.selection.stability`` over ``--bootstrap`` bootstrap
  resamples (default 3, far fewer than the 30 of the issue's example, to keep the run short: the
  indices are then noisy, +-0.1 or so); not measured for Boruta (5-20 s per fit);
- ``fit s``: wall time of one fit on all rows.

Usage: .venv/bin/python benchmarks/bench_selection.py [--bootstrap 5] [--datasets planted,xor] [--quick]
(``--quick``: 2 bootstrap resamples, no stability for MinShap either). Writes
benchmarks/results/selection.md and selection.json.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification, make_friedman1
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.feature_selection import (
    RFE,
    SelectFromModel,
    SelectKBest,
    SelectorMixin,
    f_classif,
    f_regression,
    mutual_info_classif,
    mutual_info_regression,
)
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

import featurelens.selection as fs
from _common import environment, load_average, write_results

RESULTS = Path(__file__).resolve().parent / "results"


# -- data ------------------------------------------------------------------------------------------
def _permuted(X, truth, seed):
    """Shuffle the columns (seeded) and return the new positions of the informative ones: with
    the informative columns first, a selector with tied scores (ties go to the lower index) would
    look perfect by accident."""
    perm = np.random.default_rng(seed).permutation(X.shape[1])
    return X[:, perm], sorted(int(np.flatnonzero(perm == t)[0]) for t in truth)


def datasets():
    X, y = make_classification(n_samples=1000, n_features=50, n_informative=5, n_redundant=0, shuffle=False, random_state=0)
    Xp, truth = _permuted(X, [0, 1, 2, 3, 4], 1)
    yield "planted", Xp, y, "classification", 5, truth
    X, y = make_friedman1(n_samples=1000, n_features=20, random_state=0)
    Xp, truth = _permuted(X, [0, 1, 2, 3, 4], 2)
    yield "friedman1", Xp, y, "regression", 5, truth
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 20))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    Xp, truth = _permuted(X, [0, 1], 3)
    yield "xor", Xp, y, "classification", 2, truth
    for name, loader, k in (("breast_cancer", load_breast_cancer, 5), ("wine", load_wine, 5), ("digits", load_digits, 10)):
        data = loader()
        yield name, data.data.astype(np.float64), data.target, "classification", k, None


def standardise(X):
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


# -- adapters for the libraries without a selector interface ----------------------------------------
class BorutaSelector(SelectorMixin, BaseEstimator):
    """BorutaPy behind ``get_support``: the confirmed features (the tentative ones if none is)."""

    def __init__(self, task="classification", max_iter=30, seed=0):
        self.task = task
        self.max_iter = max_iter
        self.seed = seed

    def fit(self, X, y):
        from boruta import BorutaPy

        forest = (RandomForestClassifier if self.task == "classification" else RandomForestRegressor)(
            max_depth=5, n_jobs=1, random_state=self.seed
        )
        b = BorutaPy(forest, n_estimators="auto", max_iter=self.max_iter, random_state=self.seed, verbose=0)
        b.fit(np.asarray(X), np.asarray(y))
        support = np.asarray(b.support_, bool)
        self.support_ = support if support.any() else np.asarray(b.support_weak_, bool)
        self.n_features_in_ = X.shape[1]
        return self

    def _get_support_mask(self):
        return self.support_


class MRMRSelector(SelectorMixin, BaseEstimator):
    """mrmr-selection's ``mrmr_classif`` / ``mrmr_regression`` behind ``get_support``."""

    def __init__(self, k=5, task="classification"):
        self.k = k
        self.task = task

    def fit(self, X, y):
        import pandas as pd
        import mrmr

        frame = pd.DataFrame(np.asarray(X), columns=[f"c{j}" for j in range(X.shape[1])])
        fn = mrmr.mrmr_classif if self.task == "classification" else mrmr.mrmr_regression
        chosen = fn(X=frame, y=pd.Series(np.asarray(y)), K=self.k, show_progress=False)
        self.support_ = np.isin(np.arange(X.shape[1]), [int(c[1:]) for c in chosen])
        self.n_features_in_ = X.shape[1]
        return self

    def _get_support_mask(self):
        return self.support_


def methods(task: str, k: int, n_classes: int | None):
    """(name, selector, supervised) in table order."""
    clf = task == "classification"
    out = [
        ("fl SAND", fs.SAND(k=k, seed=0), True),
        ("fl MinShap", fs.MinShapSelector(k=k, n_permutations=10, seed=0), True),
        ("fl AGOP (RFM)", fs.AGOPSelector(k=k, seed=0), True),
    ]
    if clf:
        out.append(("fl SIOFS", fs.SIOFS(k=k), True))
    out += [
        ("fl NBSE (unsup.)", fs.NBSE(k=k), False),
        ("fl FS-MWK++ (unsup.)", fs.MinkowskiWeightedSelector(k=k, seed=0), False),
        ("sk f-test", SelectKBest(f_classif if clf else f_regression, k=k), True),
        (
            "sk mutual info",
            SelectKBest(partial(mutual_info_classif if clf else mutual_info_regression, random_state=0), k=k),
            True,
        ),
        (
            "sk RFE (linear)",
            RFE(LogisticRegression(max_iter=2000) if clf else LinearRegression(), n_features_to_select=k, step=0.1),
            True,
        ),
        (
            "sk SelectFromModel (RF)",
            SelectFromModel(
                (RandomForestClassifier if clf else RandomForestRegressor)(n_estimators=100, random_state=0, n_jobs=1),
                max_features=k,
                threshold=-np.inf,
            ),
            True,
        ),
    ]
    try:
        import boruta  # noqa: F401

        out.append(("Boruta (own k)", BorutaSelector(task=task, seed=0), True))
    except ImportError:
        pass
    try:
        import mrmr  # noqa: F401

        out.append(("mRMR", MRMRSelector(k=k, task=task), True))
    except ImportError:
        pass
    return out


def downstream(X, y, task: str, support) -> float:
    if not np.any(support):
        return float("nan")
    if task == "classification":
        model = RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1)
        cv = StratifiedKFold(3, shuffle=True, random_state=0)
        scoring = "accuracy"
    else:
        model = RandomForestRegressor(n_estimators=100, random_state=0, n_jobs=1)
        cv = KFold(3, shuffle=True, random_state=0)
        scoring = "r2"
    return float(cross_val_score(model, X[:, support], y, cv=cv, scoring=scoring).mean())


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", type=int, default=3, help="bootstrap resamples for stability (>= 2)")
    parser.add_argument("--datasets", default=None, help="comma-separated subset of the data sets")
    parser.add_argument("--quick", action="store_true", help="2 resamples, no stability for MinShap")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the selectors' tiny networks run fastest on one thread
    warnings.filterwarnings("ignore")
    # Every method runs single-threaded (BLAS and OpenMP too): the same footing for all, and on a
    # shared 2-core machine multi-threaded BLAS made a logistic regression on digits 15x slower.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _run(args)


def _run(args) -> int:
    B = 2 if args.quick else max(2, args.bootstrap)
    wanted = None if args.datasets is None else set(args.datasets.split(","))
    started = time.perf_counter()
    records, tables = [], []
    for name, X, y, task, k, truth in datasets():
        if wanted is not None and name not in wanted:
            continue
        X = standardise(X)
        n_classes = len(np.unique(y)) if task == "classification" else None
        rows = [("all columns", X.shape[1], None, downstream(X, y, task, np.ones(X.shape[1], bool)), None, None, None)]
        for label, selector, supervised in methods(task, k, n_classes):
            t0 = time.perf_counter()
            est = clone(selector).fit(X, y) if supervised else clone(selector).fit(X)
            seconds = time.perf_counter() - t0
            support = np.asarray(est.get_support(), bool)
            found = None if truth is None else len(set(np.flatnonzero(support)) & set(truth)) / len(truth)
            score = downstream(X, y, task, support)
            nog = jac = None
            if not label.startswith("Boruta") and not (args.quick and label.startswith("fl MinShap")):
                st = fs.stability(selector, X, y if supervised else None, n_bootstrap=B, seed=0)
                nog, jac = st["nogueira"], st["jaccard"]
            rows.append((label, int(support.sum()), found, score, nog, jac, seconds))
            records.append(
                dict(dataset=name, method=label, k=int(support.sum()), selected=np.flatnonzero(support).tolist(),
                     truth_found=found, score=score, nogueira=nog, jaccard=jac, fit_seconds=seconds)
            )
            print(f"{name:>13}  {label:<24} k={int(support.sum()):>2} truth={fmt(found, 2)} score={fmt(score)} "
                  f"nogueira={fmt(nog, 2)} fit={seconds:.2f}s", flush=True)
        metric = "accuracy" if task == "classification" else "R^2"
        lines = [
            f"### {name} ({X.shape[0]} x {X.shape[1]}, {task}, k = {k}"
            + (f", informative columns {truth}" if truth is not None else "") + ")",
            "",
            f"| method | k | truth found | RF {metric} (3-fold) | Nogueira | Jaccard | fit s |",
            "|---|---|---|---|---|---|---|",
        ]
        for label, kk, found, score, nog, jac, sec in rows:
            lines.append(f"| {label} | {kk} | {fmt(found, 2)} | {fmt(score)} | {fmt(nog, 2)} | {fmt(jac, 2)} | "
                         f"{fmt(sec, 2)} |")
        tables.append("\n".join(lines))
    total = time.perf_counter() - started
    env = environment(sklearn=__import__("sklearn").__version__, load_average=load_average(),
                      blas_openmp_threads=1)
    with_boruta = any(r["method"].startswith("Boruta") for r in records)
    header = (
        "# Feature selection benchmark\n\n"
        f"Stability over {B} bootstrap resamples (not for Boruta{', nor MinShap: --quick' if args.quick else ''}); "
        "RF = a fixed 100-tree random forest, 3-fold CV on the selected columns. "
        f"Boruta {'included' if with_boruta else 'not installed'}; mrmr-selection "
        f"{'included' if any(r['method'] == 'mRMR' for r in records) else 'not installed (skipped)'}. "
        f"Total {total:.0f} s on {env['cpu']} ({env['logical_cpus']} logical CPUs, torch threads "
        f"{env['threads']}, BLAS/OpenMP threads 1, load average {env['load_average']}).\n\n"
    )
    table = header + "\n\n".join(tables) + "\n"
    print()
    print(table)
    write_results(args.out, "selection", table, {"environment": env, "bootstrap": B, "quick": args.quick,
                                                 "total_seconds": total, "results": records})
    return 0


if __name__ == "__main__":
    sys.exit(main())
