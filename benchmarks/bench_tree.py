"""Exact TreeSHAP: featurelens ``tree_shap`` against shap's TreeExplainer, side by side.

Issue 11, Acceptance 3: on a 500-tree GradientBoostingClassifier (depth 3), a 100-tree
RandomForestClassifier (depth 8) and a 500-tree LightGBM classifier (31 leaves; skipped with a note
when lightgbm is not installed), explain 1,000 rows of a generated data set
(``sklearn.datasets.make_classification``, 20 features, no download) with path-dependent TreeSHAP.
For each model it records

- ``featurelens_s``: ``fl.explainer("tree_shap", model).explain(X, target=1)`` (building the
  explainer, which reads the trees, included), median of ``--repeats``, on ONE thread
  (``numba.set_num_threads(1)``; shap's TreeExplainer is single-threaded), and
  ``featurelens_all_threads_s`` the same on every core;
- ``shap_s``: ``shap.TreeExplainer(model).shap_values(X)`` (building included), median;
- ``ratio``: featurelens_s / shap_s (goal: <= 1);
- ``numpy_engine_s``: featurelens's numpy engine (what runs when numba is not installed);
- ``floor_s``: a plain numpy floor, the time to evaluate every row on every root-to-leaf path once
  (``prod over the path of 1[x satisfies the split]``, times the leaf values: the model's output
  computed from the same path arrays). Any per-path TreeSHAP must at least read each (row, path
  element) pair, so this is the least work of the algorithm's form in numpy (the compiled kernels,
  which never build the (rows x paths x depth) arrays, can go below it);
- ``max_abs_diff``: the largest difference between the two methods' values (target: <= 1e-6), and
  ``additivity``: the largest |base + sum(values) - f(x)| of featurelens.

Then the interaction values (path-dependent, 200 rows) and interventional TreeSHAP (100 background
rows, 1,000 rows; shap's ``feature_perturbation="interventional"``), both libraries on the same
rows, one thread.

Timings need a quiet machine: ``--quick`` (100 rows, small models) only checks that the script
works and does not write results. Usage::

    python benchmarks/bench_tree.py            # full run, writes results/tree.{md,json}
    python benchmarks/bench_tree.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import environment, load_average, write_results  # noqa: E402

import featurelens as fl  # noqa: E402
from featurelens.explainers.tree import engine as tree_engine  # noqa: E402
from featurelens.explainers.tree.engine import satisfies  # noqa: E402
from featurelens.explainers.tree.ensemble import build_ensemble  # noqa: E402
from featurelens.explainers.tree.paths import prepare_rows  # noqa: E402
from featurelens.explainers.tree import (  # noqa: E402
    tree_shap_interaction_values, tree_shap_values,
)

try:
    import numba
except ImportError:  # the numpy engine runs; the thread columns then mean nothing
    numba = None

#: Rows for the interaction values (d x d per row in both libraries).
INTERACTION_ROWS = 200
#: Background rows of the interventional comparison.
BACKGROUND_ROWS = 100

RESULTS = Path(__file__).parent / "results"
N_FEATURES = 20


def data(rows: int, seed: int = 0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=rows + 2000, n_features=N_FEATURES, n_informative=8,
                               random_state=seed)
    return X[:2000], y[:2000], X[2000:]  # train, labels, rows to explain


def models(quick: bool):
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    out = [
        ("GradientBoostingClassifier", f"{20 if quick else 500} trees, depth 3",
         lambda: GradientBoostingClassifier(n_estimators=20 if quick else 500, max_depth=3, random_state=0)),
        ("RandomForestClassifier", f"{10 if quick else 100} trees, depth 8",
         lambda: RandomForestClassifier(n_estimators=10 if quick else 100, max_depth=8, random_state=0)),
    ]
    if importlib.util.find_spec("lightgbm") is not None:
        from lightgbm import LGBMClassifier

        out.append(("LGBMClassifier", f"{20 if quick else 500} trees, 31 leaves",
                    lambda: LGBMClassifier(n_estimators=20 if quick else 500, num_leaves=31,
                                           random_state=0, verbose=-1)))
    return out


def median_time(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def numpy_floor(model, X, repeats: int) -> tuple[float, np.ndarray]:
    """Median time of evaluating every row on every path once (see the module docstring)."""
    ens = build_ensemble(model)
    Xf = prepare_rows(X, "X", ens)

    def run():
        out = np.zeros((X.shape[0], ens.n_out))
        for paths in ens.paths:
            out += np.prod(satisfies(paths, Xf), axis=-1) @ paths.value
        return out + ens.offset

    return median_time(run, repeats)


def shap_class1(values) -> np.ndarray:
    """shap's values for class 1 (binary margins are already single-output)."""
    if isinstance(values, list):  # older shap: one array per class
        return np.asarray(values[1])
    values = np.asarray(values)
    return values[..., 1] if values.ndim == 3 else values


