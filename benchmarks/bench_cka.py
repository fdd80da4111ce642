"""Linear CKA at n = 5,000: featurelens (feature space) against n x n Gram matrices.

    CKA = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)),   K = A A^T, L = B B^T

for A (5,000 x d) Gaussian and B = A R + noise (5,000 x d, a non-trivial CKA), d = 512 and 2048,
both estimators:

- featurelens: ``fl.learning.cka(A, B, debiased=...)`` at its defaults, which at these sizes is
  the feature-space form, from A^T B, A^T A, B^T B (float64) plus row norms and column sums for
  the debiased estimator (``method="auto"`` takes the Gram form only when n (p + q) < p^2 + q^2 + p q);
- the reference: plain NumPy float64 n x n Gram matrices, written here: K = A A^T, L = B B^T,
  biased HSIC = <HKH, HLH> with the double centring done in place by column/row means (O(n^2),
  not a product with H), debiased HSIC = the unbiased estimator of Song et al. (2012) on K, L
  with zeroed diagonals; every HSIC term a flat dot product (no n x n temporaries); with ``--torch`` the same in torch for context;
- with ``--textbook``, once, the textbook transcription tr(K H L H) with H = I - 11^T/n as a
  matrix (two n x n x n products per Gram matrix; over a minute on 2 cores);
- the floor: the three feature-space products of the centred matrices and their Frobenius norms
  (the biased estimator and nothing else), the least work a feature-space CKA must do;
- featurelens' exact minibatch accumulator ``CKAAccumulator`` fed 10 batches of 500 rows;
- a reference CKA library when one is installed (ckatorch's ``cka_base``); none is required.

Times are the minimum of ``--repeats`` runs after a warm-up (the accumulator: one run); peak
memory is what NumPy allocated during one more call beyond the inputs (tracemalloc). About a
minute on 2 idle cores at the defaults (several on a loaded machine). Usage:
    .venv/bin/python benchmarks/bench_cka.py [--repeats 5] [--torch] [--textbook]
Writes benchmarks/results/cka.md and cka.json.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import torch

import featurelens as fl
from _common import environment, load_average, write_results

RESULTS = Path(__file__).resolve().parent / "results"
N = 5000
DIMS = (512, 2048)


def data(d: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(d)
    A = rng.standard_normal((n, d))
    R = rng.standard_normal((d, d)) / np.sqrt(d)
    B = A @ R + rng.standard_normal((n, d))
    return A, B


# ------------------------------------------------------------------ the Gram-matrix reference ----
# Written to be fast: each Gram matrix is centred (or its diagonal zeroed) once, in place, and the
# three HSIC terms are flat dot products (no n x n temporaries).
def _ratio(hxy, hxx, hyy):
    return hxy / np.sqrt(hxx * hyy)


def gram_cka_numpy(A: np.ndarray, B: np.ndarray, debiased: bool) -> float:
    n = A.shape[0]
    K, L = A @ A.T, B @ B.T
    if not debiased:
        for M in (K, L):  # double centring H M H: column means, then the new row means
            M -= M.mean(0, keepdims=True)
            M -= M.mean(1, keepdims=True)
        return _ratio(np.vdot(K, L), np.vdot(K, K), np.vdot(L, L))  # the 1/(n-1)^2 cancels
    np.fill_diagonal(K, 0.0)
    np.fill_diagonal(L, 0.0)
    k1, l1 = K.sum(1), L.sum(1)

    def hsic1(P, Q, p1, q1):
        return (np.vdot(P, Q) + p1.sum() * q1.sum() / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * (p1 @ q1)) / (n * (n - 3))

    return _ratio(hsic1(K, L, k1, l1), hsic1(K, K, k1, k1), hsic1(L, L, l1, l1))


def gram_cka_torch(A: torch.Tensor, B: torch.Tensor, debiased: bool) -> float:
    n = A.shape[0]
    K, L = A @ A.T, B @ B.T
    if not debiased:
        for M in (K, L):
            M -= M.mean(0, keepdim=True)
            M -= M.mean(1, keepdim=True)
        k, l_ = K.reshape(-1), L.reshape(-1)
        return float(_ratio(k @ l_, k @ k, l_ @ l_))
    K.fill_diagonal_(0.0)
    L.fill_diagonal_(0.0)
    k1, l1 = K.sum(1), L.sum(1)
    k, l_ = K.reshape(-1), L.reshape(-1)

    def hsic1(p, q, p1, q1):
        return (p @ q + p1.sum() * q1.sum() / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * (p1 @ q1)) / (n * (n - 3))

    return float(_ratio(hsic1(k, l_, k1, l1), hsic1(k, k, k1, k1), hsic1(l_, l_, l1, l1)))


def textbook_cka(A: np.ndarray, B: np.ndarray) -> float:
    """Biased CKA as tr(KHLH) with H an explicit n x n matrix."""
    n = A.shape[0]
    H = np.eye(n) - 1.0 / n
    Kc = H @ (A @ A.T) @ H
    Lc = H @ (B @ B.T) @ H
    return float(np.sum(Kc * Lc) / np.sqrt(np.sum(Kc * Kc) * np.sum(Lc * Lc)))


def floor_cka(A: np.ndarray, B: np.ndarray) -> float:
    X = A - A.mean(0)
    Y = B - B.mean(0)
    xy, xx, yy = X.T @ Y, X.T @ X, Y.T @ Y
    return float(np.vdot(xy, xy) / np.sqrt(np.vdot(xx, xx) * np.vdot(yy, yy)))


def accumulated(A: np.ndarray, B: np.ndarray, debiased: bool, batches: int = 10) -> float:
    acc = fl.learning.CKAAccumulator(debiased=debiased)
    for idx in np.array_split(np.arange(A.shape[0]), batches):
        acc.update(A[idx], B[idx])
    return acc.compute()


def peak_mib(fn) -> float:
    """Peak memory NumPy allocated during one untimed call (tracemalloc sees NumPy's buffers)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def timed(fn, repeats: int) -> tuple[float, list[float], object]:
    result = fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    # The minimum: on a machine shared with other work it is the least-disturbed run; every
    # run's time is kept in the JSON.
    return min(times), times, result


def reference_library():
    """ckatorch's cka_base when installed (Gram-based, float64), else None."""
    try:
        mod = importlib.import_module("ckatorch")
    except ImportError:
        return None, None
    core = getattr(mod, "core", mod)
    fn = getattr(core, "cka_base", None) or getattr(mod, "cka_base", None)
    if fn is None:
        return None, None
    version = getattr(mod, "__version__", "unknown")

    def run(A, B, debiased):
        return float(fn(torch.from_numpy(A), torch.from_numpy(B), kernel="linear", unbiased=debiased))

    return run, version


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs after the warm-up (default 5)")
    parser.add_argument("--torch", action="store_true", help="also time the Gram reference in torch")
    parser.add_argument("--textbook", action="store_true", help="also time tr(KHLH) with an explicit H, once")
    parser.add_argument("--n", type=int, default=N, help=f"rows (default {N:,}; smaller for a smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    n_rows = args.n

    torch.set_num_threads(2)
    lib, lib_version = reference_library()
    env = environment(reference_library=f"ckatorch {lib_version}" if lib else "none installed")
    try:
        from threadpoolctl import threadpool_info

        env["numpy_blas"] = [
            {k: i.get(k) for k in ("internal_api", "version", "num_threads")} for i in threadpool_info()
        ]
    except ImportError:  # pragma: no cover
        pass
    print(f"torch {env['torch']}, {env['threads']} threads, {env['cpu']}", flush=True)
    load_before = load_average()
    start_all = time.perf_counter()

    rows = []
    textbook = None
    for d in DIMS:
        A, B = data(d, n_rows)
        At, Bt = torch.from_numpy(A), torch.from_numpy(B)
        floor_s, floor_times, floor_val = timed(lambda: floor_cka(A, B), args.repeats)
        for debiased in (False, True):
            label = f"n={n_rows}, d={d}, {'debiased' if debiased else 'biased'}"
            print(f"  {label}", flush=True)
            fl_s, fl_times, ours = timed(lambda: fl.learning.cka(A, B, debiased=debiased), args.repeats)
            g_s, g_times, gram = timed(lambda: gram_cka_numpy(A, B, debiased), args.repeats)
            if args.torch:
                gt_s, _, gram_t = timed(lambda: gram_cka_torch(At, Bt, debiased), args.repeats)
            else:
                gt_s, gram_t = float("nan"), gram
            t0 = time.perf_counter()
            acc_val = accumulated(A, B, debiased)
            acc_s = time.perf_counter() - t0
            memory = {
                "featurelens_peak_mib": peak_mib(lambda: fl.learning.cka(A, B, debiased=debiased)),
                "gram_numpy_peak_mib": peak_mib(lambda: gram_cka_numpy(A, B, debiased)),
                "accumulator_peak_mib": peak_mib(lambda: accumulated(A, B, debiased)),
            }
            row = {
                "case": label,
                **memory,
                "n": n_rows,
                "d": d,
                "debiased": debiased,
                "featurelens_s": fl_s,
                "featurelens_times_s": fl_times,
                "value": ours,
                "gram_numpy_s": g_s,
                "gram_numpy_times_s": g_times,
                "gram_numpy_value": gram,
                "gram_torch_s": gt_s if args.torch else None,
                "gram_torch_value": gram_t if args.torch else None,
                "speedup_vs_gram_numpy": g_s / fl_s,
                "speedup_vs_gram_torch": gt_s / fl_s if args.torch else None,
                "max_abs_diff_vs_gram": max(abs(ours - gram), abs(ours - gram_t)),
                "accumulator_10x500_s": acc_s,
                "accumulator_abs_diff": abs(acc_val - ours),
            }
            if not debiased:
                row.update(floor_s=floor_s, floor_times_s=floor_times, ratio_vs_floor=fl_s / floor_s,
                           floor_abs_diff=abs(floor_val - ours))
            if lib is not None:
                lib_s, lib_times, lib_val = timed(lambda: lib(A, B, debiased), args.repeats)
                row.update(library_s=lib_s, library_value=lib_val, speedup_vs_library=lib_s / fl_s,
                           library_abs_diff=abs(lib_val - ours))
            print(f"    featurelens {fl_s:.3f} s, Gram numpy {g_s:.3f} s ({g_s / fl_s:.1f}x); "
                  f"CKA {ours:.6f}, max diff {row['max_abs_diff_vs_gram']:.1e}", flush=True)
            rows.append(row)
        if textbook is None and args.textbook:
            print("  textbook tr(KHLH), once", flush=True)
            t0 = time.perf_counter()
            val = textbook_cka(A, B)
            seconds = time.perf_counter() - t0
            textbook = {"d": d, "seconds": seconds, "abs_diff": abs(val - rows[-2]["value"]),
                        "speedup": seconds / rows[-2]["featurelens_s"]}

    meta = {"repeats": args.repeats, "n": n_rows, "dims": list(DIMS), "load_before": load_before,
            "load_after": load_average(), "seconds": time.perf_counter() - start_all}
    lines = [
        f"# Linear CKA at n = {n_rows:,}: featurelens (feature space) vs n x n Gram matrices",
        "",
        f"torch {env['torch']}, featurelens {env['featurelens']}, Python {env['python']}; {env['threads']} torch "
        f"threads on {env['cpu']} ({env['logical_cpus']} logical CPUs); float64 throughout. Minimum of "
        f"{args.repeats} runs after a warm-up (the accumulator: one run). Load average {meta['load_before']} before, {meta['load_after']} after "
        f"(the machine may be shared: ratios are more stable than seconds); total {meta['seconds']:.0f} s. "
        f"Reference CKA library: {env['reference_library']}.",
        "",
        "| case | featurelens s | Gram (NumPy) s | speed-up | peak MiB featurelens / Gram / accumulator |"
        + (" Gram (torch) s | speed-up |" if args.torch else "")
        + " CKA | max abs diff vs Gram | accumulator 10 x 500 s (abs diff vs cka) |",
        "|---|---:|---:|---:|---|" + ("---:|---:|" if args.torch else "") + "---:|---:|---|",
    ]
    for r in rows:
        torch_cols = f" {r['gram_torch_s']:.3f} | {r['speedup_vs_gram_torch']:.1f}x |" if args.torch else ""
        lines.append(
            f"| {r['case']} | {r['featurelens_s']:.3f} | {r['gram_numpy_s']:.3f} | {r['speedup_vs_gram_numpy']:.1f}x "
            f"| {r['featurelens_peak_mib']:.0f} / {r['gram_numpy_peak_mib']:.0f} / {r['accumulator_peak_mib']:.0f} |"
            f"{torch_cols} {r['value']:.6f} "
            f"| {r['max_abs_diff_vs_gram']:.1e} | {r['accumulator_10x500_s']:.3f} ({r['accumulator_abs_diff']:.0e}) |"
        )
    lines += [
        "",
        "Floor (the three centred feature-space products and their Frobenius norms, biased CKA only):",
        "",
        "| case | floor s | featurelens / floor |",
        "|---|---:|---:|",
    ]
    for r in rows:
        if "floor_s" in r:
            lines.append(f"| {r['case']} | {r['floor_s']:.3f} | {r['ratio_vs_floor']:.2f} |")
    if textbook is not None:
        lines += [
            "",
            f"Textbook transcription tr(K H L H) with an explicit n x n centring matrix H (biased, d = "
            f"{textbook['d']}, one run): {textbook['seconds']:.1f} s, {textbook['speedup']:.0f}x featurelens' time; "
            f"abs diff {textbook['abs_diff']:.1e}.",
        ]
    if lib is not None:
        lines += ["", "| case | library s | speed-up | abs diff |", "|---|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['case']} | {r['library_s']:.3f} | {r['speedup_vs_library']:.1f}x "
                         f"| {r['library_abs_diff']:.1e} |")
    lines += [
        "",
        "Feature-space cost is O(n (p^2 + q^2 + p q)) against O(n^2 (p + q)) for the Gram matrices, so the gain "
        "shrinks as d approaches n; memory is O(p q + p^2 + q^2) against O(n^2) (two 5,000 x 5,000 float64 "
        "matrices are 400 MB).",
        "",
    ]
    table = "\n".join(lines)
    print()
    print(table)
    write_results(args.out, "cka", table, {"environment": env, "run": meta, "rows": rows, "textbook": textbook})
    return 0


if __name__ == "__main__":
    sys.exit(main())
