"""The ``featurelens diagnose`` command: grokking modular addition with the training monitor on.

:func:`add_parser` defines its options (no torch import for ``--help``: the defaults it shows are
:data:`GROKKING_DEFAULTS`, checked against ``featurelens.learning._grokking.DEFAULTS`` by a test);
:func:`run` does the work and returns the exit code. The report folder is built aside and moved into place
(:func:`featurelens.report.report_folder`).
"""

from __future__ import annotations

import csv
import os
import sys

from ..report import HTMLReport, OutError, check_out, report_folder, write_json
from .options import add_overwrite, fraction, non_negative_float, non_negative_int, positive_int

__all__ = ["add_parser", "run", "diagnose", "DEFAULT_OUT", "GROKKING_DEFAULTS"]

DEFAULT_OUT = "featurelens-diagnose"

#: The grokking run's defaults shown by --help (featurelens.learning._grokking.DEFAULTS, whose module
#: imports torch; a test checks they are equal).
GROKKING_DEFAULTS = dict(p=31, width=256, train_fraction=0.5, lr=3e-3, weight_decay=1.0, steps=3000)


def add_parser(sub) -> None:
    """The ``diagnose`` subcommand and its options."""
    d = GROKKING_DEFAULTS
    parser = sub.add_parser(
        "diagnose",
        help="train a small network on modular addition with the training monitor and write a report",
        description="Train a two-layer network with quadratic activation, f(x) = V (W x)^2, on (a + b) mod p "
        "(one-hot operands, full-batch AdamW, MSE on one-hot labels) on the CPU until it groks or the "
        "step budget ends, with featurelens.learning.Monitor recording the NFA correlation, effective "
        "ranks, neural collapse and the rolling-window spectrum of the weight updates, whose eigengap "
        "detector announces grokking. Writes PNG curves, the first-layer Gram matrix W^T W and its "
        "AGOP as images, results.json and index.html into --out, and prints a summary. "
        f"Defaults: p={d['p']}, width {d['width']}, training fraction {d['train_fraction']}, lr {d['lr']}, "
        f"weight decay {d['weight_decay']}, at most {d['steps']} steps (about 15 seconds on 2 cores).",
    )
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"report folder (default: {DEFAULT_OUT})")
    add_overwrite(parser, "an earlier diagnose report is always replaced")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--steps", type=positive_int, default=d["steps"], metavar="N",
                        help=f"most training steps (default {d['steps']}; training stops "
                        "300 steps after test accuracy reaches 99%%)")
    parser.add_argument("--weight-decay", type=non_negative_float, default=d["weight_decay"], metavar="F",
                        help=f"AdamW weight decay (default {d['weight_decay']}; 0 gives the no-grokking control)")
    parser.add_argument("--p", type=positive_int, default=d["p"], metavar="P", help=f"the modulus (default {d['p']})")
    parser.add_argument("--width", type=positive_int, default=d["width"], metavar="N",
                        help=f"hidden units (default {d['width']})")
    parser.add_argument("--train-fraction", type=fraction, default=d["train_fraction"], metavar="F",
                        help=f"fraction of the p^2 pairs used for training (default {d['train_fraction']})")
    parser.add_argument("--lr", type=non_negative_float, default=d["lr"], metavar="F",
                        help=f"AdamW learning rate (default {d['lr']})")
    parser.add_argument("--probe-every", type=positive_int, default=100, metavar="N",
                        help="steps between AGOP/NFA/rank/collapse measurements (default 100)")
    parser.add_argument("--grokalign", type=non_negative_float, default=None, metavar="WEIGHT",
                        help="add the GrokAlign Jacobian penalty WEIGHT * mean ||df/dx||_F (Walker et al. 2025) to "
                        "the training loss and record the Jacobian alignment (default: off; e.g. 0.01)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _curves(monitor, summary):
    from matplotlib.figure import Figure

    from ..learning._grokking import ALIGNMENT_SERIES

    panels = [
        ("accuracy", [("train_accuracy", "model", "train"), ("test_accuracy", "model", "test")], False),
        ("NFA correlation corr(W^T W, AGOP^1/2)", [("nfa", layer, f"layer {layer}") for layer in monitor.layers]
         + [("nfa_offdiag", layer, f"layer {layer}, off-diagonal") for layer in monitor.layers], False),
        ("effective rank of W", [("erank_weights", layer, f"layer {layer}") for layer in monitor.layers], False),
        (f"update eigengap sigma_{monitor.k}/sigma_{monitor.k + 1} (window {monitor.window})",
         [("update_gap", layer, f"layer {layer}") for layer in monitor._keys], True),
        ("train loss (MSE)", [("loss", "model", "loss")], True),
        ("NC1 of the hidden features", [("nc1", list(monitor.layers)[-1], "nc1")], True),
    ]
    present = {(r["metric"], r["layer"]) for r in monitor.records}
    if any((name, "model") in present for name in ALIGNMENT_SERIES):
        panels.append(("Jacobian alignment J = df/dx with x (GrokAlign)", [
            ("jacobian_centroid_cosine", "model", "centroid cos(J^T 1, x)"),
            ("jacobian_cosine", "model", "mean_k cos(grad f_k, x)"),
            ("jacobian_top_singular_cosine", "model", "|cos(v_1, x)|"),
            ("jacobian_rank_one_share", "model", "rank-one share s_1^2/|J|_F^2"),
        ], False))
    if ("grokalign_penalty", "model") in present:
        panels.append(("GrokAlign penalty lambda mean ||J||_F", [("grokalign_penalty", "model", "penalty")], True))
    from ..plots._text import plain_text

    rows = (len(panels) + 2) // 3
    fig = Figure(figsize=(13, 3.2 * rows))
    fig.subplots_adjust(left=0.05, right=0.98, bottom=0.08 / rows * 2, top=1 - 0.05 / rows * 2, wspace=0.22,
                        hspace=0.35)
    for i, (title, lines, log) in enumerate(panels):
        ax = fig.add_subplot(rows, 3, i + 1)
        for metric, layer, label in lines:
            if (metric, layer) in present:
                s, v = monitor.series(metric, layer)
                ax.plot(s, v, label=plain_text(label), lw=1.1)
        if log:
            ax.set_yscale("log")
        if summary["fired_step"] is not None:
            ax.axvline(summary["fired_step"], color="crimson", ls="--", lw=1, label=f"detector fired ({summary['fired_step']})")
        if summary["grok_step"] is not None:
            ax.axvline(summary["grok_step"], color="k", ls=":", lw=1, label=f"test acc >= 0.9 ({summary['grok_step']})")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    return fig


def _matrices(model, X, p):
    import numpy as np
    from matplotlib.figure import Figure

    from ..learning.nfa import layer_agops, matrix_power_psd

    W = model[0].weight.detach().double().numpy()
    A = layer_agops(model, X, layers=["0"])["0"]
    fig = Figure(figsize=(10, 4.4))
    fig.subplots_adjust(left=0.06, right=0.97, bottom=0.08, top=0.92, wspace=0.25)
    pairs = ((W.T @ W, "W^T W (first layer)"), (matrix_power_psd(A, 0.5), "AGOP^1/2 (first layer input)"))
    for i, (M, title) in enumerate(pairs):
        ax = fig.add_subplot(1, 2, i + 1)
        M = M - np.diag(np.diag(M))  # the diagonal dominates; without it the circulant blocks show
        title += ", diagonal set to 0"
        lim = np.abs(M).max() or 1.0
        im = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(title, fontsize=9)
        ax.axhline(p - 0.5, color="k", lw=0.5)
        ax.axvline(p - 0.5, color="k", lw=0.5)
        ax.set_xticks([0, p, 2 * p - 1], ["a=0", "b=0", f"b={p - 1}"], fontsize=7)
        ax.set_yticks([0, p, 2 * p - 1], ["a=0", "b=0", f"b={p - 1}"], fontsize=7)
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig, W, A


_D = GROKKING_DEFAULTS


def diagnose(out=DEFAULT_OUT, seed=0, steps=_D["steps"], weight_decay=_D["weight_decay"], p=_D["p"],
             width=_D["width"], train_fraction=_D["train_fraction"], lr=_D["lr"], probe_every=100,
             progress=None, overwrite=False, grokalign=None) -> dict:
    """Run the grokking experiment with the monitor and write the report folder ``out``; returns
    the summary written to results.json. ``grokalign`` (None or a weight >= 0) adds the GrokAlign
    Jacobian penalty to the training loss and records the Jacobian alignment
    (:func:`featurelens.learning._grokking.run_grokking`; Walker et al. 2025, arXiv 2506.12284). ``out`` is checked before training: an existing file, an
    unwritable place, or a folder that holds files and is not an earlier diagnose report (unless
    ``overwrite=True``) raises :class:`featurelens.report.OutError` (a ValueError)."""
    from ..learning._grokking import run_grokking

    check_out(out, "diagnose", overwrite)
    monitor, model, (Xtr, ytr, Xte, yte), summary = run_grokking(
        p=p, width=width, train_fraction=train_fraction, lr=lr, weight_decay=weight_decay, steps=steps,
        seed=seed, probe_every=probe_every, progress=progress, grokalign=grokalign,
    )
    with report_folder(out, "diagnose", overwrite) as tmp:
        return _write(tmp, monitor, model, Xtr, summary, p, width, train_fraction, lr, weight_decay,
                      summary.get("seed_root", summary["seed"]))


def _write(out, monitor, model, Xtr, summary, p, width, train_fraction, lr, weight_decay, seed) -> dict:
    from ..plots._png import figure_png  # not tight: no layout pass, a few seconds less per figure

    files = {}
    curves = figure_png(_curves(monitor, summary))
    files["curves"] = "curves.png"
    mats_fig, W, A = _matrices(model, Xtr, p)
    mats = figure_png(mats_fig)
    files["matrices"] = "gram_agop.png"
    monitor_png = figure_png(monitor.plot())
    files["monitor"] = "monitor.png"
    for name, data in ((files["curves"], curves), (files["matrices"], mats), (files["monitor"], monitor_png)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    from ..learning.nfa import nfa_from_agop

    summary["final_nfa"] = {}
    for layer in monitor.layers:
        try:
            summary["final_nfa"][layer] = float(monitor.series("nfa", layer)[1][-1])
        except ValueError:
            pass
    summary["final_nfa_first_layer_train"] = nfa_from_agop(model[0], A)
    summary["final_nfa_offdiag_first_layer_train"] = nfa_from_agop(model[0], A, measure="pearson_offdiag")
    try:
        first_nfa = monitor.series("nfa_offdiag", "0")[1]
        summary["nfa_offdiag_first_layer_first_probe"] = float(first_nfa[0])
    except ValueError:
        pass
    summary["detector"] = {
        "watches": f"update_gap of layer {monitor.detect_key()!r}",
        "window": monitor.window, "k": monitor.k,
        **{k: getattr(monitor.detector, k) for k in ("threshold", "patience", "warmup", "baseline", "direction", "min_scale")},
    }
    summary["files"] = files
    # The csv module, not pandas (an optional dependency): history.csv is listed in results.json,
    # so it must be written whether pandas is installed or not.
    with open(os.path.join(out, "history.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "layer", "metric", "value"])
        writer.writeheader()
        writer.writerows(monitor.records)
    files["history"] = "history.csv"
    write_json(os.path.join(out, "results.json"), summary, indent=2)
    files["results"] = "results.json"

    ga = summary.get("grokalign")
    page = HTMLReport("featurelens diagnose: grokking modular addition",
                      f"p={p}, width {width}, train fraction {train_fraction}, AdamW lr {lr}, weight decay {weight_decay}, seed {seed}"
                      + ("" if ga is None else f", GrokAlign weight {ga}"))
    page.add_definitions([
        ("steps run", summary["steps_run"]),
        ("grok step (test accuracy >= 0.9)", summary["grok_step"]),
        ("eigengap detector fired at", summary["fired_step"]),
        ("fired before grokking", summary["fired_before_grok"]),
        ("final train / test accuracy", f"{summary['final_train_accuracy']:.3f} / {summary['final_test_accuracy']:.3f}"),
        ("final NFA correlation (first layer): all entries / off-diagonal",
         f"{summary['final_nfa_first_layer_train']:.3f} / {summary['final_nfa_offdiag_first_layer_train']:.3f}"),
        *_alignment_rows(summary),
        ("seconds", f"{summary['seconds']:.1f}"),
    ])
    page.add_image(curves, "training curves", "Accuracy, NFA correlation, effective rank, update eigengap, loss and NC1 "
                   "over training; dashed: the eigengap detector's firing step; dotted: test accuracy reaching 0.9.")
    page.add_image(mats, "W^T W and AGOP", "The learned first-layer Gram matrix and the square root of the AGOP with "
                   "respect to the one-hot input (Neural Feature Ansatz); circulant blocks mean Fourier features.")
    page.add_image(monitor_png, "monitor.plot()", "monitor.plot(): every recorded series.")
    page.add_paragraph(f"The detector watches {summary['detector']['watches']}; it fires when the log gap stays more than "
                       f"{monitor.detector.threshold} robust standard deviations above the median of its previous "
                       f"{monitor.detector.baseline} values for {monitor.detector.patience} consecutive steps.")
    page.save(os.path.join(out, "index.html"))
    files["report"] = "index.html"
    write_json(os.path.join(out, "results.json"), summary, indent=2)
    return summary


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _alignment_rows(summary) -> list:
    """The report lines of a run with the Jacobian alignment recorded (none without it)."""
    from ..learning._grokking import ALIGNMENT_SERIES

    rows = []
    if summary.get("grokalign") is not None:
        rows.append(("GrokAlign penalty weight / final penalty lambda mean ||J||_F",
                     f"{summary['grokalign']} / {_fmt(summary['final_grokalign_penalty'], '.4g')}"))
    values = [summary.get(f"final_{name}") for name in ALIGNMENT_SERIES]
    if any(v is not None for v in values):
        text = [_fmt(v, ".3f") for v in values]
        label = ("final Jacobian alignment: mean cos(grad f_k, x) / rank-one share / centroid cos(J^T 1, x) / "
                 "|cos(v_1, x)|")
        rows.append((label, " / ".join(text)))
    return rows


def run(args) -> int:
    """Train, write the report the options ask for and print its summary; the exit code."""
    try:  # before importing torch and training: a bad --out costs nothing
        check_out(args.out, "diagnose", args.overwrite, name="--out")
    except OutError as err:
        print(f"featurelens diagnose: error: {err}", file=sys.stderr)
        return 2
    try:
        summary = diagnose(
            out=args.out, seed=args.seed, steps=args.steps, weight_decay=args.weight_decay, p=args.p,
            width=args.width, train_fraction=args.train_fraction, lr=args.lr, probe_every=args.probe_every,
            progress=False if args.no_progress else None, overwrite=args.overwrite,
            grokalign=getattr(args, "grokalign", None),
        )
    except ValueError as err:
        print(f"featurelens diagnose: error: {err}", file=sys.stderr)
        return 2
    g, f = summary["grok_step"], summary["fired_step"]
    ga = summary.get("grokalign")
    print(f"modular addition p={summary['p']}, width {summary['width']}, weight decay {summary['weight_decay']}, "
          + ("" if ga is None else f"GrokAlign weight {ga}, ")
          + f"seed {summary['seed']}: {summary['steps_run']} steps in {summary['seconds']:.1f} s")
    print(f"  train accuracy {summary['final_train_accuracy']:.3f}, test accuracy {summary['final_test_accuracy']:.3f}")
    print(f"  grokked (test accuracy >= 0.9) at step: {g if g is not None else 'not within the budget'}")
    print(f"  eigengap detector fired at step: {f if f is not None else 'never'}"
          + (f" ({g - f} steps before grokking)" if f is not None and g is not None and f < g else ""))
    print(f"  NFA correlation of the first layer: {summary['final_nfa_first_layer_train']:.3f} "
          f"(off-diagonal entries: {summary['final_nfa_offdiag_first_layer_train']:.3f})")
    for label, value in _alignment_rows(summary):
        print(f"  {label}: {value}")
    print(f"report: {os.path.abspath(os.path.join(args.out, 'index.html'))}")
    return 0
