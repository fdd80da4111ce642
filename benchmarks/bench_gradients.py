"""Gradient attributions, featurelens against Captum, side by side in one run.

For two CNNs and a batch of ``--batch`` inputs (default 256) this times saliency, input x gradient,
integrated gradients (50 steps, Gauss-Legendre), SmoothGrad (25 samples) and Grad-CAM (last
convolution, upsampled), each call as a user writes it, the explainer's construction included:
``fl.explainer("gradcam", model, layer=layer).explain(x, target=y)`` against
``LayerGradCam(model, layer).attribute(x, target=y)``:

- featurelens at its defaults (automatic chunks: at most 1024 rows and 2**19 input elements);
- Captum at its defaults (no internal batching: all IG steps / noise samples in one batch), and for
  IG and SmoothGrad also with internal batching of 1024 rows and of 256 rows (one step or noise
  sample of the batch per chunk, the smallest Captum allows); the fastest is "Captum best";
- the floor: plain torch doing the same forward/backward rows with the inputs prebuilt, once as one
  batched autograd call and once in chunks of featurelens' size (the single huge call is not the
  fastest on CPU, so both are reported and the ratio uses the faster).

Every configuration is warmed up once, then timed ``--repeats`` times in alternating rounds (so a
burst of load on the machine hits all of them alike; a configuration faster than 0.25 s is run
several times per round, each call timed on its own); the table gives the best call of each (the
least disturbed by other work on a shared machine). ``--runs 2`` repeats the whole measurement and
reports each run's ratio (a method meets the target only if it does in every run). Values are compared
once per method: max |featurelens - Captum|; for SmoothGrad against Captum's NoiseTunnel fed the
exact noise featurelens drew (see tests/test_captum_parity.py for why and how).

Usage: .venv/bin/python benchmarks/bench_gradients.py [--repeats 9] [--batch 256] [--runs 1] [--quick]
Writes benchmarks/results/gradients.md and gradients.json.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import featurelens as fl
from _common import environment, load_average, write_results
from featurelens._batching import default_rows

try:
    import captum
    from captum.attr import (
        InputXGradient,
        IntegratedGradients,
        LayerAttribution,
        LayerGradCam,
        NoiseTunnel,
        Saliency,
    )
except ImportError:  # pragma: no cover - the benchmark needs the reference library
    sys.exit("bench_gradients needs captum: .venv/bin/pip install -e '.[bench]'")

RESULTS = Path(__file__).resolve().parent / "results"
IG_STEPS = 50
SG_SAMPLES = 25
SG_STD = 0.15
CAPTUM_CHUNKS = (1024, 256)  # rows per chunk tried for Captum's internal batching


# -- models -----------------------------------------------------------------------------------
def cnn8by8() -> torch.nn.Module:
    """XAI-TRIS CNN8by8: 4 x [Conv2d(k=2, s=1, p=1) -> ReLU -> MaxPool2d(2, 2)], 1->4->4->4->4, Linear(4, 2)."""
    layers, channels = [], 1
    for out in (4, 4, 4, 4):
        layers += [torch.nn.Conv2d(channels, out, 2, 1, 1), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2)]
        channels = out
    return torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.Linear(4, 2))


def cnn32(width: int = 8) -> torch.nn.Module:
    """4 convolutions on 3x32x32, channels 3 -> w -> 2w -> 4w -> 4w (3x3, padding 1), ReLU after
    each and MaxPool2d(2) after every second, then a linear head to 10 classes."""
    w = width
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, w, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(w, 2 * w, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(2 * w, 4 * w, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(4 * w, 4 * w, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(4 * w * 8 * 8, 10),
    )


def last_conv(model: torch.nn.Module) -> torch.nn.Module:
    return [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)][-1]


# -- the floor: plain torch, inputs prebuilt ----------------------------------------------------
def floor_gradient(model, rows: torch.Tensor, target: torch.Tensor, chunk: int | None):
    """Input gradients of the selected outputs for ``rows`` in one autograd call (or chunks)."""
    size = rows.shape[0] if chunk is None else chunk

    def run():
        with torch.enable_grad():
            for s in range(0, rows.shape[0], size):
                r = rows[s : s + size].detach().requires_grad_(True)
                out = model(r)
                torch.autograd.grad(out.gather(1, target[s : s + size, None]).sum(), r)

    return run


def floor_gradcam(model, layer, x, target):
    """One forward with the layer's output captured, one backward to it, the CAM and upsampling."""

    def run():
        captured = []
        handle = layer.register_forward_hook(lambda m, i, o: captured.append(o))
        try:
            with torch.enable_grad():
                out = model(x)
                (grad,) = torch.autograd.grad(out.gather(1, target[:, None]).sum(), captured[0])
            cam = F.relu((grad.mean((2, 3), keepdim=True) * captured[0]).sum(1, keepdim=True)).detach()
            F.interpolate(cam, size=tuple(x.shape[2:]), mode="bilinear", align_corners=False)
        finally:
            handle.remove()

    return run


