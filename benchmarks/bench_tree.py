"""Exact TreeSHAP: featurelens ``tree_shap`` against shap's TreeExplainer, side by side, on a grid.

Issue 32, item 4: featurelens / shap <= 1.0 from 1 row x 10 trees to 10,000 rows x 500 trees, for
SHAP values and SHAP interaction values, on a GradientBoostingClassifier (depth 3), a
RandomForestClassifier (depth 8), a LightGBM classifier (31 leaves) and an XGBoost classifier
(depth 6), fitted on 2,000 rows of ``make_classification`` (20 features, no download); the rows
explained are other rows of the same data set. For every cell, in one process:

- ``featurelens_s``: ``ex.explain(X, target=1)`` on a built explainer (``fl.explainer("tree_shap",
  model)``, with ``interactions=True`` for the interaction values): an Explanation (values, base
  values, data, names, units), numba's default threads;
- ``shap_s``: ``se(X, check_additivity=False)`` (``interactions=True`` for the interaction values) on a
  built ``shap.TreeExplainer(model)``: shap's Explanation, shap's defaults (its C++ code for the
  scikit-learn models, one thread; for LightGBM and XGBoost the libraries' own multi-threaded
  ``pred_contrib`` / ``pred_contribs`` / ``pred_interactions``, which shap calls);
- ``ratio``: featurelens_s / shap_s, the like-for-like figure (goal: <= 1);
- the two calls alternate (featurelens first on even repeats, shap first on odd ones) and each
  keeps its best of ``repeats`` (``--repeats``, fewer where one call takes longer than
  ``--cell-seconds`` allows; the count used is recorded per cell);
- ``shap_values_s`` (rows <= 100): shap's ``shap_values`` (no Explanation, bare arrays), and
  ``ratio_vs_arrays``: what an Explanation costs against bare arrays at the small end;
- ``featurelens_1thread_s`` (rows >= 1,000): featurelens on one numba thread, ``ratio_1thread``
  (shap's C++ is single-threaded for the scikit-learn models);
- ``build_ratio``: (featurelens build + explain) / (shap build + call), the builds timed once per
  model (best of ``repeats``);
- ``max_abs_diff``: featurelens against shap's values (class 1), and ``additivity``: the largest
  |base + sum(values) - f(x)| of featurelens, f the model's margin (class 1's fraction for the
  forest).

Interaction values cost d times the values in both libraries (shap's C++ is slow on deep trees), so
their rows stop where one shap call would take longer than ``--interaction-seconds``: the rows used
are recorded per cell (``rows``; ``rows_asked`` the grid's).

Fresh process (issue 32, item 3): a new Python process imports featurelens, builds
``fl.explainer("tree_shap", gbc)`` for the README's model (breast cancer,
``GradientBoostingClassifier(n_estimators=50, random_state=0)``, fitted here and saved with joblib,
loaded before the timer) and explains 100 rows; the timer runs from before ``import featurelens``
to the explanation, after one warm process (the compiled kernels are then in numba's cache). Best
and median of ``--fresh`` processes, and the wall time of the whole process (interpreter start,
the model file's scikit-learn import included).

Also: the numpy engine (what runs without numba) and interventional TreeSHAP (100 background
rows) at one size per model.

Timings need a quiet machine: each cell records the 1-minute load average. ``--quick`` (a tiny grid,
one repeat) checks that the script works and writes nothing. Usage::

    python benchmarks/bench_tree.py            # the full grid, writes results/tree.{md,json}
    python benchmarks/bench_tree.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import featurelens as fl
from featurelens.explainers.tree import engine as tree_engine

try:
    import numba
except ImportError:  # the numpy engine runs; the thread columns then mean nothing
    numba = None

RESULTS = Path(__file__).parent / "results"
N_FEATURES = 20
TRAIN_ROWS = 2000
BACKGROUND_ROWS = 100


# ------------------------------------------------------------------------------------------ setup


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def environment(shap) -> dict:
    cpu = platform.processor() or "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import lightgbm
    import sklearn
    import xgboost

    return {"featurelens": fl.__version__, "python": platform.python_version(), "cpu": cpu,
            "logical_cpus": os.cpu_count(), "platform": platform.platform(), "shap": shap.__version__,
            "numpy": np.__version__, "numba": None if numba is None else numba.__version__,
            "numba_threads": None if numba is None else numba.get_num_threads(),
            "scikit-learn": sklearn.__version__, "lightgbm": lightgbm.__version__, "xgboost": xgboost.__version__}


def data(rows: int, seed: int = 0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=TRAIN_ROWS + rows, n_features=N_FEATURES, n_informative=8,
                               random_state=seed)
    return X[:TRAIN_ROWS], y[:TRAIN_ROWS], X[TRAIN_ROWS:]


def make_model(kind: str, trees: int):
    if kind == "GradientBoosting":
        from sklearn.ensemble import GradientBoostingClassifier

        return GradientBoostingClassifier(n_estimators=trees, max_depth=3, random_state=0), "depth 3"
    if kind == "RandomForest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=trees, max_depth=8, random_state=0), "depth 8"
    if kind == "LightGBM":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=trees, num_leaves=31, random_state=0, verbose=-1), "31 leaves"
    from xgboost import XGBClassifier

    return XGBClassifier(n_estimators=trees, max_depth=6, random_state=0), "depth 6"


def margin(model, X) -> np.ndarray:
    """What tree_shap explains for target 1: a booster's margin, the forest's class-1 fraction."""
    name = type(model).__name__
    if name.startswith("LGBM"):
        return model.predict(X, raw_score=True)
    if name.startswith("XGB"):
        return model.predict(X, output_margin=True)
    if name.startswith("Gradient"):
        return model.decision_function(X)
    return model.predict_proba(X)[:, 1]


def class1(values) -> np.ndarray:
    """shap's values (or an Explanation's) for class 1: (n, d) or (n, d, d)."""
    values = np.asarray(getattr(values, "values", values))
    if isinstance(values, list):
        values = np.asarray(values[1])
    return values[..., 1] if values.shape[-1] == 2 and values.shape[-1] != N_FEATURES else values


def with_threads(n: int | None, fn):
    """``fn()`` with numba limited to ``n`` threads (None: all)."""
    if numba is None:
        return fn()
    previous = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS if n is None else n)
    try:
        return fn()
    finally:
        numba.set_num_threads(previous)


# ----------------------------------------------------------------------------------------- timing


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def side_by_side(fns: dict, repeats: int, cell_seconds: float) -> tuple[dict, dict, int]:
    """Best wall time of each function over up to ``repeats`` rounds, the functions alternating
    (the order reversed every other round); fewer rounds (at least 2) once a round would pass
    ``cell_seconds``. Returns ``(best seconds, last outputs, rounds)``."""
    best, outputs = {k: float("inf") for k in fns}, {}
    rounds, spent = 0, 0.0
    names = list(fns)
    while rounds < repeats:
        order = names if rounds % 2 == 0 else names[::-1]
        round_time = 0.0
        for k in order:
            seconds, outputs[k] = timed(fns[k])
            best[k] = min(best[k], seconds)
            round_time += seconds
        rounds += 1
        spent += round_time
        if rounds >= 2 and spent + round_time > cell_seconds:
            break
    return best, outputs, rounds


# ------------------------------------------------------------------------------------------ cells


def values_cell(model, ex, se, X, repeats, cell_seconds) -> dict:
    fns = {"featurelens": lambda: ex.explain(X, target=1),
           "shap": lambda: se(X, check_additivity=False)}
    if len(X) <= 100:
        fns["shap_values"] = lambda: se.shap_values(X, check_additivity=False)
    best, out, rounds = side_by_side(fns, repeats, cell_seconds)
    e = out["featurelens"]
    row = {"featurelens_s": best["featurelens"], "shap_s": best["shap"], "ratio": best["featurelens"] / best["shap"],
           "repeats": rounds,
           "max_abs_diff": float(np.abs(e.values - class1(out["shap"])).max()),
           "shap_max_abs": float(np.abs(class1(out["shap"])).max()),
           "additivity": float(np.abs(e.base_values + e.values.sum(axis=1) - margin(model, X)).max())}
    if "shap_values" in best:
        row["shap_values_s"] = best["shap_values"]
        row["ratio_vs_arrays"] = best["featurelens"] / best["shap_values"]
    if len(X) >= 1000 and numba is not None:
        one, _, _ = with_threads(1, lambda: side_by_side({"fl": lambda: ex.explain(X, target=1)},
                                                         min(repeats, rounds), cell_seconds))
        row["featurelens_1thread_s"] = one["fl"]
        row["ratio_1thread"] = one["fl"] / best["shap"]
    return row


def interactions_cell(exi, se, X, repeats, cell_seconds) -> dict:
    fns = {"featurelens": lambda: exi.explain(X, target=1),
           "shap": lambda: se(X, interactions=True, check_additivity=False)}
    best, out, rounds = side_by_side(fns, repeats, cell_seconds)
    inter = out["featurelens"].extra["interactions"]
    return {"featurelens_s": best["featurelens"], "shap_s": best["shap"], "ratio": best["featurelens"] / best["shap"],
            "repeats": rounds, "max_abs_diff": float(np.abs(inter - class1(out["shap"])).max()),
            "shap_max_abs": float(np.abs(class1(out["shap"])).max())}


def fresh_process(runs: int) -> dict:
    """The README's tree example in new processes (see the module docstring)."""
    import joblib
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    folder = Path(tempfile.mkdtemp(prefix="bench_tree_"))
    joblib.dump(GradientBoostingClassifier(n_estimators=50, random_state=0).fit(X, y), folder / "gbc.joblib")
    X.to_pickle(folder / "X.pkl")
    script = folder / "fresh.py"
    script.write_text(
        "import sys, time\nimport joblib, pandas as pd\n"
        f"gbc = joblib.load({str(folder / 'gbc.joblib')!r}); X = pd.read_pickle({str(folder / 'X.pkl')!r})\n"
        "t0 = time.perf_counter()\nimport featurelens as fl\n"
        "e = fl.explainer('tree_shap', gbc).explain(X[:100], target=1)\n"
        "t1 = time.perf_counter()\n"
        "import json; print(json.dumps([t1 - t0, 'torch' in sys.modules]))\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}

    baseline = folder / "load_only.py"  # the same process without featurelens: Python, pandas, the model file
    baseline.write_text("import joblib, pandas as pd\n"
                        f"gbc = joblib.load({str(folder / 'gbc.joblib')!r}); X = pd.read_pickle({str(folder / 'X.pkl')!r})\n")

    def one():
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
        wall = time.perf_counter() - start
        seconds, torch_loaded = json.loads(done.stdout.strip().splitlines()[-1])
        start = time.perf_counter()
        subprocess.run([sys.executable, str(baseline)], capture_output=True, env=env, check=True)
        return float(seconds), wall, bool(torch_loaded), time.perf_counter() - start

    warm = one()
    measured = [one() for _ in range(runs)]
    inside = [m[0] for m in measured]
    walls = [m[1] for m in measured]
    bases = [m[3] for m in measured]
    return {"runs": runs, "warm_process_s": warm[0], "best_s": min(inside), "median_s": statistics.median(inside),
            "process_wall_best_s": min(walls), "process_wall_median_s": statistics.median(walls),
            "load_only_process_best_s": min(bases),
            "imports_torch": any(m[2] for m in measured), "load_average": load_average(),
            "what": "import featurelens + fl.explainer('tree_shap', gbc) + explain(X[:100], target=1), "
                    "README model (breast cancer, 50 trees) loaded from joblib before the timer"}


def extras(kind, model, X_train, X, ex, shap, repeats) -> dict:
    """The numpy engine (no numba) at 100 rows and interventional TreeSHAP at 1,000 rows."""
    x100 = X[:100]
    previous = tree_engine.ENGINE
    tree_engine.ENGINE = "numpy"
    try:
        numpy_s, e_np = timed(lambda: ex.explain(x100, target=1))
    finally:
        tree_engine.ENGINE = previous
    e = ex.explain(x100, target=1)
    bg = X_train[:BACKGROUND_ROWS]
    rows = X[:1000]
    exb = fl.explainer("tree_shap", model, background=bg)
    seb = shap.TreeExplainer(model, bg, feature_perturbation="interventional")
    best, out, rounds = side_by_side({"featurelens": lambda: exb.explain(rows, target=1),
                                      "shap": lambda: seb(rows, check_additivity=False)}, min(repeats, 2), 60)
    return {"numpy_engine_s_100_rows": numpy_s,
            "numpy_engine_diff": float(np.abs(e_np.values - e.values).max()),
            "interventional": {"rows": len(rows), "background_rows": len(bg), "featurelens_s": best["featurelens"],
                               "shap_s": best["shap"], "ratio": best["featurelens"] / best["shap"], "repeats": rounds,
                               "max_abs_diff": float(np.abs(out["featurelens"].values - class1(out["shap"])).max())}}


def warm_kernels(X_train, y_train) -> None:
    """Compile (or load from numba's cache) every kernel form before any timing: serial and
    parallel, values and interactions, path-dependent and interventional."""
    from sklearn.ensemble import GradientBoostingClassifier

    from featurelens.explainers.tree import numba_kernels

    gb = GradientBoostingClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X_train[:300], y_train[:300])
    previous = numba_kernels.PARALLEL_MIN_WORK
    try:
        for threshold in (previous, 0):
            numba_kernels.PARALLEL_MIN_WORK = threshold
            for background in (None, X_train[:5]):
                ex = fl.explainer("tree_shap", gb, interactions=True, background=background)
                ex.explain(X_train[:70], target=1)
                ex.explain(X_train[:3], target=1)
    finally:
        numba_kernels.PARALLEL_MIN_WORK = previous


