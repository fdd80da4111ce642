"""Self-contained HTML reports.

:class:`HTMLReport` builds one page from headings, paragraphs, tables and PNG figures, with inline
CSS and the figures embedded as base64, so that the single ``index.html`` can be moved or mailed on
its own. Every piece of text is HTML-escaped; only :meth:`HTMLReport.add_html` inserts raw markup.

:func:`write_benchmark_report` writes the report of :func:`featurelens.bench.run_benchmark` into a
folder: ``index.html``, ``results.csv``, ``results.json`` and the figures as PNG files.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import os
from dataclasses import dataclass

__all__ = ["HTMLReport", "Cell", "write_benchmark_report", "CSV_COLUMNS"]

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
p.meta { color: #666; font-size: 0.9em; margin-top: 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em 0; font-size: 0.86em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.55em; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; text-align: center; }
td.text, th.text { text-align: left; }
td.na { color: #999; text-align: center; }
.best { background: #dff0d8; font-weight: bold; }
span.best { padding: 0 0.15em; }
.small { color: #666; font-size: 0.85em; }
figure { margin: 1em 0 2em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
dl.settings { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1em; font-size: 0.9em; }
dl.settings dt { font-weight: bold; }
dl.settings dd { margin: 0; }
"""


@dataclass
class Cell:
    """A table cell: ``text`` (escaped), or ``html`` (trusted markup built by this module),
    CSS ``classes`` and a ``colspan``."""

    text: str = ""
    classes: str = ""
    colspan: int = 1
    html: str | None = None

    def render(self, tag: str = "td") -> str:
        attrs = ""
        if self.classes:
            attrs += f' class="{html.escape(self.classes)}"'
        if self.colspan > 1:
            attrs += f' colspan="{int(self.colspan)}"'
        body = self.html if self.html is not None else html.escape(str(self.text))
        return f"<{tag}{attrs}>{body}</{tag}>"


def _as_cell(value) -> Cell:
    return value if isinstance(value, Cell) else Cell(str(value))


class HTMLReport:
    """A single self-contained HTML page, built section by section.

    >>> page = HTMLReport("My report")
    >>> page.add_heading("Results")
    >>> page.add_table([["method", "score"]], [["saliency", "0.81"]])
    >>> page.save("index.html")
    """

    def __init__(self, title: str, subtitle: str | None = None):
        self.title = str(title)
        self.subtitle = subtitle
        self.parts: list[str] = []
        self.n_images = 0

    def add_heading(self, text: str, level: int = 2) -> "HTMLReport":
        level = min(max(int(level), 2), 4)
        self.parts.append(f"<h{level}>{html.escape(str(text))}</h{level}>")
        return self

    def add_paragraph(self, text: str, classes: str = "") -> "HTMLReport":
        cls = f' class="{html.escape(classes)}"' if classes else ""
        self.parts.append(f"<p{cls}>{html.escape(str(text))}</p>")
        return self

    def add_list(self, items) -> "HTMLReport":
        body = "".join(f"<li>{html.escape(str(i))}</li>" for i in items)
        self.parts.append(f"<ul>{body}</ul>")
        return self

    def add_definitions(self, pairs) -> "HTMLReport":
        """A two-column list of (term, value) pairs."""
        body = "".join(
            f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))}</dd>" for k, v in pairs
        )
        self.parts.append(f'<dl class="settings">{body}</dl>')
        return self

    def add_html(self, markup: str) -> "HTMLReport":
        """Insert trusted markup as is (never pass user text here; use the other methods)."""
        self.parts.append(markup)
        return self

    def add_table(self, header_rows, rows, caption: str | None = None) -> "HTMLReport":
        """A table. ``header_rows``: a list of header rows; ``rows``: a list of body rows; each cell
        is a string/number (escaped) or a :class:`Cell`. The first column is left-aligned."""
        out = ['<div class="scroll"><table>']
        if caption:
            out.append(f"<caption>{html.escape(caption)}</caption>")
        out.append("<thead>")
        for hr in header_rows:
            out.append("<tr>" + "".join(_as_cell(c).render("th") for c in hr) + "</tr>")
        out.append("</thead><tbody>")
        for row in rows:
            cells = [_as_cell(c) for c in row]
            if cells and not cells[0].classes:
                cells[0] = Cell(cells[0].text, "text", cells[0].colspan, cells[0].html)
            out.append("<tr>" + "".join(c.render("td") for c in cells) + "</tr>")
        out.append("</tbody></table></div>")
        self.parts.append("".join(out))
        return self

    def add_image(self, png: bytes, alt: str, caption: str | None = None) -> "HTMLReport":
        """Embed PNG bytes as a base64 data URI (the page stays self-contained)."""
        if not isinstance(png, (bytes, bytearray)) or not bytes(png[:8]) == b"\x89PNG\r\n\x1a\n":
            raise ValueError("png must be the bytes of a PNG image")
        data = base64.b64encode(bytes(png)).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self.parts.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">{cap}</figure>'
        )
        self.n_images += 1
        return self

    def render(self) -> str:
        sub = f'<p class="meta">{html.escape(self.subtitle)}</p>' if self.subtitle else ""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(self.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(self.title)}</h1>\n{sub}\n" + "\n".join(self.parts) + "\n</body>\n</html>\n"
        )

    def save(self, path) -> str:
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.render())
        return path


# ------------------------------------------------------------------------------------------------
# the benchmark report

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


def write_benchmark_report(result, out) -> str:
    """Write ``index.html``, ``results.csv``, ``results.json`` and the figures (PNG) of a
    :class:`featurelens.bench.BenchmarkResult` into the folder ``out`` (created if missing).
    Returns the path of ``index.html``."""
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    _write_csv(result.rows, os.path.join(out, "results.csv"))
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(result.to_dict(), f, indent=1, allow_nan=False)
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
    return page.save(os.path.join(out, "index.html"))
