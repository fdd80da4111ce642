"""The benchmark's figures and plain-text tables (example maps per scenario, method x scenario
summaries, model accuracies)."""

from __future__ import annotations

import numpy as np

__all__ = ["example_figure", "example_rows", "panel_png", "format_summary", "format_models", "SCENARIO_LABELS"]

#: Short scenario labels of the XAI-TRIS paper, used where space is tight.
SCENARIO_LABELS = {
    "linear": "LIN",
    "multiplicative": "MULT",
    "translations_rotations": "RIGID",
    "xor": "XOR",
}

# ------------------------------------------------------------------------------------------------
# figures


def _norm(image, signed_cmap: str = "RdBu_r"):
    """``(image, cmap, vmin, vmax)`` as :func:`featurelens.plots.maps.show_map` draws a map: a
    symmetric scale for signed maps, [0, max] with magma for non-negative ones."""
    m = np.asarray(image, dtype=float)
    top = float(np.abs(m).max()) or 1.0
    lo = -top if (m < 0).any() else 0.0
    return m, (signed_cmap if lo < 0 else "magma"), lo, top


def _rgb(image, kind: str) -> np.ndarray:
    """An (h, w, 3) float RGB image of one panel: ``kind`` "input"/"mask" (grey, own range) or
    "map" (the map colours of :func:`_norm`)."""
    import matplotlib

    if kind == "map":
        m, cmap, lo, hi = _norm(image)
    else:
        m = np.asarray(image, dtype=float)
        cmap, lo, hi = "gray", float(m.min()), float(m.max())
    scaled = (m - lo) / ((hi - lo) or 1.0)
    return matplotlib.colormaps[cmap](np.clip(scaled, 0.0, 1.0))[..., :3]


