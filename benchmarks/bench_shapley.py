"""Shapley values of a tabular model, featurelens against shap (and shapiq), side by side in one run.

Data and model: scikit-learn's breast-cancer data (569 rows, 30 features), standardised with the
training split's mean and std (75/25 split, seed 0); an MLP 30-64-32-2 (ReLU, torch, seeded, full-
batch Adam); the explained output is the positive-class probability (softmax[:, 1], i.e.
``predict_proba[:, 1]``). Background: 50 training rows drawn with seed 0, the same for every library;
the value function is the interventional expectation over them. Explained: the first 10 test rows.

- Reference: featurelens ``permutation_shap`` with 200,000 game evaluations per instance (two
  independent runs of 100,000, seeds 101 and 102, averaged; half their difference estimates the
  reference's own error). Checked against shap's ``PermutationExplainer`` (100,000 evaluations) on
  the first 3 instances.
- Compared at budgets of 512 and 2048 game evaluations (coalitions) per instance: featurelens
  ``kernel_shap`` and ``permutation_shap``; ``shap.KernelExplainer(nsamples=budget)`` at its default
  ``l1_reg="num_features(10)"`` (a LARS selection of 10 of the 30 features before the regression) and
  with ``l1_reg=False`` (plain KernelSHAP); shapiq's ``KernelSHAP`` approximator (``budget``, default
  and with ``pairing_trick=True``) on a vectorised NumPy interventional game over the same rows.
- Error: mean absolute error and the per-instance max absolute error against the reference,
  averaged over the instances and over ``--repeats`` seeds. Time: every configuration is warmed up
  once, then timed once per seed in interleaved rounds (all 10 instances in one call, divided by
  10); the table gives medians.
- Floor: the model alone on the ``budget x 50`` rows of one instance, inputs prebuilt, as one call
  and in chunks of featurelens' size (the faster counts).
- Diagnostics: featurelens ``kernel_shap`` also runs with ``batch_size=16384`` (327 coalitions x 50
  rows per model call instead of 20 x 50: the share of its time that is per-chunk overhead), and
  with NumPy's BLAS limited to one thread (threadpoolctl; shap too): OpenBLAS's threads, busy-waiting
  after each ``np.linalg.lstsq``, compete with torch's OpenMP threads on 2 cores.
- A second model, scikit-learn's ``MLPClassifier((64, 32))`` called through ``predict_proba`` (a NumPy
  callable), is timed at budget 2048 for featurelens ``kernel_shap`` and shap (``l1_reg=False``).

Usage: .venv/bin/python benchmarks/bench_shapley.py [--repeats 5] [--quick]
Writes benchmarks/results/shapley.md and shapley.json.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

import featurelens as fl
from _common import environment, load_average, write_results

try:
    import shap
except ImportError:  # pragma: no cover - the benchmark needs the reference library
    sys.exit("bench_shapley needs shap: .venv/bin/pip install shap")
try:
    import shapiq
except ImportError:  # pragma: no cover - optional second reference
    shapiq = None

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from threadpoolctl import threadpool_limits

RESULTS = Path(__file__).resolve().parent / "results"
BUDGETS = (512, 2048)
N_BACKGROUND = 50
N_INSTANCES = 10
REF_BUDGET = 100_000  # per run; two runs make the 200,000-evaluation reference
SHAP_CHECK_INSTANCES = 3
SKLEARN_INSTANCES = 5
TARGET = 1


# -- data and models ---------------------------------------------------------------------------
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    mean, std = X_tr.mean(0), X_tr.std(0)
    X_tr = ((X_tr - mean) / std).astype(np.float32)
    X_te = ((X_te - mean) / std).astype(np.float32)
    return X_tr, X_te, y_tr, y_te


def torch_mlp(X_tr, y_tr) -> torch.nn.Module:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(30, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)
    )
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
    xt, yt = torch.from_numpy(X_tr), torch.from_numpy(y_tr)
    for _ in range(300):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xt), yt).backward()
        opt.step()
    return torch.nn.Sequential(net, torch.nn.Softmax(dim=1)).eval()


def numpy_fn(model: torch.nn.Module):
    """The target probability as a NumPy function, for shap and shapiq."""

    def f(z):
        with torch.no_grad():
            return model(torch.as_tensor(np.asarray(z), dtype=torch.float32))[:, TARGET].numpy()

    return f


def interventional_game(f, x: np.ndarray, background: np.ndarray):
    """``v(S) = mean_j f(x_S, b_j,notS)`` for a (q, n) coalition matrix, vectorised in NumPy (the
    game handed to shapiq's approximator)."""

    def game(coalitions):
        c = np.asarray(coalitions, dtype=bool)
        rows = np.where(c[:, None, :], x[None, None, :], background[None, :, :])
        return f(rows.reshape(-1, x.shape[0])).reshape(c.shape[0], background.shape[0]).mean(1).astype(np.float64)

    return game


# -- explainers --------------------------------------------------------------------------------
def featurelens_fn(name, model, background, budget, batch_size=None):
    def run(X, seed):
        ex = fl.explainer(name, model, background=background, budget=budget, seed=seed, batch_size=batch_size,
                          progress=False)
        return ex.explain_players(X, target=TARGET)

    return run


def shap_kernel_fn(f, background, budget, l1_reg):
    def run(X, seed):
        np.random.seed(seed)  # KernelExplainer samples with NumPy's global generator
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            explainer = shap.KernelExplainer(f, background)
            kwargs = {} if l1_reg is None else {"l1_reg": l1_reg}
            return np.asarray(explainer.shap_values(X, nsamples=budget, silent=True, **kwargs))

    return run


def shapiq_kernel_fn(f, background, budget, pairing):
    def run(X, seed):
        out = np.empty(X.shape, dtype=np.float64)
        approximator = shapiq.KernelSHAP(n=X.shape[1], random_state=seed, pairing_trick=pairing)
        for i, x in enumerate(X):
            iv = approximator.approximate(budget, interventional_game(f, x, background))
            out[i] = [iv[(j,)] for j in range(X.shape[1])]
        return out

    return run


def one_blas_thread(fn):
    """``fn`` with NumPy's BLAS (OpenBLAS) limited to one thread, so that its threads do not compete
    with torch's OpenMP threads (see the notes under the table)."""

    def run(X, seed):
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(X, seed)

    return run


def floor_fn(model, rows: torch.Tensor, chunk: int | None):
    size = rows.shape[0] if chunk is None else chunk

    def run():
        with torch.no_grad():
            for s in range(0, rows.shape[0], size):
                model(rows[s : s + size])

    return run


# -- timing ------------------------------------------------------------------------------------
def median_time(fn, repeats: int, min_sample_s: float = 0.25) -> float:
    """Median over ``repeats`` samples, each the mean of enough calls to last ``min_sample_s``."""
    start = time.perf_counter()
    fn()
    inner = int(min(100, max(1, np.ceil(min_sample_s / max(time.perf_counter() - start, 1e-6)))))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def errors(values: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    diff = np.abs(values - reference)
    return float(diff.mean()), float(diff.max(axis=1).mean())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="seeds = timed rounds after the warm-up (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="small run: 3 instances, 2 seeds, 20,000-evaluation reference (does not write results)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)

    torch.set_num_threads(2)
    n_instances, ref_budget, repeats = N_INSTANCES, REF_BUDGET, args.repeats
    if args.quick:
        n_instances, ref_budget, repeats = 3, 10_000, 2
    versions = {"shap": shap.__version__, "numpy": np.__version__,
                "scikit-learn": importlib.metadata.version("scikit-learn")}
    if shapiq is not None:
        versions["shapiq"] = importlib.metadata.version("shapiq")
    env = environment(**versions)
    print(f"torch {env['torch']}, shap {env['shap']}, shapiq {env.get('shapiq', 'absent')}, "
          f"{env['threads']} threads, {env['cpu']}", flush=True)
    load_before = load_average()
    t_start = time.perf_counter()

    X_tr, X_te, y_tr, y_te = data()
    model = torch_mlp(X_tr, y_tr)
    with torch.no_grad():
        accuracy = float((model(torch.from_numpy(X_te)).argmax(1).numpy() == y_te).mean())
    background = X_tr[np.random.default_rng(0).choice(X_tr.shape[0], N_BACKGROUND, replace=False)]
    X = X_te[:n_instances]
    f = numpy_fn(model)
    print(f"torch MLP test accuracy {accuracy:.3f}; {n_instances} instances, {N_BACKGROUND} background rows",
          flush=True)

    # -- reference ---------------------------------------------------------------------------
    t0 = time.perf_counter()
    ref_runs = [featurelens_fn("permutation_shap", model, background, ref_budget, batch_size=4096)(X, seed)
                for seed in (101, 102)]
    reference = (ref_runs[0] + ref_runs[1]) / 2
    ref_half_diff = np.abs(ref_runs[0] - ref_runs[1]) / 2  # ~ the std error of the mean of two runs
    game0 = fl.games.MaskedModel(model, X[0], background=background, target=TARGET)
    efficiency_gap = abs(reference[0].sum() - (game0.grand() - game0.empty()))
    ref_seconds = time.perf_counter() - t0
    print(f"reference: {2 * ref_budget} evaluations per instance in {ref_seconds:.1f} s; half-difference of "
          f"its two runs: mean {ref_half_diff.mean():.2e}, max {ref_half_diff.max():.2e}", flush=True)

    t0 = time.perf_counter()
    k = min(SHAP_CHECK_INSTANCES, n_instances)
    masker = shap.maskers.Independent(background, max_samples=N_BACKGROUND)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shap_perm = shap.PermutationExplainer(f, masker, seed=0)(X[:k], max_evals=ref_budget, silent=True).values
    shap_check = {
        "instances": k,
        "shap_permutation_max_evals": ref_budget,
        "mean_abs_diff_vs_reference": float(np.abs(shap_perm - reference[:k]).mean()),
        "max_abs_diff_vs_reference": float(np.abs(shap_perm - reference[:k]).max()),
        "max_abs_value": float(np.abs(reference[:k]).max()),
        "seconds": time.perf_counter() - t0,
    }
    print(f"shap PermutationExplainer ({ref_budget} evaluations) vs reference on {k} instances: mean "
          f"{shap_check['mean_abs_diff_vs_reference']:.2e}, max {shap_check['max_abs_diff_vs_reference']:.2e} "
          f"(max |phi| {shap_check['max_abs_value']:.2e})", flush=True)

    # -- accuracy and time at equal budgets ----------------------------------------------------
    rows = []
    for budget in BUDGETS:
        configs = {
            "featurelens kernel_shap": featurelens_fn("kernel_shap", model, background, budget),
            "featurelens kernel_shap (batch_size=16384)": featurelens_fn("kernel_shap", model, background, budget,
                                                                         batch_size=16384),
            "featurelens kernel_shap (BLAS 1 thread)": one_blas_thread(
                featurelens_fn("kernel_shap", model, background, budget)),
            "featurelens kernel_shap (batch_size=16384, BLAS 1 thread)": one_blas_thread(
                featurelens_fn("kernel_shap", model, background, budget, batch_size=16384)),
            "featurelens permutation_shap": featurelens_fn("permutation_shap", model, background, budget),
            "shap KernelExplainer (default l1_reg)": shap_kernel_fn(f, background, budget, None),
            "shap KernelExplainer (l1_reg=False)": shap_kernel_fn(f, background, budget, False),
            "shap KernelExplainer (l1_reg=False, BLAS 1 thread)": one_blas_thread(
                shap_kernel_fn(f, background, budget, False)),
        }
        if shapiq is not None:
            configs["shapiq KernelSHAP"] = shapiq_kernel_fn(f, background, budget, False)
            configs["shapiq KernelSHAP (pairing_trick)"] = shapiq_kernel_fn(f, background, budget, True)
        print(f"  budget {budget}: {len(configs)} configurations x (1 warm-up + {repeats} seeds)", flush=True)
        for fn in configs.values():  # warm-up (on other seeds)
            fn(X[:2], 10_000)
        times = {name: [] for name in configs}
        errs = {name: [] for name in configs}
        for seed in range(repeats):
            for name, fn in configs.items():
                start = time.perf_counter()
                values = fn(X, seed)
                times[name].append((time.perf_counter() - start) / n_instances)
                errs[name].append(errors(values, reference))
        rows_per_instance = budget * N_BACKGROUND
        prebuilt = torch.from_numpy(np.where(
            np.random.default_rng(0).random((budget, 1, 30)) < 0.5, X[0][None, None], background[None]
        ).reshape(-1, 30).astype(np.float32))
        chunk = fl.games.MaskedModel(model, X[0], background=background).chunk_size * N_BACKGROUND
        floors = {"one call": median_time(floor_fn(model, prebuilt, None), 5),
                  f"chunks of {chunk}": median_time(floor_fn(model, prebuilt, chunk), 5)}
        floor = min(floors.values())
        med = {name: statistics.median(t) for name, t in times.items()}
        mae = {name: float(np.mean([e[0] for e in errs[name]])) for name in configs}
        maxe = {name: float(np.mean([e[1] for e in errs[name]])) for name in configs}
        shap_names = [n for n in configs if n.startswith("shap ")]
        shap_fast = min(shap_names, key=med.get)
        shap_acc = min(shap_names, key=mae.get)
        for name in configs:
            rows.append({
                "budget": budget,
                "method": name,
                "seconds_per_instance": med[name],
                "all_seconds_per_instance": times[name],
                "mae": mae[name],
                "max_err": maxe[name],
                "errors_by_seed": errs[name],
                "time_vs_shap_fastest": med[name] / med[shap_fast],
                "shap_fastest": shap_fast,
                "mae_vs_shap_most_accurate": mae[name] / mae[shap_acc],
                "max_err_vs_shap_most_accurate": maxe[name] / maxe[shap_acc],
                "shap_most_accurate": shap_acc,
                "time_vs_floor": med[name] / floor,
                "floor_seconds": floor,
                "floor_by_setting": floors,
                "model_rows_per_instance": rows_per_instance,
            })
            print(f"    {name:38s} {1e3 * med[name]:8.2f} ms  MAE {mae[name]:.2e}  max {maxe[name]:.2e}  "
                  f"time/shap {med[name] / med[shap_fast]:.2f}  time/floor {med[name] / floor:.2f}", flush=True)
        print(f"    floor {', '.join(f'{k} {1e3 * v:.2f} ms' for k, v in floors.items())}", flush=True)

    # -- an sklearn model through predict_proba: thread contention ----------------------------
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier((64, 32), max_iter=500, random_state=0).fit(X_tr.astype(np.float64), y_tr)
    Xs = X_te[: min(SKLEARN_INSTANCES, n_instances)]
    fs = lambda z: clf.predict_proba(z)[:, TARGET]  # noqa: E731
    budget = BUDGETS[-1]
    sk_fl, sk_shap = featurelens_fn("kernel_shap", clf.predict_proba, background, budget), \
        shap_kernel_fn(fs, background, budget, False)
    prebuilt = np.where(np.random.default_rng(0).random((budget, 1, 30)) < 0.5, Xs[0][None, None],
                        background[None]).reshape(-1, 30).astype(np.float32)
    sk_configs = {
        "featurelens kernel_shap": lambda: sk_fl(Xs, 0),
        "shap KernelExplainer (l1_reg=False)": lambda: sk_shap(Xs, 0),
        "floor: predict_proba, one call": lambda: clf.predict_proba(prebuilt),
        "floor: predict_proba, chunks of 1000": lambda: [clf.predict_proba(prebuilt[s:s + 1000])
                                                         for s in range(0, prebuilt.shape[0], 1000)],
    }
    sklearn_rows = []
    print(f"  sklearn MLPClassifier, budget {budget}, {Xs.shape[0]} instances", flush=True)
    for name, fn in sk_configs.items():
        per = Xs.shape[0] if not name.startswith("floor") else 1
        secs = median_time(fn, 3 if not args.quick else 1, min_sample_s=0.0) / per
        sklearn_rows.append({"method": name, "seconds_per_instance": secs})
        print(f"    {name:38s} {1e3 * secs:8.2f} ms", flush=True)

    meta = {"repeats": repeats, "instances": n_instances, "n_background": N_BACKGROUND,
            "reference_evaluations": 2 * ref_budget, "reference_seconds": ref_seconds,
            "reference_half_diff_mean": float(ref_half_diff.mean()),
            "reference_half_diff_max": float(ref_half_diff.max()),
            "reference_efficiency_gap": float(efficiency_gap),
            "reference_max_abs_value": float(np.abs(reference).max()),
            "reference_mean_abs_value": float(np.abs(reference).mean()),
            "shap_check": shap_check, "torch_mlp_test_accuracy": accuracy,
            "sklearn_mlp_test_accuracy": float(clf.score(X_te, y_te)),
            "load_before": load_before, "load_after": load_average(), "seconds": time.perf_counter() - t_start}
    table = markdown(rows, sklearn_rows, env, meta)
    print()
    print(table)
    if not args.quick:
        write_results(args.out, "shapley", table, {"environment": env, "run": meta, "rows": rows,
                                                    "sklearn_rows": sklearn_rows, "reference": reference.tolist()})
    return 0


def markdown(rows, sklearn_rows, env, meta) -> str:
    sc = meta["shap_check"]
    lines = [
        "# Shapley values: featurelens vs shap (and shapiq)",
        "",
        f"torch {env['torch']}, shap {env['shap']}, shapiq {env.get('shapiq', 'not installed')}, "
        f"featurelens {env['featurelens']}, NumPy {env['numpy']}, scikit-learn {env['scikit-learn']}, "
        f"Python {env['python']}; {env['threads']} torch threads on {env['cpu']} ({env['logical_cpus']} logical CPUs). "
        f"Breast-cancer data (30 standardised features), MLP 30-64-32-2 (torch, test accuracy "
        f"{meta['torch_mlp_test_accuracy']:.3f}), explaining the positive-class probability of "
        f"{meta['instances']} test rows with {meta['n_background']} background rows (interventional). "
        f"Time per instance: median over {meta['repeats']} seeds (interleaved rounds, one warm-up); "
        f"errors averaged over the instances and the seeds. Load average {meta['load_before']} before, "
        f"{meta['load_after']} after; total {meta['seconds']:.0f} s.",
        "",
        f"Reference: featurelens `permutation_shap`, {meta['reference_evaluations']:,} evaluations per instance "
        f"(two runs of {meta['reference_evaluations'] // 2:,}, averaged; {meta['reference_seconds']:.0f} s). Half the "
        f"difference of the two runs (the reference's own error scale): mean {meta['reference_half_diff_mean']:.1e}, "
        f"max {meta['reference_half_diff_max']:.1e}; mean |phi| {meta['reference_mean_abs_value']:.1e}, max |phi| "
        f"{meta['reference_max_abs_value']:.1e}; efficiency gap {meta['reference_efficiency_gap']:.1e}. "
        f"shap `PermutationExplainer` ({sc['shap_permutation_max_evals']:,} evaluations) on the first "
        f"{sc['instances']} instances differs from it by {sc['mean_abs_diff_vs_reference']:.1e} on average, "
        f"{sc['max_abs_diff_vs_reference']:.1e} at most.",
        "",
        "| budget | method | ms / instance | time / shap fastest | time / floor | MAE | MAE / shap best "
        "| max err | max err / shap best |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['budget']} | {r['method']} | {1e3 * r['seconds_per_instance']:.2f} | {r['time_vs_shap_fastest']:.2f} "
            f"| {r['time_vs_floor']:.2f} | {r['mae']:.2e} | {r['mae_vs_shap_most_accurate']:.2f} "
            f"| {r['max_err']:.2e} | {r['max_err_vs_shap_most_accurate']:.2f} |"
        )
    for budget in sorted({r["budget"] for r in rows}):
        r = next(r for r in rows if r["budget"] == budget)
        floors = ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in r["floor_by_setting"].items())
        lines.append("")
        lines.append(f"Budget {budget}: floor ({r['model_rows_per_instance']:,} model rows) {floors}; "
                     f"shap fastest: {r['shap_fastest']}; shap most accurate: {r['shap_most_accurate']}.")
    fl_rows = {r["budget"]: r for r in rows if r["method"] == "featurelens kernel_shap"}
    verdicts = []
    for budget, r in fl_rows.items():
        accurate = r["mae_vs_shap_most_accurate"] <= 1 and r["max_err_vs_shap_most_accurate"] <= 1
        fast = r["time_vs_shap_fastest"] <= 0.5
        verdicts.append(f"budget {budget}: as accurate {'yes' if accurate else 'NO'}, "
                        f">= 2x faster {'yes' if fast else 'NO'} ({1 / r['time_vs_shap_fastest']:.2f}x)")
    lines += [
        "",
        "Acceptance (featurelens `kernel_shap` vs the most accurate and the fastest shap KernelExplainer "
        "setting): " + "; ".join(verdicts) + ".",
        "",
        "Budgets: featurelens and shapiq count the empty and full coalitions in the budget; shap's "
        "`nsamples` does not (it evaluates them separately), so shap gets 2 more coalitions. shapiq runs "
        "on a NumPy game written for this benchmark (all coalitions of an instance in one model call). "
        "MAE: mean |phi - phi_ref| over the 30 features; max err: the largest |phi - phi_ref| of an "
        "instance; both averaged over instances and seeds. \"shap fastest\" / \"shap best\": the fastest / "
        "most accurate of the shap KernelExplainer rows of that budget (BLAS-limited one included).",
        "",
        "BLAS 1 thread: the call runs inside `threadpoolctl.threadpool_limits(1, 'blas')`. featurelens' "
        "`kernel_shap` solves one small weighted least-squares problem per instance with `np.linalg.lstsq` "
        "(OpenBLAS, 2 threads here) between the torch forward passes of consecutive instances (torch's "
        "OpenMP pool, 2 threads); each pool's threads spin-wait after their work, so on 2 cores they "
        "take turns stalling each other. `permutation_shap` makes no BLAS call and is not affected. "
        "batch_size=16384: larger chunks (fewer per-chunk costs: mask expansion, the Model wrapper's "
        "eval-mode switch and output checks, float64 averaging).",
        "",
        "## sklearn MLPClassifier through predict_proba (budget "
        f"{BUDGETS[-1]}, {SKLEARN_INSTANCES} instances, test accuracy {meta['sklearn_mlp_test_accuracy']:.3f})",
        "",
        "| method | ms / instance |",
        "|---|---:|",
    ]
    for r in sklearn_rows:
        lines.append(f"| {r['method']} | {1e3 * r['seconds_per_instance']:.2f} |")
    lines += [
        "",
        "featurelens hands a NumPy model chunks of at most 16,384 rows (327 coalitions x 50 background rows); "
        "shap makes one call with all rows of an instance. Times here are medians of 3 calls, not interleaved.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
