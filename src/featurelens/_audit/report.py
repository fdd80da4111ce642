"""The audit's report folder: ``index.html`` (the shared :class:`featurelens.report.HTMLReport`),
``results.csv``, ``results.json`` and the figures, built aside and moved into place
(:func:`featurelens.report.report_folder`)."""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np
import torch

from .._version import __version__
from ..report import Cell, HTMLReport, report_folder, write_json
from .scoring import COLUMNS, RANKING_RULE, _ROW_KEYS, _clean_rows, _finite, _fmt

__all__ = ["write_report"]


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _maps_figure(x, masks, explanations, methods, feature_names=None) -> bytes:
    from matplotlib.figure import Figure

    from ..plots.maps import show_map

    if x.ndim == 2:  # tabular: mean |a| per feature, the top 15
        ncols = len(methods)
        fig = Figure(figsize=(3.0 * ncols, 3.2))
        axes = fig.subplots(1, ncols, squeeze=False)[0]
        for ax, m in zip(axes, methods):
            imp = np.abs(np.asarray(explanations[m].values, dtype=np.float64)).reshape(len(x), -1).mean(0)
            order = np.argsort(-imp)[:15][::-1]
            labels = [feature_names[i] if feature_names else str(i) for i in order]
            ax.barh(range(len(order)), imp[order], color="#c0392b")
            ax.set_yticks(range(len(order)))
            ax.set_yticklabels(labels, fontsize=6)
            ax.set_title(m, fontsize=8)
            ax.tick_params(axis="x", labelsize=6)
        fig.suptitle("mean |attribution| per feature (top 15)", fontsize=9)
        fig.tight_layout()
        return _png(fig)

    def to2d(arr):
        arr = np.asarray(arr, dtype=np.float64)
        if arr.ndim == 1:
            return arr[None]
        if arr.ndim == 3:  # (C, H, W): channels summed
            return arr.sum(0)
        if arr.ndim == 4:  # (C, D, H, W): channels summed, middle slice
            return arr.sum(0)[arr.shape[1] // 2]
        return arr

    k = min(3, len(x))
    panels = ["input"] + (["ground truth"] if masks is not None else []) + list(methods)
    fig = Figure(figsize=(1.6 * len(panels), 1.8 * k + 0.4))
    axes = fig.subplots(k, len(panels), squeeze=False)
    for i in range(k):
        for c, title in enumerate(panels):
            ax = axes[i, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if title == "input":
                ax.imshow(to2d(x[i]), cmap="gray", interpolation="nearest")
                ax.set_title(title, fontsize=7)
            elif title == "ground truth":
                ax.imshow(to2d(masks[i].astype(float)), cmap="gray", interpolation="nearest")
                ax.set_title(title, fontsize=7)
            else:
                show_map(ax, to2d(np.asarray(explanations[title].values)[i]), title=title)
                ax.title.set_fontsize(7)
        axes[i, 0].set_ylabel(f"sample {i}", fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _curves_figure(curves: dict) -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.4))
    axes = fig.subplots(1, 2)
    for ax, key, label in ((axes[0], "deletion", "deletion (lower is better)"),
                           (axes[1], "insertion", "insertion (higher is better)")):
        for m, c in curves.items():
            if key in c:
                frac = np.linspace(0.0, 1.0, len(c[key]))
                ax.plot(frac, c[key], label=m, lw=1.8 if m != "random" else 1.2, ls="--" if m == "random" else "-")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(f"fraction of features {'removed' if key == 'deletion' else 'inserted'}, most relevant first", fontsize=8)
        ax.set_ylabel("target output (mean over samples)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _png(fig)


def write_report(out, overwrite, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample,
                 total, model, feature_names=None) -> str:
    """Write the audit's report folder ``out``; returns the path of its ``index.html``."""
    with report_folder(out, "audit", overwrite) as tmp:
        _write(tmp, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample, total, model,
               feature_names)
    return os.path.join(os.path.abspath(os.fspath(out)), "index.html")


def _write(out, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample, total, model,
           feature_names=None) -> None:
    clean = _clean_rows(rows)
    with open(os.path.join(out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(_ROW_KEYS)
        for r in clean:
            writer.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) and math.isfinite(v)
                                                    else "" if isinstance(v, float) else v) for v in r.values()])
    settings_json = {k: v for k, v in settings.items() if k != "explainer_kwargs"}
    settings_json["explainer_params"] = {m: {k: v for k, v in kw.items() if k not in ("data", "groups")}
                                         for m, kw in settings["explainer_kwargs"].items()}
    doc = {
        "verdict": verdict, "ranking_rule": RANKING_RULE, "table": clean, "per_sample": per_sample,
        "curves": {m: {k: v.tolist() for k, v in c.items()} for m, c in curves.items()},
        "targets": np.asarray(t).tolist(), "settings": settings_json, "notes": notes,
        "seconds": total, "versions": {"featurelens": __version__, "torch": torch.__version__},
        "model": type(model).__name__,
    }
    write_json(os.path.join(out, "results.json"), doc)

    page = HTMLReport(
        "featurelens audit: which explanation to trust",
        f"model {type(model).__name__}, {settings['n_explain']} audited samples of shape "
        f"{tuple(x.shape[1:])}, seed {settings['seed']}; featurelens {__version__}, torch "
        f"{torch.__version__}; {total:.1f} s",
    )
    page.add_heading("Verdict")
    page.add_paragraph(verdict)
    page.add_heading("Ranking")
    page.add_paragraph(RANKING_RULE, "small")
    present = [c for c in COLUMNS if any(_finite(r.get(c[0])) for r in clean)]
    header = [Cell("rank"), Cell("method", "text")] + [
        Cell(label + (" ↑" if d > 0 else " ↓" if d < 0 else "")) for _, label, d in present
    ] + [Cell("seconds")]
    best = {}
    for key, _, d in present:
        vals = [r[key] for r in clean if r["status"] == "ok" and r["method"] != "random" and _finite(r.get(key))]
        if vals and d:
            best[key] = max(vals) if d > 0 else min(vals)
    body = []
    for r in clean:
        if r["status"] == "n/a":
            continue  # listed with the reason below the table
        row = [Cell("" if r["rank"] is None else str(r["rank"])), Cell(r["method"], "text")]
        for key, _, d in present:
            v = r.get(key)
            if r["status"] != "ok" or not _finite(v):
                row.append(Cell("n/a" if r["status"] == "ok" else r["status"], "na"))
            else:
                row.append(Cell(_fmt(v), "best" if key in best and v == best[key] and r["method"] != "random" else ""))
        row.append(Cell(_fmt(r.get("seconds"), 2) if r["status"] == "ok" else "", ""))
        body.append(row)
    page.add_table([header], body)
    page.add_paragraph(
        "↑ higher is better, ↓ lower is better; sparseness (Gini of |a|) and complexity (entropy of "
        "|a|) describe the maps and are not better or worse by themselves. Best value per column "
        "highlighted. Deletion/insertion AUC: the target output averaged over the curve; random. "
        "sim.: Spearman similarity of the maps before and after randomising the model's weights.",
        "small",
    )
    page.add_heading("Why each method ranks where it does")
    page.add_list([f"{r['method']}: {r['reason']}" for r in clean if r["status"] != "n/a"])
    not_run = [f"{r['method']}: {r['reason']}" for r in clean if r["status"] == "n/a"]
    if not_run:
        page.add_heading("Registered explainers not run", 3)
        page.add_list(not_run)
    ok = [r["method"] for r in clean if r["status"] == "ok" and r["method"] in explanations]
    figures = {}
    if ok:
        try:
            figures["maps.png"] = _maps_figure(x, masks, explanations, ok, feature_names)
        except Exception as err:  # a figure that cannot be drawn must not lose the report
            notes.append(f"example maps figure failed ({type(err).__name__}: {err})")
    if any(curves.values()):
        figures["curves.png"] = _curves_figure(curves)
    if "maps.png" in figures:
        page.add_heading("Example maps")
        page.add_paragraph("The first audited samples (rows): the input"
                           + (", the ground truth" if masks is not None else "")
                           + " and each method's map (red positive, blue negative).", "small")
        page.add_image(figures["maps.png"], alt="example maps per method", caption="example maps")
    if "curves.png" in figures:
        page.add_heading("Deletion and insertion curves")
        page.add_paragraph("The target output as features are removed from the input (deletion) "
                           "or inserted into the baseline (insertion) in order of decreasing "
                           "attribution, averaged over the audited samples.", "small")
        page.add_image(figures["curves.png"], alt="deletion and insertion curves", caption="deletion and insertion curves")
    for name, png in figures.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(png)
    if notes:
        page.add_heading("Notes")
        page.add_list(notes)
    page.add_heading("Settings")
    page.add_definitions([(k, v) for k, v in settings_json.items() if k != "explainer_params"])
    page.add_paragraph("Files next to this page: results.csv (the table), results.json (table, "
                       "per-sample scores, curves, settings, notes) and the figures as PNG.", "small")
    page.save(os.path.join(out, "index.html"))
