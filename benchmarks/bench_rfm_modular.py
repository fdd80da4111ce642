"""Case study: a Recursive Feature Machine learns modular addition (grokking without a network).

Data: all pairs (a, b) of Z_p, p = 61 by default, encoded as two concatenated one-hot vectors
(2p inputs); the label is (a + b) mod p. A fraction of the p^2 pairs (``--fractions``) trains, the
rest is held out. Model: ``fl.learning.RFMClassifier`` with a Gaussian kernel, bandwidth 2.5,
reg 1e-6, M = AGOP^(1/2) of centred gradients, no normalisation (the settings of Mallinar, Beaglehole,
Zhu, Radhakrishnan, Pandit, Belkin 2024, "Emergence in non-neural models: grokking modular
arithmetic via average gradient outer product", arXiv 2407.20199), ``--iters`` AGOP updates.

Per training fraction the script reports the held-out accuracy after 0 updates (plain kernel ridge),
and after every ``--every`` updates, and the block-circulant residual of the final M: for each of
the three p x p blocks of M (a-a, a-b, b-b), ||B - circ(B)|| / ||B|| where circ(B) averages B along
its cyclic diagonals ((i - j) mod p); 0 means exactly circulant (Fourier features).

The held-out pairs are passed to ``fit`` as validation data only so that ``history_`` records their
accuracy at every update; the reported figures are those of the iterates themselves, not of a
selected best one.

Usage: .venv/bin/python benchmarks/bench_rfm_modular.py [--p 61] [--fractions 0.3 0.4 0.5 0.6]
       [--iters 30]. Writes benchmarks/results/rfm_modular.md and .json (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from _common import environment, load_average, write_results
from featurelens.learning import RFMClassifier

RESULTS = Path(__file__).resolve().parent / "results"


def modular_data(p: int):
    a, b = np.divmod(np.arange(p * p), p)
    X = np.zeros((p * p, 2 * p))
    X[np.arange(p * p), a] = 1.0
    X[np.arange(p * p), p + b] = 1.0
    return X, (a + b) % p


def circulant_residual(block: np.ndarray) -> float:
    p = block.shape[0]
    diff = (np.arange(p)[:, None] - np.arange(p)[None, :]) % p
    circ = np.array([block[diff == k].mean() for k in range(p)])[diff]
    return float(np.linalg.norm(block - circ) / np.linalg.norm(block))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, default=61)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    p = args.p
    X, y = modular_data(p)
    perm = np.random.default_rng(args.seed).permutation(p * p)
    settings = dict(kernel="gaussian", bandwidth=2.5, reg=1e-6, power=0.5, centering=True, normalize=None)
    checkpoints = list(range(0, args.iters + 1, args.every))
    if checkpoints[-1] != args.iters:
        checkpoints.append(args.iters)
    rows, runs = [], []
    for fraction in args.fractions:
        n_train = int(round(fraction * p * p))
        tr, te = perm[:n_train], perm[n_train:]
        start = time.perf_counter()
        rfm = RFMClassifier(iters=args.iters, seed=args.seed, **settings).fit(X[tr], y[tr], X_val=X[te], y_val=y[te])
        seconds = time.perf_counter() - start
        accuracy = {h["iter"]: h["val_accuracy"] for h in rfm.history_}
        residual = [circulant_residual(B) for B in (rfm.M_[:p, :p], rfm.M_[:p, p:], rfm.M_[p:, p:])]
        first_perfect = next((i for i in sorted(accuracy) if accuracy[i] >= 0.99), None)
        rows.append([f"{fraction:.2f}", str(n_train)] + [f"{accuracy.get(i, float('nan')):.3f}" for i in checkpoints]
                    + ["-" if first_perfect is None else str(first_perfect), f"{max(residual):.3f}", f"{seconds:.0f}"])
        runs.append({"fraction": fraction, "n_train": n_train, "accuracy": accuracy, "first_update_at_0.99": first_perfect,
                     "circulant_residual": residual, "seconds": seconds})
        print(" | ".join(rows[-1]), flush=True)
    header = ["train fraction", "train pairs"] + [f"acc after {i}" for i in checkpoints] + [
        "first update with acc >= 0.99", "max block circulant residual", "fit s"]
    lines = [
        f"# RFM on modular addition, p = {p}",
        "",
        f"Gaussian kernel, bandwidth 2.5, reg 1e-6, M = AGOP^(1/2) of centred gradients, {args.iters} updates, "
        f"seed {args.seed}; held-out accuracy of each iterate; circulant residual of the final M's three "
        "p x p blocks (0 = exactly circulant).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ] + ["| " + " | ".join(r) + " |" for r in rows]
    data = {"p": p, "settings": settings, "iters": args.iters, "runs": runs,
            "environment": environment(load_average=load_average())}
    write_results(RESULTS, "rfm_modular", "\n".join(lines) + "\n", data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