def panel_png(image, kind: str = "map", width: int = 120) -> bytes:
    """PNG bytes of one example panel, upscaled by whole pixels (nearest) to at least ``width``
    pixels, so that the browser shows the map's pixels sharp at that size."""
    from ..plots._png import image_png

    rgb = _rgb(image, kind)
    factor = max(1, -(-int(width) // rgb.shape[1]))
    return image_png(np.repeat(np.repeat(rgb, factor, axis=0), factor, axis=1))


def example_rows(examples: list, methods: list[str]) -> tuple[list, dict]:
    """The rows of the example grid: ``(shown, omitted)``, the methods with a map on at least one
    data set (in ``methods`` order) and ``{method: "status: reason"}`` for those with none (the
    distinct reasons over the data sets)."""
    shown, omitted = [], {}
    for m in methods:
        if any(m in ex["maps"] for ex in examples):
            shown.append(m)
            continue
        why = [f"{st}: {reason}" for st, reason in (ex["status"].get(m, ("not run", "")) for ex in examples)]
        omitted[m] = "; ".join(dict.fromkeys(why))
    return shown, omitted


def example_figure(examples: list, methods: list[str], dpi: int = 100, panel: int = 48) -> bytes:
    """PNG bytes of the example maps of every data set as one grid: a column per data set
    (scenario / background: one correctly classified test sample, explained on the data set's CNN),
    rows input, ground truth and each method with a map somewhere (a failed or not-applicable
    cell is grey and says so; methods with no map at all are left out: the report lists why)."""
    from matplotlib.figure import Figure

    from ..plots._png import figure_png

    shown, _ = example_rows(examples, methods)
    labels = ["input", "ground truth"] + shown
    gap, size = 4, None
    for ex in examples:
        if ex["x"] is not None:
            size = np.asarray(ex["x"]).shape[-1]
            break
    size = size or 8
    factor = max(1, -(-panel // size))
    p = size * factor
    nrows, ncols = len(labels), max(1, len(examples))
    canvas = np.ones((nrows * (p + gap) - gap, ncols * (p + gap) - gap, 3))
    texts = []
    for c, ex in enumerate(examples):
        for r, label in enumerate(labels):
            y0, x0 = r * (p + gap), c * (p + gap)
            if label == "input":
                image, kind = ex["x"], "input"
            elif label == "ground truth":
                image, kind = ex["mask"], "input"
            else:
                image, kind = ex["maps"].get(label), "map"
            if image is None:
                canvas[y0:y0 + p, x0:x0 + p] = 0.93
                st = ex["status"].get(label, ("failed", ""))[0] if label in ex["status"] else "no sample"
                texts.append((x0 + p / 2, y0 + p / 2, "n/a" if st == "not applicable" else st))
                continue
            rgb = _rgb(image, kind)
            canvas[y0:y0 + p, x0:x0 + p] = np.repeat(np.repeat(rgb, factor, axis=0), factor, axis=1)
    left, top = 150, 46  # pixels for the row and column labels
    h, w = canvas.shape[:2]
    fig = Figure(figsize=((w + left + 10) / dpi, (h + top + 10) / dpi), dpi=dpi)
    ax = fig.add_axes([left / (w + left + 10), 10 / (h + top + 10), w / (w + left + 10), h / (h + top + 10)])
    ax.imshow(canvas, interpolation="nearest")
    ax.set_xticks([c * (p + gap) + p / 2 for c in range(ncols)])
    ax.set_xticklabels([f"{SCENARIO_LABELS.get(ex['scenario'], ex['scenario'])}\n{ex['background']}"
                        for ex in examples], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks([r * (p + gap) + p / 2 for r in range(nrows)])
    ax.set_yticklabels(labels, fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for x, y, text in texts:
        ax.text(x, y, text, ha="center", va="center", fontsize=7, color="#555")
    return figure_png(fig, dpi=dpi)


# ------------------------------------------------------------------------------------------------
# plain-text tables


#: How the text tables show a cell without scores, by status (the reason follows the tables).
_SHORT = {"not applicable": "not appl.", "failed": "failed"}


def _cell(mean, std, pm: str, status: str = "ok") -> str:
    if mean is None or not np.isfinite(mean):
        return _SHORT.get(status, "no scores")
    return f"{mean:.2f}{pm}{std:.2f}"


def format_summary(result, plus_minus: str = "±") -> str:
    """Method x scenario tables of mean ± std (pooled over backgrounds and models), one per metric;
    ``*`` marks the best mean of each column."""
    scenarios = [s for s in result.scenarios if any(r["scenario"] == s for r in result.summary)]
    methods = [m for m in result.methods if any(r["method"] == m for r in result.summary)]
    if not scenarios or not methods:
        return "(no results)"
    width = max(len(m) for m in methods + ["method"]) + 2
    col = max(13, max(len(SCENARIO_LABELS.get(s, s)) for s in scenarios) + 2)
    lines = []
    headers = {
        "precision": "precision: share of the top-k pixels on the pattern (k = pattern size); higher is better",
        "iou": "IoU of the top-k pixels with the pattern; higher is better",
        "emd": "EMD score = 1 - EMD / sqrt(2D); higher is better",
    }
    for metric in headers:
        lines.append(headers[metric])
        lines.append("method".ljust(width) + "".join(SCENARIO_LABELS.get(s, s).rjust(col) for s in scenarios))
        best = {}
        for s in scenarios:
            means = [result.summary_row(m, s)[f"{metric}_mean"] for m in methods]
            finite = [v for v in means if v is not None and np.isfinite(v)]
            best[s] = max(finite) if finite else None
        for m in methods:
            cells = []
            for s in scenarios:
                r = result.summary_row(m, s)
                text = _cell(r[f"{metric}_mean"], r[f"{metric}_std"], plus_minus, r.get("status", "ok"))
                mark = "*" if best[s] is not None and r[f"{metric}_mean"] == best[s] else " "
                cells.append((text + mark).rjust(col))
            lines.append(m.ljust(width) + "".join(cells))
        lines.append("")
    reasons = {}
    for m in methods:
        for s in scenarios:
            r = result.summary_row(m, s)
            if r.get("status", "ok") != "ok":
                reasons.setdefault(m, {}).setdefault(f"{r['status']}: {r.get('reason', '')}", []).append(s)
    if reasons:
        lines.append("cells without scores:")
        for m, why in reasons.items():
            for text, where in why.items():
                at = "" if len(where) == len(scenarios) else f" ({', '.join(SCENARIO_LABELS.get(s, s) for s in where)})"
                lines.append(f"  {m}{at}: {text}")
        lines.append("")
    legend = ", ".join(f"{SCENARIO_LABELS.get(s, s)} = {s}" for s in scenarios)
    lines.append(
        f"{legend}; mean{plus_minus}std over explained test samples, pooled over backgrounds and "
        "models; * = best"
    )
    return "\n".join(lines)


def format_models(result) -> str:
    """Test accuracy of every trained model, a line per data set."""
    names = list(result.settings.get("models", []))
    lines = ["test accuracy of the trained models (epochs run), samples explained"]
    head = "scenario".ljust(24) + "background".ljust(12) + "".join(n.rjust(14) for n in names)
    head += "explained".rjust(11)
    lines.append(head)
    seen = []
    for rec in result.models:
        key = (rec["scenario"], rec["background"])
        if key not in seen:
            seen.append(key)
    for scenario, background in seen:
        recs = {r["model"]: r for r in result.models if (r["scenario"], r["background"]) == (scenario, background)}
        cells = []
        for n in names:
            r = recs.get(n)
            cells.append(("-" if r is None else f"{r['test_accuracy']:.3f} ({r['epochs']})").rjust(14))
        explained = next(iter(recs.values()))["n_explained"]
        lines.append(scenario.ljust(24) + background.ljust(12) + "".join(cells) + str(explained).rjust(11))
    return "\n".join(lines)
