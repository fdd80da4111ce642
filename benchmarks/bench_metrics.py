"""Explanation-quality metrics, featurelens against Quantus 0.6, side by side in one run.

Setting: the XAI-TRIS 8x8 CNN (``featurelens.bench.models.build_model("cnn", 8)``) trained briefly
on the linear/white scenario (``featurelens.datasets.xai_tris``, 4,000 images), then 256 test images,
their predicted classes as targets, and |saliency| maps as the attributions (featurelens
``saliency(abs=True)``; Quantus's own ``quantus.explain(method="Saliency")`` for the metrics that
re-explain, i.e. Captum's Saliency, the same |gradient|). The ground-truth masks of the data are the
masks of the localisation metrics. Both libraries get the same model, inputs, targets and maps.

Quantus settings: ``batch_size=256`` (the whole batch in one call, its documented batch argument;
the default 64 would only slow it down), ``softmax=False`` (logits, as featurelens uses),
``disable_warnings=True``, otherwise its defaults except where named in the table (e.g.
``nr_samples=10`` for the sensitivities instead of 200, the same count featurelens draws;
``features_in_step=1`` for PixelFlipping, i.e. all 64 steps). featurelens: default batching.

Values: where the metric is deterministic on the same inputs, the table gives the largest absolute
difference; where it draws random perturbations (different generators), the two means.
Timing: featurelens is the median of ``--repeats`` runs after a warm-up; Quantus the median of
``--quantus-repeats`` runs (default 1) after its own untimed warm-up run; metrics whose Quantus
warm-up takes under 0.2 s are timed 7 times on both sides. "floor" is the work no
implementation can avoid, in plain torch on prebuilt inputs: one forward pass over the same number
of rows (1024-row chunks) for the metrics that call the model, one batched input gradient over the
re-explained rows for those that re-explain (sensitivities, MPRT: 5 layers x 256 images).
The PixelFlipping row gives both libraries the same maps plus a 1e-9 jitter, since |saliency| has
exact zeros whose order is arbitrary.
torch runs with ``--threads`` threads (default 1: the benchmark machine is shared).

Usage: .venv/bin/python benchmarks/bench_metrics.py [--repeats 3] [--n 256]
Writes benchmarks/results/metrics.md and metrics.json.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import torch

import featurelens as fl
from _common import environment, load_average, write_results
from featurelens.bench.models import build_model
from featurelens.bench.training import train_model

RESULTS = Path(__file__).resolve().parent / "results"
M = fl.metrics


def timed(fn, repeats: int, warmup: bool = True):
    if warmup:
        fn()
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def floor_time(model, rows: int, repeats: int) -> float:
    x = torch.randn(rows, 1, 8, 8)

    def run():
        with torch.no_grad():
            for s in range(0, rows, 1024):
                model(x[s : s + 1024])

    return timed(run, repeats)[0]


def grad_floor_time(model, rows: int, repeats: int, chunk: int = 1024) -> float:
    """One batched input gradient (forward + backward of the summed top logit) over prebuilt rows."""
    x = torch.randn(rows, 1, 8, 8)

    def run():
        for s in range(0, rows, chunk):
            xs = x[s : s + chunk].requires_grad_(True)
            out = model(xs)
            (g,) = torch.autograd.grad(out.max(1).values.sum(), xs)

    return timed(run, repeats)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=256, help="images evaluated (default 256)")
    parser.add_argument("--repeats", type=int, default=3, help="featurelens timed runs after a warm-up")
    parser.add_argument("--quantus-repeats", type=int, default=1, help="Quantus timed runs (default 1)")
    parser.add_argument("--no-quantus-warmup", action="store_true", help="skip Quantus's untimed warm-up run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    import quantus

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    load_before = load_average()

    data = fl.datasets.xai_tris("linear", "white", image_size=8, n_samples=4000, seed=0)
    train, val, test = data.split((0.8, 0.1, 0.1))
    t0 = time.perf_counter()
    model, hist = train_model(build_model("cnn", 8, seed=0), train, val, test, epochs=150, patience=30,
                              lr=5e-3, progress=False)
    train_seconds = time.perf_counter() - t0
    model.eval()
    n = min(args.n, len(test))
    x = np.ascontiguousarray(test.X[:n], dtype=np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).argmax(1).numpy()
    s = test.ground_truth[:n, None].astype(np.float32)  # (n, 1, 8, 8)
    ex = fl.explainer("saliency", model, abs=True)
    a = ex.explain(x, target=y).values.astype(np.float64)
    a_q = np.asarray(quantus.explain(model, x, y, method="Saliency"), dtype=np.float64)
    a_q = a_q.reshape(a.shape)
    maps_agree = float(np.abs(a - a_q).max())
    # Per-sample max 1: Quantus divides by the batch maximum, featurelens by each sample's; on
    # maps normalised this way both divisions are the identity, so the values must agree.
    a1 = a / np.maximum(np.abs(a).reshape(n, -1).max(1), 1e-30)[:, None, None, None]
    qkw = dict(model=model, x_batch=x, y_batch=y, device="cpu", batch_size=256, softmax=False)
    q_explain = dict(explain_func=quantus.explain, explain_func_kwargs={"method": "Saliency"})

    rows = []

    def add(name, quantus_call, fl_call, compare, setting, model_rows=None, grad_rows=None):
        # Sub-second metrics are timed 7 times on both sides (one run of a millisecond is noise).
        t0 = time.perf_counter()
        if not args.no_quantus_warmup:
            quantus_call()
        cheap = not args.no_quantus_warmup and time.perf_counter() - t0 < 0.2
        tq, vq = timed(quantus_call, 7 if cheap else args.quantus_repeats, warmup=False)
        tf, vf = timed(fl_call, max(7, args.repeats) if cheap else args.repeats)
        agree = compare(vq, vf)
        floor = None
        if model_rows:
            floor = floor_time(model, model_rows, args.repeats)
        elif grad_rows:
            floor = grad_floor_time(model, grad_rows, args.repeats)
        rows.append({"metric": name, "setting": setting, "quantus_s": tq, "featurelens_s": tf,
                     "ratio": tq / tf, "floor_s": floor, "agreement": agree})
        print(f"{name:28s} quantus {tq:8.3f}s  featurelens {tf:7.4f}s  x{tq / tf:7.1f}  {agree}", flush=True)

    def maxdiff(vq, vf):
        return f"max |diff| {np.nanmax(np.abs(np.asarray(vq, dtype=np.float64).reshape(np.shape(vf)) - vf)):.1e}"

    def means(vq, vf):
        return f"means {np.nanmean(np.asarray(vq, dtype=np.float64)):.4f} / {np.nanmean(vf):.4f}"

    add("Sparseness", lambda: quantus.Sparseness(disable_warnings=True)(a_batch=a1.copy(), **qkw),
        lambda: M.sparseness(a1), maxdiff, "defaults (abs, max-normalised)")
    add("Complexity", lambda: quantus.Complexity(disable_warnings=True)(a_batch=a1.copy(), **qkw),
        lambda: M.complexity(a1), maxdiff, "defaults")
    add("RelevanceMassAccuracy",
        lambda: quantus.RelevanceMassAccuracy(disable_warnings=True)(a_batch=a1.copy(), s_batch=s, **qkw),
        lambda: M.relevance_mass(a1, s), maxdiff, "defaults; masks = XAI-TRIS ground truth")
    add("RelevanceRankAccuracy",
        lambda: quantus.RelevanceRankAccuracy(disable_warnings=True)(a_batch=a1.copy(), s_batch=s, **qkw),
        lambda: M.relevance_rank_accuracy(a1, s), maxdiff, "defaults")
    add("FaithfulnessCorrelation",
        lambda: quantus.FaithfulnessCorrelation(nr_runs=100, subset_size=16, return_aggregate=False,
                                                disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.faithfulness_correlation(model, x, a, target=y, n_subsets=100, subset_size=16, baseline="min"),
        means, "100 subsets of 16 pixels, 'black' = per-image min", model_rows=101 * n)

    def deletion_compare(vq, vf):
        vq = np.asarray(vq, dtype=np.float64)
        return f"curve max |diff| {np.abs(vq - vf[0][:, 1:]).max():.1e}"

    # |saliency| of a ReLU/max-pool CNN has exact zeros; the order of tied pixels is arbitrary (Quantus
    # sorts with numpy's unstable quicksort), so both get the same map plus a 1e-9 jitter.
    a_tb = a + 1e-9 * np.random.default_rng(0).random(a.shape)
    add("PixelFlipping / deletion",
        lambda: quantus.PixelFlipping(features_in_step=1, disable_warnings=True)(a_batch=a_tb.copy(), **qkw),
        lambda: M.deletion_curve(model, x, a_tb, target=y, steps=64, baseline="min"),
        deletion_compare, "64 steps of 1 pixel, 'black'", model_rows=65 * n)
    add("MaxSensitivity",
        lambda: quantus.MaxSensitivity(nr_samples=10, lower_bound=0.2, disable_warnings=True)(
            a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.max_sensitivity(ex, x, target=y, radius=0.2, n_samples=10, relative=False, attributions=a),
        means, "10 samples, U(-0.2, 0.2) noise, Saliency", grad_rows=10 * n)
    add("AvgSensitivity",
        lambda: quantus.AvgSensitivity(nr_samples=10, lower_bound=0.2, disable_warnings=True)(
            a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.avg_sensitivity(ex, x, target=y, radius=0.2, n_samples=10, relative=False, attributions=a),
        means, "10 samples, U(-0.2, 0.2) noise, Saliency", grad_rows=10 * n)
    add("Infidelity",
        lambda: quantus.Infidelity(disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.infidelity(model, x, a, target=y, n_perturbations=40),
        lambda vq, vf: "different definitions (Quantus: 4x4 patch removal; featurelens: Gaussian noise)",
        "Quantus defaults (4x4 patches x 10 repeats = 40 passes); featurelens 40 Gaussian draws",
        model_rows=41 * n)

    def mprt_compare(vq, vf):
        q = np.array([vq[k] for k in vq if k != "original"], dtype=np.float64)
        return f"max |diff| {np.abs(q - vf['similarity']).max():.1e} over {q.shape[0]} layers"

    add("MPRT (model randomisation)",
        lambda: quantus.MPRT(seed=42, disable_warnings=True)(a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.model_randomization("saliency", model, x, target=y, seed=42,
                                      explainer_params={"abs": True}, attributions=a),
        mprt_compare, "top-down cascading, seed 42, Saliency", grad_rows=5 * n)

    load_after = load_average()
    lines = [
        f"# Explanation metrics: featurelens vs Quantus {quantus.__version__}",
        "",
        f"{n} XAI-TRIS 8x8 images (linear, white), the 8x8 CNN (test accuracy "
        f"{hist['test_accuracy']:.3f}, trained in {train_seconds:.0f} s), |saliency| maps; torch threads "
        f"{args.threads}; load average before/after {load_before} / {load_after} (a shared machine).",
        f"featurelens and Captum/Quantus saliency maps agree to {maps_agree:.1e}.",
        "",
        "| metric | setting | Quantus s | featurelens s | ratio | floor s | values |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        floor = f"{r['floor_s']:.4f}" if r["floor_s"] is not None else "-"
        lines.append(f"| {r['metric']} | {r['setting']} | {r['quantus_s']:.3f} | {r['featurelens_s']:.4f} | "
                     f"{r['ratio']:.0f}x | {floor} | {r['agreement']} |")
    table = "\n".join(lines) + "\n"
    print(table)
    meta = {"n": n, "repeats": args.repeats, "quantus_repeats": args.quantus_repeats, "threads": args.threads,
            "train_seconds": train_seconds, "test_accuracy": hist["test_accuracy"], "maps_agree": maps_agree,
            "load_before": load_before, "load_after": load_after}
    write_results(args.out, "metrics", table,
                  {"environment": environment(quantus=quantus.__version__), "meta": meta, "rows": rows})


if __name__ == "__main__":
    main()
