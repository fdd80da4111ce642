"""The benchmark's figures and plain-text tables (example maps per scenario, method x scenario
summaries, model accuracies)."""

from __future__ import annotations

import io

import numpy as np

__all__ = ["example_figure", "format_summary", "format_models", "SCENARIO_LABELS"]

#: Short scenario labels of the XAI-TRIS paper, used where space is tight.
SCENARIO_LABELS = {
    "linear": "LIN",
    "multiplicative": "MULT",
    "translations_rotations": "RIGID",
    "xor": "XOR",
}

# ------------------------------------------------------------------------------------------------
# figures


def example_figure(scenario: str, examples: list, methods: list[str], dpi: int = 90) -> bytes:
    """PNG bytes of one scenario's example maps: a row per background (one correctly classified
    test sample), columns input, ground truth and each method's map for the row's model."""
    from matplotlib.figure import Figure

    from ..plots.maps import show_map

    ncols = 2 + len(methods)
    nrows = max(1, len(examples))
    fig = Figure(figsize=(1.55 * ncols, 1.75 * nrows + 0.35))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for r, (background, ex) in enumerate(examples):
        panels = [("input", ex["x"], "gray"), ("ground truth", ex["mask"], "gray")]
        panels += [(m, ex["maps"].get(m), "RdBu_r") for m in methods]
        for c, (title, image, cmap) in enumerate(panels):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if image is None:
                ax.text(0.5, 0.5, "n/a", ha="center", va="center", fontsize=9, transform=ax.transAxes)
                ax.set_title(title, fontsize=7)
                continue
            if c < 2:
                ax.imshow(np.asarray(image, dtype=float), cmap=cmap, interpolation="nearest")
                ax.set_title(title, fontsize=7)
            else:
                show_map(ax, np.asarray(image, dtype=float), cmap=cmap, title=title)
                ax.title.set_fontsize(7)
        label = "" if ex["label"] is None else f", class {ex['label']}"
        axes[r, 0].set_ylabel(f"{background}\n{ex['model']}{label}", fontsize=7)
    fig.suptitle(f"XAI-TRIS {scenario}: example maps", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------
# plain-text tables


def _cell(mean, std, pm: str) -> str:
    if mean is None or not np.isfinite(mean):
        return "n/a"
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
                text = _cell(r[f"{metric}_mean"], r[f"{metric}_std"], plus_minus)
                mark = "*" if best[s] is not None and r[f"{metric}_mean"] == best[s] else " "
                cells.append((text + mark).rjust(col))
            lines.append(m.ljust(width) + "".join(cells))
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
