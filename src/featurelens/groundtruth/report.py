"""The report of :func:`featurelens.groundtruth.run_benchmark`: ``index.html`` (built with the shared
:class:`featurelens.report.HTMLReport`), ``results.csv``, ``results.json`` and the figures as PNG
files, written through :func:`featurelens.report.report_folder` (built aside, moved into place)."""

from __future__ import annotations

import csv
import html
import math
import os

from ..report import Cell, HTMLReport, png_data_uri, report_folder, write_json
from .formatting import SCENARIO_LABELS

__all__ = ["write_benchmark_report", "CSV_COLUMNS"]


CSV_COLUMNS = (
    "scenario", "background", "model", "method", "status", "reason", "n",
    "precision_mean", "precision_std", "iou_mean", "iou_std", "emd_mean", "emd_std",
    "emd_undefined", "seconds", "note",
)
_LEGEND = ", ".join(f"{short} = {name}" for name, short in SCENARIO_LABELS.items())

#: Page styles of this report beyond the shared ones: cells that state a status and its reason
#: wrap (the shared table cells do not), and the example grid shows each panel at its own size.
_CSS = """<style>
td.status { white-space: normal; text-align: left; color: #666; font-size: 0.92em; min-width: 12em; max-width: 36em; }
td.status b { color: #444; }
td.scores { font-variant-numeric: tabular-nums; text-align: center; padding: 0.25em 0.35em; font-size: 0.95em; }
table.maps td { padding: 2px; text-align: center; vertical-align: middle; }
table.maps th.row { text-align: left; white-space: nowrap; font-weight: normal; }
table.maps img { display: block; width: 120px; height: 120px; image-rendering: pixelated; }
table.maps div.missing { width: 120px; height: 120px; display: flex; align-items: center; justify-content: center;
  white-space: normal; font-size: 0.78em; color: #666; background: #f4f4f4; overflow: hidden; }
</style>"""


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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


def _status_cell(status: str, reason: str, colspan: int = 1) -> Cell:
    """A cell without scores: its status in bold and the reason."""
    body = f"<b>{html.escape(status)}</b>: {html.escape(reason or 'no reason recorded')}"
    return Cell(classes="status", colspan=colspan, html=body)


def metric_labels() -> tuple:
    """``((key, label), ...)`` of the benchmark's metrics, as their specs declare them
    (:attr:`featurelens.metrics.MetricSpec.benchmark`, in registry order): precision, IoU, EMD."""
    from ..metrics import list_metrics

    return tuple(tuple(s.benchmark) for s in list_metrics() if s.benchmark is not None)


def _metric_head() -> str:
    return " · ".join(label for _, label in metric_labels())


def _scores_cell(r: dict, best: dict) -> Cell:
    """precision · IoU · EMD means of a row (std in the tooltip); the best of a column in bold."""
    parts = []
    for m, label in metric_labels():
        mean, std = r[f"{m}_mean"], r[f"{m}_std"]
        if not _finite(mean):
            parts.append(f'<span title="{label}: undefined">–</span>')
            continue
        tip = f"{label} {mean:.3f} ± {std:.3f}" if _finite(std) else f"{label} {mean:.3f}"
        cls = ' class="best"' if best.get(m) is not None and mean == best[m] else ""
        parts.append(f'<span{cls} title="{html.escape(tip)}">{mean:.2f}</span>')
    return Cell(classes="scores", html=" · ".join(parts))


def _merged_row(meth: str, cells: list) -> list:
    """A table row; when every cell states the same status and reason, one cell spans them."""
    keys = {(c.html if c.classes == "status" else None) for c in cells}
    if len(cells) > 1 and len(keys) == 1 and None not in keys:
        return [meth, Cell(classes="status", colspan=len(cells), html=cells[0].html)]
    return [meth] + cells


def _summary_table(page: HTMLReport, result) -> None:
    scenarios = [s for s in result.scenarios if any(r["scenario"] == s for r in result.summary)]
    methods = [m for m in result.methods if any(r["method"] == m for r in result.summary)]
    header = [[Cell("method", "text")] + [Cell(s) for s in scenarios]]
    best = {
        s: {m: _best([result.summary_row(meth, s)[f"{m}_mean"] for meth in methods]) for m, _ in metric_labels()}
        for s in scenarios
    }
    rows, notes = [], []
    for meth in methods:
        cells = []
        for s in scenarios:
            r = result.summary_row(meth, s)
            if r.get("status", "ok") != "ok":
                cells.append(_status_cell(r["status"], r.get("reason", "")))
                continue
            cells.append(_scores_cell(r, best[s]))
            if r.get("note"):
                notes.append(f"{meth} on {s}: pooled over the rows with scores only; {r['note']}.")
        rows.append(_merged_row(meth, cells))
    page.add_table(header, rows)
    if notes:
        page.add_paragraph("Cells pooled over part of the models:", "small")
        page.add_list(notes)


