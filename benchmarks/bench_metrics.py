"""Explanation-quality metrics, featurelens against Quantus 0.6, side by side in one run.

Setting: the XAI-TRIS 8x8 CNN (``featurelens.groundtruth.models.build_model("cnn", 8)``) trained briefly
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
re-explained rows for those that re-explain (sensitivities, MPRT: 5 layers x 256 images);
Sufficiency's floor adds the one n x n distance matrix its definition needs (scipy's euclidean
``cdist`` of the maps).
The PixelFlipping row gives both libraries the same maps plus a 1e-9 jitter, since |saliency| has
exact zeros whose order is arbitrary.
torch runs with ``--threads`` threads (default 1: the benchmark machine is shared).

The metrics of issue 16 follow, with the same rules; where Quantus needs help the table says so:
ROAD and SmoothMPRT run on the first ``--n-slow`` images (default 64; Quantus takes seconds per
dozen images there). IROF gets SLIC segments computed inside both timings (featurelens: the user's
``slic`` call, the same call Quantus makes), each image's own mean as a fixed baseline array (Quantus
re-reads "mean" from the already-perturbed image), the jittered maps, and, under numpy >= 2.4, the
shim ``np.trapz = np.trapezoid`` (Quantus's IROF calls the removed ``np.trapz``; the tests use the
same shim). Monotonicity: Quantus is given a perturb_func that inserts x's pixels (its default
re-fills the baseline with the baseline, so its curve is flat), as in the parity test. SensitivityN
and Completeness differ by definition (Quantus: one correlation per step across the batch, and an
exact float equality), so only time is compared, at about the same number of forward passes. The
relative stabilities get Quantus's uniform noise as U(-0.2, 0.2) (``lower_bound=-0.2``,
``upper_bound=0.2``); their ratios are heavy-tailed, so medians. EfficientMPRT runs Quantus with
``softmax=True`` (its model-entropy extra needs probabilities; the explanation score does not use
them). InputInvariance uses a small seeded conv(3x3, no padding)-ReLU-linear net as one flat
Sequential: Quantus shifts the first named submodule's bias, and featurelens refuses a padded first
convolution (a constant shift reaches the border outputs only in part). Focus gets 2x2 mosaics of
the test images (``focus_mosaics``) with |input| maps, since the 8x8 CNN cannot explain 16x16 ones.

Usage: .venv/bin/python benchmarks/bench_metrics.py [--repeats 3] [--n 256] [--n-slow 64]
       [--only NAME,NAME] (a subset of rows, for debugging)
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
from featurelens.groundtruth.models import build_model
from featurelens._training import train_model

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


def _x(ratio: float) -> str:
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=256, help="images evaluated (default 256)")
    parser.add_argument("--repeats", type=int, default=3, help="featurelens timed runs after a warm-up")
    parser.add_argument("--quantus-repeats", type=int, default=1, help="Quantus timed runs (default 1)")
    parser.add_argument("--no-quantus-warmup", action="store_true", help="skip Quantus's untimed warm-up run")
    parser.add_argument("--n-slow", type=int, default=64, help="images for the slowest Quantus metrics")
    parser.add_argument("--only", default=None, help="comma-separated metric names to run (debugging)")
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

    def add(name, quantus_call, fl_call, compare, setting, model_rows=None, grad_rows=None, floor_model=None,
            floor_extra=None):
        if args.only and name not in args.only.split(","):
            return
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
            floor = grad_floor_time(floor_model or model, grad_rows, args.repeats)
        if floor_extra is not None:  # work beyond the model the definition itself requires
            floor += timed(floor_extra, max(7, args.repeats))[0]
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
        lambda: M.model_randomization("saliency", x, model=model, target=y, seed=42,
                                      explainer_params={"abs": True}, attributions=a),
        mprt_compare, "top-down cascading, seed 42, Saliency", grad_rows=5 * n)

    # -- the metrics of issue 16 ------------------------------------------------------------------------
    # Slow Quantus metrics run on the first k images (said in the setting column); ``sub`` slices
    # every input alike for both libraries.
    def sub(k):
        k = min(k, n)
        return k, x[:k], y[:k], a[:k], a1[:k], s[:k], dict(qkw, x_batch=x[:k], y_batch=y[:k])

    def finite_maxdiff(vq, vf):
        vq = np.asarray(vq, dtype=np.float64).reshape(np.shape(vf))
        ok = np.isfinite(vf)
        return f"max |diff| {np.abs(vq[ok] - vf[ok]).max():.1e} on {ok.sum()}/{ok.size} defined"

    def nanmedians(vq, vf):  # the ratios have heavy tails (eps_min in the denominator)
        vq = np.asarray(vq, dtype=np.float64)
        return f"medians {np.nanmedian(vq):.4g} / {np.nanmedian(vf):.4g}"

    def same_verdicts(vq, vf):
        vq = np.asarray(vq, dtype=np.float64).reshape(np.shape(vf))
        return f"verdicts equal on {int(np.sum(vq == vf))}/{vq.size}"

    k, xk, yk, ak, _, _, qk = sub(args.n_slow)
    # Quantus's default percentages (1, 3, ..., 99) start below one pixel of an 8x8 image (1% of
    # 64 = 0.64), a step that removes nothing and that fl.metrics.road refuses; both libraries get
    # 2, 4, ..., 98 instead (every step removes at least one more pixel).
    road_pct = list(range(2, 100, 2))
    add("ROAD", lambda: quantus.ROAD(percentages=road_pct, noise=0.01, disable_warnings=True)(a_batch=ak.copy(), **qk),
        lambda: M.road(model, xk, ak, target=yk, percentages=road_pct, noise_std=0.01, seed=0),
        lambda vq, vf: f"mean curves {np.mean([vq[p] for p in vq]):.4f} / {np.mean(vf[0]):.4f}",
        f"{k} images; {len(road_pct)} percentages (2, 4, ..., 98), noisy linear imputation, noise 0.01",
        model_rows=len(road_pct) * k)

    from skimage.segmentation import slic

    def slic_groups(xs):  # what Quantus's get_superpixel_segments computes, per image
        return np.stack([slic(np.moveaxis(xi, 0, -1).astype("double"), start_label=0) for xi in xs])

    trapz_shim = not hasattr(np, "trapz")
    if trapz_shim:  # Quantus's IROF calls np.trapz, removed in numpy 2.4
        np.trapz = np.trapezoid
    seg = slic_groups(x)
    n_seg = seg.reshape(n, -1).max(1) + 1

    def irof_compare(vq, vf):
        vq = np.asarray(vq, dtype=np.float64)
        full = n_seg == n_seg.max()  # Quantus pads shorter curves with zeros and integrates into them
        return (f"max |diff| {np.abs(vq[full] - vf[1][full]).max():.1e} on the {full.sum()} images with "
                f"{n_seg.max()} segments")

    # Quantus's "mean" is re-read from the already-perturbed image at every step (the paper: the
    # image's mean); both get each image's own mean as a fixed array.
    base_mean = np.broadcast_to(x.mean(axis=(1, 2, 3), keepdims=True), x.shape).copy()
    add("IROF", lambda: quantus.IROF(return_aggregate=False, perturb_baseline=base_mean, disable_warnings=True)(
            a_batch=a_tb.copy(), **dict(qkw, softmax=True)),
        lambda: M.irof(model, x, a_tb, target=y, groups=slic_groups(x)),
        irof_compare, "SLIC segments (computed inside both timings), each image's mean, probabilities"
        + ("; np.trapz shim" if trapz_shim else ""), model_rows=int(n_seg.sum()) + n)

    def curves_compare(vq, vf):
        vq = np.asarray(vq, dtype=np.float64)
        return f"curve max |diff| {np.abs(vq - vf[0]).max():.1e}"

    add("Selectivity", lambda: quantus.Selectivity(patch_size=2, disable_warnings=True)(a_batch=a_tb.copy(), **qkw),
        lambda: M.selectivity(model, x, a_tb, target=y, patch_size=2),
        curves_compare, "2x2 patches (16 regions), 'black'", model_rows=17 * n)
    add("RegionPerturbation",
        lambda: quantus.RegionPerturbation(patch_size=2, regions_evaluation=16, disable_warnings=True)(
            a_batch=a_tb.copy(), **qkw),
        lambda: M.region_perturbation(model, x, a_tb, target=y, patch_size=2, steps=16),
        curves_compare, "2x2 patches, 16 steps, MoRF, 'black'", model_rows=17 * n)
    add("SensitivityN",
        lambda: quantus.SensitivityN(return_aggregate=False, disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.sensitivity_n(model, x, a, target=y, n_subsets=5, baseline="min"),
        lambda vq, vf: f"different definitions (Quantus: {np.size(vq)} values, one per step across the batch; "
                       f"featurelens: per image, mean {np.nanmean(vf):.4f})",
        "Quantus defaults (51 cumulative steps of 1 pixel); featurelens 10 subset sizes x 5 subsets = 50 passes",
        model_rows=51 * n)

    flat_x = x.reshape(n, -1)

    def insert(arr, indices, **kw):  # what the paper asks (the test's perturb_func): insert x's pixels
        arr = arr.copy()
        rows_ = np.arange(arr.shape[0])[:, None]
        arr[rows_, indices] = flat_x[rows_, indices]
        return arr

    add("Monotonicity",
        lambda: quantus.Monotonicity(perturb_func=insert, disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.monotonicity(model, x, a, target=y, baseline="min"),
        same_verdicts, "64 steps of 1 pixel from 'black'; Quantus given an inserting perturb_func (its "
        "default never inserts)", model_rows=65 * n)
    add("MonotonicityCorrelation",
        lambda: quantus.MonotonicityCorrelation(nr_samples=10, disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.monotonicity_correlation(model, x, a, target=y, n_samples=10),
        means, "10 uniform draws per pixel (64 x 10 passes)", model_rows=641 * n)
    from scipy.spatial.distance import cdist

    a_flat = np.abs(a.reshape(n, -1))
    add("Sufficiency", lambda: quantus.Sufficiency(disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.sufficiency(model, x, a, threshold=0.6),
        finite_maxdiff, "threshold 0.6, seuclidean (Quantus scores 'no neighbour' 0, featurelens NaN)",
        model_rows=n, floor_extra=lambda: cdist(a_flat, a_flat))
    add("Continuity",
        lambda: quantus.Continuity(nr_steps=8, normalise=False, disable_warnings=True)(
            a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.continuity(ex, x, target=y, steps=8, normalise=False),
        maxdiff, "8 translation steps in x, 'black', Saliency", grad_rows=9 * n)

    from quantus.functions import discretise_func as D

    add("Consistency",
        lambda: quantus.Consistency(discretise_func=D.top_n_sign, disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.consistency(ex, x, attributions=a, discretise="first_k_sign"),
        finite_maxdiff, "Quantus default top_n_sign (first 5 signs) = first_k_sign", model_rows=n)

    rs_kw = {"nr_samples": 10, "perturb_func_kwargs": {"lower_bound": -0.2, "upper_bound": 0.2},
             "disable_warnings": True}
    fl_rs = {"target": y, "radius": 0.2, "n_samples": 10, "seed": 0, "relative": False, "attributions": a}
    add("RelativeInputStability",
        lambda: quantus.RelativeInputStability(**rs_kw)(a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.relative_input_stability(ex, x, **fl_rs),
        nanmedians, "10 draws U(-0.2, 0.2), Saliency", grad_rows=10 * n)
    add("RelativeOutputStability",
        lambda: quantus.RelativeOutputStability(**rs_kw)(a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.relative_output_stability(ex, x, **fl_rs),
        nanmedians, "10 draws U(-0.2, 0.2), Saliency", grad_rows=10 * n)
    add("RelativeRepresentationStability",
        lambda: quantus.RelativeRepresentationStability(layer_names=["features.5"], **rs_kw)(
            a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.relative_representation_stability(ex, x, layer="features.5", **fl_rs),
        nanmedians, "10 draws U(-0.2, 0.2), layer features.5, Saliency", grad_rows=10 * n)
    add("RandomLogit",
        lambda: quantus.RandomLogit(num_classes=2, normalise=False, disable_warnings=True)(
            a_batch=a.copy(), **qkw, **q_explain),
        lambda: M.random_logit(ex, x, target=y, normalise=False, attributions=a),
        maxdiff, "2 classes (the other class), SSIM, Saliency", grad_rows=n)

    def emprt_compare(vq, vf):
        return f"max |diff| {np.abs(np.asarray(vq, dtype=np.float64) - vf['score']).max():.1e}"

    add("EfficientMPRT",
        lambda: quantus.EfficientMPRT(seed=42, disable_warnings=True)(
            a_batch=a.copy(), **dict(qkw, softmax=True), **q_explain),
        lambda: M.efficient_mprt("saliency", x, model=model, target=y, seed=42, explainer_params={"abs": True},
                                 attributions=a),
        emprt_compare, "all layers at once, seed 42, Saliency", grad_rows=n)
    k, xk, yk, ak, _, _, qk = sub(args.n_slow)

    def smprt_compare(vq, vf):
        q = np.array([vq[key] for key in vq if key != "original"], dtype=np.float64)
        return f"mean similarity {np.nanmean(q):.4f} / {np.nanmean(vf['similarity']):.4f} over {q.shape[0]} layers"

    add("SmoothMPRT",
        lambda: quantus.SmoothMPRT(seed=42, nr_samples=10, disable_warnings=True)(a_batch=None, **qk, **q_explain),
        lambda: M.smooth_mprt("saliency", xk, model=model, target=yk, seed=42, n_samples=10,
                              explainer_params={"abs": True}),
        smprt_compare, f"{k} images; 10 noisy copies (noise 0.1), bottom-up, Saliency", grad_rows=10 * 6 * k)
    add("PointingGame", lambda: quantus.PointingGame(disable_warnings=True)(a_batch=a1.copy(), s_batch=s, **qkw),
        lambda: M.pointing_game(a1, s), maxdiff, "defaults")
    add("AttributionLocalisation",
        lambda: quantus.AttributionLocalisation(disable_warnings=True)(a_batch=a1.copy(), s_batch=s, **qkw),
        lambda: M.attribution_localisation(a1, s, mode="abs"), maxdiff, "defaults (abs)")
    add("TopKIntersection",
        lambda: quantus.TopKIntersection(k=16, disable_warnings=True)(a_batch=a1.copy(), s_batch=s, **qkw),
        lambda: M.top_k_intersection(a1, s, k=16), maxdiff, "k = 16")
    add("AUC", lambda: quantus.AUC(disable_warnings=True)(a_batch=a1.copy(), s_batch=s, **qkw),
        lambda: M.auc(a1, s), maxdiff, "defaults")
    mos = M.focus_mosaics(x, y, n_mosaics=n, seed=0)
    a_mos = np.abs(mos["mosaics"]).astype(np.float64)  # the 8x8 CNN takes no 16x16 mosaic: |input| maps
    add("Focus",
        lambda: quantus.Focus(disable_warnings=True)(
            model=model, x_batch=mos["mosaics"], y_batch=mos["target"], a_batch=a_mos.copy(),
            custom_batch=mos["layout"].astype(int), device="cpu"),
        lambda: M.focus(a_mos, mos["layout"]), maxdiff, f"{n} 2x2 mosaics of the test images, |input| maps")

    def completeness_compare(vq, vf):
        return (f"Quantus exact == true on {int(np.sum(np.asarray(vq, bool)))}/{len(vq)}; "
                f"featurelens gap mean {np.mean(np.abs(vf)):.3f}")

    add("Completeness", lambda: quantus.Completeness(disable_warnings=True)(a_batch=a.copy(), **qkw),
        lambda: M.completeness(model, x, a, target=y, baseline="min"), completeness_compare,
        "'black' baseline; Quantus: a boolean, featurelens: the gap", model_rows=2 * n)
    add("NonSensitivity", lambda: quantus.NonSensitivity(disable_warnings=True)(a_batch=a1.copy(), **qkw),
        lambda: M.non_sensitivity(model, x, a1, target=y, baseline="min", count="symmetric"),
        maxdiff, "1 pixel at a time, 'black', count symmetric (Quantus's)", model_rows=65 * n)
    # Quantus shifts the bias of the first named submodule (so it must be the first layer itself), and
    # featurelens refuses a first convolution with zero padding (the shift reaches the borders only in
    # part): a small flat Sequential with an unpadded first convolution, seeded, for both libraries.
    torch.manual_seed(0)
    inv_net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 36, 2)).eval()
    ex_inv = fl.explainer("saliency", inv_net, abs=True)
    with torch.no_grad():
        y_inv = inv_net(torch.from_numpy(x)).argmax(1).numpy()
    a_inv = ex_inv.explain(x, target=y_inv).values.astype(np.float64)
    add("InputInvariance",
        lambda: quantus.InputInvariance(disable_warnings=True)(a_batch=a_inv.copy(), **dict(qkw, model=inv_net,
                                                               y_batch=y_inv), **q_explain),
        lambda: M.input_invariance(ex_inv, x, target=y_inv, attributions=a_inv), same_verdicts,
        "shift -1, Saliency; conv3x3 (no padding)-ReLU-linear net, untrained (Quantus leaves pixel 0 unshifted)",
        grad_rows=n, floor_model=inv_net)
    add("EffectiveComplexity",
        lambda: quantus.EffectiveComplexity(disable_warnings=True)(a_batch=a1.copy(), **qkw),
        lambda: M.effective_complexity(a1), maxdiff, "eps 1e-5")

    load_after = load_average()
    lines = [
        f"# Explanation metrics: featurelens vs Quantus {quantus.__version__}",
        "",
        f"{n} XAI-TRIS 8x8 images (linear, white), the 8x8 CNN (test accuracy "
        f"{hist['test_accuracy']:.3f}, trained in {train_seconds:.0f} s), |saliency| maps; torch threads "
        f"{args.threads}; load average before/after {load_before} / {load_after} (a shared machine).",
        f"featurelens and Captum/Quantus saliency maps agree to {maps_agree:.1e}.",
        "",
        (f"Rows after MPRT: the metrics of issue 16 (ROAD and SmoothMPRT on the first {min(args.n_slow, n)} "
         f"images){'; IROF ran with the shim np.trapz = np.trapezoid (numpy 2.4 removed np.trapz)' if trapz_shim else ''}. "
         "\"Quantus / floor\" is the largest ratio any implementation could reach."),
        "",
        "| metric | setting | Quantus s | featurelens s | ratio | floor s | Quantus / floor | values |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        floor = f"{r['floor_s']:.4f}" if r["floor_s"] is not None else "-"
        fr = _x(r["quantus_s"] / r["floor_s"]) if r["floor_s"] else "-"
        cells = [c.replace("|", "\\|") for c in (r["setting"], r["agreement"])]  # |diff| in a table cell
        lines.append(f"| {r['metric']} | {cells[0]} | {r['quantus_s']:.3f} | {r['featurelens_s']:.4f} | "
                     f"{_x(r['ratio'])} | {floor} | {fr} | {cells[1]} |")
    table = "\n".join(lines) + "\n"
    print(table)
    meta = {"n": n, "repeats": args.repeats, "quantus_repeats": args.quantus_repeats, "threads": args.threads,
            "train_seconds": train_seconds, "test_accuracy": hist["test_accuracy"], "maps_agree": maps_agree,
            "load_before": load_before, "load_after": load_after, "n_slow": min(args.n_slow, n),
            "irof_trapz_shim": trapz_shim}
    write_results(args.out, "metrics", table,
                  {"environment": environment(quantus=quantus.__version__), "meta": meta, "rows": rows})


if __name__ == "__main__":
    main()
