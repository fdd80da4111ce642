"""Mahalanobis++ against plain Mahalanobis (and max-softmax, energy) on the penultimate features of
networks trained on scikit-learn's digits, with real out-of-distribution sets.

Detectors (``fl.learning.MahalanobisOOD``; higher score = more in-distribution):

- Mahalanobis (Lee et al., NeurIPS 2018, arXiv 1807.03888): class means ``mu_c`` and the shared
  (pooled, 1/n) within-class covariance ``Sigma`` of the train features ``h``;
  ``s(h) = -min_c (h - mu_c)^T Sigma^{-1} (h - mu_c)`` (``normalize=False``);
- Mahalanobis++ (Mueller & Hein, ICML 2025, arXiv 2505.18032): the same on ``f = h / ||h||_2``,
  every feature vector normalised before anything is estimated (``normalize=True``);
- max-softmax probability (Hendrycks & Gimpel 2017) and the energy score ``logsumexp(logits)``
  (Liu et al. 2020), from the same network's logits.

Protocol: for each held-out digit ``h`` (default all ten) and seed, a network is trained on the other
nine classes (70% of their images, stratified; the other 30% are the in-distribution test set);
features are the last hidden layer (after its ReLU). OOD sets:

- ``held-out digit``: every image of digit ``h`` (near OOD);
- ``gaussian noise``: 500 images with pixels ~ Normal(per-pixel train mean, per-pixel train std),
  clipped to the digits' range [0, 1];
- ``uniform noise``: 500 images with pixels ~ U[0, 1];
- ``photo patches``: 500 grey 8x8 patches of scikit-learn's two bundled sample photos
  (``load_sample_images``: china.jpg, flower.jpg): random 32x32 crops of the grey image
  (0.299 R + 0.587 G + 0.114 B), averaged over 4x4 blocks to 8x8 and min-max scaled to [0, 1]
  per patch (far OOD with digit-like contrast).

Metrics as in the Mahalanobis++ reference code: AUROC with in-distribution labelled 1, and FPR@95 =
the share of OOD images scoring at or above the 5% quantile of the in-distribution scores (the
threshold that keeps 95% of them). Mean ± std over held-out digits x seeds. Two networks: an MLP
64-256-256-9 and a small CNN (conv 16, conv 32, max-pool, linear 128, linear 9). Adam, lr 1e-3,
batch 64, 60 epochs (MLP) / 40 (CNN), weight decay 1e-4.

Usage: .venv/bin/python benchmarks/bench_ood.py [--quick] [--seeds 2] [--models mlp cnn]
Writes benchmarks/results/ood.md, ood.json and ood.png (ood_quick.* with --quick).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _common import environment, load_average, write_results
from sklearn.datasets import load_digits, load_sample_images
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

import featurelens as fl

RESULTS = Path(__file__).resolve().parent / "results"
OOD_SETS = ("held-out digit", "gaussian noise", "uniform noise", "photo patches")
DETECTORS = ("mahalanobis", "mahalanobis++", "max_softmax", "energy")
N_SYNTH = 500


# ------------------------------------------------------------------------------------------------
# data


def photo_patches(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` grey 8x8 patches (n, 64) in [0, 1] from sklearn's bundled sample photos."""
    greys = [img.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) for img in load_sample_images().images]
    out = np.empty((n, 64))
    for i in range(n):
        g = greys[i % len(greys)]
        r = rng.integers(0, g.shape[0] - 32 + 1)
        c = rng.integers(0, g.shape[1] - 32 + 1)
        p = g[r : r + 32, c : c + 32].reshape(8, 4, 8, 4).mean(axis=(1, 3))
        lo, hi = p.min(), p.max()
        out[i] = ((p - lo) / (hi - lo) if hi > lo else np.zeros_like(p)).reshape(-1)
    return out


def ood_sets(X_train: np.ndarray, X_held: np.ndarray, rng: np.random.Generator) -> dict:
    mu, sd = X_train.mean(0), X_train.std(0)
    return {
        "held-out digit": X_held,
        "gaussian noise": np.clip(rng.normal(mu, sd, size=(N_SYNTH, 64)), 0.0, 1.0),
        "uniform noise": rng.uniform(0.0, 1.0, size=(N_SYNTH, 64)),
        "photo patches": photo_patches(N_SYNTH, rng),
    }


# ------------------------------------------------------------------------------------------------
# models


class MLP(torch.nn.Module):
    def __init__(self, n_classes: int):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                        torch.nn.ReLU())
        self.head = torch.nn.Linear(256, n_classes)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.head(self.features(x))


class CNN(torch.nn.Module):
    def __init__(self, n_classes: int):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3, padding=1),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(32 * 16, 128), torch.nn.ReLU())
        self.head = torch.nn.Linear(128, n_classes)

    def features(self, x):
        return self.body(x.view(-1, 1, 8, 8))

    def forward(self, x):
        return self.head(self.features(x))