@contextlib.contextmanager
def noise_tunnel_fed(eps: torch.Tensor):
    """Let Captum's NoiseTunnel add featurelens' (n_samples, n, ...) draws, in its own
    sample-major layout, instead of drawing its own; everything else in NoiseTunnel runs as is."""
    used = {"copies": 0}

    def add_given_noise(input, stdev, k):
        part = eps[used["copies"] : used["copies"] + k]
        used["copies"] += k
        return input.repeat_interleave(k, dim=0) + part.transpose(0, 1).reshape((-1,) + tuple(input.shape[1:]))

    original = NoiseTunnel.__dict__["_add_noise_to_input"]
    NoiseTunnel._add_noise_to_input = staticmethod(add_given_noise)
    try:
        yield used
    finally:
        NoiseTunnel._add_noise_to_input = original


# -- timing -----------------------------------------------------------------------------------
def time_interleaved(configs: dict, repeats: int, min_sample_s: float = 0.25, slow_s: float = 3.0) -> dict:
    """Warm every configuration up once, then time ``repeats`` alternating rounds.

    A configuration faster than ``min_sample_s`` is called ``k`` times in a row per round (``k``
    from its warm-up time); every call is timed on its own, and a configuration's time is its best
    call over all rounds (the call least disturbed by other work on the machine; ``times`` holds
    each round's best call). Methods whose calls take over ``slow_s`` get at most 3 rounds.
    """
    last, times, inner, warm_times = {}, {name: [] for name in configs}, {}, {}
    for name, fn in configs.items():
        start = time.perf_counter()
        last[name] = fn()
        warm = warm_times[name] = time.perf_counter() - start
        inner[name] = int(min(200, max(1, np.ceil(min_sample_s / max(warm, 1e-6)))))
    if max(warm_times.values()) > slow_s:  # expensive method: fewer rounds to keep the run short
        repeats = min(repeats, 3)
    for _ in range(repeats):
        for name, fn in configs.items():
            best = np.inf
            for _ in range(inner[name]):
                start = time.perf_counter()
                last[name] = fn()
                best = min(best, time.perf_counter() - start)
            times[name].append(best)
    return {"times": times, "last": last, "calls_per_sample": inner, "rounds": repeats}