# ------------------------------------------------------------------------------------------- main


KINDS = ("GradientBoosting", "RandomForest", "LightGBM", "XGBoost")


def run(args) -> dict:
    import shap

    rows_grid, trees_grid = args.rows, args.trees
    X_train, y_train, X_all = data(max(rows_grid))
    warm_kernels(X_train, y_train)
    doc = {"environment": environment(shap), "load_average_start": load_average(),
           "grid": {"rows": rows_grid, "trees": trees_grid, "models": list(args.models), "features": N_FEATURES,
                    "train_rows": TRAIN_ROWS, "repeats": args.repeats, "cell_seconds": args.cell_seconds,
                    "interaction_seconds": args.interaction_seconds},
           "values": [], "interactions": [], "builds": [], "extras": [], "notes": []}
    for kind in args.models:
        for trees in trees_grid:
            model, size = make_model(kind, trees)
            model.fit(X_train, y_train)
            ex = fl.explainer("tree_shap", model)
            exi = fl.explainer("tree_shap", model, interactions=True)
            se = shap.TreeExplainer(model)
            ex.explain(X_all[:2], target=1)  # compile (or load the cached kernels) outside the timing
            exi.explain(X_all[:2], target=1)
            se(X_all[:2], check_additivity=False)
            builds, _, rounds = side_by_side({"featurelens": lambda: fl.explainer("tree_shap", model),
                                              "shap": lambda: shap.TreeExplainer(model)}, args.repeats, 30)
            doc["builds"].append({"model": kind, "size": size, "trees": trees, "featurelens_s": builds["featurelens"],
                                  "shap_s": builds["shap"], "repeats": rounds})
            per_row = None  # shap's interaction seconds per row, from the last cell
            for rows in rows_grid:
                X = X_all[:rows]
                cell = {"model": kind, "size": size, "trees": trees, "rows": rows, "load_average": load_average()}
                cell.update(values_cell(model, ex, se, X, args.repeats, args.cell_seconds))
                cell["build_ratio"] = ((builds["featurelens"] + cell["featurelens_s"])
                                       / (builds["shap"] + cell["shap_s"]))
                doc["values"].append(cell)
                print(json.dumps(cell), flush=True)
                asked = rows
                if per_row is not None and per_row * rows > args.interaction_seconds:
                    rows = max(1, int(args.interaction_seconds / per_row))
                    rows = int(float(f"{rows:.1g}"))  # one significant digit: a round number
                inter = {"model": kind, "size": size, "trees": trees, "rows": rows, "rows_asked": asked,
                         "load_average": load_average()}
                inter.update(interactions_cell(exi, se, X_all[:rows], args.repeats, args.cell_seconds))
                per_row = inter["shap_s"] / rows if rows >= 100 else per_row
                doc["interactions"].append(inter)
                print(json.dumps(inter), flush=True)
            if trees == trees_grid[len(trees_grid) // 2]:
                more = {"model": kind, "size": size, "trees": trees}
                more.update(extras(kind, model, X_train, X_all, ex, shap, args.repeats))
                doc["extras"].append(more)
                print(json.dumps(more), flush=True)
    doc["fresh_process"] = fresh_process(args.fresh)
    print(json.dumps(doc["fresh_process"]), flush=True)
    doc["load_average_end"] = load_average()
    cut = sorted({(r["model"], r["trees"], r["rows_asked"], r["rows"]) for r in doc["interactions"]
                  if r["rows"] != r["rows_asked"]})
    if cut:
        doc["notes"].append("Interaction values: " + "; ".join(f"{m} {t} trees at {a:,} rows ran {r:,} rows"
                                                                 for m, t, a, r in cut)
                            + f" (one shap call would have taken longer than {args.interaction_seconds:g} s).")
    doc["notes"].append("XGBoost: shap returns XGBoost's own pred_contribs / pred_interactions, which XGBoost "
                        "sums in float32, so the values differ by about 1e-7 of their size; featurelens's equal "
                        "exact values by enumeration to 1e-12 (tests/explainers/test_tree_raw_boosters.py).")
    doc["notes"].append("LightGBM and XGBoost: shap's times are the libraries' own multi-threaded C++ "
                        "(pred_contrib, pred_contribs, pred_interactions); LightGBM has no interaction values of "
                        "its own, so shap runs its C++ there.")
    return doc


def _f(v, digits=4):
    return "–" if v is None else f"{v:.{digits}g}"


def table(doc) -> str:
    env, grid = doc["environment"], doc["grid"]
    fresh = doc["fresh_process"]
    out = ["# Exact TreeSHAP: featurelens tree_shap vs shap.TreeExplainer, on a grid", "",
           f"{grid['features']} features (make_classification), models fitted on {grid['train_rows']:,} rows. "
           "Each cell: one call on a built explainer, featurelens `explain(X, target=1)` against shap's "
           "`explainer(X)` (both return an Explanation), alternating, best of the repeats shown. "
           f"numba threads {env['numba_threads']}; shap {env['shap']}, lightgbm {env['lightgbm']}, "
           f"xgboost {env['xgboost']}; {env['logical_cpus']} logical CPUs ({env['cpu']}). Load average at "
           f"start {doc['load_average_start']}, at the end {doc['load_average_end']}; each cell's is in the JSON.",
           "", "## Fresh process", "",
           "| what | best (s) | median (s) | whole process, best (s) | the same process without featurelens, best (s) "
           "| runs | imports torch |", "|---|---:|---:|---:|---:|---:|---|",
           f"| {fresh['what']} | {fresh['best_s']:.2f} | {fresh['median_s']:.2f} | {fresh['process_wall_best_s']:.2f} "
           f"| {_f(fresh.get('load_only_process_best_s'), 3)} | {fresh['runs']} "
           f"| {'yes' if fresh['imports_torch'] else 'no'} |", "",
           "The whole process also starts Python and imports pandas and scikit-learn to load the model "
           "file; the last time column is that process alone (loading the model and the rows).", "",
           "## SHAP values", "",
           "| model | trees | rows | featurelens (s) | shap (s) | ratio | ratio, 1 thread | build + call ratio "
           "| shap arrays (s) | vs arrays | max abs diff | repeats |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in doc["values"]:
        out.append(f"| {r['model']} ({r['size']}) | {r['trees']} | {r['rows']:,} | {_f(r['featurelens_s'])} | "
                   f"{_f(r['shap_s'])} | **{r['ratio']:.2f}** | {_f(r.get('ratio_1thread'), 3)} | "
                   f"{r['build_ratio']:.2f} | {_f(r.get('shap_values_s'))} | {_f(r.get('ratio_vs_arrays'), 3)} | "
                   f"{r['max_abs_diff']:.1e} | {r['repeats']} |")
    out += ["", "## SHAP interaction values", "",
            "| model | trees | rows | featurelens (s) | shap (s) | ratio | max abs diff | repeats |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in doc["interactions"]:
        rows = f"{r['rows']:,}" + ("" if r["rows"] == r["rows_asked"] else f" (of {r['rows_asked']:,})")
        out.append(f"| {r['model']} ({r['size']}) | {r['trees']} | {rows} | {_f(r['featurelens_s'])} | "
                   f"{_f(r['shap_s'])} | **{r['ratio']:.2f}** | {r['max_abs_diff']:.1e} | {r['repeats']} |")
    out += ["", "## Also", "",
            "| model | trees | numpy engine, 100 rows (s) | interventional: rows x background | featurelens (s) "
            "| shap (s) | ratio | max abs diff |", "|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in doc["extras"]:
        iv = r["interventional"]
        out.append(f"| {r['model']} ({r['size']}) | {r['trees']} | {_f(r['numpy_engine_s_100_rows'])} | "
                   f"{iv['rows']:,} x {iv['background_rows']} | {_f(iv['featurelens_s'])} | {_f(iv['shap_s'])} | "
                   f"{iv['ratio']:.2f} | {iv['max_abs_diff']:.1e} |")
    worst = max(doc["values"] + doc["interactions"], key=lambda r: r["ratio"])
    out += ["", f"Largest ratio: {worst['ratio']:.2f} ({worst['model']}, {worst['trees']} trees, "
            f"{worst['rows']:,} rows).", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 100, 10_000], help="rows explained")
    parser.add_argument("--trees", type=int, nargs="+", default=[10, 100, 500], help="trees per model")
    parser.add_argument("--models", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--repeats", type=int, default=5, help="rounds per cell (best of)")
    parser.add_argument("--cell-seconds", type=float, default=60.0,
                        help="fewer rounds (at least 2) once a cell would take longer")
    parser.add_argument("--interaction-seconds", type=float, default=30.0,
                        help="fewer interaction rows where one shap call would take longer")
    parser.add_argument("--fresh", type=int, default=5, help="fresh processes timed (after a warm one)")
    parser.add_argument("--quick", action="store_true", help="a tiny grid, one round; writes nothing")
    parser.add_argument("--fresh-only", action="store_true",
                        help="measure the fresh-process figure again into the results file in --out")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.trees, args.repeats, args.fresh = [1, 50], [5], 1, 1
    if args.fresh_only:
        doc = json.loads((args.out / "tree.json").read_text())
        doc["fresh_process"] = fresh_process(args.fresh)
        doc["notes"] = [n for n in doc["notes"] if not n.startswith("Fresh process measured again")]
        doc["notes"].append(f"Fresh process measured again after the grid (--fresh-only), load average "
                            f"{doc['fresh_process']['load_average']}.")
        (args.out / "tree.md").write_text(table(doc))
        (args.out / "tree.json").write_text(json.dumps(doc, indent=2))
        print(table(doc))
        return 0
    doc = run(args)
    text = table(doc)
    print(text)
    # XGBoost's own (float32) sums: within 1e-6 of their size; the others to 1e-10
    bad = [r for r in doc["values"] + doc["interactions"]
           if r["max_abs_diff"] > (1e-6 * max(1.0, r.get("shap_max_abs", 1.0)) if r["model"] == "XGBoost" else 1e-10)]
    if args.quick:
        print("quick run: results not written;", "values DIFFER" if bad else "values agree")
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tree.md").write_text(text)
    (args.out / "tree.json").write_text(json.dumps(doc, indent=2))
    print(f"wrote {args.out / 'tree.md'} and {args.out / 'tree.json'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