def _model_table(page: HTMLReport, result, model: str) -> None:
    datasets = []
    for r in result.rows:
        key = (r["scenario"], r["background"])
        if r["model"] == model and key not in datasets:
            datasets.append(key)
    methods = [m for m in result.methods if any(r["method"] == m and r["model"] == model for r in result.rows)]
    header = [[Cell("method", "text")] + [
        Cell(html=f'<span title="{html.escape(s)}">{html.escape(SCENARIO_LABELS.get(s, s))}</span><br>{html.escape(bg)}')
        for s, bg in datasets
    ]]
    lookup = {(r["scenario"], r["background"], r["method"]): r for r in result.rows if r["model"] == model}
    best = {
        d: {m: _best([lookup[(*d, meth)][f"{m}_mean"] for meth in methods if (*d, meth) in lookup and
                      lookup[(*d, meth)]["status"] == "ok"]) for m, _ in metric_labels()}
        for d in datasets
    }
    rows = []
    for meth in methods:
        cells = []
        for d in datasets:
            r = lookup.get((*d, meth))
            if r is None:
                cells.append(_status_cell("not run", "this method was not run on this data set"))
            elif r["status"] != "ok":
                cells.append(_status_cell(r["status"], r.get("reason", "")))
            else:
                cells.append(_scores_cell(r, best[d]))
        rows.append(_merged_row(meth, cells))
    page.add_table(header, rows)


def _panel(png: bytes, alt: str) -> str:
    return f'<img src="{png_data_uri(png)}" alt="{html.escape(alt)}" width="120" height="120">'


def _example_grid(page: HTMLReport, result) -> None:
    """The example maps as an HTML grid: a row per method, a column per data set, each panel an
    image 120 px wide; a cell without a map says why; methods with no map anywhere are listed."""
    from .formatting import example_rows, panel_png

    examples = [ex for ex in result.examples if ex.get("x") is not None]
    if not examples:
        page.add_paragraph("No example maps: no test sample was classified correctly by every model.")
        return
    shown, omitted = example_rows(examples, result.methods)
    out = ['<div class="scroll"><table class="maps"><thead><tr><th></th>']
    for ex in examples:
        label = f"class {ex['label']}" if ex.get("label") is not None else ""
        out.append(f"<th>{html.escape(SCENARIO_LABELS.get(ex['scenario'], ex['scenario']))}<br>"
                   f"{html.escape(ex['background'])}<br><span class=\"small\">{html.escape(ex['model'])}, "
                   f"{html.escape(label)}</span></th>")
    out.append("</tr></thead><tbody>")
    for label in ["input", "ground truth"] + shown:
        out.append(f'<tr><th class="row">{html.escape(label)}</th>')
        for ex in examples:
            where = f"{label}, {ex['scenario']} / {ex['background']}"
            if label in ("input", "ground truth"):
                out.append(f"<td>{_panel(panel_png(ex['x'] if label == 'input' else ex['mask'], 'input'), where)}</td>")
            elif label in ex["maps"]:
                out.append(f"<td>{_panel(panel_png(ex['maps'][label], 'map'), where)}</td>")
            else:
                st, reason = ex["status"].get(label, ("not run", "this method was not run"))
                out.append(f'<td><div class="missing" title="{html.escape(reason)}"><span><b>'
                           f"{html.escape(st)}</b>: {html.escape(reason)}</span></div></td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    page.add_html("".join(out))
    if omitted:
        page.add_paragraph("Not shown (no map on any data set's example model):", "small")
        page.add_list([f"{m}: {why}" for m, why in omitted.items()])


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
    "The random map is the floor: a method that does not beat it points at noise. Each cell shows "
    "the three means, precision · IoU · EMD score, over the explained samples (hover a number for "
    "its standard deviation; results.csv has them all); the best mean of each column is in bold. A "
    "cell without scores says why: not applicable (the method cannot explain this model, e.g. "
    "Grad-CAM without a convolution, or it attributes a hidden layer rather than the pixels) or "
    "failed (the error it raised)."
)


def write_benchmark_report(result, out, overwrite: bool = False) -> str:
    """Write ``index.html``, ``results.csv``, ``results.json`` and the figures (PNG) of a
    :class:`featurelens.groundtruth.BenchmarkResult` into the folder ``out`` (see
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
        f"XAI-TRIS {s.get('image_size')}x{s.get('image_size')}, seed {s.get('seed_root', s.get('seed'))}"
        f"{', quick run' if s.get('quick') else ''}; featurelens {result.versions.get('featurelens')}, "
        f"torch {result.versions.get('torch')}; {t.get('total_seconds', 0.0):.0f} s in total",
    )
    page.add_heading("How to read this")
    page.add_paragraph(_HOW_TO_READ)
    page.add_html(_CSS)
    page.add_heading("Summary: method x scenario")
    page.add_paragraph(
        f"{_metric_head()} (means over explained test samples, pooled over backgrounds and models).",
        "small",
    )
    _summary_table(page, result)
    page.add_heading("Per model")
    for model in s.get("models", []):
        if any(r["model"] == model for r in result.rows):
            page.add_heading(f"model {model}", 3)
            page.add_paragraph(f"{_metric_head()} per data set (scenario, background); {_LEGEND}.", "small")
            _model_table(page, result, model)
    page.add_heading("Example maps")
    page.add_paragraph(
        "One correctly classified test sample per data set (columns), explained on the model named "
        "in the column's header (the CNN where one was trained); rows: the input, the ground-truth mask and each method's map (red positive, blue "
        "negative; magma for non-negative maps; each map on its own scale). The same grid is "
        "example_maps.png next to this page.",
        "small",
    )
    _example_grid(page, result)
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