def train(kind: str, X: np.ndarray, y: np.ndarray, n_classes: int, seed: int, epochs: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = (MLP if kind == "mlp" else CNN)(n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(yt), generator=gen)
        for s in range(0, len(yt), 64):
            idx = order[s : s + 64]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(Xt[idx]), yt[idx]).backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def forward(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = torch.as_tensor(X, dtype=torch.float32)
    h = model.features(x)
    return h.double().numpy(), model.head(h).double().numpy()


# ------------------------------------------------------------------------------------------------
# metrics


def auroc(s_id: np.ndarray, s_ood: np.ndarray) -> float:
    y = np.r_[np.ones(len(s_id)), np.zeros(len(s_ood))]
    return float(roc_auc_score(y, np.nan_to_num(np.r_[s_id, s_ood])))


def fpr_at_95(s_id: np.ndarray, s_ood: np.ndarray) -> float:
    """Share of OOD scores >= the 5% quantile of the ID scores (95% of ID kept)."""
    t = np.quantile(s_id, 0.05)
    return float(np.mean(s_ood >= t))


def detector_scores(H_tr, y_tr, feats: dict, logits: dict) -> dict:
    out = {}
    for name, norm in (("mahalanobis", False), ("mahalanobis++", True)):
        det = fl.learning.MahalanobisOOD(normalize=norm).fit(H_tr, y_tr)
        out[name] = {k: det.score(v) for k, v in feats.items()}
    out["max_softmax"] = {}
    out["energy"] = {}
    for k, z in logits.items():
        zz = z - z.max(1, keepdims=True)
        p = np.exp(zz)
        p /= p.sum(1, keepdims=True)
        out["max_softmax"][k] = p.max(1)
        out["energy"][k] = z.max(1) + np.log(np.exp(zz).sum(1))
    return out


# ------------------------------------------------------------------------------------------------


def run(kind: str, held: int, seed: int, X: np.ndarray, y: np.ndarray, epochs: int) -> dict:
    rng = np.random.default_rng([seed, held])
    keep = y != held
    Xi, yi = X[keep], y[keep]
    yi = np.where(yi > held, yi - 1, yi)  # labels 0..8
    X_tr, X_te, y_tr, y_te = train_test_split(Xi, yi, test_size=0.3, stratify=yi, random_state=seed)
    model = train(kind, X_tr, y_tr, 9, seed, epochs)
    sets = {"id": X_te, **ood_sets(X_tr, X[~keep], rng)}
    feats, logits = {}, {}
    for k, v in sets.items():
        feats[k], logits[k] = forward(model, v)
    H_tr, _ = forward(model, X_tr)
    acc = float((logits["id"].argmax(1) == y_te).mean())
    sc = detector_scores(H_tr, y_tr, feats, logits)
    rec = {"model": kind, "held_out": held, "seed": seed, "test_accuracy": acc,
           "norms": {k: float(np.linalg.norm(v, axis=1).mean()) for k, v in feats.items()}, "metrics": {}}
    for det in DETECTORS:
        for o in OOD_SETS:
            rec["metrics"][(det, o)] = {"auroc": auroc(sc[det]["id"], sc[det][o]), "fpr95": fpr_at_95(sc[det]["id"], sc[det][o])}
    # Mahalanobis++'s mechanism: does the plain score of OOD images follow their feature norm?
    ood_h = np.concatenate([feats[o] for o in OOD_SETS])
    ood_s = np.concatenate([sc["mahalanobis"][o] for o in OOD_SETS])
    rec["corr_norm_plain_score_ood"] = float(np.corrcoef(np.linalg.norm(ood_h, axis=1), ood_s)[0, 1])
    rec["_norm_hist"] = {k: np.linalg.norm(v, axis=1) for k, v in feats.items()}
    return rec


def figure(agg: dict, models: list, runs: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(models) + 1, figsize=(4.4 * (len(models) + 1), 3.4), squeeze=False)
    width = 0.2
    for ax, kind in zip(axes[0], models):
        xs = np.arange(len(OOD_SETS))
        for j, det in enumerate(DETECTORS):
            vals = [agg[kind][(det, o)]["fpr95"]["mean"] for o in OOD_SETS]
            errs = [agg[kind][(det, o)]["fpr95"]["std"] for o in OOD_SETS]
            ax.bar(xs + (j - 1.5) * width, vals, width, yerr=errs, label=det, capsize=2)
        ax.set_xticks(xs, [o.replace(" ", "\n") for o in OOD_SETS], fontsize=7)
        ax.set_ylabel("FPR@95 (lower is better)")
        ax.set_title(f"{kind.upper()} on digits (9 classes)", fontsize=9)
        ax.set_ylim(0, 1)
    axes[0][0].legend(fontsize=7)
    ax = axes[0][-1]
    r = next(r for r in runs if r["model"] == models[0])
    for k, v in r["_norm_hist"].items():
        ax.hist(v, bins=30, histtype="step", density=True, label=k)
    ax.set_xlabel(f"||h|| of penultimate features ({models[0].upper()}, held-out {r['held_out']}, seed {r['seed']})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 held-out digits, 1 seed, MLP only, fewer epochs")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--held-out", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick:
        args.seeds, args.held_out, args.models = 1, [3, 9], ["mlp"]
    epochs = {"mlp": 20 if args.quick else 60, "cnn": 40}
    env = environment()
    load_before = load_average()
    t0 = time.perf_counter()
    digits = load_digits()
    X, y = digits.data / 16.0, digits.target
    runs = []
    for kind in args.models:
        for held in args.held_out:
            for seed in range(args.seeds):
                r = run(kind, held, seed, X, y, epochs[kind])
                runs.append(r)
                m = r["metrics"]
                print(f"{kind} held-out {held} seed {seed}: acc {r['test_accuracy']:.3f}; FPR95 plain/++ "
                      + ", ".join(f"{o}: {m[('mahalanobis', o)]['fpr95']:.2f}/{m[('mahalanobis++', o)]['fpr95']:.2f}"
                                  for o in OOD_SETS), flush=True)
    seconds = time.perf_counter() - t0

    agg: dict = {}
    wins: dict = {}
    for kind in args.models:
        rs = [r for r in runs if r["model"] == kind]
        agg[kind] = {}
        for det in DETECTORS:
            for o in OOD_SETS:
                cell = {}
                for met in ("auroc", "fpr95"):
                    v = np.array([r["metrics"][(det, o)][met] for r in rs])
                    cell[met] = {"mean": float(v.mean()), "std": float(v.std())}
                agg[kind][(det, o)] = cell
        for o in OOD_SETS:
            plain = np.array([r["metrics"][("mahalanobis", o)]["fpr95"] for r in rs])
            plus = np.array([r["metrics"][("mahalanobis++", o)]["fpr95"] for r in rs])
            wins[(kind, o)] = {"plus_better": int((plus < plain).sum()), "tie": int((plus == plain).sum()),
                               "plain_better": int((plus > plain).sum()), "runs": len(rs)}

    name = "ood_quick" if args.quick else "ood"
    png = args.out / f"{name}.png"
    args.out.mkdir(parents=True, exist_ok=True)
    figure(agg, args.models, runs, png)

    n_runs = len(args.held_out) * args.seeds
    lines = [
        "# Mahalanobis++ vs Mahalanobis on a trained network's features, digits with real OOD sets",
        "",
        f"torch {env['torch']}, featurelens {env['featurelens']}, one torch thread on {env['cpu']}. "
        f"{'QUICK run. ' if args.quick else ''}Held-out digits {args.held_out}, seeds {args.seeds}: "
        f"{n_runs} networks per model, each trained on the other 9 digits; mean ± std over them. "
        f"Wall time {seconds:.0f} s; load average {load_before} before, {load_average()} after.",
        "",
    ]
    for kind in args.models:
        rs = [r for r in runs if r["model"] == kind]
        accs = np.array([r["test_accuracy"] for r in rs])
        lines += [f"## {kind.upper()} (in-distribution test accuracy {accs.mean():.3f} ± {accs.std():.3f})", "",
                  "| detector | " + " | ".join(f"{o}: AUROC / FPR@95" for o in OOD_SETS) + " |",
                  "|---|" + "---|" * len(OOD_SETS)]
        for det in DETECTORS:
            cells = []
            for o in OOD_SETS:
                c = agg[kind][(det, o)]
                cells.append(f"{c['auroc']['mean']:.3f} ± {c['auroc']['std']:.3f} / {c['fpr95']['mean']:.3f} ± "
                             f"{c['fpr95']['std']:.3f}")
            lines.append(f"| {det} | " + " | ".join(cells) + " |")
        lines += ["", "Mahalanobis++ vs plain, FPR@95 per network (++ lower / equal / higher): "
                  + "; ".join(f"{o}: {wins[(kind, o)]['plus_better']} / {wins[(kind, o)]['tie']} / "
                              f"{wins[(kind, o)]['plain_better']}" for o in OOD_SETS) + ".", ""]
        norms = {k: np.mean([r["norms"][k] for r in rs]) for k in ["id", *OOD_SETS]}
        corr = np.array([r["corr_norm_plain_score_ood"] for r in rs])
        lines += ["Mean feature norm ||h||: " + ", ".join(f"{k} {v:.2f}" for k, v in norms.items())
                  + f". Correlation over OOD images between ||h|| and the plain Mahalanobis score: "
                  f"{corr.mean():+.2f} ± {corr.std():.2f} (negative: larger norm, more OOD-looking).", ""]
    lines += [f"Figure: `{png.name}` (FPR@95 per OOD set and detector; feature-norm histograms of one network).", ""]
    table = "\n".join(lines)
    print(table)
    data = {
        "environment": env, "quick": args.quick, "seconds": seconds, "load_before": load_before,
        "load_after": load_average(), "held_out": args.held_out, "seeds": args.seeds, "models": args.models,
        "epochs": epochs,
        "aggregate": {k: {f"{d}|{o}": v for (d, o), v in a.items()} for k, a in agg.items()},
        "wins": {f"{k}|{o}": v for (k, o), v in wins.items()},
        "runs": [{**{k: v for k, v in r.items() if not k.startswith("_") and k != "metrics"},
                  "metrics": {f"{d}|{o}": v for (d, o), v in r["metrics"].items()}} for r in runs],
    }
    write_results(args.out, name, table, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
