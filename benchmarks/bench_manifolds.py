"""Class manifolds and target linearity over the layers and epochs of an MLP and a CNN on digits,
in the rich and in the lazy regime.

Data: scikit-learn's bundled digits (1,797 8x8 images, 10 classes; no download), pixels scaled to
[0, 1] and standardised per pixel; a fixed split of 1,000 training and 797 held-out images. The
held-out images are the probe: every geometry number below is measured on images the network
never trained on.

Networks (PyTorch default initialisation, float32, one torch thread):

- MLP 64-256-256-256-10 with ReLU;
- CNN: conv 3x3 1->8, ReLU, max-pool 2; conv 3x3 8->16, ReLU, max-pool 2; linear 64->64, ReLU;
  linear 64->10 (padding 1, so 8x8 -> 4x4 -> 2x2).

Regimes (Chizat, Oyallon & Bach 2019, "On lazy training in differentiable programming"): the
network is trained through f(x) = alpha (g(x; w) - g(x; w_0)) with the loss
CE(f(x), y) / alpha^2 and the same SGD (lr 0.05, momentum 0.9, batch 50, 20 epochs). To first
order the function moves at the same speed for every alpha while the weights move about 1/alpha
as far, so alpha = 1 is the standard ("rich") network and alpha = 100 is "lazy" (close to its
linearisation, the NTK regime; it fits the training set more slowly, see the accuracy table).

Measurements. featurelens.learning.Monitor(metrics=("manifold",), y_probe=...) records, once per
epoch, on the input of every Linear/Conv2d layer (so the first row is the pixels, then each
hidden representation), every ``--probe-every`` epochs: the class-mean normalised radius and participation-ratio dimension of the
class manifolds, the mean |cos| between centred class centres (Chung, Lee & Sompolinsky 2018,
Phys. Rev. X 8, 031003; Cohen et al. 2020, Nat. Commun. 11:746) and the target linearity (R^2 of
the least-squares map from the layer input to the one-hot labels, arXiv 2605.06258). Epoch 0
(initialisation) is measured with the same function, featurelens.learning.manifolds.monitor_metrics,
on the same layer inputs captured by forward hooks; at the last epoch the hook values are checked
against the Monitor's. At epochs 0, 2 and the last, featurelens.learning
.manifold_capacity measures the simulated capacity alpha_c = P / N_c (P = 10 classes) on 20
held-out images per class and random Gaussian projections to N dimensions (a fixed grid of N up to
64, ``--dichotomies`` random class dichotomies per N, hyperplanes through the origin); ``<x``
means that even the largest N tried separated fewer than half (alpha_c below P / N_max). The
relative change of each layer input since initialisation, ||H_t - H_0||_F / ||H_0||_F, shows how
far the representations moved.

In-sample target linearity has a floor: independent noise with p columns scores about p / (n - 1)
(here 0.08 for the 64-dimensional layers, 0.16 for 128 and 0.32 for 256, with n = 797), so the
table also gives the adjusted R^2, 1 - (1 - TL)(n - 1)/(n - r - 1) with r the rank of the centred
layer input, which puts layers of different widths on one footing (noise scores about 0).

Usage: .venv/bin/python benchmarks/bench_manifolds.py [--seeds 0 1] [--epochs 20] [--probe-every 2]
       [--alpha-lazy 100] [--dichotomies 16] [--quick] [--out DIR]
Writes benchmarks/results/manifolds.md, manifolds.json and manifolds_{mlp,cnn,capacity}.png
(about 3-4 minutes on 2 cores; --quick: one seed, 6 epochs, about a minute).
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
import torch
from _common import environment, load_average, write_results
from torch import nn

from featurelens.learning import Monitor, manifold_capacity
from featurelens.learning.manifolds import monitor_metrics

RESULTS = Path(__file__).resolve().parent / "results"
LP_FAILURES: list[str] = []
METRICS = ("manifold_radius", "manifold_dimension", "manifold_center_correlation", "target_linearity")
SHORT = {"manifold_radius": "radius", "manifold_dimension": "dimension",
         "manifold_center_correlation": "centre corr.", "target_linearity": "target linearity",
         "repr_change": "repr. change", "capacity": "capacity"}
N_TRAIN = 1000
PER_CLASS = 20  # capacity subsample: held-out images per class
DIMS = (5, 8, 12, 16, 24, 32, 48, 64)


def load_data():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm]
    mu, sd = X[:N_TRAIN].mean(0), X[:N_TRAIN].std(0)
    X = (X - mu) / np.where(sd > 1e-8, sd, 1.0)
    return (X[:N_TRAIN].astype(np.float32), y[:N_TRAIN].astype(np.int64),
            X[N_TRAIN:].astype(np.float32), y[N_TRAIN:].astype(np.int64))


def build(kind: str, seed: int) -> tuple[nn.Module, list[str], list[str]]:
    """The network, its monitored layer names and display names of their inputs."""
    torch.manual_seed(seed)
    if kind == "mlp":
        w = 256
        net = nn.Sequential(nn.Linear(64, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(),
                            nn.Linear(w, 10))
        return net, ["0", "2", "4", "6"], ["pixels", "h1", "h2", "h3"]
    net = nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return net, ["1", "4", "8", "10"], ["pixels", "conv1", "conv2", "fc"]


class Scaled(nn.Module):
    """f(x) = alpha (g(x; w) - g(x; w_0)), the lazy-training parametrisation of Chizat et al. 2019."""

    def __init__(self, net: nn.Module, alpha: float):
        super().__init__()
        self.net = net
        self.init = copy.deepcopy(net).requires_grad_(False)
        self.alpha = float(alpha)

    def forward(self, x):
        return self.alpha * (self.net(x) - self.init(x))


def layer_inputs(model: Scaled, names: list[str], X: torch.Tensor) -> dict[str, np.ndarray]:
    """The float64 input of each named layer of model.net (flattened per sample)."""
    mods = dict(model.net.named_modules())
    out, handles = {}, []
    for n in names:
        handles.append(mods[n].register_forward_hook(
            lambda m, inp, o, n=n: out.__setitem__(n, inp[0].detach().reshape(inp[0].shape[0], -1).double().numpy())))
    try:
        with torch.no_grad():
            model(X)
    finally:
        for h in handles:
            h.remove()
    return out


def capacity_of(H: np.ndarray, y: np.ndarray, idx: np.ndarray, n_dich: int, seed: int) -> float:
    """Simulated capacity P / N_c on the subsample idx; -P/N_max (a negative bound) when not reached."""
    p = H.shape[1]
    dims = [d for d in DIMS if d <= p]
    for attempt in range(3):
        try:
            cap = manifold_capacity(H[idx], y[idx], n_dichotomies=n_dich, n_projections=dims, seed=seed + 1000 * attempt)
            break
        except RuntimeError as exc:  # both HiGHS methods gave up: redraw the dichotomies
            LP_FAILURES.append(f"redrawn: {str(exc)[:80]}")
    else:
        return float("nan")
    if math.isfinite(cap.critical_load):
        return float(cap.critical_load)
    frac = cap.separable_fraction[np.argmax(cap.dims)]
    return -float(10 / max(dims)) if frac < 0.5 else float("inf")


def run(kind: str, alpha: float, seed: int, data, epochs: int, n_dich: int, cap_epochs: set[int], probe_every: int,
        cap_init=None) -> dict:
    Xtr, ytr, Xte, yte = data
    net, names, labels = build(kind, seed)
    model = Scaled(net, alpha)
    Xtr_t, ytr_t, Xte_t = torch.from_numpy(Xtr), torch.from_numpy(ytr), torch.from_numpy(Xte)
    batch, lr = 50, 0.05
    steps_per_epoch = N_TRAIN // batch
    layers = [f"net.{n}" for n in names]
    mon = Monitor(model, Xte_t, yte, every=steps_per_epoch, probe_every=probe_every * steps_per_epoch,
                  metrics=("manifold",), layers=layers, detector=None)
    opt = torch.optim.SGD(model.net.parameters(), lr=lr, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    idx = np.concatenate([rng.choice(np.flatnonzero(yte == c), PER_CLASS, replace=False) for c in range(10)])

    H0 = layer_inputs(model, names, Xte_t)
    rec = {"epoch0": {n: monitor_metrics(H0[n], yte) for n in names}, "capacity": {}, "repr_change": {},
           "accuracy": []}
    # the lazy run starts from the same initialisation as the rich one: its epoch-0 capacity is reused
    rec["capacity"][0] = cap_init or {n: capacity_of(H0[n], yte, idx, n_dich, seed) for n in names}
    model.train()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(N_TRAIN, generator=gen)
        for s in range(steps_per_epoch):
            b = perm[s * batch:(s + 1) * batch]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(Xtr_t[b]), ytr_t[b]) / alpha**2
            loss.backward()
            opt.step()
            mon.step()
        with torch.no_grad():
            acc_tr = float((model(Xtr_t).argmax(1) == ytr_t).float().mean())
            acc_te = float((model(Xte_t).argmax(1).numpy() == yte).mean())
        rec["accuracy"].append((acc_tr, acc_te))
        if epoch in cap_epochs or epoch == epochs:
            H = layer_inputs(model, names, Xte_t)
            rec["repr_change"][epoch] = {n: float(np.linalg.norm(H[n] - H0[n]) / np.linalg.norm(H0[n])) for n in names}
            if epoch in cap_epochs:
                rec["capacity"][epoch] = {n: capacity_of(H[n], yte, idx, n_dich, seed) for n in names}
    # cross-check: the hook + monitor_metrics values equal what the Monitor logged at the last epoch
    last = {n: monitor_metrics(H[n], yte) for n in names}
    hist = {(r["layer"], r["metric"]): r["value"] for r in mon.records if r["step"] == epochs * steps_per_epoch}
    rec["rank"] = {n: (_rank(H0[n]), _rank(H[n])) for n in names}
    rec["monitor_check_max_abs_diff"] = max(abs(hist[(f"net.{n}", m)] - last[n][m]) for n in names for m in METRICS)
    series = {}
    for n in names:
        for m in METRICS:
            st, v = mon.series(m, f"net.{n}")
            series[f"{n}|{m}"] = [rec["epoch0"][n][m]] + [float(x) for x in v]
    rec["series"] = series
    rec["epochs"] = [0] + [int(s) // steps_per_epoch for s in st]
    rec["names"], rec["labels"] = names, labels
    with torch.no_grad():
        rec["weight_change"] = float(
            torch.cat([(p - q).flatten() for p, q in zip(model.net.parameters(), model.init.parameters())]).norm()
            / torch.cat([q.flatten() for q in model.init.parameters()]).norm())
    return rec


def _rank(H: np.ndarray) -> int:
    """Numerical rank of the centred features (the p of the adjusted R^2)."""
    return int(np.linalg.matrix_rank(H - H.mean(0)))


def adjusted(tl: float, rank: int, n: int) -> float:
    """Adjusted R^2: 1 - (1 - R^2)(n - 1)/(n - r - 1); independent noise of rank r scores about 0."""
    return 1.0 - (1.0 - tl) * (n - 1) / (n - rank - 1)


def fmt_cap(v: float) -> str:
    if not math.isfinite(v) and not math.isinf(v):
        return "n/a"
    if v < 0:
        return f"<{-v:.2f}"
    return "inf" if math.isinf(v) else f"{v:.2f}"


def mean_cap(vals: list[float]) -> float:
    """Mean of capacities; a bound (negative) when any seed only gave a bound."""
    if any(v < 0 for v in vals):
        return -max(abs(v) for v in vals)
    return float(np.mean(vals))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--probe-every", type=int, default=2, help="Monitor probe every this many epochs")
    parser.add_argument("--alpha-lazy", type=float, default=100.0, help="output scale of the lazy regime")
    parser.add_argument("--dichotomies", type=int, default=16, help="random class dichotomies per projection size")
    parser.add_argument("--quick", action="store_true", help="one seed, 6 epochs, 8 dichotomies")
    parser.add_argument("--name", default=None, help="results file stem (default manifolds, manifolds_quick)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.epochs, args.dichotomies = args.seeds[:1], 6, 8
    args.name = args.name or ("manifolds_quick" if args.quick else "manifolds")
    if args.epochs % args.probe_every:
        parser.error(f"--epochs ({args.epochs}) must be a multiple of --probe-every ({args.probe_every})")
    torch.set_num_threads(1)
    load_before = load_average()
    data = load_data()
    E = args.epochs
    cap_epochs = sorted({2, E})  # capacity at initialisation (0), early and at the end
    regimes = {"rich": 1.0, "lazy": args.alpha_lazy}
    runs: dict = {}
    t_all = time.perf_counter()
    for kind in ("mlp", "cnn"):
        for regime, alpha in regimes.items():
            for seed in args.seeds:
                t0 = time.perf_counter()
                init = runs[(kind, "rich", seed)]["capacity"][0] if regime == "lazy" else None
                r = run(kind, alpha, seed, data, E, args.dichotomies, set(cap_epochs), args.probe_every, init)
                r["wall_seconds"] = time.perf_counter() - t0
                runs[(kind, regime, seed)] = r
                print(f"{kind} {regime:4s} seed {seed}: test acc {r['accuracy'][-1][1]:.3f}, weight change "
                      f"{r['weight_change']:.3g}, monitor check {r['monitor_check_max_abs_diff']:.1e}, "
                      f"{r['wall_seconds']:.0f} s", flush=True)
    wall = time.perf_counter() - t_all

    # -- aggregate -------------------------------------------------------------------------------
    summary: dict = {}
    for kind in ("mlp", "cnn"):
        for regime in regimes:
            rs = [runs[(kind, regime, s)] for s in args.seeds]
            names, labels = rs[0]["names"], rs[0]["labels"]
            rows = []
            for n, lab in zip(names, labels):
                row = {"layer": lab}
                for m in METRICS:
                    arr = np.array([r["series"][f"{n}|{m}"] for r in rs])
                    row[m] = (float(arr[:, 0].mean()), float(arr[:, -1].mean()), float(arr[:, -1].std()))
                row["capacity"] = {e: mean_cap([r["capacity"][e][n] for r in rs]) for e in [0] + cap_epochs}
                row["repr_change"] = float(np.mean([r["repr_change"][E][n] for r in rs]))
                n_probe = len(data[3])
                row["adjusted_tl"] = tuple(float(np.mean([adjusted(r["series"][f"{n}|target_linearity"][k], r["rank"][n][j],
                                                                   n_probe) for r in rs])) for j, k in ((0, 0), (1, -1)))
                row["rank"] = rs[0]["rank"][n]
                rows.append(row)
            summary[(kind, regime)] = {
                "rows": rows,
                "test_accuracy": (float(np.mean([r["accuracy"][-1][1] for r in rs])),
                                  float(np.std([r["accuracy"][-1][1] for r in rs]))),
                "train_accuracy": float(np.mean([r["accuracy"][-1][0] for r in rs])),
                "weight_change": float(np.mean([r["weight_change"] for r in rs])),
                "monitor_check": float(max(r["monitor_check_max_abs_diff"] for r in rs)),
            }

    # -- claims ----------------------------------------------------------------------------------
    verdicts = claims(summary, cap_epochs)

    lines = [
        "# Class manifolds and target linearity over layers and epochs: rich vs lazy",
        "",
        (f"Digits (1,000 train / 797 held-out probe images), MLP 64-256-256-256-10 and a small CNN; SGD lr 0.05, "
         f"momentum 0.9, batch 50, {E} epochs; rich: alpha = 1, lazy: alpha = {args.alpha_lazy:g} (f = alpha (g(w) - "
         f"g(w_0)), loss / alpha^2, Chizat et al. 2019). Seeds {', '.join(map(str, args.seeds))}; values are "
         "means over seeds (final: +- sd). Each layer row is the *input* of that Linear/Conv2d layer "
         "(pixels = the image). Recorded by `Monitor(metrics=(\"manifold\",))` on the held-out probe every "
         f"{args.probe_every} epochs; adjusted TL = 1 - (1 - TL)(n - 1)/(n - r - 1), r = the rank column; "
         f"capacity alpha_c = P/N_c from {args.dichotomies} random class dichotomies per projection size on "
         f"{PER_CLASS} images per class (higher = more separable; `<x`: below the smallest load tried)."),
        "",
        "| net | regime | test acc | train acc | rel. weight change |",
        "|---|---|---|---|---|",
    ]
    for (kind, regime), s in summary.items():
        lines.append(f"| {kind.upper()} | {regime} | {s['test_accuracy'][0]:.3f} +- {s['test_accuracy'][1]:.3f} | "
                     f"{s['train_accuracy']:.3f} | {s['weight_change']:.3g} |")
    for kind in ("mlp", "cnn"):
        lines += ["", f"## {kind.upper()}", "",
                  "| regime | layer input | radius 0 -> end | dimension 0 -> end | centre corr. 0 -> end | "
                  "target linearity 0 -> end | adjusted TL 0 -> end | rank | capacity " +
                  " / ".join(f"ep {e}" for e in [0] + cap_epochs) + " | repr. change |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for regime in regimes:
            for row in summary[(kind, regime)]["rows"]:
                cells = [f"{row[m][0]:.3g} -> {row[m][1]:.3g} +- {row[m][2]:.2g}" for m in METRICS]
                caps = " / ".join(fmt_cap(row["capacity"][e]) for e in [0] + cap_epochs)
                adj = f"{row['adjusted_tl'][0]:.3f} -> {row['adjusted_tl'][1]:.3f}"
                lines.append(f"| {regime} | {row['layer']} | " + " | ".join(cells) +
                             f" | {adj} | {row['rank'][1]} | {caps} | {row['repr_change']:.3g} |")
    lines += ["", "## Claims", "", "| claim | MLP | CNN | verdict |", "|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {v['claim']} | {v['mlp']} | {v['cnn']} | **{v['verdict']}** |")
    lines += ["", *reading(summary, cap_epochs, args.dichotomies, len(args.seeds)), "",
              (f"Cross-check: the Monitor's logged values equal the hook-captured layer inputs passed to "
               f"`monitor_metrics` to within {max(s['monitor_check'] for s in summary.values()):.1e}."),
              "",
              (f"Wall time {wall:.0f} s for {len(runs)} runs, one torch thread; load average before {load_before}, "
               f"after {load_average()} (shared machine)."), ""]
    table = "\n".join(lines)
    print(table)
    data_out = {
        "environment": environment(),
        "settings": {"seeds": args.seeds, "epochs": E, "alpha_lazy": args.alpha_lazy, "dichotomies": args.dichotomies,
                     "per_class": PER_CLASS, "dims": list(DIMS), "capacity_epochs": [0] + cap_epochs, "lr": 0.05,
                     "momentum": 0.9, "batch": 50, "n_train": N_TRAIN, "quick": args.quick},
        "summary": {f"{k}|{r}": v for (k, r), v in summary.items()},
        "claims": verdicts,
        "runs": {f"{k}|{r}|{s}": {"series": v["series"], "capacity": v["capacity"], "repr_change": v["repr_change"],
                                  "accuracy": v["accuracy"], "weight_change": v["weight_change"],
                                  "labels": v["labels"], "names": v["names"], "wall_seconds": v["wall_seconds"]}
                 for (k, r, s), v in runs.items()},
        "wall_seconds": wall,
        "lp_failures": LP_FAILURES,
    }
    write_results(args.out, args.name, table, data_out)
    for kind in ("mlp", "cnn"):
        _figure(runs, kind, args.seeds, Path(args.out) / f"{args.name}_{kind}.png", args.alpha_lazy)
    _capacity_figure(summary, cap_epochs, Path(args.out) / f"{args.name}_capacity.png")
    return 0


def reading(summary, cap_epochs, n_dich: int, n_seeds: int) -> list[str]:
    """The reading of the run, its numbers filled in from this run (the prose was written after the
    default run, seeds 0-1, 20 epochs)."""
    E = cap_epochs[-1]

    def col(kind, regime, key, k=1):
        rr = summary[(kind, regime)]["rows"]
        if key == "capacity":
            return " -> ".join(fmt_cap(r["capacity"][k]) for r in rr)
        if key == "adjusted_tl":
            return " -> ".join(f"{r[key][k]:.3f}" for r in rr)
        return " -> ".join(f"{r[key][0 if k == 0 else 1]:.3g}" for r in rr)

    def acc(kind, regime):
        return f"{summary[(kind, regime)]['test_accuracy'][0]:.3f}"

    def tr(kind, regime):
        return f"{summary[(kind, regime)]['train_accuracy']:.3f}"

    def wc(kind, regime):
        return f"{summary[(kind, regime)]['weight_change']:.3g}"

    lz = {k: summary[(k, "lazy")]["rows"] for k in ("mlp", "cnn")}
    cc = [r["manifold_center_correlation"][1] for k in ("mlp", "cnn") for r in summary[(k, "rich")]["rows"]]
    return [
        "## Reading",
        "",
        ("- **Manifolds untangle with depth in a trained network (Chung et al. 2018; Cohen et al. 2020: capacity "
        "rises along the layers through smaller radius and dimension).** In the rich regime the simulated capacity "
        f"rises from the pixels to the last hidden layer (MLP {col('mlp', 'rich', 'capacity', E)}; CNN "
        f"{col('cnn', 'rich', 'capacity', E)}) while the normalised radius (MLP {col('mlp', 'rich', 'manifold_radius')}; "
        f"CNN {col('cnn', 'rich', 'manifold_radius')}) and, in the deeper layers, the dimension (MLP "
        f"{col('mlp', 'rich', 'manifold_dimension')}; CNN {col('cnn', 'rich', 'manifold_dimension')}) fall. "
        "At initialisation the same layers go the other way (capacity MLP "
        f"{col('mlp', 'rich', 'capacity', 0)}, radius {col('mlp', 'rich', 'manifold_radius', 0)}): random ReLU "
        "layers tangle the classes, and the untangling is learned."),
        ("- **Centre correlations fall with depth (Cohen et al. 2020)**: not seen here. The mean |cos| between "
        f"centred class centres stays between {min(cc):.2f} and {max(cc):.2f} in every layer (MLP {col('mlp', 'rich', 'manifold_center_correlation')}; "
        f"CNN {col('cnn', 'rich', 'manifold_center_correlation')}). With 10 classes the floor is small anyway: "
        "the equiangular simplex of neural collapse has |cos| = 1/9 = 0.11."),
        ("- **Target linearity rises layer by layer (arXiv 2605.06258).** MLP: yes, raw "
        f"{col('mlp', 'rich', 'target_linearity')} and adjusted for the layer's rank {col('mlp', 'rich', 'adjusted_tl')}. "
        f"CNN: only partly, {col('cnn', 'rich', 'target_linearity')} (adjusted {col('cnn', 'rich', 'adjusted_tl')}): "
        "it dips at the input of the fc layer (the pooled conv2 maps) and is highest at the last hidden layer. "
        "At initialisation it falls with depth in both nets (MLP "
        f"{col('mlp', 'rich', 'target_linearity', 0)}; CNN {col('cnn', 'rich', 'target_linearity', 0)}), so the "
        "rise is a product of training."),
        ("- **Target linearity rises over training**: reproduced, every hidden layer gains, and the deeper the layer "
        "the more (see the claims table)."),
        ("- **Lazy vs rich (Chizat et al. 2019; Chou et al. 2025).** At alpha = 100 the weights move "
        f"{wc('mlp', 'lazy')} (MLP) and {wc('cnn', 'lazy')} (CNN) of their initial norm, against {wc('mlp', 'rich')} "
        f"and {wc('cnn', 'rich')} in the rich runs; the layer inputs move at most "
        f"{max(r['repr_change'] for r in lz['mlp'] + lz['cnn']):.2f} of their norm, and radius, dimension, centre "
        "correlation, target linearity and capacity stay at their initial values (capacity of the last hidden "
        f"layer: MLP {fmt_cap(lz['mlp'][-1]['capacity'][E])}, CNN {fmt_cap(lz['cnn'][-1]['capacity'][E])}, init "
        f"{fmt_cap(lz['mlp'][-1]['capacity'][0])} and {fmt_cap(lz['cnn'][-1]['capacity'][0])}). The lazy networks "
        f"still learn the task on their fixed random features (test accuracy MLP {acc('mlp', 'lazy')}, CNN "
        f"{acc('cnn', 'lazy')}, against {acc('mlp', 'rich')} and {acc('cnn', 'rich')} rich), but more slowly (train "
        f"accuracy {tr('mlp', 'lazy')} and {tr('cnn', 'lazy')} after {E} epochs): the comparison is at equal "
        "training time, not at equal accuracy."),
        ("- **Caveats.** The radius and dimension are the second-moment (participation-ratio) proxies, not the "
        "anchor-point R_M, D_M of the replica theory; target linearity is in-sample on 797 probe images (hence the "
        f"adjusted column); the capacity is a simulation on {PER_CLASS} images per class with {n_dich} dichotomies "
        f"per projection size on a coarse grid (N in {DIMS[0]}..{DIMS[-1]}), so differences below about 0.05 are "
        f"noise; {n_seeds} seed(s)."),
    ]


def claims(summary, cap_epochs) -> list[dict]:
    """Each claim checked on the seed means, per net, by an explicit rule."""
    out = []

    def rows(kind, regime):
        return summary[(kind, regime)]["rows"]

    def cap(v):
        return v if v >= 0 or math.isnan(v) else 0.0  # a bound below the grid counts as the smallest

    def add(claim, fn):
        res = {k: fn(k) for k in ("mlp", "cnn")}
        ok = [r[0] for r in res.values()]
        verdict = "reproduced" if all(ok) else "partly" if any(ok) else "not"
        out.append({"claim": claim, "mlp": res["mlp"][1], "cnn": res["cnn"][1], "verdict": verdict})

    E = cap_epochs[-1]

    def depth_capacity(kind):
        c = [cap(r["capacity"][E]) for r in rows(kind, "rich")]
        return c[-1] > c[0] and all(b >= a * 0.9 for a, b in pairwise(c)), " -> ".join(f"{v:.2f}" for v in c)

    add("Trained (rich): capacity rises with depth (pixels -> last hidden)", depth_capacity)

    def depth_geometry(kind):
        rr = rows(kind, "rich")
        rad = [r["manifold_radius"][1] for r in rr]
        dim = [r["manifold_dimension"][1] for r in rr]
        return (rad[-1] < rad[0] and dim[-1] < dim[0],
                "R " + " -> ".join(f"{v:.2f}" for v in rad) + "; D " + " -> ".join(f"{v:.1f}" for v in dim))

    add("Trained (rich): radius and dimension fall with depth (last hidden < pixels)", depth_geometry)

    def depth_corr(kind):
        cc = [r["manifold_center_correlation"][1] for r in rows(kind, "rich")]
        return cc[-1] < cc[0] - 0.03, " -> ".join(f"{v:.2f}" for v in cc)

    add("Trained (rich): centre correlation falls with depth (last hidden < pixels - 0.03)", depth_corr)

    def tl_depth(kind):
        t = [r["target_linearity"][1] for r in rows(kind, "rich")]
        a = [r["adjusted_tl"][1] for r in rows(kind, "rich")]
        mono = all(y >= x - 0.005 for x, y in pairwise(t)) and all(y >= x - 0.005 for x, y in pairwise(a))
        return mono and t[-1] > t[0], (" -> ".join(f"{v:.3f}" for v in t) + " (adjusted " +
                                       " -> ".join(f"{v:.3f}" for v in a) + ")")

    add("Trained (rich): target linearity rises layer by layer (raw and adjusted R^2)", tl_depth)

    def tl_train(kind):
        rr = rows(kind, "rich")[1:]  # hidden layers (the pixels do not change)
        up = [r["target_linearity"][1] - r["target_linearity"][0] for r in rr]
        return all(u > 0 for u in up), "gain " + ", ".join(f"{u:+.3f}" for u in up)

    add("Rich: target linearity of every hidden layer rises over training", tl_train)

    def lazy_still(kind):
        lz, ri = rows(kind, "lazy")[1:], rows(kind, "rich")[1:]
        d_l = max(abs(r["target_linearity"][1] - r["target_linearity"][0]) for r in lz)
        d_r = max(abs(r["target_linearity"][1] - r["target_linearity"][0]) for r in ri)
        g_l = max(abs(math.log(r["manifold_radius"][1] / r["manifold_radius"][0])) for r in lz)
        g_r = max(abs(math.log(r["manifold_radius"][1] / r["manifold_radius"][0])) for r in ri)
        return (d_l < 0.2 * d_r and g_l < 0.2 * g_r,
                f"max |dTL| lazy {d_l:.3f} vs rich {d_r:.3f}; max |dlog R| lazy {g_l:.3f} vs rich {g_r:.3f}")

    add("Lazy: geometry and target linearity barely move (< 1/5 of the rich change)", lazy_still)

    def untangle_training(kind):
        c0 = cap(rows(kind, "rich")[-1]["capacity"][0])
        c1 = cap(rows(kind, "rich")[-1]["capacity"][E])
        l1 = cap(rows(kind, "lazy")[-1]["capacity"][E])
        last = rows(kind, "rich")[-1]["capacity"], rows(kind, "lazy")[-1]["capacity"]
        return c1 > c0 and c1 > l1, (f"last hidden: init {fmt_cap(last[0][0])}, rich {fmt_cap(last[0][E])}, "
                                     f"lazy {fmt_cap(last[1][E])}")

    add("Training untangles (rich last-layer capacity > init and > lazy)", untangle_training)
    return out


def _figure(runs, kind, seeds, path, alpha_lazy):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 11), layout="constrained")
    axes = fig.subplots(4, 2, sharex=True)
    for col, regime in enumerate(("rich", "lazy")):
        rs = [runs[(kind, regime, s)] for s in seeds]
        for i, m in enumerate(METRICS):
            ax = axes[i, col]
            for j, (n, lab) in enumerate(zip(rs[0]["names"], rs[0]["labels"])):
                arr = np.array([r["series"][f"{n}|{m}"] for r in rs])
                ep = np.array(rs[0]["epochs"])
                ax.plot(ep, arr.mean(0), color=f"C{j}", lw=1.5, label=lab)
                if len(rs) > 1:
                    ax.fill_between(ep, arr.min(0), arr.max(0), color=f"C{j}", alpha=0.2, lw=0)
            title = f"{kind.upper()} {regime}" + (f" (alpha = {alpha_lazy:g})" if regime == "lazy" else " (alpha = 1)")
            ax.set_title(f"{title}: {SHORT[m]}", fontsize=9)
            ax.tick_params(labelsize=7)
        axes[-1, col].set_xlabel("epoch (0 = initialisation)")
        axes[0, col].legend(fontsize=7, title="layer input", title_fontsize=7)
    for i in range(4):  # the same y range in both regimes
        lo = min(axes[i, 0].get_ylim()[0], axes[i, 1].get_ylim()[0])
        hi = max(axes[i, 0].get_ylim()[1], axes[i, 1].get_ylim()[1])
        for ax in axes[i]:
            ax.set_ylim(lo, hi)
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def _capacity_figure(summary, cap_epochs, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, kind in zip(axes, ("mlp", "cnn")):
        for regime, ls in (("rich", "-"), ("lazy", "--")):
            rows = summary[(kind, regime)]["rows"]
            x = np.arange(len(rows))
            for j, e in enumerate([0] + cap_epochs):
                if regime == "lazy" and e == 0:
                    continue  # the same initialisation as rich
                v = [r["capacity"][e] for r in rows]
                v = [np.nan if c < 0 else c for c in v]
                ax.plot(x, v, ls, marker="o", color=f"C{j}", lw=1.3,
                        label=("init" if e == 0 else f"{regime}, epoch {e}"))
            ax.set_xticks(x, [r["layer"] for r in rows])
        ax.set_title(f"{kind.upper()}: simulated capacity P/N_c by layer input (solid rich, dashed lazy)", fontsize=9)
        ax.set_xlabel("layer input")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("capacity alpha_c")
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
