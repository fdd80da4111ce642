"""The report of :func:`featurelens.bench.run_benchmark`: ``index.html`` (built with the shared
:class:`featurelens.report.HTMLReport`), ``results.csv``, ``results.json`` and the figures as PNG
files, written through :func:`featurelens.report.report_folder` (built aside, moved into place)."""

from __future__ import annotations

import csv
import math
import os

from ..report import Cell, HTMLReport, report_folder, write_json

__all__ = ["write_benchmark_report", "CSV_COLUMNS"]


CSV_COLUMNS = (
    "scenario", "background", "model", "method", "status", "n",
    "precision_mean", "precision_std", "iou_mean", "iou_std", "emd_mean", "emd_std",
    "emd_undefined", "seconds", "note",
)
_METRICS = (("precision", "precision"), ("iou", "IoU"), ("emd", "EMD"))


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _fmt(mean, std=None) -> str:
    if not _finite(mean):
        return "n/a"
    return f"{mean:.3f}" if std is None or not _finite(std) else f"{mean:.3f} ± {std:.3f}"


def _best(values) -> float | None:
    finite = [v for v in values if _finite(v)]
    return max(finite) if finite else None


def _write_csv(rows, path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            out = []
            for c in CSV_COLUMNS:
                v = r.get(c, "")
                if isinstance(v, float):
                    v = f"{v:.6g}" if math.isfinite(v) else ""
                out.append(v)
            writer.writerow(out)


def _summary_table(page: HTMLReport, result) -> None:
    scenarios = [s for s in result.scenarios if any(r["scenario"] == s for r in result.summary)]
    methods = [m for m in result.methods if any(r["method"] == m for r in result.summary)]
    header1 = [Cell("method", "text")] + [Cell(s, colspan=3) for s in scenarios]
    header2 = [Cell("")] + [Cell(label) for _ in scenarios for _, label in _METRICS]
    best = {
        (s, m): _best([result.summary_row(meth, s)[f"{m}_mean"] for meth in methods])
        for s in scenarios
        for m, _ in _METRICS
    }
    rows = []
    for meth in methods:
        row = [meth]
        for s in scenarios:
            r = result.summary_row(meth, s)
            for m, _ in _METRICS:
                mean = r[f"{m}_mean"]
                if not _finite(mean):
                    row.append(Cell("n/a", "na"))
                    continue
                cls = "best" if mean == best[(s, m)] else ""
                row.append(Cell(_fmt(mean, r[f"{m}_std"]), cls))
        rows.append(row)
    page.add_table([header1, header2], rows)


def _model_table(page: HTMLReport, result, model: str) -> None:
    datasets = []
    for r in result.rows:
        key = (r["scenario"], r["background"])
        if r["model"] == model and key not in datasets:
            datasets.append(key)
    methods = [m for m in result.methods if any(r["method"] == m and r["model"] == model for r in result.rows)]
    header1 = [Cell("method", "text")] + [Cell(s, colspan=3) for s, _ in datasets]
    header2 = [Cell("")] + [Cell(bg) for _, bg in datasets for _ in range(3)]
    header3 = [Cell("")] + [Cell(label) for _ in datasets for _, label in _METRICS]
    lookup = {(r["scenario"], r["background"], r["method"]): r for r in result.rows if r["model"] == model}
    best = {
        (d, m): _best([lookup[(*d, meth)][f"{m}_mean"] for meth in methods if (*d, meth) in lookup])
        for d in datasets
        for m, _ in _METRICS
    }
    rows = []
    for meth in methods:
        row = [meth]
        for d in datasets:
            r = lookup.get((*d, meth))
            for m, _ in _METRICS:
                if r is None or r["status"] != "ok" or not _finite(r[f"{m}_mean"]):
                    row.append(Cell("n/a", "na"))
                    continue
                mean = r[f"{m}_mean"]
                row.append(Cell(_fmt(mean, r[f"{m}_std"]), "best" if mean == best[(d, m)] else ""))
        rows.append(row)
    page.add_table([header1, header2, header3], rows)


def _models_overview(page: HTMLReport, result) -> None:
    header = [[
        "scenario", "background", "model", "parameters", "epochs (best)", "train acc.", "val. acc.",
        "test acc.", "best val. loss", "train s", "explained",
    ]]
    rows = []
    for r in result.models:
        rows.append([
            r["scenario"], r["background"], r["model"], r["parameters"],
            f"{r['epochs']} ({r['best_epoch']})", f"{r['train_accuracy']:.3f}", f"{r['val_accuracy']:.3f}",
            f"{r['test_accuracy']:.3f}", f"{r['best_val_loss']:.4f}", f"{r['train_seconds']:.1f}",
            r.get("n_explained", ""),
        ])
    page.add_table(header, rows)


_HOW_TO_READ = (
    "Each XAI-TRIS image hides a tetromino pattern (the ground truth) in noise; only the pattern "
    "pixels carry the class. Every method explains the true-label logit of each model on test "
    "samples that all models of the data set classify correctly. Precision is the share of the k "
    "pixels with the largest |attribution| that lie on the pattern, with k the number of pattern "
    "pixels (XAI-TRIS top-k precision). IoU is the intersection over union of the same top-k pixels"
    " with the pattern (p / (2 - p) when the map has at least k non-zero pixels). The EMD score is "
    "1 - EMD / sqrt(2D): |attribution| and the mask are normalised to unit mass and EMD is the "
    "exact optimal-transport cost between them in pixel units (D = number of pixels); it is "
    "undefined for an all-zero map, and such samples are left out of the EMD mean (their count is "
    "the emd_undefined column of results.csv). For all three, higher is better and 1 is perfect. "
    "The random map is the floor: a method that does not beat it points at noise. Cells show mean ±"
    " standard deviation over samples; the best mean of each column is highlighted; n/a marks a "
    "method that does not apply (GradCAM needs a convolutional layer)."
)


def write_benchmark_report(result, out, overwrite: bool = False) -> str:
    """Write ``index.html``, ``results.csv``, ``results.json`` and the figures (PNG) of a
    :class:`featurelens.bench.BenchmarkResult` into the folder ``out`` (see
    :func:`featurelens.report.report_folder` for when an existing folder is written over).
    Returns the path of ``index.html``."""
    with report_folder(out, "benchmark", overwrite) as tmp:
        _write_report(result, tmp)
    return os.path.join(os.path.abspath(os.fspath(out)), "index.html")


def _write_report(result, out: str) -> None:
    _write_csv(result.rows, os.path.join(out, "results.csv"))
    write_json(os.path.join(out, "results.json"), result.to_dict())
    for name, png in result.figures.items():
        with open(os.path.join(out, os.path.basename(name)), "wb") as f:
            f.write(png)

    s = result.settings
    t = result.timings
    page = HTMLReport(
        "featurelens ground-truth benchmark",
        f"XAI-TRIS {s.get('image_size')}x{s.get('image_size')}, seed {s.get('seed')}"
        f"{', quick run' if s.get('quick') else ''}; featurelens {result.versions.get('featurelens')}, "
        f"torch {result.versions.get('torch')}; {t.get('total_seconds', 0.0):.0f} s in total",
    )
    page.add_heading("How to read this")
    page.add_paragraph(_HOW_TO_READ)
    page.add_heading("Summary: method x scenario")
    page.add_paragraph(
        "Mean ± std over explained test samples, pooled over backgrounds and models.", "small"
    )
    _summary_table(page, result)
    page.add_heading("Per model")
    for model in s.get("models", []):
        if any(r["model"] == model for r in result.rows):
            page.add_heading(f"model {model}", 3)
            _model_table(page, result, model)
    page.add_heading("Example maps")
    page.add_paragraph(
        "One correctly classified test sample per background (rows); columns: the input, the "
        "ground-truth mask and each method's map (red positive, blue negative; magma for "
        "non-negative maps).",
        "small",
    )
    for name in sorted(result.figures):
        page.add_image(result.figures[name], alt=name, caption=name)
    page.add_heading("Trained models")
    _models_overview(page, result)
    page.add_heading("Settings and timings")
    page.add_definitions(
        [(k, ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in s.items()]
        + [
            ("total seconds", f"{t.get('total_seconds', 0.0):.1f}"),
            ("training seconds", f"{t.get('train_seconds', 0.0):.1f}"),
            ("explanation seconds", f"{t.get('explain_seconds', 0.0):.1f}"),
            ("scoring seconds", f"{t.get('score_seconds', 0.0):.1f}"),
        ]
        + [(k, v) for k, v in result.versions.items()]
    )
    page.add_paragraph(
        "Files next to this page: results.csv (one row per scenario, background, model and method), "
        "results.json (rows, summary, models, settings, timings, versions) and the figures as PNG.",
        "small",
    )
    page.save(os.path.join(out, "index.html"))