class1 = shap_class1  # featurelens's values have the same layouts (minus shap's old list form)


def raw_output(model, X) -> np.ndarray:
    """The output tree_shap explains for target 1: the margin of boosting, class 1's fraction of forests."""
    if type(model).__name__.startswith("LGBM"):
        return model.predict(X, raw_score=True)
    if type(model).__name__.startswith("Gradient"):
        return model.decision_function(X)
    return model.predict_proba(X)[:, 1]


def with_threads(n: int | None, fn):
    """Run ``fn`` with numba limited to ``n`` threads (None: all)."""
    if numba is None:
        return fn()
    previous = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS if n is None else n)
    try:
        return fn()
    finally:
        numba.set_num_threads(previous)


def with_engine(name: str, fn):
    previous = tree_engine.ENGINE
    tree_engine.ENGINE = name
    try:
        return fn()
    finally:
        tree_engine.ENGINE = previous


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows explained (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="calls per method (median time)")
    parser.add_argument("--quick", action="store_true", help="100 rows, small models; does not write results")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)
    rows_n = 100 if args.quick else args.rows
    repeats = 1 if args.quick else args.repeats
    import shap

    X_train, y_train, X = data(rows_n)
    background = X_train[:BACKGROUND_ROWS]
    results, notes, interactions, interventional = [], [], [], []
    for name, size, make in models(args.quick):
        model = make().fit(X_train, y_train)
        explain = lambda: fl.explainer("tree_shap", model).explain(X, target=1)  # noqa: E731
        with_threads(None, lambda: tree_shap_values(model, X[:2]))  # compile (cached) outside the timing
        fl_s, e = with_threads(1, lambda: median_time(explain, repeats))
        fl_all_s, _ = with_threads(None, lambda: median_time(explain, repeats))
        np_s, (np_values, _) = with_engine("numpy", lambda: median_time(
            lambda: tree_shap_values(model, X), 1))
        shap_s, sv = median_time(lambda: shap.TreeExplainer(model).shap_values(X, check_additivity=False),
                                 repeats)
        floor_s, _ = numpy_floor(model, X, repeats)
        ours = e.values
        f = raw_output(model, X)
        results.append({
            "model": name, "size": size, "rows": rows_n, "features": N_FEATURES,
            "featurelens_s": fl_s, "featurelens_all_threads_s": fl_all_s, "shap_s": shap_s,
            "ratio": fl_s / shap_s, "numpy_engine_s": np_s, "floor_s": floor_s,
            "max_abs_diff": float(np.abs(ours - shap_class1(sv)).max()),
            "numpy_engine_diff": float(np.abs(class1(np_values) - ours).max()),
            "additivity": float(np.abs(e.base_values + ours.sum(axis=1) - f).max()),
        })
        print(results[-1])
        # Interaction values (path-dependent) on the first rows: both libraries, same rows.
        m = min(rows_n, INTERACTION_ROWS)
        with_threads(None, lambda: tree_shap_interaction_values(model, X[:2]))
        fl_i, (iv, _) = with_threads(1, lambda: median_time(
            lambda: tree_shap_interaction_values(model, X[:m]), repeats))
        shap_i, si = median_time(lambda: shap.TreeExplainer(model).shap_interaction_values(X[:m]), repeats)
        si = np.asarray(si)
        if si.ndim == 4:  # (n, d, d, classes) or (classes, n, d, d): the positive class
            si = si[..., 1] if si.shape[-1] == 2 else si[1]
        iv = iv[..., 1] if iv.ndim == 4 else iv
        interactions.append({
            "model": name, "size": size, "rows": m, "featurelens_s": fl_i, "shap_s": shap_i,
            "ratio": fl_i / shap_i, "max_abs_diff": float(np.abs(iv - si).max()),
        })
        print(interactions[-1])
        # Interventional TreeSHAP over a background sample.
        fl_b, (bv, _) = with_threads(1, lambda: median_time(
            lambda: tree_shap_values(model, X, background), 1))
        shap_b, sb = median_time(lambda: shap.TreeExplainer(
            model, background, feature_perturbation="interventional").shap_values(
                X, check_additivity=False), 1)
        interventional.append({
            "model": name, "size": size, "rows": rows_n, "background_rows": len(background),
            "featurelens_s": fl_b, "shap_s": shap_b, "ratio": fl_b / shap_b,
            "max_abs_diff": float(np.abs(class1(bv) - shap_class1(sb)).max()),
        })
        print(interventional[-1])
    if importlib.util.find_spec("lightgbm") is None:
        notes.append("LightGBM: skipped, lightgbm is not installed.")
    for note in notes:
        print(note)
    if args.quick:
        bad = [r for r in results if r["max_abs_diff"] > 1e-6 or r["additivity"] > 1e-6]
        print("quick run: results not written;", "values DIFFER" if bad else "values agree to 1e-6")
        return 1 if bad else 0
    env = environment(shap=shap.__version__, numpy=np.__version__,
                      numba=None if numba is None else numba.__version__)
    table = ["# Exact TreeSHAP: featurelens tree_shap vs shap.TreeExplainer", "",
             f"{rows_n} rows x {N_FEATURES} features (make_classification), median of {repeats}; "
             f"load average {load_average()}. featurelens on one thread (shap's TreeExplainer is "
             "single-threaded); \"all threads\" uses every core.", "",
             "Path-dependent values:", "",
             "| model | size | featurelens (s) | shap (s) | ratio | all threads (s) | numpy engine (s) "
             "| numpy floor (s) | max abs diff | additivity |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        table.append(f"| {r['model']} | {r['size']} | {r['featurelens_s']:.3f} | {r['shap_s']:.3f} | "
                     f"{r['ratio']:.2f} | {r['featurelens_all_threads_s']:.3f} | {r['numpy_engine_s']:.3f} | "
                     f"{r['floor_s']:.3f} | {r['max_abs_diff']:.1e} | {r['additivity']:.1e} |")
    table += ["", "Interaction values (path-dependent, shap's convention), first rows of the same data:", "",
              "| model | size | rows | featurelens (s) | shap (s) | ratio | max abs diff |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for r in interactions:
        table.append(f"| {r['model']} | {r['size']} | {r['rows']} | {r['featurelens_s']:.3f} | {r['shap_s']:.3f} | "
                     f"{r['ratio']:.2f} | {r['max_abs_diff']:.1e} |")
    table += ["", f"Interventional values ({BACKGROUND_ROWS} background rows, one call each):", "",
              "| model | size | rows | featurelens (s) | shap (s) | ratio | max abs diff |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for r in interventional:
        table.append(f"| {r['model']} | {r['size']} | {r['rows']} | {r['featurelens_s']:.3f} | {r['shap_s']:.3f} | "
                     f"{r['ratio']:.2f} | {r['max_abs_diff']:.1e} |")
    table += [""] + [f"- {n}" for n in notes] + [""]
    write_results(args.out, "tree", "\n".join(table),
                  {"environment": env, "load_average": load_average(), "rows": results,
                   "interactions": interactions, "interventional": interventional, "notes": notes})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