def as_np(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.asarray(getattr(a, "values", a))


def max_diff(a, b) -> float:
    return float(np.abs(as_np(a).astype(np.float64) - as_np(b).astype(np.float64)).max())


def bench_model(label: str, model: torch.nn.Module, x: torch.Tensor, repeats: int) -> list[dict]:
    model.eval()
    with torch.no_grad():
        y = model(x).argmax(1)
    layer = last_conv(model)
    fl_rows = default_rows(x[0].numel())  # featurelens' automatic chunk size for these inputs
    methods = {}

    # Saliency: both |gradient| (Captum's default abs=True).
    methods["saliency"] = {
        "featurelens": lambda: fl.explainer("saliency", model, abs=True).explain(x, target=y),
        "captum": {"default": lambda: Saliency(model).attribute(x, target=y)},
        "floor_rows": (x, y),
    }
    methods["input_x_gradient"] = {
        "featurelens": lambda: fl.explainer("input_x_gradient", model).explain(x, target=y),
        "captum": {"default": lambda: InputXGradient(model).attribute(x, target=y)},
        "floor_rows": (x, y),
    }
    alphas = torch.as_tensor(0.5 * (1 + np.polynomial.legendre.leggauss(IG_STEPS)[0]), dtype=x.dtype)
    methods["integrated_gradients"] = {
        "featurelens": lambda: fl.explainer("integrated_gradients", model, n_steps=IG_STEPS).explain(x, target=y),
        "captum": {
            "default": lambda: IntegratedGradients(model).attribute(x, target=y, n_steps=IG_STEPS),
            **{
                f"internal_batch_size={rows}": (lambda rows=rows: IntegratedGradients(model).attribute(
                    x, target=y, n_steps=IG_STEPS, internal_batch_size=rows
                ))
                for rows in CAPTUM_CHUNKS
            },
        },
        "floor_rows": ((alphas.view(-1, 1, 1, 1, 1) * x[None]).flatten(0, 1), y.repeat(IG_STEPS)),
    }
    def sg():
        return fl.explainer("smoothgrad", model, n_samples=SG_SAMPLES, noise="absolute", noise_level=SG_STD, seed=0)

    methods["smoothgrad"] = {
        "featurelens": lambda: sg().explain(x, target=y),
        "captum": {
            "default": lambda: NoiseTunnel(Saliency(model)).attribute(
                x, nt_type="smoothgrad", nt_samples=SG_SAMPLES, stdevs=SG_STD, target=y, abs=False
            ),
            **{
                f"nt_samples_batch_size={k}": (lambda k=k: NoiseTunnel(Saliency(model)).attribute(
                    x, nt_type="smoothgrad", nt_samples=SG_SAMPLES, nt_samples_batch_size=k,
                    stdevs=SG_STD, target=y, abs=False,
                ))
                for k in sorted({max(1, rows // x.shape[0]) for rows in CAPTUM_CHUNKS}, reverse=True)
            },
        },
        "floor_rows": ((x[None] + SG_STD * torch.randn((SG_SAMPLES,) + tuple(x.shape))).flatten(0, 1),
                       y.repeat(SG_SAMPLES)),
    }
    size = tuple(x.shape[2:])
    methods["gradcam"] = {
        "featurelens": lambda: fl.explainer("gradcam", model, layer=layer).explain(x, target=y),  # ReLU, bilinear
        "captum": {
            "default": lambda: LayerAttribution.interpolate(
                LayerGradCam(model, layer).attribute(x, target=y, relu_attributions=True), size,
                interpolate_mode="bilinear",
            ),
        },
        "floor": {"one call": floor_gradcam(model, layer, x, y)},
    }

    rows_out = []
    for name, spec in methods.items():
        configs = {"featurelens": spec["featurelens"]}
        configs.update({f"captum {k}": fn for k, fn in spec["captum"].items()})
        if "floor" in spec:
            floors = spec["floor"]
        else:
            rows, tgt = spec["floor_rows"]
            floors = {"one call": floor_gradient(model, rows, tgt, None)}
            if rows.shape[0] > fl_rows:
                floors[f"chunks of {fl_rows}"] = floor_gradient(model, rows, tgt, fl_rows)
        configs.update({f"floor {k}": fn for k, fn in floors.items()})
        print(f"  {label} / {name}: {len(configs)} configurations x (1 warm-up + {repeats})", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = time_interleaved(configs, repeats)
        best = {k: min(v) for k, v in res["times"].items()}  # best of the rounds
        captum_cfgs = {k[len("captum "):]: best[k] for k in best if k.startswith("captum ")}
        best_cfg = min(captum_cfgs, key=captum_cfgs.get)
        floor_cfgs = {k[len("floor "):]: best[k] for k in best if k.startswith("floor ")}
        best_floor = min(floor_cfgs, key=floor_cfgs.get)
        ours = res["last"]["featurelens"]
        if name == "smoothgrad":  # Captum on featurelens' exact noise (not timed)
            with warnings.catch_warnings(), noise_tunnel_fed(sg().noise_draws(x)) as used:
                warnings.simplefilter("ignore")
                reference = spec["captum"]["default"]()
            assert used["copies"] == SG_SAMPLES
            diff_note = "vs Captum NoiseTunnel fed featurelens' noise draws"
        else:
            reference = res["last"]["captum default"]
            diff_note = "vs Captum default"
        row = {
            "model": label,
            "method": name,
            "featurelens_s": best["featurelens"],
            "captum_default_s": captum_cfgs["default"],
            "captum_best_s": captum_cfgs[best_cfg],
            "captum_best_setting": best_cfg,
            "captum_s_by_setting": captum_cfgs,
            "floor_s_by_setting": floor_cfgs,
            "floor_one_call_s": floor_cfgs["one call"],
            "floor_best_s": floor_cfgs[best_floor],
            "floor_best_setting": best_floor,
            "ratio_vs_captum_best": best["featurelens"] / captum_cfgs[best_cfg],
            "ratio_vs_captum_default": best["featurelens"] / captum_cfgs["default"],
            "ratio_vs_floor_one_call": best["featurelens"] / floor_cfgs["one call"],
            "ratio_vs_floor_best": best["featurelens"] / floor_cfgs[best_floor],
            "max_abs_diff": max_diff(ours, reference),
            "max_abs_value": float(np.abs(as_np(reference)).max()),
            "diff_against": diff_note,
            "all_times_s": res["times"],
            "calls_per_sample": res["calls_per_sample"],
            "rounds": res["rounds"],
            "meets_target": best["featurelens"] <= captum_cfgs[best_cfg],
        }
        print(
            f"    featurelens {row['featurelens_s']:.4f}s  Captum best {row['captum_best_s']:.4f}s "
            f"({best_cfg})  ratio {row['ratio_vs_captum_best']:.2f}  floor {row['floor_best_s']:.4f}s  "
            f"max diff {row['max_abs_diff']:.2e}",
            flush=True,
        )
        rows_out.append(row)
    return rows_out


def markdown(runs: list[list[dict]], env: dict, meta: dict) -> str:
    """The table of the last run, with every run's featurelens / Captum best ratio side by side."""
    rows = runs[-1]
    chunk = default_rows(3 * 32 * 32)
    lines = [
        "# Gradient attributions: featurelens vs Captum",
        "",
        f"torch {env['torch']}, Captum {env['captum']}, featurelens {env['featurelens']}, Python {env['python']}; "
        f"{env['threads']} torch threads on {env['cpu']} ({env['logical_cpus']} logical CPUs). "
        f"Batch {meta['batch']}; IG {IG_STEPS} steps (Gauss-Legendre); SmoothGrad {SG_SAMPLES} samples, "
        f"absolute noise std {SG_STD}; Grad-CAM on the last convolution (given as layer=), ReLU, bilinear "
        "upsampling. Every timed call builds its explainer (featurelens and Captum alike). "
        f"Best call of {meta['repeats']} alternating rounds (3 for methods slower than 3 s per call) after "
        "one warm-up (calls under 0.25 s repeated within each round, each call timed); "
        f"{len(runs)} run(s) of the whole measurement, one after the other; load average "
        f"{meta['load_before']} before, {meta['load_after']} after; total {meta['seconds']:.0f} s.",
        "",
        "| model | method | featurelens s | Captum default s | Captum best s (setting) | featurelens / Captum best "
        f"({'run 1 / ... / ' if len(runs) > 1 else ''}this run) "
        "| floor s (one call / best) | featurelens / floor | max abs diff (max abs value) | at or below Captum |",
        "|---|---|---:|---:|---|---:|---|---:|---|:-:|",
    ]
    for i, r in enumerate(rows):
        floor = f"{r['floor_one_call_s']:.4f} / {r['floor_best_s']:.4f}"
        ratios = " / ".join(f"{run[i]['ratio_vs_captum_best']:.2f}" for run in runs)
        meets = all(run[i]["meets_target"] for run in runs)
        lines.append(
            f"| {r['model']} | {r['method']} | {r['featurelens_s']:.4f} | {r['captum_default_s']:.4f} "
            f"| {r['captum_best_s']:.4f} ({r['captum_best_setting']}) | {ratios} "
            f"| {floor} | {r['ratio_vs_floor_best']:.2f} "
            f"| {r['max_abs_diff']:.1e} ({r['max_abs_value']:.1e}) | {'yes' if meets else 'NO'} |"
        )
    lines += [
        "",
        "Floor: plain torch, the same forward/backward rows with the inputs prebuilt (IG path points, noisy "
        "copies), as one batched autograd call and in chunks of featurelens' automatic size (1024 rows for "
        f"1x8x8, {chunk} rows for 3x32x32); \"featurelens / floor\" uses the faster of the two. Captum best: the "
        "fastest of Captum's defaults (no internal batching) and internal batching of 1024 and 256 rows "
        "(`internal_batch_size`, `nt_samples_batch_size`). "
        "Max abs diff: against Captum's default output (SmoothGrad: against Captum's NoiseTunnel fed the "
        "noise featurelens drew, since the two libraries draw noise differently). IG in featurelens also "
        "computes its completeness gap (one extra forward pass over x and the baseline). \"at or below "
        "Captum\": in every run.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds after the warm-up (default 9)")
    parser.add_argument("--batch", type=int, default=256, help="inputs per call (default 256)")
    parser.add_argument("--runs", type=int, default=1, help="whole measurements one after the other (default 1)")
    parser.add_argument("--quick", action="store_true", help="small run: batch 64 (does not write results)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)

    torch.set_num_threads(2)
    batch = 64 if args.quick else args.batch
    env = environment(captum=captum.__version__)
    print(f"torch {env['torch']}, captum {env['captum']}, {env['threads']} threads, {env['cpu']}", flush=True)
    load_before = load_average()
    start = time.perf_counter()
    runs = []
    for run in range(args.runs):
        print(f"run {run + 1} of {args.runs}", flush=True)
        gen = torch.Generator().manual_seed(0)
        rows = []
        torch.manual_seed(0)
        rows += bench_model("CNN8by8 1x8x8", cnn8by8(), torch.randn(batch, 1, 8, 8, generator=gen), args.repeats)
        torch.manual_seed(0)
        rows += bench_model("CNN 3x32x32", cnn32(), torch.randn(batch, 3, 32, 32, generator=gen), args.repeats)
        runs.append(rows)
    meta = {"repeats": args.repeats, "runs": args.runs, "load_before": load_before, "load_after": load_average(),
            "seconds": time.perf_counter() - start, "batch": batch}
    table = markdown(runs, env, meta)
    print()
    print(table)
    if not args.quick:
        write_results(args.out, "gradients", table, {"environment": env, "run": meta, "rows": runs[-1],
                                                     "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
