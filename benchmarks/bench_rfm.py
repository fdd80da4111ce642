"""Recursive Feature Machines: featurelens against xrfm, scikit-learn's KernelRidge and
HistGradientBoosting, fit time and test score.

Data (generated or bundled, seeded):

- regression: ``make_friedman1(5000, n_features=20, noise=1.0, random_state=0)``; 20 % test
  (``train_test_split(random_state=0)``), then 20 % of the rest as the validation set;
- classification: ``load_breast_cancer`` (standardised on the training part) and ``load_digits``
  (pixels / 16); 30 % test, stratified, then 20 % of the rest as the validation set.

Every method gets the same training rows and the same validation rows (used to pick the RFM
iterate and KernelRidge's bandwidth). Settings are matched: Laplace kernel
``exp(-||x - z||_M / L)``, L = 10, reg = 1e-3, 5 AGOP updates, full M (power 1 and max
normalisation in featurelens, which is xrfm's ``agop_power=0.5`` feature map sqrtM; see
featurelens.learning.rfm). xrfm runs at its own defaults otherwise (LU ``solver="solve"``, early
stopping with multiplier 1.1); ``xrfm.RFM`` is its single-model class, ``xrfm.xRFM`` the public
tree wrapper (one leaf at these sizes, with its own validation refill and temperature tuning), which
converts its inputs to float32: it is compared with featurelens given float32 inputs (featurelens
computes in the input's dtype, float64 or float32; the AGOP is accumulated in float64 either way),
xrfm.RFM (given float64 tensors) with featurelens given float64.

- KernelRidge: ``kernel="laplacian"`` (scikit-learn's is the L1 form ``exp(-gamma ||x - z||_1)``),
  gamma and alpha picked on the validation set from a small grid; its fit time is that of the
  final fit, the grid's total is listed too. For classification it regresses +-1 / one-hot
  targets and predicts the largest output.
- HistGradientBoosting: scikit-learn defaults, ``random_state=0``.
- floor (regression): what any 6-fit RFM costs at least here, 6 x one plain-torch Laplace kernel
  ridge fit (``torch.cdist``, ``exp``, Cholesky solve) on the same rows.

Times are wall-clock seconds of ``fit`` (median of ``--repeats`` runs after a small warm-up), all in
one process with the same thread budget (torch, BLAS and OpenMP; default 1).

Usage: .venv/bin/python benchmarks/bench_rfm.py [--repeats 1] [--threads 1]
Writes benchmarks/results/rfm.md and rfm.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_breast_cancer, load_digits, make_friedman1
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import featurelens as fl
from _common import environment, load_average, write_results

RESULTS = Path(__file__).resolve().parent / "results"
L, REG, ITERS = 10.0, 1e-3, 5
KR_GAMMAS = (0.03, 0.1, 0.3)
KR_ALPHAS = (1e-3,)


def timed(fit, repeats):
    """Median wall time of ``fit()`` over ``repeats`` runs and the last fitted object."""
    times, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fit()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, model


@contextlib.contextmanager
def quiet():
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def splits(name):
    if name == "friedman1":
        X, y = make_friedman1(5000, n_features=20, noise=1.0, random_state=0)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
        X_tr, X_va, y_tr, y_va = train_test_split(X_tr, y_tr, test_size=0.2, random_state=0)
        return X_tr, y_tr, X_va, y_va, X_te, y_te
    X, y = load_breast_cancer(return_X_y=True) if name == "breast_cancer" else load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    X_tr, X_va, y_tr, y_va = train_test_split(X_tr, y_tr, test_size=0.2, random_state=0, stratify=y_tr)
    if name == "breast_cancer":
        sc = StandardScaler().fit(X_tr)
        X_tr, X_va, X_te = sc.transform(X_tr), sc.transform(X_va), sc.transform(X_te)
    else:
        X_tr, X_va, X_te = X_tr / 16.0, X_va / 16.0, X_te / 16.0
    return X_tr, y_tr, X_va, y_va, X_te, y_te


def coded(y, classes):
    if len(classes) == 2:
        return (2.0 * (y == classes[1]) - 1.0)[:, None]
    return (y[:, None] == classes[None, :]).astype(float)


def decode(out, classes):
    return classes[(out[:, 0] > 0).astype(int)] if out.shape[1] == 1 else classes[out.argmax(1)]


def kernel_ridge(X_tr, y_tr, X_va, y_va, classification):
    """Grid over (gamma, alpha) on the validation set; returns the grid time and the best params."""
    classes = np.unique(y_tr) if classification else None
    t_tr = coded(y_tr, classes) if classification else y_tr
    start, best = time.perf_counter(), None
    for gamma in KR_GAMMAS:
        for alpha in KR_ALPHAS:
            out = KernelRidge(kernel="laplacian", gamma=gamma, alpha=alpha).fit(X_tr, t_tr).predict(X_va)
            score = accuracy_score(y_va, decode(out, classes)) if classification else r2_score(y_va, out)
            if best is None or score > best[0]:
                best = (score, gamma, alpha)
    return time.perf_counter() - start, {"gamma": best[1], "alpha": best[2]}


def torch_floor_fit(X, y):
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)[:, None]
    K = torch.exp(-torch.cdist(Xt, Xt) / L)
    K.diagonal().add_(REG)
    C = torch.linalg.cholesky(K)
    return torch.linalg.solve_triangular(C.mT, torch.linalg.solve_triangular(C, yt, upper=False), upper=True)


def run_case(name, repeats, have_xrfm):
    X_tr, y_tr, X_va, y_va, X_te, y_te = splits(name)
    classification = name != "friedman1"
    score_name = "accuracy" if classification else "R^2"
    score = (lambda y, p: accuracy_score(y, p)) if classification else (lambda y, p: r2_score(y, p))
    rows = []

    def add(method, fit, predict, settings, extra=None):
        print(f"  {name}: {method}", flush=True)
        seconds, times, model = timed(fit, repeats)
        rows.append({"data": name, "method": method, "fit_s": seconds, "fit_times_s": times,
                     "test_score": float(score(y_te, predict(model))), "score": score_name,
                     "settings": settings, **(extra(model) if extra else {})})
        print(f"    {seconds:.2f} s, test {score_name} {rows[-1]['test_score']:.4f}", flush=True)

    rfm_settings = {"kernel": "laplace", "bandwidth": L, "reg": REG, "iters": ITERS, "diag": False}
    Est = fl.learning.RFMClassifier if classification else fl.learning.RFMRegressor
    Est(**rfm_settings).fit(X_tr[:200], y_tr[:200], X_val=X_va[:50], y_val=y_va[:50])  # warm-up
    add("featurelens RFM" + ("Classifier" if classification else "Regressor"),
        lambda: Est(**rfm_settings).fit(X_tr, y_tr, X_val=X_va, y_val=y_va),
        lambda m: m.predict(X_te), {**rfm_settings, "power": 1, "normalize": "max"},
        lambda m: {"best_iter": int(m.best_iter_), "kernel_fits": len(m.history_)})

    X_tr32, X_va32, X_te32 = (a.astype(np.float32) for a in (X_tr, X_va, X_te))
    add("featurelens RFM" + ("Classifier" if classification else "Regressor") + ", float32 input",
        lambda: Est(**rfm_settings).fit(X_tr32, y_tr, X_val=X_va32, y_val=y_va),
        lambda m: m.predict(X_te32), {**rfm_settings, "power": 1, "normalize": "max", "dtype": "float32"},
        lambda m: {"best_iter": int(m.best_iter_), "kernel_fits": len(m.history_)})

    if have_xrfm:
        from xrfm import xRFM
        from xrfm.rfm_src import RFM

        if not classification:
            def fit_core(n=None, **fit_kw):
                sl = slice(None) if n is None else slice(0, n)
                m = RFM(kernel="laplace", bandwidth=L, iters=ITERS, diag=False, device="cpu", verbose=False,
                        tuning_metric="mse")
                with quiet():
                    m.fit((torch.as_tensor(X_tr[sl]), torch.as_tensor(y_tr[sl])),
                          (torch.as_tensor(X_va[:50] if n else X_va), torch.as_tensor(y_va[:50] if n else y_va)),
                          reg=REG, verbose=False, **fit_kw)
                return m

            fit_core(200)  # warm-up
            xr_settings = {"kernel": "laplace", "bandwidth": L, "reg": REG, "iters": ITERS, "diag": False,
                           "agop_power": 0.5, "solver": "solve", "early_stop_rfm": True}
            add("xrfm.RFM (defaults: LU solve, early stopping)", fit_core,
                lambda m: m.predict(torch.as_tensor(X_te)).numpy()[:, 0], xr_settings,
                lambda m: {"best_iter": int(m.best_iter)})
            add("xrfm.RFM, solver='cholesky', no early stopping", lambda: fit_core(solver="cholesky", early_stop_rfm=False),
                lambda m: m.predict(torch.as_tensor(X_te)).numpy()[:, 0],
                {**xr_settings, "solver": "cholesky", "early_stop_rfm": False},
                lambda m: {"best_iter": int(m.best_iter)})

        def fit_wrapper(n=None):
            sl = slice(None) if n is None else slice(0, n)
            params = {"model": {"kernel": "l2", "bandwidth": L, "exponent": 1.0, "diag": False},
                      "fit": {"reg": REG, "iters": ITERS, "return_best_params": True}}
            m = xRFM(rfm_params=params, device="cpu", verbose=False,
                     tuning_metric="accuracy" if classification else "mse", random_state=0)
            with quiet():
                m.fit(X_tr[sl], y_tr[sl], X_va, y_va)
            return m

        fit_wrapper(200)  # warm-up
        add("xrfm.xRFM (public API, one leaf)", fit_wrapper,
            lambda m: np.asarray(m.predict(X_te)).reshape(len(X_te), -1)[:, 0] if not classification
            else np.asarray(m.predict(X_te)).ravel(),
            {"rfm_params": {"kernel": "l2", "bandwidth": L, "reg": REG, "iters": ITERS, "diag": False}})

    grid_s, kr = kernel_ridge(X_tr, y_tr, X_va, y_va, classification)
    classes = np.unique(y_tr) if classification else None
    t_tr = coded(y_tr, classes) if classification else y_tr
    add("sklearn KernelRidge (laplacian, L1)", lambda: KernelRidge(kernel="laplacian", **kr).fit(X_tr, t_tr),
        (lambda m: decode(m.predict(X_te), classes)) if classification else (lambda m: m.predict(X_te)),
        {**kr, "grid": {"gamma": KR_GAMMAS, "alpha": KR_ALPHAS}}, lambda m: {"grid_search_s": grid_s})

    HGB = HistGradientBoostingClassifier if classification else HistGradientBoostingRegressor
    add("sklearn HistGradientBoosting", lambda: HGB(random_state=0).fit(X_tr, y_tr), lambda m: m.predict(X_te),
        {"defaults": True, "random_state": 0})

    if not classification:
        torch_floor_fit(X_tr[:200], y_tr[:200])
        print(f"  {name}: floor", flush=True)
        one, _, _ = timed(lambda: torch_floor_fit(X_tr, y_tr), max(repeats, 1))
        rows.append({"data": name, "method": f"floor: {ITERS + 1} x plain-torch kernel ridge fit", "fit_s": 6 * one,
                     "fit_times_s": [one], "test_score": None, "score": score_name, "settings": {"one_fit_s": one}})
    return rows, {"n_train": len(X_tr), "n_val": len(X_va), "n_test": len(X_te), "d": X_tr.shape[1]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="timed fits per method (median; default 1)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch, BLAS and OpenMP threads for every method (default 1: stable timings on a "
                             "shared machine; 2 uses both cores of the reference machine)")
    parser.add_argument("--data", nargs="+", default=["friedman1", "breast_cancer", "digits"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    # The same thread budget for numpy/scipy BLAS (KernelRidge) and OpenMP (HistGradientBoosting).
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=args.threads)
    try:
        import xrfm

        have_xrfm, xrfm_version = True, getattr(xrfm, "__version__", "installed")
    except ImportError:
        have_xrfm, xrfm_version = False, None
    env = environment(xrfm=xrfm_version)
    print(f"torch {env['torch']}, {env['threads']} threads, {env['cpu']}, xrfm {xrfm_version}", flush=True)
    load_before, start_all = load_average(), time.perf_counter()
    rows, sizes = [], {}
    for name in args.data:
        case_rows, sizes[name] = run_case(name, args.repeats, have_xrfm)
        rows += case_rows
    meta = {"repeats": args.repeats, "sizes": sizes, "load_before": load_before, "load_after": load_average(),
            "seconds": time.perf_counter() - start_all}

    ours = {(r["data"], "float32" in r["method"]): r for r in rows if r["method"].startswith("featurelens")}
    comparisons = {}
    for r in rows:
        if r["method"].startswith("xrfm"):
            # xrfm.xRFM converts inputs to float32; xrfm.RFM computes in the dtype it is given (float64)
            o = ours[(r["data"], r["method"].startswith("xrfm.xRFM"))]
            comparisons[f"{r['data']}: {o['method']} vs {r['method']}"] = {
                "time_ratio_featurelens_over_xrfm": o["fit_s"] / r["fit_s"],
                "score_difference_featurelens_minus_xrfm": o["test_score"] - r["test_score"],
            }
    lines = [
        "# Recursive Feature Machines: featurelens vs xrfm, KernelRidge and HistGradientBoosting",
        "",
        f"torch {env['torch']}, featurelens {env['featurelens']}, xrfm {xrfm_version}, Python {env['python']}; "
        f"{env['threads']} thread(s) (torch, BLAS, OpenMP) on {env['cpu']} ({env['logical_cpus']} logical CPUs). Fit time: median of "
        f"{args.repeats} run(s) after a warm-up on 200 rows. Load average {meta['load_before']} before, "
        f"{meta['load_after']} after; total {meta['seconds']:.0f} s.",
        "",
        "RFM settings (all RFMs): Laplace kernel, bandwidth 10, reg 1e-3, 5 AGOP updates, full M, best iterate on "
        "the validation rows. Sizes: "
        + "; ".join(f"{k} {v['n_train']} train / {v['n_val']} val / {v['n_test']} test, d = {v['d']}"
                    for k, v in sizes.items()) + ".",
        "",
        "| data | method | fit s | test score | notes |",
        "|---|---|---:|---:|---|",
    ]
    for r in rows:
        notes = []
        if "best_iter" in r:
            notes.append(f"best iter {r['best_iter']}")
        if "grid_search_s" in r:
            notes.append(f"gamma {r['settings']['gamma']}, alpha {r['settings']['alpha']}; "
                         f"grid of {len(KR_GAMMAS) * len(KR_ALPHAS)} fits {r['grid_search_s']:.1f} s")
        if r["method"].startswith("floor"):
            notes.append(f"one fit {r['settings']['one_fit_s']:.2f} s")
        score_txt = "" if r["test_score"] is None else f"{r['score']} {r['test_score']:.4f}"
        lines.append(f"| {r['data']} | {r['method']} | {r['fit_s']:.2f} | {score_txt} | {'; '.join(notes)} |")
    if comparisons:
        lines += ["", "featurelens against xrfm (time ratio < 1: featurelens faster):", "",
                  "| comparison | featurelens / xrfm fit time | featurelens - xrfm test score |", "|---|---:|---:|"]
        for k, v in comparisons.items():
            lines.append(f"| {k} | {v['time_ratio_featurelens_over_xrfm']:.2f} "
                         f"| {v['score_difference_featurelens_minus_xrfm']:+.4f} |")
    lines.append("")
    table = "\n".join(lines)
    print()
    print(table)
    write_results(args.out, "rfm", table, {"environment": env, "run": meta, "rows": rows, "comparisons": comparisons})
    return 0


if __name__ == "__main__":
    sys.exit(main())
